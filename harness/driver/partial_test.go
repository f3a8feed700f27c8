package driver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/driver/internal/resultwrite"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestPartial: a StreamPartial run is marked partial until it completes;
// over a complete run it streams beside it, which stays whole until a
// run completes and replaces it, and the partial file goes.
func TestPartial(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	beside := resultfile.Beside(path, "partial")
	// run streams one record of value v, checks that streamTo holds it
	// marked partial, and completes or is interrupted.
	run := func(v float64, complete bool, streamTo string) driver.Outcome {
		t.Helper()
		job := driver.Job{File: driver.StreamPartial, Settings: func() []resultfile.Config { return settings },
			Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
				r := rec("Remote/x", v)
				if err := h.Result(r); err != nil {
					return nil, err
				}
				if s, err := resultwrite.Summarize(streamTo); err != nil || !s.Partial || s.Results != 1 {
					t.Errorf("%s while running: %+v, %v; want one result, marked partial", streamTo, s, err)
				}
				if !complete {
					return []*benchfmt.Result{r}, context.Canceled
				}
				return []*benchfmt.Result{r}, nil
			}}
		o, err := driver.Run(context.Background(), job, driver.Output{Path: path, Benchmarks: []string{"Remote"}, Fresh: true})
		if complete && err != nil || !complete && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
		return o
	}
	if o := run(1, true, path); o.Path != path {
		t.Errorf("first run: Outcome.Path %s, want %s", o.Path, path)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := resultwrite.Summarize(path); err != nil || s.Partial || s.Results != 1 {
		t.Errorf("completed: %+v, %v; want one result, not partial", s, err)
	}
	if o := run(2, false, beside); o.Path != beside {
		t.Errorf("an interrupted run over a complete file: Outcome.Path %s, want %s", o.Path, beside)
	}
	if got, _ := os.ReadFile(path); string(got) != string(first) {
		t.Errorf("an unfinished run changed the complete file")
	}
	run(3, true, beside)
	rs, err := resultfile.Read(path)
	if err != nil || len(rs) != 1 || rs[0].Values[0].Value != 3 {
		t.Errorf("after the second complete run %s holds %d records (%v), want the new one", path, len(rs), err)
	}
	if _, err := os.Stat(beside); !os.IsNotExist(err) {
		t.Errorf("%s left after a complete run: %v", beside, err)
	}
}
