package driver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestSessionStreams: a session's Result hands each record to the
// command, then to the streamed file, which holds it before Result
// returns; Done is the file's (a resumed one's included); an error of the
// command's stops the record before the file.
func TestSessionStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	run, err := driver.Open(context.Background(), driver.Output{Path: path}, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var seen []string
	refuse := errors.New("refused")
	s := driver.Begin(run, &bytes.Buffer{}, 2, func(r *benchfmt.Result) error {
		seen = append(seen, string(r.Name))
		if len(seen) == 2 {
			return refuse
		}
		return nil
	})
	s.Start("Ladder/level=raw")
	if err := s.Result(rec("Ladder/level=raw", 1)); err != nil {
		t.Fatal(err)
	}
	if rs, err := resultfile.Read(path); err != nil || len(rs) != 1 {
		t.Errorf("after one Result the file holds %d records (%v), want 1", len(rs), err)
	}
	if got := s.Done("Ladder/level=raw"); got != 1 {
		t.Errorf("Done = %d, want 1", got)
	}
	if err := s.Result(rec("Ladder/level=raw", 2)); !errors.Is(err, refuse) {
		t.Errorf("the command's error: Result = %v, want %v", err, refuse)
	}
	if rs, _ := resultfile.Read(path); len(rs) != 1 {
		t.Errorf("a record the command refused reached the file: %d records, want 1", len(rs))
	}
	if want := []string{"BenchmarkLadder/level=raw", "BenchmarkLadder/level=raw"}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("the command saw %v, want %v", seen, want)
	}
	// Without a file or a progress line a session still hands records on.
	s = driver.Begin(nil, nil, 0, nil)
	s.Start("x")
	s.Tick()
	if err := s.Result(rec("Ladder/level=raw", 1)); err != nil || s.Done("Ladder/level=raw") != 0 {
		t.Errorf("no file: Result %v, Done %d; want nil, 0", err, s.Done("Ladder/level=raw"))
	}
}

// TestSessionEnd: End sorts a run's error. A finished run ends clean; a
// failed one returns its error; an interrupted one (its context's
// cancellation, wrapped or not) ends with nil, writes its whole file
// marked partial beside a complete one, and Err is the Interrupted error
// that is context.Canceled and says what the output keeps.
func TestSessionEnd(t *testing.T) {
	failed := errors.New("decode: bad JPEG")
	cases := []struct {
		name        string
		err         error
		wantEnd     error
		interrupted bool
	}{
		{"finished", nil, nil, false},
		{"failed", failed, failed, false},
		{"interrupted", context.Canceled, nil, true},
		{"interrupted, wrapped", fmt.Errorf("ladder level=raw: %w", context.Canceled), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := driver.Begin(nil, &bytes.Buffer{}, 1, nil)
			if err := s.End(tc.err); err != tc.wantEnd {
				t.Fatalf("End = %v, want %v", err, tc.wantEnd)
			}
			if s.Interrupted() != tc.interrupted {
				t.Errorf("Interrupted = %v, want %v", s.Interrupted(), tc.interrupted)
			}
			err := s.Err("the table shows the runs finished before it")
			if !tc.interrupted {
				if err != nil {
					t.Errorf("Err = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Err = %v, not context.Canceled", err)
			}
			if want := "interrupted: the table shows the runs finished before it"; err.Error() != want {
				t.Errorf("Err = %q, want %q", err, want)
			}
			if got := (driver.Interrupted{}).Error(); got != "interrupted" {
				t.Errorf("Interrupted{} = %q, want %q", got, "interrupted")
			}
			// The whole file of an interrupted run is partial, beside the
			// complete one it keeps.
			path := filepath.Join(t.TempDir(), "r.txt")
			full := driver.Output{Path: path, Beside: true}
			if _, err := driver.Write(full, settings, []*benchfmt.Result{rec("WhatIf/a", 1), rec("WhatIf/b", 1)}, false); err != nil {
				t.Fatal(err)
			}
			wrote, err := s.Write(full, settings, []*benchfmt.Result{rec("WhatIf/a", 2)})
			if err != nil || wrote != resultfile.Beside(path, "partial") {
				t.Fatalf("Write = %q, %v; want %q", wrote, err, resultfile.Beside(path, "partial"))
			}
			rs, err := resultfile.Read(wrote)
			if err != nil || len(rs) != 1 || rs[0].GetConfig("partial") != "true" {
				t.Errorf("the interrupted run's file: %d records (%v), want 1 marked partial", len(rs), err)
			}
		})
	}
}
