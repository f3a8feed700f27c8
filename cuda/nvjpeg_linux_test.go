//go:build linux

package cuda

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeNvjpeg builds testdata/fakenvjpeg.c into a shared library and returns
// its path.
func fakeNvjpeg(t *testing.T, defines ...string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("the fake nvJPEG needs the C compiler cc: %v", err)
	}
	so := filepath.Join(t.TempDir(), "libfakenvjpeg.so")
	args := append(append([]string{"-shared", "-fPIC", "-O1"}, defines...), "-o", so, "testdata/fakenvjpeg.c")
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc testdata/fakenvjpeg.c: %v\n%s", err, out)
	}
	return so
}

// TestNvjpegBackend: the decoder takes the card's JPEG engines where it
// has them and the default backend where it has none; HEADSPACE_NVJPEG_BACKEND
// asks for one (hardware on a card without: an error naming it) and a bad
// value is refused.
func TestNvjpegBackend(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	withHW, withoutHW := fakeNvjpeg(t), fakeNvjpeg(t, "-DFAKE_NO_HARDWARE")
	for _, tc := range []struct {
		lib, env, want, err string
	}{
		{withHW, "", NvjpegHardware, ""},
		{withHW, "auto", NvjpegHardware, ""},
		{withHW, "default", NvjpegDefault, ""},
		{withoutHW, "", NvjpegDefault, ""},
		{withoutHW, "hardware", "", "the hardware backend (HEADSPACE_NVJPEG_BACKEND=hardware): cuda: nvjpegCreateEx: NVJPEG_STATUS_ARCH_MISMATCH"},
		{withHW, "gpu", "", `HEADSPACE_NVJPEG_BACKEND="gpu": want hardware, default or auto`},
	} {
		t.Setenv(NvjpegBackendEnv, tc.env)
		d, err := NewJPEGSampleDecoder(c, []string{tc.lib}, 2, 1)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s=%q: %v, want %q", NvjpegBackendEnv, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Backend() != tc.want {
			t.Errorf("%s=%q (hardware %v): backend %s, want %s", NvjpegBackendEnv, tc.env, tc.lib == withHW, d.Backend(), tc.want)
		}
		file, _ := fakeJPEG(3, 2, 1)
		if _, err := d.DecodeSamples([][]byte{make([]byte, 4)}, [][]byte{file}, mustAlloc(t, c, 64), 64, 3, 2); err != nil {
			t.Errorf("backend %s: %v", d.Backend(), err)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}
}

// mustAlloc is n bytes of device memory, freed when the test ends.
func mustAlloc(t *testing.T, c *Context, n int64) uint64 {
	t.Helper()
	p, free, err := DeviceAlloc(c, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { free() })
	return p
}

// fakeJPEG is the fake library's "JPEG" of a w×h image whose interleaved
// RGB bytes are i+seed.
func fakeJPEG(w, h int, seed byte) (file, planar []byte) {
	file = append([]byte("FAKEJPG"), make([]byte, 8)...)
	binary.LittleEndian.PutUint32(file[7:], uint32(w))
	binary.LittleEndian.PutUint32(file[11:], uint32(h))
	planar = make([]byte, 3*w*h)
	for i := range 3 * w * h {
		v := byte(i) + seed
		file = append(file, v)
		planar[(i%3)*w*h+i/3] = v
	}
	return file, planar
}

