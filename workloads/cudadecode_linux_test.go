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

	"github.com/headspace-bench/headspace/cuda/cudatest"
)

// TestCUDADecodeOnAFakeDriver runs the decode benchmark's whole path on
// package cuda's fake driver and fake nvJPEG (cuda/testdata/fakecuda.c,
// fakenvjpeg.c): the setup goes to MeasureOpened's callback first, then
// one rate per timed batch, a record each, named for the files' size;
// the warm-up batch makes none. The fake computes nothing a GPU would, so the test checks what Run
// makes, never a figure.
func TestCUDADecodeOnAFakeDriver(t *testing.T) {
	cudatest.Load(t)
	nvjpeg, err := cudatest.Build(t.TempDir(), "fakenvjpeg")
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
	o, err := d.MeasureOpened(context.Background(), Env{}, func(s CUDADecodeSetup) { setups = append(setups, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(setups) != 1 || setups[0].Library != nvjpeg || setups[0].Files != 3 || setups[0].Width != w || setups[0].Height != h ||
		!strings.HasPrefix(setups[0].GPU.Name, "Fake GPU") {
		t.Fatalf("setups %+v: want one, of the fake library, 3 files of %dx%d", setups, w, h)
	}
	if o.Setup != setups[0] || o.Decoder != DecodeNvjpeg || o.Batch != d.Batch || len(o.Rates) != d.Batches {
		t.Fatalf("outcome %+v: want the setup opened, nvjpeg, batches of %d, %d rates", o, d.Batch, d.Batches)
	}
	keys := map[string]string{}
	for _, c := range append(o.Setup.Settings(), d.Settings()...) {
		keys[c.Key] = c.Value
	}
	for k, v := range map[string]string{"nvjpeg": "libfakenvjpeg.so 12.4.127", "nvjpeg-backend": "hardware", "jpegs": filepath.Base(dir), "threads": "1", "gpu": setups[0].GPU.Name} {
		if keys[k] != v {
			t.Errorf("setting %s = %q, want %q", k, keys[k], v)
		}
	}
	want := fmt.Sprintf("BenchmarkCUDADecode/decoder=nvjpeg/batch=%d/size=%dx%d", d.Batch, w, h)
	checkRecs := func(how string, recs []*benchfmt.Result) {
		t.Helper()
		if len(recs) != d.Batches {
			t.Fatalf("%s: %d records, want %d, one per timed batch", how, len(recs), d.Batches)
		}
		for _, r := range recs {
			if string(r.Name) != want || r.Iters != d.Batch || len(r.Values) != 1 || r.Values[0].Unit != "images/s" || !(r.Values[0].Value > 0) {
				t.Errorf("%s: record %s %d %v: want %s, %d iterations, one positive images/s", how, r.Name, r.Iters, r.Values, want, d.Batch)
			}
		}
	}
	checkRecs("Measure's outcome encoded", CUDADecodeCodec.Encode(o))
	// What the records hold of the outcome decodes back.
	kept := CUDADecodeOutcome{Decoder: o.Decoder, Batch: o.Batch, Setup: CUDADecodeSetup{Width: w, Height: h}, Rates: o.Rates}
	roundTrip(t, CUDADecodeCodec, kept)

	// Run: the same records, each passed to env.Result.
	var env Env
	var streamed int
	env.Result = func(*benchfmt.Result) error { streamed++; return nil }
	recs, err := d.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	checkRecs("Run", recs)
	if streamed != len(recs) {
		t.Errorf("%d records, %d passed to env.Result", len(recs), streamed)
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
