package turbojpeg

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"strings"
	"testing"

	"github.com/disintegration/imaging"
)

// The factors of libjpeg-turbo 2.x and 3.x, largest first.
var factors2x = []Factor{{2, 1}, {15, 8}, {7, 4}, {13, 8}, {3, 2}, {11, 8}, {5, 4}, {9, 8},
	{1, 1}, {7, 8}, {3, 4}, {5, 8}, {1, 2}, {3, 8}, {1, 4}, {1, 8}}

func TestScalingFactors(t *testing.T) {
	got := mustLoad(t).ScalingFactors()
	if fmt.Sprint(got) != fmt.Sprint(factors2x) {
		t.Errorf("ScalingFactors() = %v, want %v", got, factors2x)
	}
}

// TestFit is the rule for several raw and crop sizes: the smallest
// factor of 1/1, 1/2, 1/4 and 1/8 whose output still holds the crop.
func TestFit(t *testing.T) {
	for _, tc := range []struct {
		w, h, minW, minH int
		want             string // "" when none fits
	}{
		{1024, 1024, 256, 256, "1/4"},
		{1024, 1024, 224, 224, "1/4"},
		{1024, 1024, 257, 257, "1/2"}, // not 3/8 (384): it does not pay
		{1024, 1024, 512, 512, "1/2"},
		{1024, 1024, 128, 128, "1/8"},
		{1024, 1024, 64, 64, "1/8"}, // never below the smallest factor
		{1024, 1024, 1024, 1024, "1/1"},
		{1024, 1024, 1025, 1025, ""},  // no upscaling
		{256, 256, 224, 224, "1/1"},   // 7/8 would hold it, but does not pay
		{1024, 1024, 768, 768, "1/1"}, // nor 3/4
		{1024, 1024, 600, 600, "1/1"}, // nor 5/8 (640)
		{256, 256, 256, 256, "1/1"},
		{256, 256, 64, 64, "1/4"},
		{1024, 768, 256, 256, "1/2"},  // the short side decides: 768/4 = 192 < 256
		{1000, 1000, 250, 250, "1/4"}, // exactly 250
		{1001, 1001, 126, 126, "1/8"}, // ⌈1001/8⌉ = 126
		{999, 999, 125, 125, "1/8"},   // ⌈999/8⌉ = 125
		{10, 10, 5, 5, "1/2"},
		{10, 10, 3, 3, "1/4"}, // ⌈2.5⌉ = 3
		{10, 10, 4, 4, "1/2"}, // 3/8 would give ⌈3.75⌉ = 4
		{10, 10, 8, 8, "1/1"},
	} {
		f, ok := Fit(factors2x, tc.w, tc.h, tc.minW, tc.minH)
		got := ""
		if ok {
			got = f.String()
		}
		if got != tc.want {
			t.Errorf("Fit(%dx%d, at least %dx%d) = %q, want %q", tc.w, tc.h, tc.minW, tc.minH, got, tc.want)
		}
		if ok && (f.Scaled(tc.w) < tc.minW || f.Scaled(tc.h) < tc.minH) {
			t.Errorf("Fit(%dx%d) = %s gives %dx%d, smaller than %dx%d", tc.w, tc.h, f, f.Scaled(tc.w), f.Scaled(tc.h), tc.minW, tc.minH)
		}
	}
}

