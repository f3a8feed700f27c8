package transforms

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// referenceUint8 is the masked crop written straight from the package
// documentation, as reference draws it: the crop offset, the mask, the
// 4-neighbour dilation with zero padding, the masked pixels set to 0, in
// channel-major R, G, B planes.
func referenceUint8(cfg Config, src *datasets.Image, rng *prng.Source) []uint8 {
	c := cfg.Crop
	top := rng.IntN(src.Height - c + 1)
	left := rng.IntN(src.Width - c + 1)
	t := MaskThreshold(cfg.MaskRatio)
	mask := make([]bool, c*c)
	for p := 0; p < c*c; p += 2 {
		u := rng.Uint64()
		mask[p] = uint64(uint32(u)) < t
		mask[p+1] = uint64(uint32(u>>32)) < t
	}
	at := func(y, x int) bool { return y >= 0 && y < c && x >= 0 && x < c && mask[y*c+x] }
	out := make([]uint8, 3*c*c)
	for y := 0; y < c; y++ {
		for x := 0; x < c; x++ {
			if at(y, x) || at(y-1, x) || at(y+1, x) || at(y, x-1) || at(y, x+1) {
				continue
			}
			o := ((top+y)*src.Width + left + x) * 3
			for ch := range 3 {
				out[ch*c*c+y*c+x] = src.Pix[o+ch]
			}
		}
	}
	return out
}

func uint8Appliers(t testing.TB, cfg Config) []Uint8Applier {
	t.Helper()
	var us []Uint8Applier
	for _, tr := range newBoth(t, cfg) {
		u, ok := tr.(Uint8Applier)
		if !ok {
			t.Fatalf("%s does not implement Uint8Applier", tr.Name())
		}
		us = append(us, u)
	}
	return us
}

// TestApplyUint8ThenConvertScaleIsApply checks, for both implementations,
// several raw sizes, crops, ratios and seeds, that ApplyUint8 writes the
// documented masked crop exactly, consumes the random source as Apply does,
// and that ConvertScale of its output equals Apply's output to float32
// rounding.
func TestApplyUint8ThenConvertScaleIsApply(t *testing.T) {
	cases := []struct {
		w, h, crop int
		seeds      int
	}{
		{16, 12, 8, 4},
		{8, 8, 8, 3}, // crop equals the image
		{2, 2, 2, 3}, // the smallest crop
		{130, 70, 66, 2},
		{200, 150, 128, 2},
		{300, 260, 256, 1},
	}
	for _, tc := range cases {
		for _, ratio := range []float64{0, 0.05, 0.25, 1} {
			cfg := Config{Crop: tc.crop, MaskRatio: ratio}
			t.Run(fmt.Sprintf("raw=%dx%d/crop=%d/ratio=%v", tc.w, tc.h, tc.crop, ratio), func(t *testing.T) {
				src := randomImage(tc.w, tc.h, uint64(tc.w*tc.h+1))
				orig := bytes.Clone(src.Pix)
				trs := newBoth(t, cfg)
				us := uint8Appliers(t, cfg)
				want := make([]float32, cfg.OutLen())
				got := make([]float32, cfg.OutLen())
				pix := make([]uint8, cfg.OutLen())
				for seed := range uint64(tc.seeds) {
					ref := prng.New(seed, 5)
					wantPix := referenceUint8(cfg, src, &ref)
					after := ref.Uint64()
					for i, tr := range trs {
						rng := prng.New(seed, 5)
						if err := tr.Apply(want, src, &rng); err != nil {
							t.Fatalf("%s: Apply: %v", tr.Name(), err)
						}
						for j := range pix {
							pix[j] = 0xa5 // stale output must be overwritten
						}
						rng = prng.New(seed, 5)
						if err := us[i].ApplyUint8(pix, src, &rng); err != nil {
							t.Fatalf("%s: ApplyUint8: %v", tr.Name(), err)
						}
						if rng.Uint64() != after {
							t.Errorf("%s seed %d: ApplyUint8 consumed the random source differently from Apply", tr.Name(), seed)
						}
						if !bytes.Equal(pix, wantPix) {
							t.Fatalf("%s seed %d: ApplyUint8 differs from the documented masked crop", tr.Name(), seed)
						}
						if err := ConvertScale(got, pix, cfg.Crop); err != nil {
							t.Fatal(err)
						}
						for j := range got {
							if d := math.Abs(float64(got[j]) - float64(want[j])); !(d <= tolerance) {
								t.Fatalf("%s seed %d: value %d: ConvertScale(ApplyUint8) = %v, Apply = %v", tr.Name(), seed, j, got[j], want[j])
							}
						}
					}
				}
				if !bytes.Equal(src.Pix, orig) {
					t.Error("ApplyUint8 or Apply modified the source image")
				}
			})
		}
	}
}

