package ondisk

import (
	"context"
	"errors"
	"strings"

	"bytes"
	"github.com/headspace-bench/headspace/datasets"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
)

func testJPEG(t testing.TB, w, h int, progressive bool) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	if progressive { // the same frame header under SOF2's marker
		i := bytes.Index(data, []byte{0xff, 0xc0})
		data[i+1] = 0xc2
	}
	return data
}

// TestJPEGSize reads the frame header's size of baseline and progressive
// files, passes over fill and stray bytes as image/jpeg does, and refuses
// what is no JPEG, is cut short, or leaves its height to a DNL marker.
func TestJPEGSize(t *testing.T) {
	base := testJPEG(t, 37, 21, false)
	sof := bytes.Index(base, []byte{0xff, 0xc0})
	withFill := append(append(append([]byte{}, base[:sof]...), 'x', 'y', 0xff, 0xff), base[sof:]...)
	zeroH := append([]byte{}, base...)
	zeroH[sof+5], zeroH[sof+6] = 0, 0
	for _, tc := range []struct {
		name string
		data []byte
		w, h int
		err  string
	}{
		{"baseline", base, 37, 21, ""},
		{"progressive", testJPEG(t, 64, 8, true), 64, 8, ""},
		{"fill and stray bytes", withFill, 37, 21, ""},
		{"png", []byte("\x89PNG\r\n\x1a\n...."), 0, 0, "not a JPEG"},
		{"empty", nil, 0, 0, "not a JPEG"},
		{"cut in a segment", base[:sof-3], 0, 0, "segment"},
		{"cut before the frame", base[:2], 0, 0, "ends before its frame header"},
		{"scan first", []byte{0xff, 0xd8, 0xff, 0xda, 0, 2}, 0, 0, "no frame header before its scan"},
		{"height by DNL", zeroH, 0, 0, "frame header says 37x0"},
	} {
		w, h, err := JPEGSize(tc.data)
		if tc.err == "" && (err != nil || w != tc.w || h != tc.h) {
			t.Errorf("%s: %dx%d, %v; want %dx%d", tc.name, w, h, err, tc.w, tc.h)
		}
		if tc.err != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.err))) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { JPEGSize(base) }); n != 0 {
		t.Errorf("JPEGSize allocates %v times", n)
	}
}

// FuzzJPEGSize: wherever image/jpeg reads a positive size from a file's
// header, JPEGSize reads the same; it never panics.
func FuzzJPEGSize(f *testing.F) {
	f.Add(testJPEG(f, 9, 7, false))
	f.Add(testJPEG(f, 16, 16, true))
	f.Add([]byte{0xff, 0xd8, 0xff, 0xc0, 0, 11, 8, 0, 1, 0, 1, 1, 1, 0x11, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		w, h, err := JPEGSize(data)
		cfg, jerr := jpeg.DecodeConfig(bytes.NewReader(data))
		if jerr == nil && cfg.Width > 0 && cfg.Height > 0 && (err != nil || w != cfg.Width || h != cfg.Height) {
			t.Fatalf("JPEGSize %dx%d, %v; image/jpeg %dx%d", w, h, err, cfg.Width, cfg.Height)
		}
	})
}

// TestCheckJPEG: a JPEG dataset's files pass with their labels; a file of
// another size, or no JPEG, is a corrupt sample whose error names the file.
func TestCheckJPEG(t *testing.T) {
	dir := t.TempDir()
	src := datasets.Synthetic{Width: 40, Height: 24, Classes: 3, N: 3, Seed: 5}
	if _, err := Write(context.Background(), dir, src, WriteOptions{Format: "jpeg", Layout: "files"}); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := datasets.NewSample(40, 24)
	for i := range 3 {
		data, err := d.Fetch(context.Background(), i, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := src.Fill(i, s); err != nil {
			t.Fatal(err)
		}
		if label, err := d.CheckJPEG(i, data); err != nil || label != s.Label {
			t.Errorf("sample %d: label %d, %v; want %d", i, label, err, s.Label)
		}
	}
	for name, data := range map[string][]byte{"another size": testJPEG(t, 24, 40, false), "a PNG": []byte("\x89PNG\r\n\x1a\n")} {
		_, err := d.CheckJPEG(1, data)
		if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), d.where(1)) {
			t.Errorf("%s: %v; want a corrupt sample naming %s", name, err, d.where(1))
		}
	}
}
