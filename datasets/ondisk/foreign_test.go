package ondisk

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disintegration/imaging"

	"github.com/headspace-bench/headspace/datasets"
)

func encodeTest(t *testing.T, format string, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{byte(x*7) + seed, byte(y * 5), seed * 3, 255})
		}
	}
	var b bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 95})
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestForeignImageFolder(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b", "1.png"), encodeTest(t, "png", 24, 16, 1))
	writeFile(t, filepath.Join(dir, "a", "deep", "2.JPG"), encodeTest(t, "jpeg", 24, 16, 2))
	writeFile(t, filepath.Join(dir, "a", "3.jpeg"), encodeTest(t, "jpeg", 48, 20, 3))
	writeFile(t, filepath.Join(dir, "a", "notes.txt"), []byte("ignored"))
	writeFile(t, filepath.Join(dir, ".hidden", "4.jpg"), encodeTest(t, "jpeg", 24, 16, 4))
	writeFile(t, filepath.Join(dir, "b", "fake.jpg"), []byte("GIF89a-not-really"))
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "b", "zero.jpg")); err != nil {
		t.Fatal(err)
	}
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if x.Kind != KindImageFolder || strings.Join(x.Classes, ",") != "a,b" || len(x.Samples) != 5 {
		t.Fatalf("index: kind %s, classes %v, %d samples; want imagefolder, a,b, 5", x.Kind, x.Classes, len(x.Samples))
	}
	want := map[string]struct {
		label int
		err   string
	}{
		"a/3.jpeg": {0, ""}, "a/deep/2.JPG": {0, ""}, "b/1.png": {1, ""},
		"b/fake.jpg": {1, "not a JPEG or PNG"}, "b/zero.jpg": {1, "not a regular file"},
	}
	for _, s := range x.Samples {
		name := x.Files[s.File]
		w, ok := want[name]
		if !ok || s.Label != w.label || (w.err == "") != (s.Error == "") || !strings.Contains(s.Error, w.err) {
			t.Errorf("%s: label %d, error %q; want %+v", name, s.Label, s.Error, w)
		}
	}
	if got := x.SizeSummary(); got != "2 distinct, smallest 24x16, largest 48x20; most common 24x16 67%, 48x20 33%" {
		t.Errorf("SizeSummary = %q", got)
	}
	// Read at the most common size: 48x20 is resized, the bad files fail
	// naming themselves, and MaxFailures skips them.
	d, err := OpenWith(dir, Options{MaxFailures: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if w, h := d.Shape(); w != 24 || h != 16 || d.Len() != 5 {
		t.Fatalf("shape %dx%d, len %d", w, h, d.Len())
	}
	s := datasets.NewSample(24, 16)
	for i, smp := range x.Samples {
		err := d.Fill(i, s)
		name := filepath.Join(dir, filepath.FromSlash(x.Files[smp.File]))
		if smp.Error != "" {
			if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "\n") {
				t.Errorf("sample %d (%s): %v, want one line naming the file", i, name, err)
			}
		} else if err != nil {
			t.Errorf("sample %d (%s): %v", i, name, err)
		}
	}
	skip, err := OpenWith(dir, Options{MaxFailures: 4}) // two bad files, met twice
	if err != nil {
		t.Fatal(err)
	}
	defer skip.Close()
	for i := range 5 {
		if err := skip.Fill(i, s); err != nil {
			t.Errorf("with MaxFailures 4, sample %d: %v", i, err)
		}
	}
}

// TestResizeRGBMatchesImaging compares the bilinear resize with imaging's
// (the correctness oracle): within a couple of levels on a smooth image.
func TestResizeRGBMatchesImaging(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			src.Set(x, y, color.NRGBA{byte(x * 4), byte(y * 5), byte(x + y), 255})
		}
	}
	rgb := make([]byte, 64*48*3)
	if err := ToRGB(rgb, src); err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][2]int{{32, 24}, {100, 70}, {64, 48}, {17, 9}} {
		dst := make([]byte, sz[0]*sz[1]*3)
		resizeRGB(dst, sz[0], sz[1], rgb, 64, 48)
		want := make([]byte, len(dst))
		if err := ToRGB(want, imaging.Resize(src, sz[0], sz[1], imaging.Linear)); err != nil {
			t.Fatal(err)
		}
		var sum int
		for i := range dst {
			d := int(dst[i]) - int(want[i])
			sum += max(d, -d)
		}
		// imaging's Linear filter averages over the whole footprint when
		// shrinking; on a linear ramp both agree but at the borders.
		if mean := float64(sum) / float64(len(dst)); mean > 2.5 {
			t.Errorf("%dx%d: mean difference from imaging %.2f levels", sz[0], sz[1], mean)
		}
	}
}