// TestDecodeScaled checks scaled decoding against an oracle: Go's
// image/jpeg decode of the full image, reduced to the same size by
// imaging.Resize: with the box filter at 1/2^k (the reduced IDCT then
// averages whole pixel blocks, as a box does), with Lanczos at the other
// M/8 factors (an 8→M resampling of each block, sharper than a box). Two
// different reductions of one image agree to a few levels on average; a
// wrong factor, stride or channel order misses by tens.
func TestDecodeScaled(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		side   int
		f      Factor
		filter imaging.ResampleFilter
		tol    float64
	}{
		{512, Factor{1, 1}, imaging.Box, 2},     // measured 1.1
		{512, Factor{1, 2}, imaging.Box, 2},     // 0.5
		{512, Factor{1, 4}, imaging.Box, 2},     // 0.5
		{512, Factor{1, 8}, imaging.Box, 2},     // 0.4
		{512, Factor{3, 8}, imaging.Lanczos, 4}, // 2.2
		{256, Factor{7, 8}, imaging.Lanczos, 4}, // 2.6
		{200, Factor{3, 4}, imaging.Lanczos, 5}, // 3.4
	} {
		t.Run(fmt.Sprintf("%d-at-%d-%d", tc.side, tc.f.Num, tc.f.Denom), func(t *testing.T) {
			data, _ := naturalJPEG(t, tc.side, 5)
			want := tc.f.Scaled(tc.side)
			// A buffer for the full image, as a worker keeps: the decode
			// fills its start and leaves the rest.
			buf := bytes.Repeat([]byte{0xAB}, 3*tc.side*tc.side)
			w, h, err := d.DecodeRGBScaled(data, buf, tc.side, tc.side, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if w != want || h != want {
				t.Fatalf("decoded %dx%d, want %dx%d", w, h, want, want)
			}
			if rest := buf[3*w*h:]; len(rest) > 0 && bytes.Count(rest, []byte{0xAB}) != len(rest) {
				t.Errorf("the decode wrote beyond its %dx%d image", w, h)
			}
			full, err := jpeg.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			oracle := imaging.Resize(full, w, h, tc.filter)
			if diff := meanAbsDiff(buf[:3*w*h], rgbOf(oracle)); diff > tc.tol {
				t.Errorf("scaled decode and image/jpeg + imaging.Resize differ by %.2f levels on average, want ≤ %v", diff, tc.tol)
			} else {
				t.Logf("%.2f levels from the oracle on average", diff)
			}
		})
	}
}

// rgbOf is an NRGBA image's interleaved RGB.
func rgbOf(m *image.NRGBA) []byte {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := make([]byte, 0, 3*w*h)
	for y := range h {
		row := m.Pix[y*m.Stride:]
		for x := range w {
			out = append(out, row[4*x], row[4*x+1], row[4*x+2])
		}
	}
	return out
}

func TestDecodeScaledErrors(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, _ := naturalJPEG(t, 64, 0)
	buf := make([]byte, 3*64*64)
	for _, tc := range []struct {
		name string
		data []byte
		dst  []byte
		f    Factor
		want string
	}{
		{"not a factor", data, buf, Factor{1, 3}, "scaling factor 1/3: not one of the library's"},
		{"short buffer", data, buf[:3*31*32], Factor{1, 2}, "image is 64x64 at 1/2: 32x32"},
		{"not a JPEG", []byte("not a jpeg"), buf, Factor{1, 2}, "header"},
		{"truncated", data[:len(data)/2], buf, Factor{1, 2}, "decode"},
	} {
		_, _, err := d.DecodeRGBScaled(tc.data, tc.dst, 64, 64, tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := d.DecodeRGBScaled(data, buf, 32, 32, Factor{1, 2}); err == nil || !strings.Contains(err.Error(), "image is 64x64, want 32x32") {
		t.Errorf("wrong size: %v", err)
	}
}

func TestDecodeScaledAllocatesNothing(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, _ := naturalJPEG(t, 256, 1)
	buf := make([]byte, 3*256*256)
	// 200 runs: under -race, sync.Pool drops a quarter of its Puts on
	// purpose, and purego takes its call frames from one, so about half
	// a frame is remade per decode there; AllocsPerRun's whole-number
	// mean stays 0 unless every decode allocates (without -race, nothing
	// is dropped and any allocation shows).
	if n := testing.AllocsPerRun(200, func() {
		if _, _, err := d.DecodeRGBScaled(data, buf, 256, 256, Factor{1, 4}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("DecodeRGBScaled: %.1f allocations per image, want 0", n)
	}
}

// BenchmarkDecodeScaled decodes one natural JPEG (quality 90, Go's
// encoder, 4:2:0) at several factors: ns/op is per image, and a scaled
// decode allocates nothing (-benchmem). 1/2, 1/4 and 1/8 have
// libjpeg-turbo's SIMD reduced IDCTs; the other M/8 factors use its
// generic C ones. cpu-ns/op is the process's CPU time per image, the
// steadier figure on a shared machine.
func BenchmarkDecodeScaled(b *testing.B) {
	l := mustLoad(b)
	for _, side := range []int{1024, 256} {
		data, _ := naturalJPEG(b, side, 2)
		for _, f := range []Factor{{1, 1}, {7, 8}, {3, 4}, {5, 8}, {1, 2}, {3, 8}, {1, 4}, {1, 8}} {
			b.Run(fmt.Sprintf("raw=%d/factor=%d-%d", side, f.Num, f.Denom), func(b *testing.B) {
				d, err := l.NewDecoder()
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				buf := make([]byte, 3*side*side)
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					if _, _, err := d.DecodeRGBScaled(data, buf, side, side, f); err != nil {
						b.Fatal(err)
					}
				}
				if cpu := processCPU() - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
