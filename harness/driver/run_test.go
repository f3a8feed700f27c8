package driver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestRun runs a job for each way a result file is written, and checks
// what Run returns, what Measure saw (Done of a resumed file) and what
// the file holds after it: the names of its records, in order, and
// whether it says "partial: true".
func TestRun(t *testing.T) {
	failed := errors.New("decode: bad JPEG")
	// measure gives h each of names as a record, then returns them with
	// err; it records what h.Done said of the first, and checks Values
	// says as much.
	measure := func(done *int, err error, names ...string) func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) {
		return func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			*done = h.Done("Ladder/level=raw")
			if v := h.Values("BenchmarkLadder/level=raw", "steps/s"); len(v) != *done {
				return nil, fmt.Errorf("Values %v, Done %d", v, *done)
			}
			var recs []*benchfmt.Result
			for i, n := range names {
				r := rec(n, float64(i+1))
				recs = append(recs, r)
				if err := h.Result(r); err != nil {
					return recs, err
				}
			}
			return recs, err
		}
	}
	cases := []struct {
		name        string
		mode        driver.Mode
		out         driver.Output // Path "f" is the test's file; "" none
		before      []string      // the file's records before the run, complete
		names       []string      // what the run makes
		err         error         // Measure's error
		wantErr     error         // Run's
		wantDone    int           // what Measure's Done said
		wantRecords []string      // Outcome.Records
		wantPath    string        // Outcome.Path: "f", "f.partial" (beside), "" none
		wantFile    []string      // at "f", nil: no file
		wantBeside  []string      // at the partial file beside it
		partial     bool          // the file Outcome.Path names says partial: true
	}{
		{name: "stream resumes", mode: driver.Stream, out: driver.Output{Path: "f"}, before: []string{"Ladder/level=raw"},
			names: []string{"Ladder/level=raw"}, wantDone: 1, wantRecords: []string{"Ladder/level=raw", "Ladder/level=raw"},
			wantPath: "f", wantFile: []string{"Ladder/level=raw", "Ladder/level=raw"}},
		{name: "stream fresh", mode: driver.Stream, out: driver.Output{Path: "f", Fresh: true}, before: []string{"Ladder/level=raw"},
			names: []string{"Ladder/level=none"}, wantRecords: []string{"Ladder/level=none"}, wantPath: "f", wantFile: []string{"Ladder/level=none"}},
		{name: "stream interrupted keeps what it streamed", mode: driver.Stream, out: driver.Output{Path: "f"},
			names: []string{"Ladder/level=raw"}, err: context.Canceled, wantErr: context.Canceled,
			wantRecords: []string{"Ladder/level=raw"}, wantPath: "f", wantFile: []string{"Ladder/level=raw"}, partial: true},
		{name: "whole", mode: driver.Whole, out: driver.Output{Path: "f", Benchmarks: []string{"Ladder"}},
			names: []string{"Ladder/level=raw", "Ladder/level=none"}, wantRecords: []string{"Ladder/level=raw", "Ladder/level=none"},
			wantPath: "f", wantFile: []string{"Ladder/level=raw", "Ladder/level=none"}},
		{name: "whole interrupted is partial", mode: driver.Whole, out: driver.Output{Path: "f"},
			names: []string{"Ladder/level=raw"}, err: fmt.Errorf("run 2: %w", context.Canceled), wantErr: context.Canceled,
			wantRecords: []string{"Ladder/level=raw"}, wantPath: "f", wantFile: []string{"Ladder/level=raw"}, partial: true},
		{name: "whole interrupted goes beside a complete file", mode: driver.Whole, out: driver.Output{Path: "f", Beside: true},
			before: []string{"Ladder/level=raw", "Ladder/level=none"}, names: []string{"Ladder/level=raw"}, err: context.Canceled, wantErr: context.Canceled,
			wantRecords: []string{"Ladder/level=raw"}, wantPath: "f.partial", wantFile: []string{"Ladder/level=raw", "Ladder/level=none"},
			wantBeside: []string{"Ladder/level=raw"}, partial: true},
		{name: "whole interrupted before a record writes nothing", mode: driver.Whole, out: driver.Output{Path: "f"},
			err: context.Canceled, wantErr: context.Canceled},
		{name: "whole failed writes nothing", mode: driver.Whole, out: driver.Output{Path: "f"},
			names: []string{"Ladder/level=raw"}, err: failed, wantErr: failed, wantRecords: []string{"Ladder/level=raw"}},
		{name: "partial completes", mode: driver.StreamPartial, out: driver.Output{Path: "f"}, before: []string{"Ladder/level=raw", "Ladder/level=none"},
			names: []string{"Ladder/level=host"}, wantRecords: []string{"Ladder/level=host"}, wantPath: "f", wantFile: []string{"Ladder/level=host"}},
		{name: "partial interrupted stays beside", mode: driver.StreamPartial, out: driver.Output{Path: "f"}, before: []string{"Ladder/level=raw"},
			names: []string{"Ladder/level=host"}, err: context.Canceled, wantErr: context.Canceled,
			wantRecords: []string{"Ladder/level=host"}, wantPath: "f.partial", wantFile: []string{"Ladder/level=raw"},
			wantBeside: []string{"Ladder/level=host"}, partial: true},
		{name: "refused path", mode: driver.Whole, out: driver.Output{Path: "f", Benchmarks: []string{"Node"}}, before: []string{"Ladder/level=raw"},
			names: []string{"Node/accelerators=1"}, wantErr: resultfile.ErrRefused, wantFile: []string{"Ladder/level=raw"}},
		{name: "no path", mode: driver.Stream, names: []string{"Ladder/level=raw"}, wantRecords: []string{"Ladder/level=raw"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "r.txt")
			beside := resultfile.Beside(path, "partial")
			out := tc.out
			if out.Path != "" {
				out.Path = path
			}
			if tc.before != nil {
				var recs []*benchfmt.Result
				for _, n := range tc.before {
					recs = append(recs, rec(n, 9))
				}
				if _, err := driver.Write(driver.Output{Path: path}, settings, recs, false); err != nil {
					t.Fatal(err)
				}
			}
			done, measured := -1, false
			m := measure(&done, tc.err, tc.names...)
			job := driver.Job{File: tc.mode, Settings: func() []resultfile.Config { return settings },
				Measure: func(ctx context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
					measured = true
					return m(ctx, h)
				}}
			o, err := driver.Run(context.Background(), job, out)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Run: %v, want %v", err, tc.wantErr)
			}
			if errors.Is(err, resultfile.ErrRefused) {
				if measured {
					t.Error("Measure ran though the path was refused")
				}
			} else if done != tc.wantDone {
				t.Errorf("Done in Measure = %d, want %d", done, tc.wantDone)
			}
			if got := names(o.Records); fmt.Sprint(got) != fmt.Sprint(tc.wantRecords) {
				t.Errorf("Outcome.Records = %v, want %v", got, tc.wantRecords)
			}
			if want := errors.Is(tc.err, context.Canceled); o.Interrupted != want {
				t.Errorf("Outcome.Interrupted = %v, want %v", o.Interrupted, want)
			}
			wantPath := map[string]string{"": "", "f": path, "f.partial": beside}[tc.wantPath]
			if o.Path != wantPath {
				t.Errorf("Outcome.Path = %q, want %q", o.Path, wantPath)
			}
			checkFile(t, path, tc.wantFile, tc.partial && tc.wantPath == "f")
			checkFile(t, beside, tc.wantBeside, tc.partial && tc.wantPath == "f.partial")
			if entries, _ := os.ReadDir(dir); tc.out.Path == "" && len(entries) > 0 {
				t.Errorf("a run without a path left %d files", len(entries))
			}
		})
	}
}

