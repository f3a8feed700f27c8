package ondisk

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disintegration/imaging"

	"github.com/headspace-bench/headspace/datasets"
)

// photo is imaging's testdata flowers.png (a 600×400 photograph, in the
// module cache since imaging is a dependency) resized to side×side with
// Lanczos: the real photo docs/real-data.md compares the synthetic
// contents with.
func photo(tb testing.TB, side int) image.Image {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/disintegration/imaging").Output()
	if err != nil {
		tb.Fatalf("locating imaging's module: %v", err)
	}
	img, err := imaging.Open(filepath.Join(strings.TrimSpace(string(out)), "testdata", "flowers.png"))
	if err != nil {
		tb.Fatal(err)
	}
	return imaging.Resize(img, side, side, imaging.Lanczos)
}

// BenchmarkEncodedSize reports the mean size of a JPEG (quality 90) and a
// PNG of the synthetic contents and of a real photo, in bytes and in % of
// the raw RGB bytes, at 1024² and 256²: the table of docs/real-data.md.
// The figures are deterministic; run it with -benchtime 1x.
func BenchmarkEncodedSize(b *testing.B) {
	for _, side := range []int{1024, 256} {
		for _, content := range []string{datasets.ContentNoise, datasets.ContentNatural, "photo"} {
			for _, format := range []string{"jpeg", "png"} {
				b.Run(fmt.Sprintf("size=%d/content=%s/format=%s", side, content, format), func(b *testing.B) {
					var imgs []image.Image
					if content == "photo" {
						imgs = []image.Image{photo(b, side)}
					} else {
						ds := datasets.Synthetic{Width: side, Height: side, Classes: 10, N: 8, Seed: 1, Content: content}
						s := datasets.NewSample(side, side)
						for i := range ds.N {
							if err := ds.Fill(i, s); err != nil {
								b.Fatal(err)
							}
							imgs = append(imgs, rgbaOf(s))
						}
					}
					var total int
					for b.Loop() {
						total = 0
						for _, img := range imgs {
							var buf bytes.Buffer
							var err error
							if format == "jpeg" {
								err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
							} else {
								err = png.Encode(&buf, img)
							}
							if err != nil {
								b.Fatal(err)
							}
							total += buf.Len()
						}
					}
					mean := float64(total) / float64(len(imgs))
					b.ReportMetric(mean, "bytes/image")
					b.ReportMetric(100*mean/float64(3*side*side), "%raw")
				})
			}
		}
	}
}

func rgbaOf(s *datasets.Sample) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, s.Image.Width, s.Image.Height))
	for p, q := 0, 0; p < len(s.Image.Pix); p, q = p+3, q+4 {
		img.Pix[q], img.Pix[q+1], img.Pix[q+2], img.Pix[q+3] = s.Image.Pix[p], s.Image.Pix[p+1], s.Image.Pix[p+2], 255
	}
	return img
}

// TestNaturalJPEGIsSmall is issue 23's bound: natural content written as
// JPEG (quality 90) at 1024² takes at most 15% of the raw bytes on disk,
// as photos do (noise takes 30%).
func TestNaturalJPEGIsSmall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	src := datasets.Synthetic{Width: 1024, Height: 1024, Classes: 10, N: 6, Seed: 1, Content: datasets.ContentNatural}
	m, err := Write(context.Background(), dir, src, WriteOptions{Format: "jpeg", Layout: "files"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Content != datasets.ContentNatural {
		t.Errorf("manifest content %q, want natural", m.Content)
	}
	raw := float64(3 * 1024 * 1024)
	if f := m.BytesPerSample() / raw; f > 0.15 || f < 0.01 {
		t.Errorf("natural JPEG q90 at 1024²: %.1f%% of raw, want 1%%..15%%", 100*f)
	}
	back, err := ReadManifest(dir)
	if err != nil || back.Content != datasets.ContentNatural {
		t.Fatalf("ReadManifest: content %q, %v", back.Content, err)
	}
	if _, err := os.Stat(filepath.Join(dir, m.Files[0].Name)); err != nil {
		t.Fatal(err)
	}
}
