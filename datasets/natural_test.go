package datasets

import (
	"bytes"
	"math"
	"testing"
)

func TestNaturalDeterministicAndDistinct(t *testing.T) {
	ds := Synthetic{Width: 96, Height: 64, Classes: 10, N: 50, Seed: 3, Content: ContentNatural}
	a, b := NewSample(96, 64), NewSample(96, 64)
	for _, i := range []int{0, 49, 7} {
		if err := ds.Fill(i, a); err != nil {
			t.Fatal(err)
		}
		if err := ds.Fill(48, b); err != nil { // another size of leaf list in between
			t.Fatal(err)
		}
		if err := ds.Fill(i, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Image.Pix, b.Image.Pix) || a.Label != b.Label {
			t.Errorf("sample %d differs between fills", i)
		}
	}
	noise := ds
	noise.Content = ContentNoise
	if err := noise.Fill(7, b); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Image.Pix, b.Image.Pix) {
		t.Error("natural and noise sample 7 are identical")
	}
	other := ds
	other.Seed = 4
	if err := other.Fill(7, b); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Image.Pix, b.Image.Pix) {
		t.Error("seed does not change natural sample 7")
	}
}

// TestNaturalStatistics checks what makes the images natural rather than
// noise: neighbouring pixels are strongly correlated (flat regions), yet
// the image is not flat (edges, many colours), and its brightness spans
// most of the range.
func TestNaturalStatistics(t *testing.T) {
	for _, side := range []int{256, 1024} {
		ds := Synthetic{Width: side, Height: side, Classes: 10, N: 4, Seed: 1, Content: ContentNatural}
		s := NewSample(side, side)
		for i := range ds.N {
			if err := ds.Fill(i, s); err != nil {
				t.Fatal(err)
			}
			p := s.Image.Pix
			var sx, sy, sxx, syy, sxy float64
			n := 0
			smallSteps, bigSteps := 0, 0
			lo, hi := 255, 0
			for j := 0; j+3 < len(p); j += 3 {
				if (j/3)%side == side-1 {
					continue
				}
				x, y := float64(p[j]), float64(p[j+3]) // red of horizontal neighbours
				sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
				n++
				d := math.Abs(x - y)
				if d <= 2 {
					smallSteps++
				} else if d >= 20 {
					bigSteps++
				}
				lo, hi = min(lo, int(p[j])), max(hi, int(p[j]))
			}
			fn := float64(n)
			cov := sxy/fn - sx*sy/fn/fn
			corr := cov / math.Sqrt((sxx/fn-sx*sx/fn/fn)*(syy/fn-sy*sy/fn/fn))
			if corr < 0.8 {
				t.Errorf("%d² sample %d: neighbour correlation %.3f, want ≥ 0.8 (noise has 0)", side, i, corr)
			}
			if f := float64(smallSteps) / fn; f < 0.8 {
				t.Errorf("%d² sample %d: %.2f of neighbour steps within ±2 levels, want ≥ 0.8 (flat regions)", side, i, f)
			}
			if bigSteps == 0 || hi-lo < 128 {
				t.Errorf("%d² sample %d: %d edges, brightness %d..%d: want edges and a wide range", side, i, bigSteps, lo, hi)
			}
		}
	}
}

func TestNaturalAllocatesNothing(t *testing.T) {
	ds := Synthetic{Width: 128, Height: 128, Classes: 10, N: 100, Seed: 1, Content: ContentNatural}
	s := NewSample(128, 128)
	_ = ds.Fill(0, s)
	i := 0
	// The pool may drop its scratch at a GC; averaged over 50 fills that
	// is below one allocation per fill.
	if n := testing.AllocsPerRun(50, func() { i++; _ = ds.Fill(i%ds.N, s) }); n >= 1 {
		t.Errorf("Fill natural: %.1f allocations per sample, want 0", n)
	}
}

func TestParseContent(t *testing.T) {
	for in, want := range map[string]string{"": ContentNoise, "noise": ContentNoise, "natural": ContentNatural} {
		if got, err := ParseContent(in); err != nil || got != want {
			t.Errorf("ParseContent(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseContent("leaves"); err == nil {
		t.Error(`ParseContent("leaves"): no error`)
	}
	if err := (Synthetic{Width: 1, Height: 1, Classes: 1, N: 1, Content: "x"}).Validate(); err == nil {
		t.Error("Validate accepts content x")
	}
}
