package transforms

import (
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// TestApplyPrecropped: the crop CropOrigin draws, cut out first, gives
// ApplyPrecropped the same tensor as Apply on the whole image, bit for
// bit, and leaves the random source where Apply leaves it, for image
// sizes and mask ratios (the mask's draws come after the crop's), over
// many samples' streams (their origins land everywhere).
func TestApplyPrecropped(t *testing.T) {
	for _, tc := range []struct {
		w, h, crop int
		ratio      float64
	}{{512, 512, 224, 0}, {512, 512, 224, 0.25}, {300, 280, 64, 0.5}, {64, 64, 64, 0.25}, {65, 200, 64, 0}} {
		cfg := Config{Crop: tc.crop, MaskRatio: tc.ratio}
		tr, err := New(Fast, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pre := tr.(Precropped)
		src := randomImage(tc.w, tc.h, 7)
		want := make([]float32, cfg.OutLen())
		got := make([]float32, cfg.OutLen())
		crop := datasets.NewImage(tc.crop, tc.crop)
		for pos := range uint64(20) {
			r1, r2, r3 := prng.New(11, pos), prng.New(11, pos), prng.New(11, pos)
			if err := tr.Apply(want, src, &r1); err != nil {
				t.Fatal(err)
			}
			top, left := CropOrigin(tc.crop, tc.w, tc.h, &r3)
			for y := range tc.crop {
				off := ((top+y)*tc.w + left) * 3
				copy(crop.Pix[y*tc.crop*3:(y+1)*tc.crop*3], src.Pix[off:off+3*tc.crop])
			}
			if err := pre.ApplyPrecropped(got, crop, tc.w, tc.h, &r2); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%dx%d crop %d ratio %v sample %d: element %d is %v, Apply's %v", tc.w, tc.h, tc.crop, tc.ratio, pos, i, got[i], want[i])
				}
			}
			if r1.State() != r2.State() {
				t.Errorf("%dx%d sample %d: the random source ends at %x, Apply's at %x", tc.w, tc.h, pos, r2.State(), r1.State())
			}
		}
	}
}

func TestApplyPrecroppedErrors(t *testing.T) {
	cfg := Config{Crop: 32}
	tr, _ := New(Fast, cfg)
	pre := tr.(Precropped)
	dst := make([]float32, cfg.OutLen())
	rng := prng.New(1, 2)
	for _, tc := range []struct {
		name string
		crop *datasets.Image
		w, h int
		want string
	}{
		{"not the crop", datasets.NewImage(64, 64), 64, 64, "precropped image of 64x64"},
		{"image smaller than the crop", datasets.NewImage(32, 32), 16, 64, "at least that large"},
		{"nil", nil, 64, 64, "nil image"},
	} {
		err := pre.ApplyPrecropped(dst, tc.crop, tc.w, tc.h, &rng)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
