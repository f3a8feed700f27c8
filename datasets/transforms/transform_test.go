package transforms

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
)

// reference is the pipeline in float64, written straight from the package
// documentation: the masked crop of referenceUint8 (the crop offset, the
// mask draws, the 4-neighbour dilation with zero padding, the masked pixels
// set to 0), then (A·rgb + b)/255.
func reference(cfg Config, src *datasets.Image, rng *prng.Source) []float64 {
	masked := referenceUint8(cfg, src, rng)
	plane := cfg.Crop * cfg.Crop
	out := make([]float64, 3*plane)
	for p := 0; p < plane; p++ {
		px := [3]float64{float64(masked[p]), float64(masked[plane+p]), float64(masked[2*plane+p])}
		for ch := 0; ch < 3; ch++ {
			v := ColorOffset[ch]
			for k := 0; k < 3; k++ {
				v += ColorMatrix[ch][k] * px[k]
			}
			out[ch*plane+p] = v / ScaleDivisor
		}
	}
	return out
}

// randomImage is a w×h image of random bytes.
func randomImage(w, h int, seed uint64) *datasets.Image {
	img := datasets.NewImage(w, h)
	r := prng.New(seed, 12345)
	r.Fill(img.Pix)
	return img
}

func newBoth(t testing.TB, cfg Config) []Transform {
	t.Helper()
	var ts []Transform
	for _, name := range Names {
		tr, err := New(name, cfg)
		if err != nil {
			t.Fatalf("New(%q, %+v): %v", name, cfg, err)
		}
		if tr.Name() != name {
			t.Fatalf("New(%q).Name() = %q", name, tr.Name())
		}
		ts = append(ts, tr)
	}
	return ts
}

const tolerance = 1e-5

func TestMatchesReference(t *testing.T) {
	cases := []struct {
		w, h, crop int
		seeds      int
	}{
		{16, 12, 8, 4},
		{8, 8, 8, 3},     // crop equals the image
		{2, 2, 2, 3},     // the smallest crop
		{130, 70, 66, 2}, // two words per row, the last one partial
		{200, 150, 128, 2},
		{300, 260, 256, 1},
		{256, 256, 256, 1}, // crop equals the image
		{1024, 1024, 256, 1},
	}
	for _, tc := range cases {
		for _, ratio := range []float64{0, 0.05, 0.25, 1} {
			cfg := Config{Crop: tc.crop, MaskRatio: ratio}
			t.Run(fmt.Sprintf("raw=%dx%d/crop=%d/ratio=%v", tc.w, tc.h, tc.crop, ratio), func(t *testing.T) {
				src := randomImage(tc.w, tc.h, uint64(tc.w*tc.h))
				orig := bytes.Clone(src.Pix)
				trs := newBoth(t, cfg)
				dst := make([]float32, cfg.OutLen())
				// Several seeds through the same Transform: scratch space
				// left by one call must not leak into the next.
				for seed := range uint64(tc.seeds) {
					ref := prng.New(seed, 99)
					want := reference(cfg, src, &ref)
					after := ref.Uint64()
					for _, tr := range trs {
						for i := range dst {
							dst[i] = float32(math.NaN())
						}
						rng := prng.New(seed, 99)
						if err := tr.Apply(dst, src, &rng); err != nil {
							t.Fatalf("%s: %v", tr.Name(), err)
						}
						if got := rng.Uint64(); got != after {
							t.Errorf("%s seed %d: consumed the random source differently from the reference", tr.Name(), seed)
						}
						bad := 0
						for i, v := range dst {
							if d := math.Abs(float64(v) - want[i]); !(d <= tolerance) {
								if bad < 5 {
									ch, p := i/(tc.crop*tc.crop), i%(tc.crop*tc.crop)
									t.Errorf("%s seed %d: channel %d pixel (%d,%d) = %v, want %v", tr.Name(), seed, ch, p/tc.crop, p%tc.crop, v, want[i])
								}
								bad++
							}
						}
						if bad > 0 {
							t.Errorf("%s seed %d: %d of %d values off by more than %g", tr.Name(), seed, bad, len(dst), tolerance)
						}
					}
				}
				if !bytes.Equal(src.Pix, orig) {
					t.Error("Apply modified the source image")
				}
			})
		}
	}
}

