package turbojpeg

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
)

// mustLoad fails, not skips, without the library: make test installs it
// (TEST_DEBS in the Makefile).
func mustLoad(tb testing.TB) *Library {
	tb.Helper()
	l, err := Load()
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// naturalJPEG encodes natural sample i at side² with Go's encoder.
func naturalJPEG(tb testing.TB, side, i int) ([]byte, *datasets.Sample) {
	tb.Helper()
	ds := datasets.Synthetic{Width: side, Height: side, Classes: 10, N: i + 1, Seed: 1, Content: datasets.ContentNatural}
	s := datasets.NewSample(side, side)
	if err := ds.Fill(i, s); err != nil {
		tb.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	for p, q := 0, 0; p < len(s.Image.Pix); p, q = p+3, q+4 {
		img.Pix[q], img.Pix[q+1], img.Pix[q+2], img.Pix[q+3] = s.Image.Pix[p], s.Image.Pix[p+1], s.Image.Pix[p+2], 255
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), s
}

func TestLoadVersion(t *testing.T) {
	l := mustLoad(t)
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+`).MatchString(l.Version()) {
		t.Errorf("Version() = %q, want libjpeg-turbo's X.Y.Z (library %s)", l.Version(), l.Path())
	}
	if !strings.Contains(l.Path(), "turbojpeg") {
		t.Errorf("Path() = %q", l.Path())
	}
}

// TestDecodeMatchesGo decodes the same JPEG with TurboJPEG and Go's
// image/jpeg: two correct decoders differ only by rounding and chroma
// upsampling, by a few levels on average.
func TestDecodeMatchesGo(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, side := range []int{256, 200, 512} {
		data, orig := naturalJPEG(t, side, 3)
		w, h, err := d.Header(data)
		if err != nil || w != side || h != side {
			t.Fatalf("Header: %dx%d, %v; want %dx%d", w, h, err, side, side)
		}
		got := make([]byte, 3*side*side)
		if err := d.DecodeRGB(data, got, side, side); err != nil {
			t.Fatal(err)
		}
		gimg, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, 0, 3*side*side)
		for y := range side {
			for x := range side {
				r, g, b, _ := gimg.At(x, y).RGBA()
				want = append(want, byte(r>>8), byte(g>>8), byte(b>>8))
			}
		}
		if d := meanAbsDiff(got, want); d > 3 {
			t.Errorf("%d²: TurboJPEG and image/jpeg differ by %.2f levels on average, want ≤ 3", side, d)
		}
		if d := meanAbsDiff(got, orig.Image.Pix); d > 8 {
			t.Errorf("%d²: decoded image is %.2f levels from the original on average, want ≤ 8 (quality 90)", side, d)
		}
	}
}

func meanAbsDiff(a, b []byte) float64 {
	var s int
	for i := range a {
		d := int(a[i]) - int(b[i])
		s += max(d, -d)
	}
	return float64(s) / float64(len(a))
}

func TestDecodeErrors(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, _ := naturalJPEG(t, 32, 0)
	buf := make([]byte, 3*32*32)
	for _, tc := range []struct {
		name string
		data []byte
		dst  []byte
		w, h int
		want string
	}{
		{"empty", nil, buf, 32, 32, "empty input"},
		{"not a JPEG", []byte("GIF89a, not a jpeg at all"), buf, 32, 32, "header"},
		{"wrong size", data, buf, 16, 16, "image is 32x32, want 16x16"},
		{"short buffer", data, buf[:10], 32, 32, "RGB buffer is 10 bytes"},
		{"truncated", data[:len(data)-len(data)/4], buf, 32, 32, "decode"},
	} {
		err := d.DecodeRGB(tc.data, tc.dst, tc.w, tc.h)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", tc.name, err, tc.want)
		}
	}
	// The handle still works after errors.
	if err := d.DecodeRGB(data, buf, 32, 32); err != nil {
		t.Errorf("after errors: %v", err)
	}
}

func TestDecodeAllocatesNothing(t *testing.T) {
	d, err := mustLoad(t).NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	data, _ := naturalJPEG(t, 128, 1)
	buf := make([]byte, 3*128*128)
	// 200 runs: under -race, sync.Pool drops a quarter of its Puts on
	// purpose, and purego takes its call frames from one, so about half
	// a frame is remade per decode there; AllocsPerRun's whole-number
	// mean stays 0 unless every decode allocates (without -race, nothing
	// is dropped and any allocation shows).
	if n := testing.AllocsPerRun(200, func() {
		if err := d.DecodeRGB(data, buf, 128, 128); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("DecodeRGB: %.1f allocations per image, want 0", n)
	}
}

// TestLoadErrorIsOneLine: without the library, the error wraps
// ErrUnavailable, names the Debian package and every file tried, on one
// line (the command prints it as its one line).
func TestLoadErrorIsOneLine(t *testing.T) {
	names := Names
	t.Cleanup(func() { Names = names })
	Names = []string{"/nonexistent/libturbojpeg.so.0", "libturbojpeg-none.so"}
	_, err := load()
	if err == nil || !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("load() = %q, want one line wrapping ErrUnavailable", err)
	}
	for _, s := range []string{"apt-get install " + Package, "--decoder go"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if runtime.GOOS == "linux" {
		for _, s := range Names {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not name %s", err, s)
			}
		}
	}
}
