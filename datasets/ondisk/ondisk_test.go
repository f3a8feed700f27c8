package ondisk

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/datasets"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestMain(m *testing.M) {
	code := m.Run()
	if s3srv != nil {
		s3srv.Close()
	}
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// tiny is a small non-square dataset: 7 samples, so shards of 3 leave a
// short last shard.
var tiny = datasets.Synthetic{Width: 24, Height: 16, Classes: 10, N: 7, Seed: 3}

func write(t testing.TB, dir, format, layout string) *Manifest {
	t.Helper()
	m, err := Write(context.Background(), dir, tiny, WriteOptions{Format: format, Layout: layout, ShardSize: 3, Quality: 95, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func open(t testing.TB, dir string, opts Options) *Dataset {
	t.Helper()
	d, err := OpenWith(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// jpegMeanAbsError bounds the mean absolute difference per byte between a
// JPEG sample (quality 95, Go's encoder: 4:2:0 chroma) and the synthetic
// sample. Uniform noise has all its energy in high frequencies and in
// chroma, which JPEG discards: the measured error on tiny is 44-46 of 255
// (two unrelated noise images differ by 85), where a natural image would
// lose 1-2.
const jpegMeanAbsError = 50

func TestRoundTrip(t *testing.T) {
	for _, format := range Formats {
		for _, layout := range Layouts {
			t.Run(format+"/"+layout, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "ds")
				m := write(t, dir, format, layout)
				d := open(t, dir, Options{})
				if err := d.Verify(context.Background()); err != nil {
					t.Fatal(err)
				}
				if d.Len() != tiny.N || m.Count != tiny.N {
					t.Fatalf("Len %d, manifest count %d, want %d", d.Len(), m.Count, tiny.N)
				}
				if w, h := d.Shape(); w != tiny.Width || h != tiny.Height {
					t.Fatalf("Shape %dx%d", w, h)
				}
				want := datasets.NewSample(tiny.Width, tiny.Height)
				got := datasets.NewSample(tiny.Width, tiny.Height)
				for i := range tiny.N {
					if err := tiny.Fill(i, want); err != nil {
						t.Fatal(err)
					}
					if err := d.Fill(i, got); err != nil {
						t.Fatal(err)
					}
					if got.Label != want.Label {
						t.Errorf("sample %d: label %d, want %d", i, got.Label, want.Label)
					}
					switch format {
					case "jpeg":
						data, err := d.Fetch(context.Background(), i, nil)
						if err != nil {
							t.Fatal(err)
						}
						if ref := referenceRGB(t, data); !bytes.Equal(got.Image.Pix, ref) {
							t.Errorf("sample %d: Decode differs from image/jpeg's own color conversion", i)
						}
						if e := meanAbsDiff(got.Image.Pix, want.Image.Pix); e > jpegMeanAbsError {
							t.Errorf("sample %d: mean abs error %.1f > %d", i, e, jpegMeanAbsError)
						}
					default:
						if !bytes.Equal(got.Image.Pix, want.Image.Pix) {
							t.Errorf("sample %d: pixels differ from the synthetic sample", i)
						}
					}
				}
				if d.Failures() != 0 {
					t.Errorf("Failures %d", d.Failures())
				}
			})
		}
	}
}

// referenceRGB decodes a JPEG through the generic color.Color path.
func referenceRGB(t *testing.T, data []byte) []byte {
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	out := make([]byte, 0, b.Dx()*b.Dy()*3)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			out = append(out, byte(r>>8), byte(g>>8), byte(bl>>8))
		}
	}
	return out
}

func meanAbsDiff(a, b []byte) float64 {
	var s int
	for i := range a {
		d := int(a[i]) - int(b[i])
		s += max(d, -d)
	}
	return float64(s) / float64(len(a))
}

func TestToRGBTypes(t *testing.T) {
	r := image.Rect(2, 3, 5, 5) // a non-zero origin, as SubImage gives
	rgba := image.NewRGBA(r)
	nrgba := image.NewNRGBA(r)
	gray := image.NewGray(r)
	for k := range rgba.Pix {
		rgba.Pix[k] = byte(k * 7)
		nrgba.Pix[k] = byte(k * 7)
	}
	for k := range gray.Pix {
		gray.Pix[k] = byte(k * 11)
	}
	for _, tc := range []struct {
		name string
		img  image.Image
		want func(x, y int) [3]byte
	}{
		{"rgba", rgba, func(x, y int) [3]byte {
			o := rgba.PixOffset(x, y)
			return [3]byte{rgba.Pix[o], rgba.Pix[o+1], rgba.Pix[o+2]}
		}},
		{"nrgba", nrgba, func(x, y int) [3]byte {
			o := nrgba.PixOffset(x, y)
			return [3]byte{nrgba.Pix[o], nrgba.Pix[o+1], nrgba.Pix[o+2]}
		}},
		{"gray", gray, func(x, y int) [3]byte { v := gray.Pix[gray.PixOffset(x, y)]; return [3]byte{v, v, v} }},
	} {
		pix := make([]byte, r.Dx()*r.Dy()*3)
		if err := ToRGB(pix, tc.img); err != nil {
			t.Fatal(err)
		}
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				o := ((y-r.Min.Y)*r.Dx() + x - r.Min.X) * 3
				if w := tc.want(x, y); [3]byte(pix[o:o+3]) != w {
					t.Errorf("%s (%d,%d): %v, want %v", tc.name, x, y, pix[o:o+3], w)
				}
			}
		}
	}
	if err := ToRGB(make([]byte, 5), rgba); err == nil {
		t.Error("ToRGB accepted a short buffer")
	}
}

