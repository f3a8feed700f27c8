//go:build linux

package workloads

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

// TestCUDADecodeOnAFakeDriver runs the decode benchmark's whole path on
// package cuda's fake driver and fake nvJPEG (cuda/testdata/fakecuda.c,
// fakenvjpeg.c): the setup goes to Detail first, then one record per timed
// batch, streamed, named for the files' size; the warm-up batch makes
// none. The fake computes nothing a GPU would, so the test checks what Run
// makes, never a figure.
func TestCUDADecodeOnAFakeDriver(t *testing.T) {
	loadFakeCUDA(t)
	nvjpeg, err := buildFake(t.TempDir(), "fakenvjpeg")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const w, h = 5, 3
	for i := range 3 { // fewer files than a batch: they are cycled
		file := append([]byte("FAKEJPG"), make([]byte, 8)...)
		binary.LittleEndian.PutUint32(file[7:], w)
		binary.LittleEndian.PutUint32(file[11:], h)
		file = append(file, make([]byte, 3*w*h)...)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.jpg", i)), file, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a JPEG"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := QuickCUDADecode()
	d.JPEGs, d.Libraries = dir, []string{nvjpeg}
	var setups []CUDADecodeSetup
	var env Env
	env.Details.DecodeSetup = func(s CUDADecodeSetup) { setups = append(setups, s) }
	var streamed int
	env.Result = func(*benchfmt.Result) error { streamed++; return nil }
	recs, err := d.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(setups) != 1 || setups[0].Library != nvjpeg || setups[0].Files != 3 || setups[0].Width != w || setups[0].Height != h ||
		!strings.HasPrefix(setups[0].GPU.Name, "Fake GPU") {
		t.Fatalf("setups %+v: want one, of the fake library, 3 files of %dx%d", setups, w, h)
	}
	keys := map[string]string{}
	for _, c := range append(setups[0].Settings(), d.Settings()...) {
		keys[c.Key] = c.Value
	}
	for k, v := range map[string]string{"nvjpeg": "libfakenvjpeg.so 12.4.127", "nvjpeg-backend": "hardware", "jpegs": filepath.Base(dir), "threads": "1", "gpu": setups[0].GPU.Name} {
		if keys[k] != v {
			t.Errorf("setting %s = %q, want %q", k, keys[k], v)
		}
	}
	if len(recs) != d.Batches || streamed != len(recs) {
		t.Fatalf("%d records, %d streamed; want %d, one per timed batch", len(recs), streamed, d.Batches)
	}
	want := fmt.Sprintf("BenchmarkCUDADecode/decoder=nvjpeg/batch=%d/size=%dx%d", d.Batch, w, h)
	for _, r := range recs {
		if string(r.Name) != want || r.Iters != d.Batch || len(r.Values) != 1 || r.Values[0].Unit != "images/s" || !(r.Values[0].Value > 0) {
			t.Errorf("record %s %d %v: want %s, %d iterations, one positive images/s", r.Name, r.Iters, r.Values, want, d.Batch)
		}
	}

	// The errors: no files, no library, a bad batch.
	for _, tc := range []struct {
		edit func(*CUDADecode)
		want string
	}{
		{func(d *CUDADecode) { d.JPEGs = t.TempDir() }, "no .jpg or .jpeg files"},
		{func(d *CUDADecode) { d.Libraries = []string{filepath.Join(t.TempDir(), "libnvjpeg.so")} }, "no nvJPEG library found"},
		{func(d *CUDADecode) { d.Batch = 0 }, "batch 0"},
	} {
		e := d
		tc.edit(&e)
		if _, err := e.Run(context.Background(), Env{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run: %v, want an error containing %q", err, tc.want)
		}
	}
}
