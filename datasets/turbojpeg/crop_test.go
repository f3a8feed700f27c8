package turbojpeg

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/internal/nativelib"
)

// The subsamplings TurboJPEG encodes (TJSAMP_*), for the tests' JPEGs.
var subsamplings = []struct {
	name string
	samp int
}{{"444", 0}, {"422", 1}, {"420", 2}, {"gray", 3}, {"440", 4}, {"411", 5}}

// encodeTJ encodes natural sample i of w×h with TurboJPEG at subsampling
// samp and quality 90: JPEGs of every subsampling, which Go's encoder
// (4:2:0 only) cannot write.
func encodeTJ(tb testing.TB, w, h, i, samp int) []byte {
	tb.Helper()
	var initCompress, compress2, bufSize, destroy uintptr
	if _, err := nativelib.OpenFirst(Names, []nativelib.Symbol{
		{Name: "tjInitCompress", Addr: &initCompress}, {Name: "tjCompress2", Addr: &compress2},
		{Name: "tjBufSize", Addr: &bufSize}, {Name: "tjDestroy", Addr: &destroy},
	}); err != nil {
		tb.Fatal(err)
	}
	ds := datasets.Synthetic{Width: w, Height: h, Classes: 10, N: i + 1, Seed: 1, Content: datasets.ContentNatural}
	s := datasets.NewSample(w, h)
	if err := ds.Fill(i, s); err != nil {
		tb.Fatal(err)
	}
	handle := nativelib.Call(initCompress)
	if handle == 0 {
		tb.Fatal("tjInitCompress failed")
	}
	defer nativelib.Call(destroy, handle)
	out := make([]byte, nativelib.Call(bufSize, uintptr(w), uintptr(h), uintptr(samp)))
	p, size := uintptr(unsafe.Pointer(&out[0])), uint64(len(out))
	r := int32(nativelib.Call(compress2, handle, bytesAddr(s.Image.Pix), uintptr(w), uintptr(3*w), uintptr(h), pixelRGB,
		uintptr(unsafe.Pointer(&p)), uintptr(unsafe.Pointer(&size)), uintptr(samp), 90, flagNoRealloc))
	keepAlive(s.Image.Pix)
	keepAlive(out)
	if r != 0 {
		tb.Fatalf("tjCompress2 %dx%d subsampling %d failed", w, h, samp)
	}
	return out[:size]
}

// fullCrop is the reference: the whole image decoded, then cropped.
func fullCrop(tb testing.TB, d *Decoder, data []byte, w, h int, c Rect) []byte {
	tb.Helper()
	full := make([]byte, 3*w*h)
	if err := d.DecodeRGB(data, full, w, h); err != nil {
		tb.Fatal(err)
	}
	want := make([]byte, 3*c.W*c.H)
	cropRows(want, full, Rect{W: w, H: h}, c)
	return want
}

// TestDecodeCropEqualsFullDecode: a cropped decode gives the crop of a
// full decode bit for bit, with either IDCT, for every subsampling, for
// image sizes on and off the MCU grid, and crops anywhere: at the
// corners, on the grid, one pixel off it, within the margin of an edge.
func TestDecodeCropEqualsFullDecode(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, ss := range subsamplings {
		for _, size := range [][2]int{{512, 512}, {333, 251}, {64, 48}} {
			w, h := size[0], size[1]
			data := encodeTJ(t, w, h, 4, ss.samp)
			for _, c := range []Rect{
				{0, 0, 32, 32}, {w - 32, h - 32, 32, 32}, {16, 16, 32, 32}, {17, 15, 31, 33},
				{1, 1, 30, 30}, {2, 3, 28, 26}, {w - 33, 1, 31, 22}, {5, h - 21, 40, 20},
				{w / 3, h / 5, w / 2, h / 2}, {0, 0, w, h}, {w/2 - 1, h/2 - 1, 1, 1},
			} {
				for _, idct := range IDCTs {
					if err := d.SetIDCT(idct); err != nil {
						t.Fatal(err)
					}
					want := fullCrop(t, d, data, w, h, c)
					got := make([]byte, len(want))
					if err := d.DecodeCropRGB(data, got, w, h, c); err != nil {
						t.Fatalf("%s %dx%d crop %+v: %v", ss.name, w, h, c, err)
					}
					if n, at := diffAt(got, want, c.W); n > 0 {
						t.Errorf("%s %dx%d crop %+v, %s IDCT: %d bytes differ from decode-then-crop, the first at %s", ss.name, w, h, c, idct, n, at)
					}
				}
			}
		}
	}
}

