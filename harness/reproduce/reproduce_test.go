package reproduce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// links finds a report's relative links: images and figures.
var links = regexp.MustCompile(`\]\((figures/[^)]+)\)`)

// TestRunQuickEveryDocument runs every document at --quick sizes and checks
// each report: written, with the machine and the command, the document's
// numbers, and every figure it links to present beside it.
func TestRunQuickEveryDocument(t *testing.T) {
	dir := t.TempDir()
	var progress bytes.Buffer
	paths, err := Run(context.Background(), nil, Options{Quick: true, Out: dir, Worker: testWorker(),
		Command: "headspace reproduce --quick", Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(Docs) {
		t.Fatalf("%d reports, want %d: %v", len(paths), len(Docs), paths)
	}
	want := map[string][]string{
		"000-headspace.md":      {"30 ms", "13%", "1.7 h", "CacheDataLoader", "Where ours differs"},
		"002-loaders.md":        {"3.86", "107.43", "3×", "2×", "−50%", "processes ÷ goroutines", "Where ours differs"},
		"003-caching-ladder.md": {"3.45", "3.33", "3.23", "1.72", "0.89", "1.28", "(a) The caching ladder", "(b) Transform fix", "(c) Smaller raw image", "(d) uint8 transfer", "numpy", "Where ours differs"},
		"004-sim.md":            {"| 98 |", "| 275 |", "| 295 |", "Where ours differs"},
	}
	for i, d := range Docs {
		if filepath.Base(paths[i]) != d.Report() {
			t.Errorf("report %d is %s, want %s", i, paths[i], d.Report())
		}
		b, err := os.ReadFile(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		doc := string(b)
		for _, s := range append(want[d.Report()], "headspace reproduce --quick", "cores, GOMAXPROCS", "Quick run", "# "+d.ID+" — ") {
			if !strings.Contains(doc, s) {
				t.Errorf("%s lacks %q", d.Report(), s)
			}
		}
		if strings.Contains(doc, "%!") || strings.Contains(doc, "NaN") {
			t.Errorf("%s has a formatting mistake:\n%s", d.Report(), doc)
		}
		checkTables(t, doc)
		found := links.FindAllStringSubmatch(doc, -1)
		if len(found) == 0 {
			t.Errorf("%s links no figure", d.Report())
		}
		for _, l := range found {
			if !strings.HasPrefix(filepath.Base(l[1]), d.ID+"-") {
				t.Errorf("%s links %s, not a figure of its own", d.Report(), l[1])
			}
			if st, err := os.Stat(filepath.Join(dir, l[1])); err != nil || st.Size() == 0 {
				t.Errorf("%s links %s: %v", d.Report(), l[1], err)
			}
		}
		if !strings.Contains(progress.String(), "reproduce "+d.ID+": ") {
			t.Errorf("no progress for %s:\n%s", d.ID, progress.String())
		}
	}
	// Nothing but reports and figures, and no temporary files left behind.
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(path, ".tmp") {
			t.Errorf("temporary file left: %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunFailsFastKeepingReports checks that a failing document stops the
// run with an error naming it, that the reports written before it stay, and
// that the documents after it do not run.
func TestRunFailsFastKeepingReports(t *testing.T) {
	dir := t.TempDir()
	ok := Doc{ID: "997", Name: "fine", Title: "A Fine Document", run: func(context.Context, *settings, *tracker) ([]byte, error) {
		return []byte("# 997\n"), nil
	}}
	failing := Doc{ID: "998", Name: "broken", Title: "A Broken Document", run: func(context.Context, *settings, *tracker) ([]byte, error) {
		return nil, errors.New("the experiment broke")
	}}
	after := Doc{ID: "999", Name: "after", Title: "Never Run", run: func(context.Context, *settings, *tracker) ([]byte, error) {
		t.Error("a document after the failure ran")
		return nil, nil
	}}
	paths, err := run(context.Background(), []Doc{ok, failing, after}, Options{Quick: true, Out: dir})
	if err == nil || !strings.Contains(err.Error(), "document 998 (A Broken Document)") || !strings.Contains(err.Error(), "the experiment broke") {
		t.Fatalf("error %v, want one naming document 998 and the cause", err)
	}
	if len(paths) != 1 || filepath.Base(paths[0]) != "997-fine.md" {
		t.Fatalf("reports %v, want only 997's", paths)
	}
	if b, err := os.ReadFile(paths[0]); err != nil || string(b) != "# 997\n" {
		t.Errorf("997's report: %q, %v", b, err)
	}
	for _, name := range []string{"998-broken.md", "999-after.md"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want no file", name, err)
		}
	}
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		ids  []string
		opt  Options
		want string
	}{
		{"unknown document", context.Background(), []string{"004", "005"}, Options{Out: dir}, `unknown document "005"`},
		{"no output directory", context.Background(), []string{"004"}, Options{}, "no output directory"},
		{"negative workers", context.Background(), []string{"004"}, Options{Out: dir, Workers: -1}, "workers -1"},
		{"negative step", context.Background(), []string{"004"}, Options{Out: dir, Step: -1}, "step -1ns"},
		{"cancelled", cancelled, []string{"004"}, Options{Out: dir}, "document 004"},
		{"no worker binary", context.Background(), []string{"002"}, Options{Out: dir, Quick: true}, "document 002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths, err := Run(tc.ctx, tc.ids, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if len(paths) != 0 {
				t.Errorf("reports %v written", paths)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	for id, want := range map[string]string{"000": "000-headspace.md", "001": "000-headspace.md", "002": "002-loaders.md", "003": "003-caching-ladder.md", "004": "004-sim.md"} {
		d, err := Lookup(id)
		if err != nil || d.Report() != want {
			t.Errorf("Lookup(%q) = %s, %v; want %s", id, d.Report(), err, want)
		}
	}
	if _, err := Lookup("3"); err == nil || !strings.Contains(err.Error(), "000, 002, 003, 004") {
		t.Errorf("Lookup(3): %v, want an error listing the documents", err)
	}
}

func TestRunOncePerDocument(t *testing.T) {
	paths, err := Run(context.Background(), []string{"004", "004"}, Options{Quick: true, Out: t.TempDir()})
	if err != nil || len(paths) != 1 {
		t.Errorf("004 twice: reports %v, %v; want one", paths, err)
	}
}

// ExampleRun reproduces the document 004 (the loader simulation, which
// takes well under a second) into a temporary directory.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "reproduce")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	paths, err := Run(context.Background(), []string{"004"}, Options{Quick: true, Out: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range paths {
		fmt.Println(filepath.Base(p))
	}
	// Output: 004-sim.md
}