// TestMaskedPixels checks the extremes by value: with ratio 1 every pixel is
// masked, so the output is ColorOffset/255; with ratio 0 none is.
func TestMaskedPixels(t *testing.T) {
	src := randomImage(20, 20, 3)
	dst := make([]float32, 3*16*16)
	for _, tr := range newBoth(t, Config{Crop: 16, MaskRatio: 1}) {
		rng := prng.New(1, 1)
		if err := tr.Apply(dst, src, &rng); err != nil {
			t.Fatal(err)
		}
		for i, v := range dst {
			if want := ColorOffset[i/256] / 255; math.Abs(float64(v)-want) > tolerance {
				t.Fatalf("%s: value %d = %v, want %v", tr.Name(), i, v, want)
			}
		}
	}
}

// TestMaskDraws checks that the bit-row and float mask draws agree and that
// the ratio is honoured.
func TestMaskDraws(t *testing.T) {
	for _, c := range []int{2, 8, 66, 128, 256} {
		for _, ratio := range []float64{0, 0.25, 0.5, 1} {
			thresh := MaskThreshold(ratio)
			words := (c + 63) / 64
			bits := make([]uint64, c*words)
			r1, r2 := prng.New(uint64(c), 7), prng.New(uint64(c), 7)
			drawMaskBits(bits, c, words, thresh, &r1, make([]byte, 4*c))
			floats := drawMaskFloat(&r2, c, thresh)
			if r1 != r2 {
				t.Errorf("c=%d ratio=%v: the draws consumed the source differently", c, ratio)
			}
			set := 0
			for y := 0; y < c; y++ {
				for x := 0; x < c; x++ {
					b := bits[y*words+x/64]>>(x%64)&1 == 1
					if b != (floats[y*c+x] == 1) {
						t.Fatalf("c=%d ratio=%v: pixel (%d,%d) differs", c, ratio, y, x)
					}
					if b {
						set++
					}
				}
				if c%64 != 0 && bits[y*words+words-1]>>(c%64) != 0 {
					t.Fatalf("c=%d: bits set past the end of row %d", c, y)
				}
			}
			if got := float64(set) / float64(c*c); c == 256 && math.Abs(got-ratio) > 0.01 {
				t.Errorf("c=%d: mask fraction %v, want about %v", c, got, ratio)
			}
		}
	}
}

// parseGrid reads a mask written as rows of '#' (set) and '.' (clear);
// spaces are ignored.
func parseGrid(t testing.TB, rows []string) (w, h int, bits []uint64, floats []float64) {
	t.Helper()
	h = len(rows)
	for y, row := range rows {
		row = strings.ReplaceAll(row, " ", "")
		if y == 0 {
			w = len(row)
			bits = make([]uint64, h*((w+63)/64))
			floats = make([]float64, w*h)
		} else if len(row) != w {
			t.Fatalf("grid row %d has %d columns, want %d", y, len(row), w)
		}
		for x, ch := range row {
			switch ch {
			case '#':
				bits[y*((w+63)/64)+x/64] |= 1 << (x % 64)
				floats[y*w+x] = 1
			case '.':
			default:
				t.Fatalf("grid row %d has %q", y, ch)
			}
		}
	}
	return w, h, bits, floats
}

