package ondisk

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
)

// TestDecodeCrop: DecodeCrop gives Decode's crop, bit for bit, on a
// headspace JPEG dataset (files and shards), a PNG one (decoded whole)
// and an ImageFolder whose images are of the shape or not (resized,
// then cropped), at crops anywhere, on and off the MCU grid; the label
// too; and the buffer, reused for the next sample, is refilled.
func TestDecodeCrop(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HEADSPACE_CACHE", filepath.Join(root, "cache"))
	src := datasets.Synthetic{Width: 96, Height: 64, Classes: 3, N: 4, Seed: 5, Content: datasets.ContentNatural}
	dirs := map[string]string{}
	for _, w := range []struct {
		name string
		opts WriteOptions
	}{
		{"jpeg files", WriteOptions{Format: "jpeg", Layout: "files"}},
		{"jpeg shards", WriteOptions{Format: "jpeg", Layout: "shards", ShardSize: 3}},
		{"png files", WriteOptions{Format: "png", Layout: "files"}},
	} {
		dirs[w.name] = filepath.Join(root, strings.ReplaceAll(w.name, " ", "-"))
		if _, err := Write(context.Background(), dirs[w.name], src, w.opts); err != nil {
			t.Fatal(err)
		}
	}
	// An ImageFolder of three 96x64 JPEGs and one of 120x80, resized.
	folder := filepath.Join(root, "folder")
	if err := os.MkdirAll(filepath.Join(folder, "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, size := range [][2]int{{96, 64}, {96, 64}, {120, 80}, {96, 64}} {
		s := datasets.Synthetic{Width: size[0], Height: size[1], Classes: 1, N: k + 1, Seed: 9, Content: datasets.ContentNatural}
		smp := datasets.NewSample(size[0], size[1])
		if err := s.Fill(k, smp); err != nil {
			t.Fatal(err)
		}
		img := image.NewRGBA(image.Rect(0, 0, size[0], size[1]))
		for p, q := 0, 0; p < len(smp.Image.Pix); p, q = p+3, q+4 {
			img.Pix[q], img.Pix[q+1], img.Pix[q+2], img.Pix[q+3] = smp.Image.Pix[p], smp.Image.Pix[p+1], smp.Image.Pix[p+2], 255
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, "cat", string(rune('a'+k))+".jpg"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirs["image folder"] = folder
	crops := []turbojpeg.Rect{{X: 0, Y: 0, W: 32, H: 32}, {X: 64, Y: 32, W: 32, H: 32}, {X: 17, Y: 13, W: 32, H: 32}, {X: 1, Y: 30, W: 40, H: 34}}
	for name, dir := range dirs {
		d, err := OpenWith(dir, Options{Decoder: DecoderTurbo})
		if err != nil {
			t.Fatal(err)
		}
		full, got := datasets.NewSample(96, 64), datasets.NewSample(96, 64)
		for i := range d.Len() {
			data, err := d.Fetch(context.Background(), i, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Decode(i, data, full); err != nil {
				t.Fatal(err)
			}
			for _, c := range crops {
				if err := d.DecodeCrop(i, data, got, c); err != nil {
					t.Fatalf("%s sample %d crop %+v: %v", name, i, c, err)
				}
				if got.Image.Width != c.W || got.Image.Height != c.H || got.Label != full.Label {
					t.Fatalf("%s sample %d: %dx%d label %d, want %dx%d label %d", name, i, got.Image.Width, got.Image.Height, got.Label, c.W, c.H, full.Label)
				}
				for y := range c.H {
					off := 3 * ((c.Y+y)*96 + c.X)
					if !bytes.Equal(got.Image.Pix[3*c.W*y:3*c.W*(y+1)], full.Image.Pix[off:off+3*c.W]) {
						t.Fatalf("%s sample %d crop %+v: row %d differs from Decode's", name, i, c, y)
					}
				}
			}
		}
		d.Close()
	}
}

func TestDecodeCropErrors(t *testing.T) {
	root := t.TempDir()
	src := datasets.Synthetic{Width: 64, Height: 64, Classes: 2, N: 2, Seed: 1, Content: datasets.ContentNatural}
	if _, err := Write(context.Background(), root, src, WriteOptions{Format: "jpeg", Layout: "files"}); err != nil {
		t.Fatal(err)
	}
	goDS, err := OpenWith(root, Options{Decoder: DecoderGo})
	if err != nil {
		t.Fatal(err)
	}
	defer goDS.Close()
	tj, err := OpenWith(root, Options{Decoder: DecoderTurbo})
	if err != nil {
		t.Fatal(err)
	}
	defer tj.Close()
	data, err := tj.Fetch(context.Background(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := turbojpeg.Rect{X: 8, Y: 8, W: 32, H: 32}
	for _, tc := range []struct {
		name string
		d    *Dataset
		i    int
		data []byte
		dst  *datasets.Sample
		c    turbojpeg.Rect
		want string
	}{
		{"go decoder", goDS, 0, data, datasets.NewSample(64, 64), c, "needs the turbojpeg decoder"},
		{"out of range", tj, 5, data, datasets.NewSample(64, 64), c, "out of range"},
		{"small buffer", tj, 0, data, datasets.NewSample(32, 32), c, "buffer holds 3072 bytes"},
		{"crop outside", tj, 0, data, datasets.NewSample(64, 64), turbojpeg.Rect{X: 40, Y: 0, W: 32, H: 32}, "not inside the 64x64 images"},
		{"corrupt", tj, 0, data[:len(data)/2], datasets.NewSample(64, 64), c, "decode sample 0"},
	} {
		err := tc.d.DecodeCrop(tc.i, tc.data, tc.dst, tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
}