// TestToRGBYCbCr checks the YCbCr fast path against color.YCbCr's own
// conversion for every ratio, odd sizes and a sub-image (the slow path).
func TestToRGBYCbCr(t *testing.T) {
	for _, ratio := range []image.YCbCrSubsampleRatio{
		image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
		image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411,
	} {
		full := image.NewYCbCr(image.Rect(0, 0, 13, 7), ratio)
		for k := range full.Y {
			full.Y[k] = byte(k * 37)
		}
		for k := range full.Cb {
			full.Cb[k], full.Cr[k] = byte(k*53), byte(255-k*29)
		}
		for _, img := range []*image.YCbCr{full, full.SubImage(image.Rect(3, 1, 12, 6)).(*image.YCbCr)} {
			b := img.Bounds()
			pix := make([]byte, b.Dx()*b.Dy()*3)
			if err := ToRGB(pix, img); err != nil {
				t.Fatal(err)
			}
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					r, g, bl, _ := img.At(x, y).RGBA()
					o := ((y-b.Min.Y)*b.Dx() + x - b.Min.X) * 3
					if w := [3]byte{byte(r >> 8), byte(g >> 8), byte(bl >> 8)}; [3]byte(pix[o:o+3]) != w {
						t.Errorf("%v %v (%d,%d): %v, want %v", ratio, b, x, y, pix[o:o+3], w)
					}
				}
			}
		}
	}
}

// TestHotPathAllocatesNothing: fetching from a shard into a grown buffer,
// decoding raw bytes and converting YCbCr allocate nothing per sample.
func TestHotPathAllocatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	write(t, dir, "raw", "shards")
	d := open(t, dir, Options{})
	ctx := context.Background()
	buf, err := d.Fetch(ctx, 0, nil)
	must(t, err)
	s := datasets.NewSample(tiny.Width, tiny.Height)
	ycc := image.NewYCbCr(image.Rect(0, 0, tiny.Width, tiny.Height), image.YCbCrSubsampleRatio420)
	i := 0
	allocs := testing.AllocsPerRun(50, func() {
		i = (i + 1) % tiny.N
		if buf, err = d.Fetch(ctx, i, buf); err != nil {
			t.Fatal(err)
		}
		if err := d.Decode(i, buf, s); err != nil {
			t.Fatal(err)
		}
		if err := ToRGB(s.Image.Pix, ycc); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per sample, want 0", allocs)
	}
}
