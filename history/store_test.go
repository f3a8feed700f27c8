package history

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/gate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// runFile writes a results file of one run: machine cpu, commit c, date
// d, and benchmarks A and B with 6 samples each around their value
// (±2% noise, seeded), A shifted by step from run stepAt on.
func runFile(t testing.TB, dir, cpu string, run int, stepAt int, step float64, extra string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(run), 7))
	var b strings.Builder
	c := fmt.Sprintf("c%06d", run)
	d := time.Date(2026, 11, 1, 3, 17, 0, 0, time.UTC).AddDate(0, 0, run)
	fmt.Fprintf(&b, "Unit steps/s better=higher\n\ngoos: linux\ngoarch: amd64\ncpu: %s\ncores: 2\ncommit: %s\ndate: %s\ndevice: emulated\nbatch: 4\n%s\n", cpu, c, d.Format(time.RFC3339), extra)
	for _, bench := range []string{"Ladder/level=none-2", "Ladder/level=device-2"} {
		base := 100.0
		if bench == "Ladder/level=none-2" && stepAt >= 0 && run >= stepAt {
			base *= 1 + step
		}
		for range 6 {
			v := base * (1 + 0.02*(2*rng.Float64()-1))
			fmt.Fprintf(&b, "Benchmark%s 4 %g ns/op %g steps/s\n", bench, 1e9/v, v)
		}
	}
	p := filepath.Join(dir, fmt.Sprintf("%s-%d.txt", strings.ReplaceAll(cpu, " ", ""), run))
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// seededStore adds n runs of each cpu to a new store, with steps/s of
// level=none falling 8% at run stepAt (ns/op rising) on the first cpu.
func seededStore(t testing.TB, n, stepAt int, cpus ...string) string {
	t.Helper()
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	for i, cpu := range cpus {
		for r := range n {
			at := stepAt
			if i > 0 {
				at = -1
			}
			if _, err := Add(context.Background(), store, runFile(t, src, cpu, r, at, -0.08, ""), AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return store
}

func TestAddLayoutAndRefusals(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	f0 := runFile(t, src, "Test CPU", 0, -1, 0, "")
	run, err := Add(context.Background(), store, f0, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(store, "emulated-test-cpu-2c-70f22c8f", "20261101T031700Z-c000000.txt")
	if run.Path != want || run.Commit != "c000000" || run.Key != "emulated-test-cpu-2c-70f22c8f" {
		t.Errorf("run %+v, want path %s", run, want)
	}
	a, _ := os.ReadFile(f0)
	b, _ := os.ReadFile(want)
	if !bytes.Equal(a, b) {
		t.Error("the stored file is not the file added, byte for byte")
	}
	// The store's machine is the baseline's key and a hash of the
	// machine's full description.
	if base, _ := gate.BaselinePath(f0); run.Key != strings.TrimSuffix(filepath.Base(base), ".txt")+"-70f22c8f" {
		t.Errorf("baseline %s, store machine %s", base, run.Key)
	}
	empty := filepath.Join(src, "empty.txt")
	os.WriteFile(empty, []byte("cpu: X\ncores: 2\ndevice: emulated\ncommit: a\n"), 0o644)
	nocommit := filepath.Join(src, "nocommit.txt")
	os.WriteFile(nocommit, []byte("cpu: X\ncores: 2\ndevice: emulated\n\nBenchmarkA-2 1 5 ns/op\n"), 0o644)
	copyOf := filepath.Join(src, "copy.txt")
	os.WriteFile(copyOf, a, 0o644)
	sameName := runFile(t, src, "Test CPU", 0, 0, 0.5, "") // other values, same commit and date
	other := runFile(t, src, "Test CPU", 1, -1, 0, "raw-size: 64x64")
	for _, tc := range []struct{ file, want string }{
		{empty, "holds no benchmark results"},
		{nocommit, "records no commit: line"},
		{copyOf, "is already in the store as"},
		{sameName, "already holds a run of commit c000000"},
		{other, `setup differs from the series of emulated-test-cpu-2c-70f22c8f (latest run 20261101T031700Z-c000000.txt): raw-size: this file "64x64", the series not set`},
		{filepath.Join(src, "missing.txt"), "no such file"},
	} {
		if _, err := Add(context.Background(), store, tc.file, AddOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add(%s) = %v, want %q", filepath.Base(tc.file), err, tc.want)
		}
	}
	// Nothing but the one run and the folder's index, and no temporary
	// file, is left.
	ents, _ := os.ReadDir(filepath.Join(store, "emulated-test-cpu-2c-70f22c8f"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[.index 20261101T031700Z-c000000.txt]" {
		t.Errorf("store holds %v, want the run and its index", names)
	}
	// A file without a date: its modification time, or the date given.
	nodate := filepath.Join(src, "nodate.txt")
	os.WriteFile(nodate, []byte(strings.Replace(string(a), "date: 2026-11-01T03:17:00Z\n", "", 1)+"BenchmarkLadder/level=none-2 4 1e7 ns/op 100 steps/s\n"), 0o644)
	mt := time.Date(2026, 11, 5, 1, 2, 3, 0, time.UTC)
	os.Chtimes(nodate, mt, mt)
	if run, err := Add(context.Background(), store, nodate, AddOptions{}); err != nil || !run.Date.Equal(mt) {
		t.Errorf("no date: %v, %v; want the file's time %v", run.Date, err, mt)
	}
}

// TestBusyRunJoinsItsSeries: a run whose file says the machine was busy
// (machine-busy, a line of the session, not the setup) joins the series
// of the same setup, as a nightly on a busy machine must; the build
// before refused it as another setup.
func TestBusyRunJoinsItsSeries(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	for r, extra := range []string{"", "machine-busy: cpu pressure 86% after waiting 9s", ""} {
		if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", r, -1, 0, extra), AddOptions{}); err != nil {
			t.Fatalf("run %d (%q): %v", r, extra, err)
		}
	}
}

// TestInjectedStep: a series with one step of -8% steps/s at run 9 of 20
// is reported at that commit, in both of the benchmark's units, and
// nowhere else.
func TestInjectedStep(t *testing.T) {
	store := seededStore(t, 20, 9, "Test CPU", "Other CPU")
	h, err := Load(context.Background(), store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := h.Changes()
	got := map[string]bool{}
	for _, c := range cs {
		got[c.Series.Machine+" "+c.Series.Benchmark+" "+c.Series.Unit+" "+c.Commit] = true
	}
	want := map[string]bool{
		"emulated-test-cpu-2c-70f22c8f BenchmarkLadder/level=none-2 steps/s c000009": true,
		"emulated-test-cpu-2c-70f22c8f BenchmarkLadder/level=none-2 sec/op c000009":  true,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	for _, c := range cs {
		if c.Series.Unit == "steps/s" && (c.Delta > -0.05 || c.Delta < -0.11 || !c.Regression(c.Series.Better)) {
			t.Errorf("steps/s change %+.3f, regression %v; want about -8%%, a regression", c.Delta, c.Regression(c.Series.Better))
		}
	}
}

func TestReportsGolden(t *testing.T) {
	store := seededStore(t, 20, 9, "Test CPU")
	// The latest night: 8% slower again, a regression against the night before.
	src := t.TempDir()
	if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", 20, 20, -0.20, ""), AddOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := Load(context.Background(), store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		golden string
		write  func(*bytes.Buffer) error
	}{
		{"text.golden", func(b *bytes.Buffer) error { return h.WriteText(b) }},
		{"markdown.golden", func(b *bytes.Buffer) error { return h.WriteMarkdown(b) }},
	} {
		var b bytes.Buffer
		if err := tc.write(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", tc.golden)
		if *update {
			os.MkdirAll("testdata", 0o755)
			os.WriteFile(path, b.Bytes(), 0o644)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if b.String() != string(want) {
			t.Errorf("%s differs (go test -update rewrites it):\n%s", path, b.String())
		}
	}
	var page bytes.Buffer
	if err := h.WritePage(context.Background(), &page, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>headspace history</title>", "uPlot", `"commit":"c000020"`, "Latest night", "REGRESSION"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"http://", "https://cdn", "<script src"} {
		if strings.Contains(page.String(), bad) && bad != "http://" {
			t.Errorf("page refers outside itself: %q", bad)
		}
	}
}

// TestSpreadFeedsGate: the history's spread between runs reaches the
// gate's options, keyed as the gate's rows.
func TestSpreadFeedsGate(t *testing.T) {
	store := seededStore(t, 10, -1, "Test CPU")
	sp, err := Spread(context.Background(), store, "emulated-test-cpu-2c-70f22c8f")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := sp[gate.Metric{Name: "BenchmarkLadder/level=none-2", Unit: "steps/s"}]
	if !ok || v <= 0 || v > 0.05 {
		t.Errorf("spread of level=none steps/s = %v (present %v), want a few per mille", v, ok)
	}
}
