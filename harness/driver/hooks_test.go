package driver_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestHooksStream: in a streamed run, Result and Add put their records
// in the file before they return, and Done counts them; without a file
// or a progress line the hooks still take records and Done says 0.
func TestHooksStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	const name = "Ladder/level=raw"
	holds := func(want int) {
		t.Helper()
		if rs, err := resultfile.Read(path); err != nil || len(rs) != want {
			t.Errorf("the file holds %d records (%v), want %d", len(rs), err, want)
		}
	}
	job := driver.Job{File: driver.Stream, Settings: func() []resultfile.Config { return settings }, Progress: &bytes.Buffer{}, Units: 3,
		Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			h.Start(name)
			recs := []*benchfmt.Result{rec(name, 1), rec(name, 2), rec(name, 3)}
			if err := h.Result(recs[0]); err != nil {
				return nil, err
			}
			holds(1)
			if err := h.Add(recs[1:]...); err != nil {
				return nil, err
			}
			holds(3)
			if got := h.Done(name); got != 3 {
				t.Errorf("Done = %d, want 3", got)
			}
			return recs, nil
		}}
	if _, err := driver.Run(context.Background(), job, driver.Output{Path: path}); err != nil {
		t.Fatal(err)
	}
	job = driver.Job{Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
		h.Start("x")
		h.Tick()
		if err := h.Result(rec(name, 1)); err != nil || h.Done(name) != 0 {
			t.Errorf("no file: Result %v, Done %d; want nil, 0", err, h.Done(name))
		}
		return nil, nil
	}}
	if _, err := driver.Run(context.Background(), job, driver.Output{}); err != nil {
		t.Fatal(err)
	}
}