func formatBits(bits []uint64, w, h int) string {
	var sb strings.Builder
	words := (w + 63) / 64
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if bits[y*words+x/64]>>(x%64)&1 == 1 {
				sb.WriteByte('#')
			} else {
				sb.WriteByte('.')
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func formatBools(m []bool, w, h int) string {
	var sb strings.Builder
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if m[y*w+x] {
				sb.WriteByte('#')
			} else {
				sb.WriteByte('.')
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func TestDilate(t *testing.T) {
	cases := []struct {
		name     string
		w, h     int
		in, want []string
	}{
		{name: "single pixel", w: 5, h: 5,
			in:   []string{".....", ".....", "..#..", ".....", "....."},
			want: []string{".....", "..#..", ".###.", "..#..", "....."}},
		{name: "corners", w: 4, h: 3,
			in:   []string{"#...", "....", "...#"},
			want: []string{"##..", "#..#", "..##"}},
		{name: "other corners", w: 4, h: 3,
			in:   []string{"...#", "....", "#..."},
			want: []string{"..##", "#..#", "##.."}},
		{name: "edges", w: 5, h: 4,
			in:   []string{"..#..", "....#", "#....", "..#.."},
			want: []string{".####", "#.###", "###.#", "####."}},
		{name: "one pixel image", w: 1, h: 1, in: []string{"#"}, want: []string{"#"}},
		{name: "one row", w: 5, h: 1, in: []string{"#..#."}, want: []string{"#####"}},
		{name: "one column", w: 1, h: 5, in: []string{".", "#", ".", ".", "."}, want: []string{"#", "#", "#", ".", "."}},
		{name: "empty", w: 6, h: 3, in: []string{"......", "......", "......"}, want: []string{"......", "......", "......"}},
		{name: "checkerboard fills", w: 4, h: 4,
			in:   []string{"#.#.", ".#.#", "#.#.", ".#.#"},
			want: []string{"####", "####", "####", "####"}},
		{name: "bit 63 spreads right across the word boundary", w: 128, h: 3,
			in: []string{
				"................ ................ ................ ................ ................ ................ ................ ................",
				"................ ................ ................ ...............# ................ ................ ................ ................",
				"................ ................ ................ ................ ................ ................ ................ ................",
			},
			want: []string{
				"................ ................ ................ ...............# ................ ................ ................ ................",
				"................ ................ ................ ..............## #............... ................ ................ ................",
				"................ ................ ................ ...............# ................ ................ ................ ................",
			}},
		{name: "bit 64 spreads left across the word boundary", w: 128, h: 3,
			in: []string{
				"................ ................ ................ ................ ................ ................ ................ ................",
				"................ ................ ................ ................ #............... ................ ................ ................",
				"................ ................ ................ ................ ................ ................ ................ ................",
			},
			want: []string{
				"................ ................ ................ ................ #............... ................ ................ ................",
				"................ ................ ................ ...............# ##.............. ................ ................ ................",
				"................ ................ ................ ................ #............... ................ ................ ................",
			}},
		{name: "corners and last column of a full last word", w: 128, h: 3,
			in: []string{
				"#............... ................ ................ ................ ................ ................ ................ ...............#",
				"................ ................ ................ ...............# #............... ................ ................ ................",
				"................ ................ ................ ................ ................ ................ ................ ...............#",
			},
			want: []string{
				"##.............. ................ ................ ...............# #............... ................ ................ ..............##",
				"#............... ................ ................ ..............## ##.............. ................ ................ ...............#",
				"................ ................ ................ ...............# #............... ................ ................ ..............##",
			}},
		{name: "partial last word", w: 70, h: 2,
			in: []string{
				"................ ................ ................ ...............# ......",
				"................ ................ ................ ................ .....#",
			},
			want: []string{
				"................ ................ ................ ..............## #....#",
				"................ ................ ................ ...............# ....##",
			}},
		{name: "one-bit last word", w: 65, h: 3,
			in: []string{
				"#............... ................ ................ ................ .",
				"................ ................ ................ ................ #",
				"................ ................ ................ ..............#. .",
			},
			want: []string{
				"##.............. ................ ................ ................ #",
				"#............... ................ ................ ..............## #",
				"................ ................ ................ .............### #",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, h, in, inF := parseGrid(t, tc.in)
			if w != tc.w || h != tc.h {
				t.Fatalf("input grid is %dx%d, want %dx%d", w, h, tc.w, tc.h)
			}
			_, _, want, _ := parseGrid(t, tc.want)
			wantS := formatBits(want, w, h)

			got := make([]uint64, len(in))
			for i := range got {
				got[i] = ^uint64(0) // stale scratch must be overwritten
			}
			dilateBits(got, in, w, h)
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("dilateBits:\n%s\nwant:\n%s", formatBits(got, w, h), wantS)
					break
				}
			}
			if s := formatBools(dilateConv(inF, w, h), w, h); s != wantS {
				t.Errorf("dilateConv:\n%s\nwant:\n%s", s, wantS)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"bogus", DefaultConfig()},
		{"fast", Config{Crop: 7, MaskRatio: 0.25}},
		{"naive", Config{Crop: 0, MaskRatio: 0.25}},
		{"naive", Config{Crop: -4, MaskRatio: 0.25}},
		{"fast", Config{Crop: 8, MaskRatio: -0.1}},
		{"naive", Config{Crop: 8, MaskRatio: 1.5}},
		{"fast", Config{Crop: 8, MaskRatio: math.NaN()}},
	} {
		if tr, err := New(tc.name, tc.cfg); err == nil {
			t.Errorf("New(%q, %+v) = %v, want an error", tc.name, tc.cfg, tr)
		}
	}

	cfg := Config{Crop: 8, MaskRatio: 0.25}
	good := randomImage(10, 10, 1)
	for _, tr := range newBoth(t, cfg) {
		rng := prng.New(1, 1)
		for _, tc := range []struct {
			name string
			dst  []float32
			src  *datasets.Image
			rng  *prng.Source
		}{
			{"crop wider than image", make([]float32, cfg.OutLen()), randomImage(6, 20, 1), &rng},
			{"crop taller than image", make([]float32, cfg.OutLen()), randomImage(20, 7, 1), &rng},
			{"short dst", make([]float32, cfg.OutLen()-1), good, &rng},
			{"long dst", make([]float32, cfg.OutLen()+1), good, &rng},
			{"nil dst", nil, good, &rng},
			{"short Pix", nil, &datasets.Image{Width: 10, Height: 10, Pix: good.Pix[:299]}, &rng},
			{"long Pix", make([]float32, cfg.OutLen()), &datasets.Image{Width: 10, Height: 10, Pix: make([]uint8, 301)}, &rng},
			{"nil image", make([]float32, cfg.OutLen()), nil, &rng},
			{"nil source", make([]float32, cfg.OutLen()), good, nil},
		} {
			if err := tr.Apply(tc.dst, tc.src, tc.rng); err == nil {
				t.Errorf("%s: %s: no error", tr.Name(), tc.name)
			}
		}
	}
}

func TestFastDoesNotAllocate(t *testing.T) {
	cfg := DefaultConfig()
	tr, err := New("fast", cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := randomImage(300, 280, 2)
	dst := make([]float32, cfg.OutLen())
	rng := prng.New(3, 4)
	if n := testing.AllocsPerRun(10, func() {
		if err := tr.Apply(dst, src, &rng); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("fast.Apply allocates %v times per call, want 0", n)
	}
}

// TestConcurrentWorkers shares one raw image between workers, each with its
// own Transform, as the loaders do; run with -race.
func TestConcurrentWorkers(t *testing.T) {
	cfg := Config{Crop: 32, MaskRatio: 0.25}
	src := randomImage(48, 40, 5)
	const workers, perWorker = 4, 3
	want := make([][]float64, workers*perWorker)
	for i := range want {
		rng := prng.New(11, uint64(i))
		want[i] = reference(cfg, src, &rng)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			trs := newBoth(t, cfg)
			dst := make([]float32, cfg.OutLen())
			for k := range perWorker {
				i := w*perWorker + k
				for _, tr := range trs {
					rng := prng.New(11, uint64(i))
					if err := tr.Apply(dst, src, &rng); err != nil {
						errs <- err
						return
					}
					for j, v := range dst {
						if math.Abs(float64(v)-want[i][j]) > tolerance {
							errs <- fmt.Errorf("%s sample %d: value %d = %v, want %v", tr.Name(), i, j, v, want[i][j])
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzDilate compares the bit-row dilation with the convolution on random
// small masks.
func FuzzDilate(f *testing.F) {
	f.Add(uint8(5), uint8(5), []byte{0x00, 0x10, 0x00, 0x00})
	f.Add(uint8(63), uint8(3), []byte{0xff, 0x00, 0x81})
	f.Add(uint8(64), uint8(2), []byte{0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80})
	f.Add(uint8(127), uint8(4), []byte{0x55, 0xaa, 0x01, 0x80, 0x00, 0x00, 0x00, 0x01})
	f.Add(uint8(0), uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, wb, hb uint8, data []byte) {
		w, h := 1+int(wb)%140, 1+int(hb)%12
		words := (w + 63) / 64
		bits := make([]uint64, h*words)
		floats := make([]float64, w*h)
		for p := 0; p < w*h && len(data) > 0; p++ {
			if data[(p/8)%len(data)]>>(p%8)&1 == 1 {
				y, x := p/w, p%w
				bits[y*words+x/64] |= 1 << (x % 64)
				floats[p] = 1
			}
		}
		got := make([]uint64, len(bits))
		dilateBits(got, bits, w, h)
		conv := dilateConv(floats, w, h)
		if a, b := formatBits(got, w, h), formatBools(conv, w, h); a != b {
			t.Fatalf("%dx%d mask\n%s\ndilateBits:\n%s\ndilateConv:\n%s", w, h, formatBits(bits, w, h), a, b)
		}
		if w%64 != 0 {
			for y := 0; y < h; y++ {
				if got[y*words+words-1]>>(w%64) != 0 {
					t.Fatalf("%dx%d: dilateBits set bits past the end of row %d", w, h, y)
				}
			}
		}
	})
}

func ExampleNew() {
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
	dst := make([]float32, cfg.OutLen()) // 3×2×2, channel-major
	rng := prng.New(1, 0)
	if err := tr.Apply(dst, src, &rng); err != nil {
		panic(err)
	}
	fmt.Printf("Y %.4f  Cb %.4f  Cr %.4f\n", dst[0], dst[4], dst[8])
	// Output: Y 0.2990  Cb 0.3332  Cr 1.0020
}
