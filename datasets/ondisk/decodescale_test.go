package ondisk

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disintegration/imaging"

	"github.com/headspace-bench/headspace/datasets"
)

// TestDecodeScaled reads a JPEG dataset with a scaled decode for several
// crop sides: the factor and size turbojpeg.Fit gives, pixels within a
// few levels of Go's full decode reduced by imaging (the oracle), the
// labels of the full decode, and no allocation per sample, in a sample
// buffer made for the full shape and reused. It fails, not skips,
// without libturbojpeg0 (make test installs it).
func TestDecodeScaled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	src := datasets.Synthetic{Width: 128, Height: 96, Classes: 5, N: 3, Seed: 4, Content: datasets.ContentNatural}
	if _, err := Write(context.Background(), dir, src, WriteOptions{Format: "jpeg", Layout: "files"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		minSide int
		factor  string
		w, h    int
		filter  imaging.ResampleFilter
		tol     float64
	}{
		{96, "1/1", 128, 96, imaging.Box, 4}, // two full decoders: TestDecoderTurbo's bound
		{48, "1/2", 64, 48, imaging.Box, 2},
		{40, "1/2", 64, 48, imaging.Box, 2},
		{36, "1/2", 64, 48, imaging.Box, 2}, // not 3/8: it does not pay
		{24, "1/4", 32, 24, imaging.Box, 2},
		{12, "1/8", 16, 12, imaging.Box, 2},
		{2, "1/8", 16, 12, imaging.Box, 2},
	} {
		t.Run(fmt.Sprint("crop=", tc.minSide), func(t *testing.T) {
			d, err := OpenWith(dir, Options{Decoder: DecoderTurbo, DecodeMinSide: tc.minSide})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if f := d.DecodeScale().String(); f != tc.factor {
				t.Errorf("DecodeScale() = %s, want %s", f, tc.factor)
			}
			if w, h := d.DecodedShape(); w != tc.w || h != tc.h {
				t.Errorf("DecodedShape() = %dx%d, want %dx%d", w, h, tc.w, tc.h)
			}
			if w, h := d.Shape(); w != 128 || h != 96 {
				t.Errorf("Shape() = %dx%d, want the raw 128x96", w, h)
			}
			s := datasets.NewSample(128, 96)
			for i := range src.N {
				if err := d.Fill(i, s); err != nil {
					t.Fatal(err)
				}
				if s.Image.Width != tc.w || s.Image.Height != tc.h || len(s.Image.Pix) != 3*tc.w*tc.h || cap(s.Image.Pix) != 3*128*96 {
					t.Fatalf("sample %d: %dx%d, %d bytes (capacity %d); want %dx%d in the full buffer",
						i, s.Image.Width, s.Image.Height, len(s.Image.Pix), cap(s.Image.Pix), tc.w, tc.h)
				}
				want := datasets.NewSample(128, 96)
				if err := src.Fill(i, want); err != nil {
					t.Fatal(err)
				}
				if s.Label != want.Label {
					t.Errorf("sample %d: label %d, want %d", i, s.Label, want.Label)
				}
				data, err := d.Fetch(context.Background(), i, nil)
				if err != nil {
					t.Fatal(err)
				}
				full, err := jpeg.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				oracle := imaging.Resize(full, tc.w, tc.h, tc.filter)
				if diff := meanAbsDiffRGB(s.Image.Pix, oracle); diff > tc.tol {
					t.Errorf("sample %d: %.2f levels from image/jpeg + imaging.Resize on average, want ≤ %v", i, diff, tc.tol)
				}
			}
			data, err := d.Fetch(context.Background(), 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			// 200 runs: under -race, sync.Pool drops a quarter of its Puts on
			// purpose, and purego takes its call frames from one, so about half
			// a frame is remade per decode there; AllocsPerRun's whole-number
			// mean stays 0 unless every decode allocates (without -race, nothing
			// is dropped and any allocation shows).
			if n := testing.AllocsPerRun(200, func() {
				if err := d.Decode(1, data, s); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("scaled Decode: %.1f allocations per sample, want 0", n)
			}
		})
	}
}

func meanAbsDiffRGB(pix []byte, m *image.NRGBA) float64 {
	var sum, n int
	w, h := m.Rect.Dx(), m.Rect.Dy()
	for y := range h {
		for x := range w {
			for c := range 3 {
				d := int(pix[3*(y*w+x)+c]) - int(m.Pix[y*m.Stride+4*x+c])
				sum += max(d, -d)
				n++
			}
		}
	}
	return float64(sum) / float64(n)
}

// TestDecodeScaledErrors: what a scaled decode refuses, in one line.
func TestDecodeScaledErrors(t *testing.T) {
	root := t.TempDir()
	src := datasets.Synthetic{Width: 32, Height: 32, Classes: 2, N: 2, Seed: 1, Content: datasets.ContentNatural}
	jpegDir, pngDir := filepath.Join(root, "jpeg"), filepath.Join(root, "png")
	if _, err := Write(context.Background(), jpegDir, src, WriteOptions{Format: "jpeg", Layout: "files"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), pngDir, src, WriteOptions{Format: "png", Layout: "files"}); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(root, "folder") // an ImageFolder of PNGs only
	if err := os.MkdirAll(filepath.Join(folder, "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 32, 32))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "cat", "a.png"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HEADSPACE_CACHE", filepath.Join(root, "cache")) // the index outside the folder
	for _, tc := range []struct {
		name string
		dir  string
		opts Options
		want string
	}{
		{"go decoder", jpegDir, Options{Decoder: DecoderGo, DecodeMinSide: 16}, "needs the turbojpeg decoder"},
		{"png", pngDir, Options{Decoder: DecoderTurbo, DecodeMinSide: 16}, "holds png images: a scaled decode needs JPEGs"},
		{"image folder of PNGs", folder, Options{Decoder: DecoderTurbo, DecodeMinSide: 16}, "holds png images: a scaled decode needs JPEGs"},
		{"crop too large", jpegDir, Options{Decoder: DecoderTurbo, DecodeMinSide: 64}, "no scaled decode of a 32x32 image holds a 64-pixel crop"},
		{"negative", jpegDir, Options{Decoder: DecoderTurbo, DecodeMinSide: -1}, "must not be negative"},
	} {
		d, err := OpenWith(tc.dir, tc.opts)
		if err == nil {
			d.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
	d, err := OpenWith(jpegDir, Options{Decoder: DecoderTurbo, DecodeMinSide: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, err := d.Fetch(context.Background(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(0, data, datasets.NewSample(16, 16)); err == nil || !strings.Contains(err.Error(), "buffer holds 768 bytes, dataset is 32x32") {
		t.Errorf("small buffer: %v", err)
	}
	if err := d.Decode(0, data[:len(data)/2], datasets.NewSample(32, 32)); err == nil || !strings.Contains(err.Error(), "000000.jpg") {
		t.Errorf("truncated JPEG: %v, want an error naming the file", err)
	}
}

// TestDecodeScaledForeign reads an ImageFolder of mixed sizes and formats
// with a scaled decode: every sample comes out at the scaled raw size
// (128x96 with a crop of 24: 1/4, 32x24), each JPEG decoded at the
// smallest factor that covers it and resized, a PNG decoded whole and
// resized; all within a few levels of Go's full decode reduced by imaging.
func TestDecodeScaledForeign(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HEADSPACE_CACHE", filepath.Join(root, "cache"))
	folder := filepath.Join(root, "folder")
	for _, c := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(folder, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := []struct {
		name string
		w, h int
	}{
		{"a/0.jpg", 128, 96}, {"a/1.jpg", 128, 96}, {"b/2.jpg", 200, 150}, {"b/3.jpg", 64, 48}, {"b/4.png", 100, 80},
	}
	for i, f := range files {
		src := datasets.Synthetic{Width: f.w, Height: f.h, Classes: 2, N: i + 1, Seed: 9, Content: datasets.ContentNatural}
		s := datasets.NewSample(f.w, f.h)
		if err := src.Fill(i, s); err != nil {
			t.Fatal(err)
		}
		img := image.NewNRGBA(image.Rect(0, 0, f.w, f.h))
		for p, q := 0, 0; p < len(s.Image.Pix); p, q = p+3, q+4 {
			img.Pix[q], img.Pix[q+1], img.Pix[q+2], img.Pix[q+3] = s.Image.Pix[p], s.Image.Pix[p+1], s.Image.Pix[p+2], 255
		}
		var buf bytes.Buffer
		var err error
		if strings.HasSuffix(f.name, ".png") {
			err = png.Encode(&buf, img)
		} else {
			err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, filepath.FromSlash(f.name)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := OpenWith(folder, Options{Decoder: DecoderTurbo, DecodeMinSide: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if w, h := d.DecodedShape(); w != 32 || h != 24 || d.DecodeScale().String() != "1/4" {
		t.Fatalf("DecodedShape %dx%d at %s, want 32x24 at 1/4", w, h, d.DecodeScale())
	}
	s := datasets.NewSample(128, 96)
	for i := range d.Len() {
		if err := d.Fill(i, s); err != nil {
			t.Fatal(err)
		}
		if s.Image.Width != 32 || s.Image.Height != 24 || len(s.Image.Pix) != 3*32*24 {
			t.Fatalf("sample %d: %dx%d, want 32x24", i, s.Image.Width, s.Image.Height)
		}
		data, err := d.Fetch(context.Background(), i, nil)
		if err != nil {
			t.Fatal(err)
		}
		full, format, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		// The oracle's chain: the JPEG reduced by the factor that covers
		// 32x24 (1/2^k: each output pixel the mean of a k×k block of the
		// full decode, which the scaled IDCT approximates; a PNG is not
		// reduced), then resizeRGB to 32x24.
		iw, ih := full.Bounds().Dx(), full.Bounds().Dy()
		mid := make([]byte, 3*iw*ih)
		if err := ToRGB(mid, full); err != nil {
			t.Fatal(err)
		}
		mw, mh := iw, ih
		if format == "jpeg" {
			f, ok := d.turbo.Fit(iw, ih, 32, 24)
			if !ok || f.Num != 1 {
				t.Fatalf("sample %d: factor %v, %v", i, f, ok)
			}
			mid, mw, mh = blockMean(mid, iw, ih, f.Denom)
		}
		want := make([]byte, 3*32*24)
		resizeRGB(want, 32, 24, mid, mw, mh)
		tol := 2.0 // two reductions of the JPEG
		if format == "png" {
			tol = 0 // decoded and resized by the same code
		}
		if diff := meanAbsDiffBytes(s.Image.Pix, want); diff > tol {
			t.Errorf("sample %d (%s): %.2f levels from the oracle on average, want ≤ %v", i, d.where(i), diff, tol)
		} else {
			t.Logf("sample %d (%s): %.2f levels from the oracle", i, filepath.Base(d.where(i)), diff)
		}
	}
}

func meanAbsDiffBytes(a, b []byte) float64 {
	var sum int
	for k := range a {
		d := int(a[k]) - int(b[k])
		sum += max(d, -d)
	}
	return float64(sum) / float64(len(a))
}

// blockMean reduces the RGB image pix (w×h) by k: each output pixel is
// the mean of a k×k block (clipped at the right and bottom edges).
func blockMean(pix []byte, w, h, k int) ([]byte, int, int) {
	ow, oh := (w+k-1)/k, (h+k-1)/k
	out := make([]byte, 3*ow*oh)
	for y := range oh {
		for x := range ow {
			for c := range 3 {
				sum, n := 0, 0
				for yy := y * k; yy < min(h, (y+1)*k); yy++ {
					for xx := x * k; xx < min(w, (x+1)*k); xx++ {
						sum += int(pix[3*(yy*w+xx)+c])
						n++
					}
				}
				out[3*(y*ow+x)+c] = byte((sum + n/2) / n)
			}
		}
	}
	return out, ow, oh
}
