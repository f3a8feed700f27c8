package reproduce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/workloads"
)

// links finds a report's relative links: images and figures.
var links = regexp.MustCompile(`\]\((figures/[^)]+)\)`)

// TestRunQuickEveryDocument runs every document at --quick sizes and checks
// each report: written, with the machine and the command, the document's
// numbers, every figure it links to present beside it, and its result
// file saved; then rebuilds every report from the saved files into another
// directory and checks that the reports, the figures and the result files
// are byte for byte the run's.
func TestRunQuickEveryDocument(t *testing.T) {
	dir := t.TempDir()
	var progress bytes.Buffer
	paths, err := Run(context.Background(), nil, Options{Quick: true, Out: dir, Worker: procloader.SelfWorker(),
		Command: "headspace reproduce --quick", Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(Docs) {
		t.Fatalf("%d reports, want %d: %v", len(paths), len(Docs), paths)
	}
	want := map[string][]string{
		"000-headspace.md": {"30 ms", "13%", "1.7 h", "CacheDataLoader", "Where ours differs"},
		"002-loaders.md":   {"3.86", "107.43", "3×", "2×", "−50%", "processes ÷ goroutines", "Where ours differs"},
		"003-caching-ladder.md": {"3.45", "3.33", "3.23", "1.72", "0.89", "1.28", "(a) The caching ladder", "(b) Transform fix", "(c) Smaller raw image", "(d) uint8 transfer", "numpy", "Where ours differs", "figures/003-timeline-none.png",
			"`encoded` once per format, content, decoder and raw size; `raw` and `device` once per raw size; `none` in every case"},
		"004-sim.md": {"| 98 |", "| 275 |", "| 295 |", "Where ours differs"},
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
		for _, s := range append(want[d.Report()], "headspace reproduce --quick", "cores, GOMAXPROCS", "Quick run", "# "+d.ID+" — ", "](results/"+d.Results()+")") {
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
		rs, err := resultfile.Read(filepath.Join(dir, "results", d.Results()))
		if err != nil || len(rs) == 0 {
			t.Errorf("result file of %s: %d results, %v", d.ID, len(rs), err)
		}
		if !strings.Contains(progress.String(), "reproduce "+d.ID+": ") {
			t.Errorf("no progress for %s:\n%s", d.ID, progress.String())
		}
	}
	// Nothing but reports, figures and result files, and no temporary
	// files left behind.
	run := files(t, dir)
	for name := range run {
		if strings.Contains(name, ".tmp") {
			t.Errorf("temporary file left: %s", name)
		}
	}

	// The rebuild: every file the run wrote, the same bytes.
	again := t.TempDir()
	rebuilt, err := Run(context.Background(), nil, Options{From: filepath.Join(dir, "results"), Out: again})
	if err != nil {
		t.Fatal(err)
	}
	if len(rebuilt) != len(Docs) {
		t.Fatalf("rebuilt %v, want %d reports", rebuilt, len(Docs))
	}
	re := files(t, again)
	for name, b := range run {
		if !bytes.Equal(re[name], b) {
			t.Errorf("%s: the rebuild's (%d bytes) differs from the run's (%d bytes)", name, len(re[name]), len(b))
		}
	}
	for name := range re {
		if _, ok := run[name]; !ok {
			t.Errorf("the rebuild wrote %s, the run did not", name)
		}
	}
}

// files reads every file under dir, by path relative to it.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRebuildRefusesBadFiles checks that a rebuild from a missing file, a
// file that is not a result file, another document's, or one that lacks a
// setting fails with a one-line *FileError naming the file, and writes no
// report.
func TestRebuildRefusesBadFiles(t *testing.T) {
	measured := t.TempDir()
	if _, err := Run(context.Background(), []string{"004"}, Options{Quick: true, Out: measured}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(measured, "results", "004-sim.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file string // 004-sim.txt's content; "" for no file
		want string
	}{
		{"missing", "", "no such file"},
		{"not a result file", "hello\n", "not a result file"},
		{"empty", "goos: linux\n", "holds no results"},
		{"another document's", strings.Replace(string(good), "document: 004", "document: 002", 1), "not a result file of document 004 (its document: 002)"},
		{"no document", strings.Replace(string(good), "document: 004\n", "", 1), "(its document: none)"},
		{"a setting missing", strings.Replace(string(good), "seeds: ", "zeeds: ", 1), `no "seeds" configuration line`},
		{"a bad setting", strings.Replace(string(good), "seeds: 2", "seeds: two", 1), `seeds: "two" is not an integer`},
		{"a seed missing", regexp.MustCompile(`(?m)^BenchmarkSim/load=2s/dist=constant/seed=2 .*\n`).ReplaceAllString(string(good), ""), "1 seeds, the configuration says 2"},
		{"another experiment's records", regexp.MustCompile(`(?m)^BenchmarkSim/load=2s/dist=constant/seed=2 .*$`).ReplaceAllString(string(good), "BenchmarkLoaders/mode=goroutine/workers=1 3 370836 ttfb-ns 149114 samples/s 0.0004 cpu-s"),
			"BenchmarkLoaders/mode=goroutine/workers=1: not a record of Sim (its benchmarks: Sim)"},
		{"a record's name without a key", strings.Replace(string(good), "BenchmarkSim/load=2s/dist=constant/seed=2 ", "BenchmarkSim/load=2s/seed=2 ", 1), "BenchmarkSim/load=2s/seed=2: a record of Sim without its key dist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := t.TempDir()
			path := filepath.Join(from, "004-sim.txt")
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := t.TempDir()
			paths, err := Run(context.Background(), []string{"004"}, Options{From: from, Out: out})
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != path {
				t.Fatalf("error %v, want a *FileError naming %s", err, path)
			}
			if msg := fe.Error(); !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line naming %s and saying %q", msg, path, tc.want)
			}
			if len(paths) != 0 {
				t.Errorf("reports %v written", paths)
			}
			if _, err := os.Stat(filepath.Join(out, "004-sim.md")); !os.IsNotExist(err) {
				t.Errorf("report: %v, want none", err)
			}
		})
	}
}

// TestRebuild003NeedsItsTimeline checks that the 003 report's saved
// timeline is required, and that a saved timeline that is not one is
// refused, each by a *FileError naming it.
func TestRebuild003NeedsItsTimeline(t *testing.T) {
	from := t.TempDir()
	tl := filepath.Join(from, timeline003)
	for _, tc := range []struct {
		name, content, want string
	}{
		{"missing", "", "no such file"},
		{"not a timeline", "[1, 2]", "not a saved timeline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.content != "" {
				if err := os.WriteFile(tl, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := timeline003Figure(&page{out: t.TempDir(), saved: from})
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != tl || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a *FileError naming %s saying %q", err, tl, tc.want)
			}
		})
	}
}

// TestRunFailsFastKeepingReports checks that a failing document stops the
// run with an error naming it, that the reports written before it stay, and
// that the documents after it do not run.
func TestRunFailsFastKeepingReports(t *testing.T) {
	dir := t.TempDir()
	one := func(ctx context.Context, s *settings, t *tracker) (measurement, error) {
		return measurement{recs: []*benchfmt.Result{{Name: benchfmt.Name("BenchmarkFine"), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "ns/op"}}}}}, nil
	}
	ok := Doc{ID: "997", Name: "fine", Title: "A Fine Document", measure: one, render: func(f *resultFile, _ *page) ([]byte, error) {
		return []byte("# 997 " + f.str(keyDocument) + "\n"), f.check()
	}}
	failing := Doc{ID: "998", Name: "broken", Title: "A Broken Document", measure: func(context.Context, *settings, *tracker) (measurement, error) {
		return measurement{}, errors.New("the experiment broke")
	}}
	after := Doc{ID: "999", Name: "after", Title: "Never Run", measure: func(context.Context, *settings, *tracker) (measurement, error) {
		t.Error("a document after the failure ran")
		return measurement{}, nil
	}}
	paths, err := run(context.Background(), []Doc{ok, failing, after}, Options{Quick: true, Out: dir})
	if err == nil || !strings.Contains(err.Error(), "document 998 (A Broken Document)") || !strings.Contains(err.Error(), "the experiment broke") {
		t.Fatalf("error %v, want one naming document 998 and the cause", err)
	}
	if len(paths) != 1 || filepath.Base(paths[0]) != "997-fine.md" {
		t.Fatalf("reports %v, want only 997's", paths)
	}
	if b, err := os.ReadFile(paths[0]); err != nil || string(b) != "# 997 997\n\n<!-- written by headspace: reproduce report -->\n" {
		t.Errorf("997's report: %q, %v", b, err)
	}
	for _, name := range []string{"998-broken.md", "999-after.md", "results/998-broken.txt", "results/999-after.txt"} {
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

// TestDocsFromRegistry checks that the reports follow the registry: each
// of a registered experiment of its document, in the Registry's order;
// and that report refuses one of an unregistered experiment, of another
// document's, without its functions, or twice.
func TestDocsFromRegistry(t *testing.T) {
	var got []string
	last := -1
	for _, d := range Docs {
		got = append(got, d.ID+" "+d.Experiment.Name())
		at := registered(d.Experiment)
		if at <= last {
			t.Errorf("%s at registry index %d, after %d: not in the Registry's order", d.ID, at, last)
		}
		last = at
	}
	if want := []string{"000 Headspace", "002 Loaders", "003 Caching", "004 Sim"}; !slices.Equal(got, want) {
		t.Errorf("Docs %q, want %q", got, want)
	}
	saved := slices.Clone(Docs)
	defer func() { Docs = saved }()
	ok := Doc{ID: "004", Name: "sim", Title: "t", Summary: "s", Experiment: workloads.Sim{}, measure: measure004, render: render004}
	for _, tc := range []struct {
		name string
		d    Doc
		want string
	}{
		{"unregistered", Doc{ID: "005", Experiment: unregistered{}, measure: measure004, render: render004}, "not in workloads.Registry"},
		{"another document's", Doc{ID: "004", Experiment: workloads.Ladder{}, measure: measure004, render: render004}, `an experiment of document "003"`},
		{"no render", Doc{ID: "004", Experiment: workloads.Sim{}, measure: measure004}, "cannot measure or render"},
		{"no summary", Doc{ID: "004", Name: "sim", Title: "t", Experiment: workloads.Sim{}, measure: measure004, render: render004}, "no name, title or summary"},
		{"twice", ok, "reported twice"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("%s: panic %v, want %q", tc.name, r, tc.want)
				}
			}()
			report(tc.d)
		}()
	}
	Docs = nil
	for _, d := range slices.Backward(saved) {
		report(d)
	}
	if !slices.EqualFunc(Docs, saved, func(a, b Doc) bool { return a.ID == b.ID }) {
		t.Errorf("reported in reverse, Docs are %v: not the Registry's order", IDs())
	}
}

