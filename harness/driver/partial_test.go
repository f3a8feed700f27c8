package driver_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/driver/internal/resultwrite"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestPartial: a run OpenPartial streams is marked partial until
// Complete; over a complete run it streams beside it, which stays whole
// until Complete replaces it and removes the partial file.
func TestPartial(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	out := driver.Output{Path: path, Benchmarks: []string{"Remote"}}
	run := func(v float64, complete bool) *driver.Partial {
		t.Helper()
		p, err := driver.OpenPartial(context.Background(), out, settings)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run.Add(rec("Remote/x", v)); err != nil {
			t.Fatal(err)
		}
		if s, err := resultwrite.Summarize(p.Path()); err != nil || !s.Partial || s.Results != 1 {
			t.Errorf("%s while running: %+v, %v; want one result, marked partial", p.Path(), s, err)
		}
		if complete {
			if err := p.Complete(); err != nil {
				t.Fatal(err)
			}
		} else if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := run(1, true); p.Path() != path || p.InPlace() {
		t.Errorf("first run streamed into %s (in place %v), want %s", p.Path(), p.InPlace(), path)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := resultwrite.Summarize(path); err != nil || s.Partial || s.Results != 1 {
		t.Errorf("completed: %+v, %v; want one result, not partial", s, err)
	}
	beside := resultfile.Beside(path, "partial")
	if p := run(2, false); p.Path() != beside {
		t.Errorf("a run over a complete file streamed into %s, want %s", p.Path(), beside)
	}
	if got, _ := os.ReadFile(path); string(got) != string(first) {
		t.Errorf("an unfinished run changed the complete file")
	}
	run(3, true)
	rs, err := resultfile.Read(path)
	if err != nil || len(rs) != 1 || rs[0].Values[0].Value != 3 {
		t.Errorf("after the second complete run %s holds %d records (%v), want the new one", path, len(rs), err)
	}
	if _, err := os.Stat(beside); !os.IsNotExist(err) {
		t.Errorf("%s left after a complete run: %v", beside, err)
	}
}