// names are the records' names without "Benchmark".
func names(recs []*benchfmt.Result) []string {
	var out []string
	for _, r := range recs {
		out = append(out, strings.TrimPrefix(string(r.Name), "Benchmark"))
	}
	return out
}

// checkFile checks the result file at path holds records named want, in
// order (nil: no file), marked partial or not.
func checkFile(t *testing.T, path string, want []string, partial bool) {
	t.Helper()
	recs, err := resultfile.Read(path)
	if want == nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %d records (%v), want no file", filepath.Base(path), len(recs), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	if got := names(recs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s holds %v, want %v", filepath.Base(path), got, want)
	}
	if got := recs[0].GetConfig("partial") == "true"; got != partial {
		t.Errorf("%s: partial %v, want %v", filepath.Base(path), got, partial)
	}
}

// TestRunWhole: a whole run's settings are asked for when the file is
// written, after Measure; Save writes what the run has so far under them,
// and the records it saved last are not written again;
// Partial marks a finished run's files partial; and Err is the Interrupted
// error only for an interrupted run.
func TestRunWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	found := ""
	job := driver.Job{
		Settings: func() []resultfile.Config {
			return append(settings[:len(settings):len(settings)], resultfile.Config{Key: "device", Value: found})
		},
		Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			found = "gpu0"
			h.Partial()
			first := []*benchfmt.Result{rec("Ladder/level=raw", 1)}
			if err := h.Save(first); err != nil {
				return nil, err
			}
			if rs, err := resultfile.Read(path); err != nil || len(rs) != 1 || rs[0].GetConfig("device") != "gpu0" {
				t.Errorf("after Save the file holds %d records (%v), want 1 with device gpu0", len(rs), err)
			}
			found = "gpu1"
			return append(first, rec("Ladder/level=none", 2)), nil
		},
	}
	o, err := driver.Run(context.Background(), job, driver.Output{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if o.Interrupted || o.Err("kept") != nil {
		t.Errorf("a finished run: Interrupted %v, Err %v", o.Interrupted, o.Err("kept"))
	}
	rs, err := resultfile.Read(path)
	if err != nil || len(rs) != 2 {
		t.Fatalf("the file holds %d records (%v), want 2", len(rs), err)
	}
	if d, p := rs[0].GetConfig("device"), rs[0].GetConfig("partial"); d != "gpu1" || p != "true" {
		t.Errorf("the file's device %q and partial %q, want gpu1 and true", d, p)
	}
	// Records saved as they are returned are not written again.
	job.Measure = func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
		found = "gpu2"
		last := []*benchfmt.Result{rec("Ladder/level=raw", 3)}
		err := h.Save(last)
		found = "gpu3"
		return last, err
	}
	if _, err := driver.Run(context.Background(), job, driver.Output{Path: path, Force: true}); err != nil {
		t.Fatal(err)
	}
	if rs, err := resultfile.Read(path); err != nil || len(rs) != 1 || rs[0].GetConfig("device") != "gpu2" {
		t.Errorf("saved records: the file holds %d records (%v), want the 1 saved with device gpu2", len(rs), err)
	}
	var ie driver.Interrupted
	if err := (driver.Outcome{Interrupted: true}).Err("the table shows it"); !errors.As(err, &ie) || ie.Kept != "the table shows it" || !errors.Is(err, context.Canceled) {
		t.Errorf("an interrupted run's Err = %v, want Interrupted that is context.Canceled", err)
	} else if want := "interrupted: the table shows it"; err.Error() != want {
		t.Errorf("an interrupted run's Err says %q, want %q", err, want)
	}
	if got := (driver.Outcome{Interrupted: true}).Err("").Error(); got != "interrupted" {
		t.Errorf("Err(\"\") says %q, want %q", got, "interrupted")
	}
}