func tarOf(t *testing.T, members ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := 0; i < len(members); i += 2 {
		data := members[i+1].([]byte)
		if err := tw.WriteHeader(&tar.Header{Name: members[i].(string), Size: int64(len(data)), Mode: 0o644, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	return b.Bytes()
}

func TestForeignWebDataset(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	dir := t.TempDir()
	j := encodeTest(t, "jpeg", 20, 12, 1)
	writeFile(t, filepath.Join(dir, "s-0.tar"), tarOf(t,
		"k/000.jpg", j, "k/000.cls", []byte("3\n"),
		"k/001.png", encodeTest(t, "png", 20, 12, 2), "k/001.txt", []byte("zebra"),
		"k/002.json", []byte("{}"), "k/002.txt", []byte("caption only"), // no image: not a sample
		"k/003.seg.jpg", j, "k/003.cls", []byte("1"), // key k/003, ext seg.jpg: not an image member
		"k/004.jpeg", j, // no label
	))
	writeFile(t, filepath.Join(dir, "s-1.tar"), tarOf(t, "a.jpg", j, "a.cls", []byte("0"))[:700]) // truncated
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range x.Samples {
		got[s.Member] = x.Classes[max(s.Label, 0)] + "|" + s.Error
	}
	for member, want := range map[string]string{
		"k/000.jpg":  "3|",
		"k/001.png":  "zebra|",
		"k/004.jpeg": "|no .cls or .txt label",
	} {
		if g, ok := got[member]; !ok || !strings.HasPrefix(g, strings.Split(want, "|")[0]) || !strings.Contains(g, strings.Split(want, "|")[1]) {
			t.Errorf("member %s: %q, want %q (index %v)", member, g, want, got)
		}
	}
	if len(x.Samples) < 4 || len(x.Samples) > 5 {
		t.Errorf("%d samples: %v", len(x.Samples), got)
	}
	d, err := OpenWith(dir, Options{Decoder: DecoderTurbo})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := datasets.NewSample(20, 12)
	for i, smp := range x.Samples {
		err := d.Fill(i, s)
		if (smp.Error == "") != (err == nil) {
			t.Errorf("sample %d (%s, error %q): Fill %v", i, smp.Member, smp.Error, err)
		}
		if err != nil && !strings.Contains(err.Error(), "member "+smp.Member) {
			t.Errorf("sample %d: %v does not name the member", i, err)
		}
	}
}

// TestIndexCache: SaveIndex writes outside the dataset, LoadIndex uses it
// while the files are unchanged and rebuilds after a change; a cache
// inside the dataset is refused.
func TestIndexCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HEADSPACE_CACHE", cache)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c", "1.jpg"), encodeTest(t, "jpeg", 8, 8, 1))
	x, err := BuildIndex(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := SaveIndex(x)
	if err != nil || !strings.HasPrefix(p, cache) {
		t.Fatalf("SaveIndex: %s, %v", p, err)
	}
	memo.Lock()
	clear(memo.m)
	memo.Unlock()
	if _, cached, err := LoadIndex(context.Background(), dir); err != nil || !cached {
		t.Errorf("LoadIndex: cached %v, %v; want the cached index", cached, err)
	}
	writeFile(t, filepath.Join(dir, "c", "2.jpg"), encodeTest(t, "jpeg", 8, 8, 2))
	y, cached, err := LoadIndex(context.Background(), dir)
	if err != nil || cached || len(y.Samples) != 2 {
		t.Errorf("after a new file: cached %v, %d samples, %v; want a fresh index of 2", cached, len(y.Samples), err)
	}
	t.Setenv("HEADSPACE_CACHE", filepath.Join(dir, "cache"))
	if _, err := SaveIndex(y); err == nil || !strings.Contains(err.Error(), "never written") {
		t.Errorf("a cache inside the dataset: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache")); err == nil {
		t.Error("SaveIndex wrote into the dataset")
	}
}

func TestCheckUserImageLimits(t *testing.T) {
	// A PNG header claiming 100000×100000 pixels: refused before decoding.
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1)))
	data := b.Bytes()
	copy(data[16:24], []byte{0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0})
	binary.BigEndian.PutUint32(data[29:33], crc32.ChecksumIEEE(data[12:29]))
	if _, _, _, err := checkUserImage(bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a huge PNG header: %v", err)
	}
	if _, _, _, err := checkUserImage(strings.NewReader("plain text")); err == nil || !strings.Contains(err.Error(), "not a JPEG or PNG") {
		t.Errorf("text: %v", err)
	}
}
