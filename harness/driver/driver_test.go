package driver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

func rec(name string, v float64) *benchfmt.Result {
	return &benchfmt.Result{Name: benchfmt.Name("Benchmark" + name), Iters: 1,
		Values: []benchfmt.Value{{Value: v, Unit: "steps/s"}}}
}

var settings = []resultfile.Config{{Key: "commit", Value: "abc"}, {Key: "batch", Value: "8"}}

// TestStreamResumes: a streamed file holds each record once Add returns,
// and reopening it resumes: Done counts what it holds; Fresh starts over.
func TestStreamResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	out := driver.Output{Path: path}
	run, err := driver.Open(context.Background(), out, settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Add(rec("Ladder/level=raw", 1)); err != nil {
		t.Fatal(err)
	}
	if rs, err := resultfile.Read(path); err != nil || len(rs) != 1 {
		t.Fatalf("after one Add the file holds %d records (%v), want 1", len(rs), err)
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	run, err = driver.Open(context.Background(), out, settings)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Done("Ladder/level=raw"); got != 1 {
		t.Errorf("resumed Done = %d, want 1", got)
	}
	if got := run.Values("BenchmarkLadder/level=raw", "steps/s"); len(got) != 1 || got[0] != 1 {
		t.Errorf("resumed Values = %v, want [1]", got)
	}
	if err := run.Add(rec("Ladder/level=raw", 2)); err != nil {
		t.Fatal(err)
	}
	run.Close()
	if rs, _ := resultfile.Read(path); len(rs) != 2 {
		t.Errorf("resumed file holds %d records, want 2", len(rs))
	}
	out.Fresh = true
	run, err = driver.Open(context.Background(), out, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if got := run.Done("Ladder/level=raw"); got != 0 {
		t.Errorf("fresh Done = %d, want 0", got)
	}
	if err := run.Add(rec("Ladder/level=raw", 3)); err != nil {
		t.Fatal(err)
	}
	if rs, _ := resultfile.Read(path); len(rs) != 1 {
		t.Errorf("fresh file holds %d records, want 1", len(rs))
	}
}

// TestStreamRefusesAnotherSetup: a resumed file of other settings is
// refused, and so is a second writer of one file.
func TestStreamRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.txt")
	run, err := driver.Open(context.Background(), driver.Output{Path: path}, settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Add(rec("Ladder/level=raw", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := driver.Open(context.Background(), driver.Output{Path: path}, settings); !errors.Is(err, resultfile.ErrRefused) {
		t.Errorf("a second writer: %v, want ErrRefused", err)
	}
	run.Close()
	other := []resultfile.Config{{Key: "commit", Value: "abc"}, {Key: "batch", Value: "16"}}
	if _, err := driver.Open(context.Background(), driver.Output{Path: path}, other); !errors.Is(err, resultfile.ErrRefused) {
		t.Errorf("another setup: %v, want ErrRefused", err)
	}
}

// TestWithoutPath: no --out records nothing and fails nothing.
func TestWithoutPath(t *testing.T) {
	run, err := driver.Open(context.Background(), driver.Output{}, settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Add(rec("Ladder", 1)); err != nil || run.Done("Ladder") != 0 || run.Path() != "" {
		t.Errorf("a run without a path: Add %v, Done %d, Path %q", err, run.Done("Ladder"), run.Path())
	}
	if err := run.Close(); err != nil {
		t.Error(err)
	}
	if wrote, err := driver.Write(driver.Output{}, settings, []*benchfmt.Result{rec("Ladder", 1)}, false); wrote != "" || err != nil {
		t.Errorf("Write without a path = %q, %v", wrote, err)
	}
	if err := driver.Check(driver.Output{}); err != nil {
		t.Error(err)
	}
}

// TestWholeRules: a whole file goes beside a complete one only when the
// caller takes the path it returns (Beside); otherwise the write fails
// naming both files.
func TestWholeRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	two := []*benchfmt.Result{rec("Loaders/a", 1), rec("Loaders/b", 2)}
	out := driver.Output{Path: path, Benchmarks: []string{"Loaders"}}
	if wrote, err := driver.Write(out, settings, two, false); wrote != path || err != nil {
		t.Fatalf("Write = %q, %v", wrote, err)
	}
	tests := []struct {
		name    string
		out     driver.Output
		recs    []*benchfmt.Result
		partial bool
		want    string // path written, "" for an error
	}{
		{"smaller, not beside", out, two[:1], false, ""},
		{"smaller, beside", driver.Output{Path: path, Beside: true}, two[:1], false, resultfile.Beside(path, "smaller")},
		{"smaller, forced", driver.Output{Path: path, Force: true}, two[:1], false, path},
		{"partial, beside", driver.Output{Path: path, Beside: true}, two, true, resultfile.Beside(path, "partial")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrote, err := driver.Write(tt.out, settings, tt.recs, tt.partial)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), "kept "+path) {
					t.Errorf("Write = %q, %v; want an error naming the kept file", wrote, err)
				}
				return
			}
			if err != nil || wrote != tt.want {
				t.Errorf("Write = %q, %v; want %q", wrote, err, tt.want)
			}
		})
	}
	// Another command's file is refused before anything is measured.
	if err := driver.Check(driver.Output{Path: path, Benchmarks: []string{"Ladder"}}); !errors.Is(err, resultfile.ErrRefused) {
		t.Errorf("Check of another command's file: %v, want ErrRefused", err)
	}
	if err := driver.Check(out); err != nil {
		t.Errorf("Check of the command's own file: %v", err)
	}
}

// TestSameBytes: a streamed file and a whole one of the same records and
// settings are the same bytes.
func TestSameBytes(t *testing.T) {
	dir := t.TempDir()
	recs := []*benchfmt.Result{rec("Ladder/a", 1), rec("Ladder/b", 2.5)}
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	run, err := driver.Open(context.Background(), driver.Output{Path: a}, settings)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := run.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	run.Close()
	if _, err := driver.Write(driver.Output{Path: b}, settings, recs, false); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if string(ab) != string(bb) || len(ab) == 0 {
		t.Errorf("streamed:\n%s\nwhole:\n%s", ab, bb)
	}
}

// TestEnvironmentIsWritable checks that the machine's configuration lines
// (machine.Environment, every result file's first block) pass the
// writer's rules for keys and values.
func TestEnvironmentIsWritable(t *testing.T) {
	for _, dev := range []string{"emulated", "cuda:0", " "} {
		if _, err := driver.Write(driver.Output{Path: filepath.Join(t.TempDir(), "env.txt")}, machine.Environment(dev), nil, false); err != nil {
			t.Errorf("machine.Environment(%q) is not writable: %v", dev, err)
		}
	}
}