// TestJPEGDecoder decodes batches with the fake nvJPEG into the fake
// driver's device memory: each image lands as R, G, B planes at its place
// in the batch, a smaller batch reinitialises the batched decoder, and the
// errors name the image.
func TestJPEGDecoder(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	so := fakeNvjpeg(t)
	const w, h, n = 5, 3, 4
	d, err := NewJPEGDecoder(c, []string{"/nonexistent/libnvjpeg.so", so}, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d.Library() != so {
		t.Errorf("library %s, want the second candidate %s", d.Library(), so)
	}
	var dst uint64
	if err := c.run(func() (err error) { dst, err = c.memAlloc(n * 3 * w * h); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.run(func() error { return c.memFree(dst) })
	for _, count := range []int{n, 2, n} {
		var files [][]byte
		var want []byte
		for i := range count {
			file, planar := fakeJPEG(w, h, byte(10*i+count))
			files, want = append(files, file), append(want, planar...)
		}
		if _, err := d.Decode(files, dst, w, h); err != nil {
			t.Fatalf("batch of %d: %v", count, err)
		}
		if got := readDevice(t, c, dst, len(want)); !bytes.Equal(got, want) {
			t.Fatalf("batch of %d: the device holds %v, want %v", count, got, want)
		}
	}
	other, _ := fakeJPEG(w+1, h, 0)
	good, _ := fakeJPEG(w, h, 0)
	for _, tc := range []struct {
		files [][]byte
		want  string
	}{
		{[][]byte{good, other}, "image 1 is 6x3, the batch's are 5x3"},
		{[][]byte{good, []byte("\xff\xd8 not fake")}, "image 1: cuda: nvjpegGetImageInfo: NVJPEG_STATUS_BAD_JPEG"},
		{[][]byte{good, {}}, "image 1: nvjpeg: an empty file"},
		{make([][]byte, n+1), "5 images for a decoder of batch 4"},
	} {
		if _, err := d.Decode(tc.files, dst, w, h); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode = %v, want %q", err, tc.want)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestJPEGSampleDecoder decodes batches with the fake nvJPEG into
// device-transform samples: each sample holds its header, then its image as
// interleaved RGB (what --device-crop uploads), the bytes past the image
// untouched; a short batch reinitialises; the library's version is read;
// the errors name the image; Decode and DecodeSamples refuse each other's
// decoder.
func TestJPEGSampleDecoder(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	so := fakeNvjpeg(t)
	const w, h, n, hdr = 5, 3, 4, 16
	const sample = hdr + 3*w*h + 7 // room to spare, which must stay as it was
	d, err := NewJPEGSampleDecoder(c, []string{so}, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.Version(); err != nil || v != "12.4.127" {
		t.Errorf("Version = %q, %v; the fake is 12.4.127", v, err)
	}
	var dst uint64
	if err := c.run(func() (err error) { dst, err = c.memAlloc(n * sample); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.run(func() error { return c.memFree(dst) })
	if err := c.run(func() error { return c.memset(dst, 0xee, n*sample) }); err != nil {
		t.Fatal(err)
	}
	for _, count := range []int{n, 2, n} {
		var files, headers [][]byte
		want := bytes.Repeat([]byte{0xee}, n*sample)
		for i := range count {
			file, _ := fakeJPEG(w, h, byte(10*i+count))
			header := bytes.Repeat([]byte{byte(0xa0 + i)}, hdr)
			files, headers = append(files, file), append(headers, header)
			copy(want[i*sample:], header)
			copy(want[i*sample+hdr:], file[15:]) // the fake's pixels, interleaved
		}
		if _, err := d.DecodeSamples(headers, files, dst, sample, w, h); err != nil {
			t.Fatalf("batch of %d: %v", count, err)
		}
		got := readDevice(t, c, dst, n*sample)
		if !bytes.Equal(got[:count*sample], want[:count*sample]) {
			t.Fatalf("batch of %d: the device holds %v, want %v", count, got[:count*sample], want[:count*sample])
		}
	}
	good, _ := fakeJPEG(w, h, 0)
	other, _ := fakeJPEG(w, h+1, 0)
	hd := make([]byte, hdr)
	for _, tc := range []struct {
		headers, files [][]byte
		sample         int64
		want           string
	}{
		{[][]byte{hd, hd}, [][]byte{good, other}, sample, "image 1 is 5x4, the batch's are 5x3"},
		{[][]byte{hd, hd}, [][]byte{good, []byte("not a jpeg at all")}, sample, "image 1: cuda: nvjpegGetImageInfo: NVJPEG_STATUS_BAD_JPEG"},
		{[][]byte{hd}, [][]byte{good, good}, sample, "1 headers for 2 images"},
		{[][]byte{hd, hd}, [][]byte{good, good}, hdr + 3*w*h - 1, "image 0: a header of 16 bytes and 5x3 RGB do not fit a sample of 60 bytes"},
	} {
		if _, err := d.DecodeSamples(tc.headers, tc.files, dst, tc.sample, w, h); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeSamples = %v, want %q", err, tc.want)
		}
	}
	if _, err := d.Decode([][]byte{good}, dst, w, h); err == nil || !strings.Contains(err.Error(), "NewJPEGDecoder") {
		t.Errorf("Decode on a sample decoder = %v", err)
	}
	planar, err := NewJPEGDecoder(c, []string{so}, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer planar.Close()
	if _, err := planar.DecodeSamples([][]byte{hd}, [][]byte{good}, dst, sample, w, h); err == nil || !strings.Contains(err.Error(), "NewJPEGSampleDecoder") {
		t.Errorf("DecodeSamples on a planar decoder = %v", err)
	}
}

// TestNvjpegMissing: without a library the error is one line, names what
// was tried and what to install.
func TestNvjpegMissing(t *testing.T) {
	f := loadFake(t)
	c := f.open()
	_, err := NewJPEGDecoder(c, []string{"/nonexistent/libnvjpeg.so.12"}, 4, 1)
	if err == nil || !strings.HasPrefix(err.Error(), "no nvJPEG library found (libnvjpeg") ||
		!strings.Contains(err.Error(), "/nonexistent/libnvjpeg.so.12") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q: want one line starting \"no nvJPEG library found\" naming the path tried", err)
	}
}

// TestNvjpegCandidates: $HEADSPACE_NVJPEG comes first, then the sonames,
// and a PyTorch wheel's nvidia/nvjpeg/lib under $VIRTUAL_ENV is found.
func TestNvjpegCandidates(t *testing.T) {
	venv := t.TempDir()
	lib := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "nvjpeg", "lib", "libnvjpeg.so.12")
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv(NvjpegEnv, "/opt/mine/libnvjpeg.so")
	got := NvjpegCandidates()
	if got[0] != "/opt/mine/libnvjpeg.so" || got[1] != "libnvjpeg.so.12" {
		t.Errorf("candidates start %v", got[:2])
	}
	found := false
	for _, p := range got {
		found = found || p == lib
	}
	if !found {
		t.Errorf("the wheel's %s is not among %v", lib, got)
	}
}