func TestUint8Errors(t *testing.T) {
	cfg := Config{Crop: 8, MaskRatio: 0.25}
	good := randomImage(10, 10, 1)
	for i, u := range uint8Appliers(t, cfg) {
		name := Names[i]
		rng := prng.New(1, 1)
		for _, tc := range []struct {
			name string
			dst  []uint8
			src  *datasets.Image
			rng  *prng.Source
			want string
		}{
			{"crop wider than image", make([]uint8, cfg.OutLen()), randomImage(6, 20, 1), &rng, "larger than"},
			{"short dst", make([]uint8, cfg.OutLen()-1), good, &rng, "output has 191 values"},
			{"long dst", make([]uint8, cfg.OutLen()+1), good, &rng, "output has 193 values"},
			{"nil dst", nil, good, &rng, "output has 0 values"},
			{"short Pix", make([]uint8, cfg.OutLen()), &datasets.Image{Width: 10, Height: 10, Pix: good.Pix[:299]}, &rng, "has 299 bytes"},
			{"nil image", make([]uint8, cfg.OutLen()), nil, &rng, "nil image"},
			{"nil source", make([]uint8, cfg.OutLen()), good, nil, "nil image or random source"},
		} {
			err := u.ApplyUint8(tc.dst, tc.src, tc.rng)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Errorf("%s: %s: error %v, want %q", name, tc.name, err, tc.want)
			}
		}
	}
	for _, tc := range []struct {
		dst        int
		src, crop  int
		wantSubstr string
	}{
		{12, 12, 2, ""},
		{12, 11, 2, "11 uint8 values into 12 float32"},
		{11, 12, 2, "12 uint8 values into 11 float32"},
		{0, 0, 0, "crop 0"},
		{12, 12, -2, "crop -2"},
	} {
		err := ConvertScale(make([]float32, tc.dst), make([]uint8, tc.src), tc.crop)
		if (err == nil) != (tc.wantSubstr == "") || (err != nil && !bytes.Contains([]byte(err.Error()), []byte(tc.wantSubstr))) {
			t.Errorf("ConvertScale(%d, %d, %d) = %v, want %q", tc.dst, tc.src, tc.crop, err, tc.wantSubstr)
		}
	}
}

func TestUint8DoesNotAllocate(t *testing.T) {
	cfg := DefaultConfig()
	tr, err := New("fast", cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := tr.(Uint8Applier)
	src := randomImage(300, 280, 2)
	pix := make([]uint8, cfg.OutLen())
	dst := make([]float32, cfg.OutLen())
	rng := prng.New(3, 4)
	if n := testing.AllocsPerRun(10, func() {
		if err := u.ApplyUint8(pix, src, &rng); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("fast.ApplyUint8 allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(10, func() {
		if err := ConvertScale(dst, pix, cfg.Crop); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ConvertScale allocates %v times per call, want 0", n)
	}
}

// BenchmarkApplyUint8 times one sample's host half (ns/op is per sample) of
// each implementation on the document's 256 crop from 1024×1024 raw images;
// with -benchmem, fast shows 0 allocs/op. Compare with BenchmarkTransforms:
// the difference is the ConvertColor∘Scale work moved to the device.
func BenchmarkApplyUint8(b *testing.B) {
	cfg := DefaultConfig()
	for _, name := range Names {
		b.Run("impl="+name, func(b *testing.B) {
			const raw = 1024
			ds := datasets.Synthetic{Width: raw, Height: raw, Classes: 10, N: 1, Seed: 1}
			s := datasets.NewSample(raw, raw)
			if err := ds.Fill(0, s); err != nil {
				b.Fatal(err)
			}
			tr, err := New(name, cfg)
			if err != nil {
				b.Fatal(err)
			}
			u := tr.(Uint8Applier)
			dst := make([]uint8, cfg.OutLen())
			rng := new(prng.Source)
			b.ReportAllocs()
			b.SetBytes(int64(len(dst)))
			for i := uint64(0); b.Loop(); i++ {
				*rng = prng.New(7, i)
				if err := u.ApplyUint8(dst, &s.Image, rng); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConvertScale times the device kernel on the CPU, one 256 crop
// per op; MB/s counts the float32 bytes written.
func BenchmarkConvertScale(b *testing.B) {
	cfg := DefaultConfig()
	src := randomImage(cfg.Crop, cfg.Crop, 9).Pix // 3×Crop×Crop bytes
	dst := make([]float32, cfg.OutLen())
	b.ReportAllocs()
	b.SetBytes(4 * int64(len(dst)))
	for b.Loop() {
		if err := ConvertScale(dst, src, cfg.Crop); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleConvertScale() {
	// A 4×4 pure red raw image; nothing is masked at ratio 0.
	src := datasets.NewImage(4, 4)
	for i := 0; i < len(src.Pix); i += 3 {
		src.Pix[i] = 255
	}
	cfg := Config{Crop: 2, MaskRatio: 0}
	tr, err := New("fast", cfg)
	if err != nil {
		panic(err)
	}
	// The host: crop and mask, one byte per value.
	pix := make([]uint8, cfg.OutLen()) // 3×2×2, R, G, B planes
	rng := prng.New(1, 0)
	if err := tr.(Uint8Applier).ApplyUint8(pix, src, &rng); err != nil {
		panic(err)
	}
	// The device: ConvertColor and Scale.
	dst := make([]float32, cfg.OutLen())
	if err := ConvertScale(dst, pix, cfg.Crop); err != nil {
		panic(err)
	}
	fmt.Printf("R %d G %d B %d → Y %.4f  Cb %.4f  Cr %.4f\n", pix[0], pix[4], pix[8], dst[0], dst[4], dst[8])
	// Output: R 255 G 0 B 0 → Y 0.2990  Cb 0.3332  Cr 1.0020
}