// TestRunProgress: off a terminal, a run with Lines prints a line for
// each unit Finished and each Logf, and nothing else; without Lines it
// prints nothing; a Job's Units and Total draw nothing off a terminal.
func TestRunProgress(t *testing.T) {
	for _, lines := range []string{"reproduce 003", ""} {
		var b bytes.Buffer
		job := driver.Job{Units: 2, Progress: &b, Lines: lines, Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
			h.Logf("the document's code is not measured: %s", "no torch")
			h.Total(3)
			h.Start("level=raw")
			h.Finished("level=raw: 1.5 steps/s")
			h.Tick()
			return nil, nil
		}}
		if _, err := driver.Run(context.Background(), job, driver.Output{}); err != nil {
			t.Fatal(err)
		}
		want := ""
		if lines != "" {
			want = "reproduce 003: the document's code is not measured: no torch\nreproduce 003: level=raw: 1.5 steps/s\n"
		}
		if b.String() != want {
			t.Errorf("Lines %q: progress %q, want %q", lines, b.String(), want)
		}
	}
}

// TestRunAddsNothing: a unit of work that made no records (a node's run
// that failed) counts on the progress line but writes no file.
func TestRunAddsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	job := driver.Job{File: driver.Stream, Settings: func() []resultfile.Config { return settings },
		Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) { return nil, h.Add() }}
	if _, err := driver.Run(context.Background(), job, driver.Output{Path: path}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Add of no records left a file: %v", err)
	}
}

// TestRunInterruptedWriteFails: an interrupted run whose whole file
// cannot be written as asked (a partial run beside a complete file,
// without Output.Beside) is failed, not interrupted: Run returns the
// write's error, naming the kept file.
func TestRunInterruptedWriteFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	if _, err := driver.Write(driver.Output{Path: path}, settings, []*benchfmt.Result{rec("Ladder/level=raw", 1), rec("Ladder/level=none", 2)}, false); err != nil {
		t.Fatal(err)
	}
	job := driver.Job{Settings: func() []resultfile.Config { return settings },
		Measure: func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) {
			return []*benchfmt.Result{rec("Ladder/level=raw", 3)}, context.Canceled
		}}
	o, err := driver.Run(context.Background(), job, driver.Output{Path: path})
	if err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "kept "+path) || o.Interrupted {
		t.Errorf("Run = %v, Interrupted %v; want the write's error naming %s, not interrupted", err, o.Interrupted, path)
	}
}