// diffAt counts the bytes that differ and names the first (x, y, channel).
func diffAt(got, want []byte, w int) (int, string) {
	n, at := 0, ""
	for i := range got {
		if got[i] != want[i] {
			if n == 0 {
				at = fmt.Sprintf("(%d, %d) channel %d: %d, want %d", i/3%w, i/3/w, i%3, got[i], want[i])
			}
			n++
		}
	}
	return n, at
}

func TestDecodeCropErrors(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, _ := naturalJPEG(t, 64, 0)
	buf := make([]byte, 3*16*16)
	for _, tc := range []struct {
		name string
		data []byte
		dst  []byte
		w, h int
		c    Rect
		want string
	}{
		{"empty", nil, buf, 64, 64, Rect{0, 0, 16, 16}, "empty input"},
		{"not a JPEG", []byte("GIF89a, not a jpeg at all"), buf, 64, 64, Rect{0, 0, 16, 16}, "header"},
		{"wrong size", data, buf, 32, 32, Rect{0, 0, 16, 16}, "image is 64x64, want 32x32"},
		{"outside", data, buf, 64, 64, Rect{50, 0, 16, 16}, "not inside the 64x64 image"},
		{"negative", data, buf, 64, 64, Rect{-1, 0, 16, 16}, "not inside"},
		{"empty crop", data, buf[:0], 64, 64, Rect{0, 0, 0, 0}, "not inside"},
		{"short buffer", data, buf[:10], 64, 64, Rect{0, 0, 16, 16}, "RGB buffer is 10 bytes"},
		{"truncated", data[:len(data)*3/4], buf, 64, 64, Rect{40, 40, 16, 16}, "crop"},
	} {
		err := d.DecodeCropRGB(tc.data, tc.dst, tc.w, tc.h, tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
	if err := d.SetIDCT("float"); err == nil || !strings.Contains(err.Error(), `IDCT "float"`) {
		t.Errorf("SetIDCT(float): %v", err)
	}
	// The handles still work after errors.
	if err := d.DecodeCropRGB(data, buf, 64, 64, Rect{8, 8, 16, 16}); err != nil {
		t.Errorf("after errors: %v", err)
	}
}

func TestDecodeCropAllocatesNothing(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, _ := naturalJPEG(t, 256, 1)
	buf := make([]byte, 3*100*100)
	c := Rect{0, 0, 100, 100}
	if err := d.DecodeCropRGB(data, buf, 256, 256, Rect{150, 150, 100, 100}); err != nil { // grows to the largest window
		t.Fatal(err)
	}
	// 200 runs: see TestDecodeAllocatesNothing. A cropped decode makes
	// a libjpeg call per row group read (dozens), so under -race, where
	// purego remakes about a quarter of its call frames, it may allocate
	// up to half as many times as it calls; without -race, never.
	calls := 0
	n := testing.AllocsPerRun(200, func() {
		c.X, c.Y = (c.X+37)%157, (c.Y+53)%157
		if err := d.DecodeCropRGB(data, buf, 256, 256, c); err != nil {
			t.Fatal(err)
		}
		calls = max(calls, d.js.calls)
	})
	switch limit := float64(calls) / 2; {
	case raceEnabled && n > limit:
		t.Errorf("DecodeCropRGB under -race: %.1f allocations per image, want at most %.1f (half its %d libjpeg calls)", n, limit, calls)
	case !raceEnabled && n != 0:
		t.Errorf("DecodeCropRGB: %.1f allocations per image, want 0", n)
	}
}

// BenchmarkDecodeCrop is the fast transforms' decode on the peers' images
// (natural JPEGs of 512², quality 90, Go's encoder, 4:2:0: what
// headspace peer --peers writes) with their crop (224², at positions
// drawn per image): decode=full is DecodeRGB then the crop copied out
// (what ours did), decode=crop is DecodeCropRGB (the libjpeg API: the
// crop's columns only, the rows above skipped, none below); each with the
// accurate IDCT and the fast one. (At commit 1392c5a decode=crop was
// TurboJPEG's tjTransform, a lossless crop of the window then the window
// decoded: no faster than decode=full, results/decode-crop-tjtransform.txt.) scale=1-2 is a half-scale decode of the whole
// image (reference only: a crop drawn from it is another job). ns/op and
// cpu-ns/op are per image; -benchmem shows no allocation per image.
func BenchmarkDecodeCrop(b *testing.B) {
	const side, crop, images = 512, 224, 16
	l := mustLoad(b)
	data := make([][]byte, images)
	for i := range data {
		data[i], _ = naturalJPEG(b, side, i)
	}
	// Crop positions drawn once, as the transforms draw theirs.
	pos := make([][2]int, images)
	for i := range pos {
		pos[i] = [2]int{(i * 7919) % (side - crop + 1), (i * 104729) % (side - crop + 1)}
	}
	for _, idct := range IDCTs {
		for _, mode := range []string{"full", "crop", "scale=1-2"} {
			name := "decode=" + mode + "/idct=" + idct
			if mode == "scale=1-2" {
				name = mode + "/idct=" + idct
			}
			b.Run(name, func(b *testing.B) {
				d, err := l.NewDecoder()
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				if err := d.SetIDCT(idct); err != nil {
					b.Fatal(err)
				}
				full := make([]byte, 3*side*side)
				out := make([]byte, 3*crop*crop)
				decode := func(k int) {
					c := Rect{X: pos[k][1], Y: pos[k][0], W: crop, H: crop}
					switch mode {
					case "full":
						if err := d.DecodeRGB(data[k], full, side, side); err != nil {
							b.Fatal(err)
						}
						cropRows(out, full, Rect{W: side, H: side}, c)
					case "crop":
						if err := d.DecodeCropRGB(data[k], out, side, side, c); err != nil {
							b.Fatal(err)
						}
					default:
						if _, _, err := d.DecodeRGBScaled(data[k], full, side, side, Factor{1, 2}); err != nil {
							b.Fatal(err)
						}
					}
				}
				for k := range images { // the decoder's buffers grow here, before timing
					decode(k)
				}
				b.ReportAllocs()
				cpu0 := processCPU()
				i := 0
				for b.Loop() {
					decode(i % images)
					i++
				}
				if cpu := processCPU() - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}

// badHuffman is data with its first Huffman table made impossible (three
// codes of length 1) but its byte counts kept: TurboJPEG reads the header,
// and libjpeg fails only when it builds the table, in
// jpeg_start_decompress, through error_exit.
func badHuffman(tb testing.TB, data []byte) []byte {
	tb.Helper()
	out := append([]byte(nil), data...)
	for i := 2; i+4 < len(out); {
		if out[i] != 0xff {
			tb.Fatalf("no marker at %d", i)
		}
		seg := int(out[i+2])<<8 | int(out[i+3])
		if out[i+1] == 0xc4 {
			counts := out[i+5 : i+5+16]
			for k := 15; k > 0; k-- {
				if counts[k] >= 3 {
					counts[k] -= 3
					counts[0] += 3
					return out
				}
			}
		}
		i += 2 + seg
	}
	tb.Fatal("no Huffman table with 3 codes of one length")
	return nil
}

// TestDecodeCropErrorExit: a fatal libjpeg error after the header is an
// error in one line, the decoder goes on with a new libjpeg object, and
// nothing returns into libjpeg (its goroutine stays parked).
func TestDecodeCropErrorExit(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, _ := naturalJPEG(t, 64, 0)
	buf := make([]byte, 3*16*16)
	if err := d.DecodeCropRGB(data, buf, 64, 64, Rect{8, 8, 16, 16}); err != nil {
		t.Fatal(err)
	}
	before := parked.Load()
	err = d.DecodeCropRGB(badHuffman(t, data), buf, 64, 64, Rect{8, 8, 16, 16})
	if err == nil || !strings.Contains(err.Error(), "Huffman") || strings.Contains(err.Error(), "\n") {
		t.Errorf("bad Huffman table: error %v, want one line naming the Huffman table", err)
	}
	if got := parked.Load(); got != before+1 {
		t.Errorf("parked goroutines: %d, want %d", got, before+1)
	}
	want := fullCrop(t, d, data, 64, 64, Rect{8, 8, 16, 16})
	if err := d.DecodeCropRGB(data, buf, 64, 64, Rect{8, 8, 16, 16}); err != nil {
		t.Fatalf("after the error: %v", err)
	}
	if n, at := diffAt(buf, want, 16); n > 0 {
		t.Errorf("after the error: %d bytes differ, the first at %s", n, at)
	}
}