// unregistered is an experiment that is not in workloads.Registry.
type unregistered struct{ workloads.Sim }

func (unregistered) Name() string     { return "Unregistered" }
func (unregistered) Document() string { return "005" }

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

// TestRun003StopsWhenATimelineCannotBeSaved: the timeline that
// workloads.Caching passes to its MeasureEach's callback early in its run (step (a),
// level none) is saved at once, and a save that fails stops the run
// there, before the model's profiles, with the error naming the file.
func TestRun003StopsWhenATimelineCannotBeSaved(t *testing.T) {
	dir := t.TempDir()
	blocked := filepath.Join(dir, "results", timeline003)
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil { // a directory, not a file
		t.Fatal(err)
	}
	var progress bytes.Buffer
	_, err := Run(context.Background(), []string{"003"}, Options{Quick: true, Out: dir, Progress: &progress,
		TorchPeer: peer.Peer{Python: "/nonexistent/python3", Script: "x.py"}})
	if err == nil || !strings.Contains(err.Error(), timeline003) {
		t.Fatalf("Run: %v, want an error naming %s", err, timeline003)
	}
	if strings.Contains(progress.String(), "(model)") {
		t.Errorf("the run went on to the model after the failed save:\n%s", progress.String())
	}
	if !strings.Contains(progress.String(), "(a) naive level=none run 1/") {
		t.Errorf("no run of step (a) at level none:\n%s", progress.String())
	}
}