// TestRunHoldsTheLockWhileMeasuring: a run holds its result file's write
// lock from before it measures until it has written, whether the file is
// new or not and written whole or streamed: a second run of the same
// file is refused before it measures (driver.Check); the lock used to be
// taken at the first write, so two runs measured against each other and
// one was thrown away at the end (issue 52).
func TestRunHoldsTheLockWhileMeasuring(t *testing.T) {
	settings := []resultfile.Config{{Key: "document", Value: "test"}}
	for _, tc := range []struct {
		name     string
		mode     driver.Mode
		existing bool
	}{
		{"whole, new", driver.Whole, false},
		{"whole, existing", driver.Whole, true},
		{"streamed, new", driver.Stream, false},
		{"streamed partial, new", driver.StreamPartial, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.txt")
			if tc.existing {
				if _, err := driver.Write(driver.Output{Path: path}, settings, []*benchfmt.Result{rec("Ladder/level=raw", 1)}, false); err != nil {
					t.Fatal(err)
				}
			}
			out := driver.Output{Path: path, Force: true}
			var second error
			job := driver.Job{File: tc.mode, Settings: func() []resultfile.Config { return settings },
				Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
					second = driver.Check(out) // another run starting meanwhile
					r := rec("Ladder/level=none", 2)
					return []*benchfmt.Result{r}, h.Result(r)
				}}
			if _, err := driver.Run(context.Background(), job, out); err != nil {
				t.Fatal(err)
			}
			if second == nil || !strings.Contains(second.Error(), "is being written by another run") {
				t.Errorf("a second run's check while the first measured: %v, want it refused", second)
			}
			if err := driver.Check(out); err != nil {
				t.Errorf("after the run: %v, want the lock released", err)
			}
		})
	}
}

// TestStreamInterruptedIsMarkedPartial: a streamed run interrupted (or
// failed) leaves its file marked "partial: true", so that nothing takes
// it for a whole run (history add); resumed, the mark goes with the next
// record, or at the end of a run that had nothing left to add. The file
// used to carry no mark (issue 52).
func TestStreamInterruptedIsMarkedPartial(t *testing.T) {
	settings := []resultfile.Config{{Key: "document", Value: "test"}}
	path := filepath.Join(t.TempDir(), "r.txt")
	out := driver.Output{Path: path}
	run := func(err error, names ...string) {
		t.Helper()
		job := driver.Job{File: driver.Stream, Settings: func() []resultfile.Config { return settings },
			Measure: func(_ context.Context, h *driver.Hooks) ([]*benchfmt.Result, error) {
				var recs []*benchfmt.Result
				for _, n := range names {
					if h.Done(n) > 0 {
						continue
					}
					r := rec(n, 1)
					recs = append(recs, r)
					if err := h.Result(r); err != nil {
						return recs, err
					}
				}
				return recs, err
			}}
		if _, rerr := driver.Run(context.Background(), job, out); !errors.Is(rerr, err) {
			t.Fatalf("Run = %v, want %v", rerr, err)
		}
	}
	partial := func() bool {
		t.Helper()
		recs, err := resultfile.Read(path)
		if err != nil || len(recs) == 0 {
			t.Fatalf("%d records, %v", len(recs), err)
		}
		return recs[0].GetConfig("partial") == "true"
	}
	failed := errors.New("decode: bad JPEG")
	for _, tc := range []struct {
		name    string
		err     error
		names   []string
		partial bool
	}{
		{"interrupted", context.Canceled, []string{"Ladder/level=raw"}, true},
		{"resumed, a record more", nil, []string{"Ladder/level=raw", "Ladder/level=none"}, false},
		{"failed", failed, []string{"Ladder/level=host"}, true},
		{"resumed, nothing left", nil, []string{"Ladder/level=raw", "Ladder/level=none", "Ladder/level=host"}, false},
	} {
		run(tc.err, tc.names...)
		if got := partial(); got != tc.partial {
			t.Errorf("%s: marked partial %v, want %v", tc.name, got, tc.partial)
		}
	}
}
