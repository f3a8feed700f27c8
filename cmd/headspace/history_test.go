package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// historyRun writes a run of machine "Test CPU" at commit c with steps/s
// around v.
func historyRun(t *testing.T, dir string, i int, v float64, extra string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "cpu: Test CPU\ncores: 2\ndevice: emulated\ncommit: c%03d\ndate: 2026-11-%02dT03:00:00Z\n%s\n", i, i+1, extra)
	for k := range 6 {
		x := v * (1 + 0.002*float64(k%3-1))
		fmt.Fprintf(&b, "BenchmarkLadder/level=none-2 4 %g ns/op %g steps/s\n", 1e9/x, x)
	}
	p := filepath.Join(dir, fmt.Sprintf("r%d.txt", i))
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHistoryCommands: add (the interface the cluster job calls:
// history add --store DIR FILE), its refusals with exit 2 and one line,
// and report in its three formats; the step is reported at its commit.
func TestHistoryCommands(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	var files []string
	for i := range 16 {
		v := 100.0
		if i >= 8 {
			v = 92
		}
		files = append(files, historyRun(t, src, i, v, ""))
	}
	code, out, stderr := runCLI("history", "add", "--store", store, files[0])
	if code != 0 || !strings.Contains(out, filepath.Join(store, "emulated-test-cpu-2c-70f22c8f", "20261101T030000Z-c000.txt")) {
		t.Fatalf("add: exit %d, %q %q", code, out, stderr)
	}
	if code, out, stderr = runCLI(append([]string{"history", "add", "--store", store}, files[1:]...)...); code != 0 {
		t.Fatalf("add 15: exit %d, %q %q", code, out, stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"again", []string{"add", "--store", store, files[3]}, "already in the store"},
		{"other setup", []string{"add", "--store", store, historyRun(t, src, 20, 100, "batch: 8")}, `setup differs from the series of emulated-test-cpu-2c-70f22c8f`},
		{"no store", []string{"add", files[0]}, "--store DIR is required"},
		{"no file", []string{"add", "--store", store}, "want one or more result files"},
		{"bad date", []string{"add", "--store", store, "--date", "yesterday", files[0]}, "--date"},
		{"future date", []string{"add", "--store", store, "--date", "9999-12-31T00:00:00Z", files[0]}, "--date 9999-12-31T00:00:00Z is in the future"},
		{"partial", []string{"add", "--store", store, historyRun(t, src, 21, 100, "partial: true")}, "is a partial run (partial: line)"},
		{"latest without a file", []string{"latest", "--store", store}, "want one result file"},
		// Issue 52: a store that is not there printed nothing and exited 0,
		// as if the machine had no run yet.
		{"latest, no store", []string{"latest", "--store", filepath.Join(src, "missing"), files[0]}, "--store " + filepath.Join(src, "missing") + ": not a folder"},
		{"latest, a file as store", []string{"latest", "--store", files[0], files[0]}, "--store " + files[0] + ": not a folder"},
		{"no subcommand", nil, "want a subcommand"},
		{"bad format", []string{"report", "--store", store, "--format", "pdf"}, `--format "pdf"`},
		{"html without out", []string{"report", "--store", store}, "needs --out"},
		{"empty store", []string{"report", "--store", t.TempDir(), "--format", "text"}, "holds no runs"},
	} {
		code, out, stderr := runCLI(append([]string{"history"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and one line with %q", tc.name, code, out, stderr, tc.want)
		}
	}
	code, out, stderr = runCLI("history", "report", "--store", store, "--format", "text")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "BenchmarkLadder/level=none-2 steps/s -8.0% at c008 (2026-11-09)") {
		t.Errorf("text: exit %d %q, stdout:\n%s", code, stderr, out)
	}
	code, out, _ = runCLI("history", "report", "--store", store, "--format", "markdown")
	if code != 0 || !strings.HasPrefix(out, "## headspace history") || !strings.Contains(out, "| `c008` |") {
		t.Errorf("markdown: exit %d:\n%s", code, out)
	}
	page := filepath.Join(src, "page.html")
	if code, out, stderr = runCLI("history", "report", "--store", store, "--out", page); code != 0 {
		t.Fatalf("html: exit %d %q %q", code, out, stderr)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `<title>headspace history</title>`) {
		t.Errorf("page: %v", err)
	}
	// Written again over its own page; never over another file.
	if code, _, stderr = runCLI("history", "report", "--store", store, "--out", page); code != 0 {
		t.Errorf("rewriting the page: exit %d %q", code, stderr)
	}
	keep := filepath.Join(src, "keep.html")
	os.WriteFile(keep, []byte("<html>mine</html>"), 0o644)
	if code, _, stderr = runCLI("history", "report", "--store", store, "--out", keep); code != 2 || !strings.Contains(stderr, "refusing to replace it") {
		t.Errorf("over another file: exit %d %q", code, stderr)
	}
	if b, _ := os.ReadFile(keep); string(b) != "<html>mine</html>" {
		t.Error("another file was replaced")
	}
	// latest: the run the nightly gate compares with.
	if code, out, stderr = runCLI("history", "latest", "--store", store, files[3]); code != 0 || strings.TrimSpace(out) != filepath.Join(store, "emulated-test-cpu-2c-70f22c8f", "20261116T030000Z-c015.txt") {
		t.Errorf("latest: exit %d, %q %q", code, out, stderr)
	}
	// compare --history: the spread between the store's runs reaches the gate.
	code, out, _ = runCLI("compare", "--history", store, files[14], files[15])
	if code != 0 || !strings.Contains(out, "history: 2 metrics must also change by more than 3 × their spread between runs") {
		t.Errorf("compare --history: exit %d:\n%s", code, out)
	}
}

// endsLater is a context that ends (Err says so) after its first `after`
// looks: SIGINT arriving while the work is under way.
type endsLater struct {
	context.Context
	looks, after int32
}

func (c *endsLater) Err() error {
	if atomic.AddInt32(&c.looks, 1) > c.after {
		return context.Canceled
	}
	return nil
}

// TestHistoryReportInterrupted: report whose context ends before or while
// it builds the report exits 130 and writes no page.
func TestHistoryReportInterrupted(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	for i := range 4 {
		if code, _, stderr := runCLI("history", "add", "--store", store, historyRun(t, src, i, 100, "")); code != 0 {
			t.Fatalf("add: %s", stderr)
		}
	}
	for _, after := range []int32{0, 1, 2} {
		for _, format := range []string{"html", "text", "markdown"} {
			page := filepath.Join(src, "page."+format)
			var o, e bytes.Buffer
			ctx := &endsLater{Context: context.Background(), after: after}
			if code := run(ctx, []string{"history", "report", "--store", store, "--format", format, "--out", page}, &o, &e); code != 130 {
				t.Errorf("%s, interrupted after %d looks: exit %d, %q", format, after, code, e.String())
			}
			if _, err := os.Stat(page); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s, interrupted after %d looks: the report wrote %s (%v)", format, after, page, err)
			}
		}
	}
}

// TestHistoryGenerate: generate writes a store that report reads, and
// refuses to write into one it already wrote.
func TestHistoryGenerate(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	code, out, stderr := runCLI("history", "generate", "--store", store, "--nights", "100", "--series", "30")
	if code != 0 || !strings.Contains(out, "wrote 100 runs × 30 series to "+store+" (1 injected steps)") {
		t.Fatalf("generate: exit %d, %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI("history", "report", "--store", store, "--format", "text")
	if code != 0 || strings.Count(out, ", regression\n") != 3 {
		t.Errorf("report of the generated store: exit %d, %q %q; want the night-91 step's 3 regressions", code, out, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", store}, "already exists"},
		{[]string{"--nights", "3"}, "--store DIR is required"},
		{[]string{"--store", store, "--nights", "0"}, "--nights 0: want 1 to 3650"},
		{[]string{"--store", filepath.Join(t.TempDir(), "big"), "--series", "1000000000"}, "--series 1000000000: want 1 to 2000"},
	} {
		code, out, stderr := runCLI(append([]string{"history", "generate"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("generate %v: exit %d, %q %q; want 2 and %q", tc.args, code, out, stderr, tc.want)
		}
	}
}
