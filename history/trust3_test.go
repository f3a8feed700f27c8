package history

// Round 3 of "Results you can trust" (issue 32): the store's refusals,
// its lock, its keys and modes, and the reports' escaping, cancellation
// and suspected steps.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/history/changepoint"
)

const testKey = "emulated-test-cpu-2c-70f22c8f"

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAddRefusesMachineChange: a header that changes machine half way is
// refused: no one machine's series can hold it.
func TestAddRefusesMachineChange(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	first := runFile(t, src, "Test CPU", 0, -1, 0, "")
	b, _ := os.ReadFile(first)
	for _, line := range []string{"cpu: Other CPU", "cores: 16", "device: cuda"} {
		mixed := writeFile(t, src, "mixed.txt", string(b)+"\n"+line+"\nBenchmarkLadder/level=none-2 4 1e7 ns/op 100 steps/s\n")
		if _, err := Add(context.Background(), store, mixed, AddOptions{}); err == nil || !strings.Contains(err.Error(), "its header changes machine at result 13") {
			t.Errorf("%s half way: Add = %v, want a refusal", line, err)
		}
	}
	if ents, _ := os.ReadDir(store); len(ents) > 1 {
		t.Errorf("the store holds %d entries after refusals", len(ents))
	}
}

// TestAddRefusesBuildChange: a header that changes platform or toolchain
// half way (goarch, goos, go: two builds' results in one file) is
// refused, naming the key and the result where it changes; the same
// file whose goarch does not change is filed.
func TestAddRefusesBuildChange(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	b, _ := os.ReadFile(runFile(t, src, "Test CPU", 0, -1, 0, ""))
	for _, tc := range []struct{ line, want string }{
		{"goarch: arm64", `its header changes goarch at result 13 ("amd64", then "arm64")`},
		{"goos: darwin", `its header changes goos at result 13 ("linux", then "darwin")`},
	} {
		mixed := writeFile(t, src, "mixed.txt", string(b)+"\n"+tc.line+"\nBenchmarkLadder/level=none-2 4 1e7 ns/op 100 steps/s\n")
		if _, err := Add(context.Background(), store, mixed, AddOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s half way: Add = %v, want a refusal with %q", tc.line, err, tc.want)
		}
	}
	toolchain := writeFile(t, src, "go.txt", "go: go1.25\n"+string(b)+"\ngo: go1.26\nBenchmarkLadder/level=none-2 4 1e7 ns/op 100 steps/s\n")
	if _, err := Add(context.Background(), store, toolchain, AddOptions{}); err == nil || !strings.Contains(err.Error(), `its header changes go at result 13 ("go1.25", then "go1.26")`) {
		t.Errorf("go half way: Add = %v, want a refusal", err)
	}
	if ents, _ := os.ReadDir(store); len(ents) > 1 {
		t.Errorf("the store holds %d entries after refusals", len(ents))
	}
	same := writeFile(t, src, "same.txt", string(b)+"\ngoarch: amd64\nBenchmarkLadder/level=none-2 4 1e7 ns/op 100 steps/s\n")
	if _, err := Add(context.Background(), store, same, AddOptions{}); err != nil {
		t.Errorf("the same goarch again: Add = %v, want it filed", err)
	}
}

// TestConcurrentAddsSerialised: two adds of different setups into a fresh
// store at once: exactly one is accepted, every time.
func TestConcurrentAddsSerialised(t *testing.T) {
	src := t.TempDir()
	a := runFile(t, src, "Test CPU", 0, -1, 0, "")
	b4, _ := os.ReadFile(runFile(t, src, "Test CPU", 1, -1, 0, ""))
	b := writeFile(t, src, "batch8.txt", strings.Replace(string(b4), "batch: 4", "batch: 8", 1))
	for trial := range 40 {
		store := filepath.Join(t.TempDir(), "store")
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 2)
		for i, f := range []string{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = Add(context.Background(), store, f, AddOptions{})
			}()
		}
		close(start)
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("trial %d: both or neither accepted: %v; %v", trial, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil && !strings.Contains(err.Error(), "setup differs") {
				t.Errorf("trial %d: refused for another reason: %v", trial, err)
			}
		}
		runs, err := Runs(store, testKey)
		if err != nil || len(runs) != 1 {
			t.Fatalf("trial %d: %d runs, %v", trial, len(runs), err)
		}
	}
}

// TestMachineKeys: keys differ wherever the descriptions do, keep the
// readable slug, and bad core counts are refused.
func TestMachineKeys(t *testing.T) {
	m := func(cpu, cores string) gate.Machine { return gate.Machine{Device: "emulated", CPU: cpu, Cores: cores} }
	keys := map[string]gate.Machine{}
	for _, mm := range []gate.Machine{m("Процессор", "8"), m("处理器", "8"), m("Intel", "8"), m("intel", "8"), m("Intel ", "8"), m("Intel", "16"),
		{Device: "cuda", GPU: "A100", CPU: "Intel", Cores: "8"}, {Device: "cuda", CPU: "A100 Intel", Cores: "8"}} {
		k := MachineKey(mm)
		if other, ok := keys[k]; ok {
			t.Errorf("%+v and %+v share the key %s", mm, other, k)
		}
		keys[k] = mm
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(mm.Key()) + `-[0-9a-f]{8}$`).MatchString(k) {
			t.Errorf("key %q is not the slug %q and 8 hex digits", k, mm.Key())
		}
	}
	if k := MachineKey(m("Процессор", "8")); !strings.HasPrefix(k, "emulated-8c-") {
		t.Errorf("key %q", k)
	}
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	b, _ := os.ReadFile(runFile(t, src, "Test CPU", 0, -1, 0, ""))
	for _, cores := range []string{"-1", "0", "two", "1.5"} {
		f := writeFile(t, src, "c.txt", strings.Replace(string(b), "cores: 2", "cores: "+cores, 1))
		if _, err := Add(context.Background(), store, f, AddOptions{}); err == nil || !strings.Contains(err.Error(), "not a positive whole number of cores") {
			t.Errorf("cores: %s: Add = %v", cores, err)
		}
	}
}

// TestLegacyFolder: a store made before the hashed keys goes on: a folder
// named by the slug alone takes its machine's next run, and a machine
// whose slug collides with it gets its own folder.
func TestLegacyFolder(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	legacy := filepath.Join(store, "emulated-test-cpu-2c")
	os.MkdirAll(legacy, 0o755)
	b, _ := os.ReadFile(runFile(t, src, "Test CPU", 0, -1, 0, ""))
	os.WriteFile(filepath.Join(legacy, "20261101T031700Z-c000000.txt"), b, 0o644)
	run, err := Add(context.Background(), store, runFile(t, src, "Test CPU", 1, -1, 0, ""), AddOptions{})
	if err != nil || filepath.Dir(run.Path) != legacy || run.Key != "emulated-test-cpu-2c" {
		t.Fatalf("next run: %+v, %v; want it in the legacy folder", run, err)
	}
	collide := runFile(t, src, "Test-CPU", 2, -1, 0, "") // the same slug, another CPU
	run, err = Add(context.Background(), store, collide, AddOptions{})
	if err != nil || filepath.Base(filepath.Dir(run.Path)) != MachineKey(gate.Machine{Device: "emulated", CPU: "Test-CPU", Cores: "2"}) {
		t.Fatalf("colliding machine: %+v, %v; want its own folder", run, err)
	}
	h, err := Load(context.Background(), store, Options{})
	if err != nil || len(h.Machines) != 2 || len(h.Machines[0].Runs) != 2 {
		t.Fatalf("Load: %v, %+v", err, h)
	}
	// The committed store reads as before, every folder a machine.
	if _, err := os.Stat("../results/store"); err == nil {
		dirs, _ := Machines("../results/store")
		h, err := Load(context.Background(), "../results/store", Options{})
		if err != nil || len(h.Machines) != len(dirs) || len(dirs) == 0 {
			t.Errorf("committed store: %v, %d machines of %d folders", err, len(h.Machines), len(dirs))
		}
		for _, m := range h.Machines {
			if f, err := MachineFolder("../results/store", m.Runs[len(m.Runs)-1].Machine); err != nil || f != m.Key {
				t.Errorf("committed machine %s: its runs would go to %q (%v)", m.Key, f, err)
			}
		}
	}
}

// TestStoreMode: a run in the store is readable by all, as every output.
func TestStoreMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	run, err := Add(context.Background(), store, runFile(t, src, "Test CPU", 0, -1, 0, ""), AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(run.Path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("stored run mode %v (%v), want 0644", fi.Mode().Perm(), err)
	}
}

// TestPartialRun: a partial file is refused unless asked for; accepted as
// a machine's first run it does not wedge the series.
func TestPartialRun(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	b, _ := os.ReadFile(runFile(t, src, "Test CPU", 0, -1, 0, ""))
	partial := writeFile(t, src, "partial.txt", strings.Replace(string(b), "batch: 4", "batch: 4\npartial: level=device", 1))
	if _, err := Add(context.Background(), store, partial, AddOptions{}); err == nil || !strings.Contains(err.Error(), "partial run") {
		t.Fatalf("partial: Add = %v, want a refusal", err)
	}
	if _, err := Add(context.Background(), store, partial, AddOptions{Partial: true}); err != nil {
		t.Fatalf("partial with Partial: %v", err)
	}
	for r := 1; r < 3; r++ {
		if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", r, -1, 0, ""), AddOptions{}); err != nil {
			t.Errorf("complete run %d after the partial one: %v", r, err)
		}
	}
}

// TestSymlinkMachineFolder: a machine folder that is a link is refused by
// add and by report alike, and nothing is written through it.
func TestSymlinkMachineFolder(t *testing.T) {
	src, store, elsewhere := t.TempDir(), filepath.Join(t.TempDir(), "store"), t.TempDir()
	os.MkdirAll(store, 0o755)
	if err := os.Symlink(elsewhere, filepath.Join(store, testKey)); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if _, err := Add(context.Background(), store, runFile(t, src, "Test CPU", 0, -1, 0, ""), AddOptions{}); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("Add = %v, want a refusal", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("add wrote through the link: %v", ents)
	}
	if _, err := Load(context.Background(), store, Options{}); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("Load = %v, want the same refusal", err)
	}
}

// TestFutureDateRefused: a date past now (and its leeway) is refused,
// from the file or from the date given.
func TestFutureDateRefused(t *testing.T) {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	b, _ := os.ReadFile(runFile(t, src, "Test CPU", 0, -1, 0, ""))
	future := writeFile(t, src, "future.txt", strings.Replace(string(b), "date: 2026-11-01T03:17:00Z", "date: 9999-12-31T00:00:00Z", 1))
	if _, err := Add(context.Background(), store, future, AddOptions{}); err == nil || !strings.Contains(err.Error(), "is in the future") {
		t.Errorf("date: 9999-12-31: Add = %v", err)
	}
	nodate := writeFile(t, src, "nodate.txt", strings.Replace(string(b), "date: 2026-11-01T03:17:00Z\n", "", 1))
	if _, err := Add(context.Background(), store, nodate, AddOptions{Date: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}); err == nil || !strings.Contains(err.Error(), "is in the future") {
		t.Errorf("Date 9999-12-31: Add = %v", err)
	}
	if err := CheckDate(time.Now().Add(MaxFutureSkew/2), time.Now()); err != nil {
		t.Errorf("a date within the leeway: %v", err)
	}
}

// hostile is a history whose every string tries to escape its format.
func hostile() *History {
	const commit = "c1`|</code><script>alert(1)</script> **@all** $x$ [l](http://x)"
	const unit = "u|`<img src=x onerror=alert(2)>"
	const bench = "BenchmarkA|`<i>*_~#1"
	runs := make([]Run, 8)
	for i := range runs {
		runs[i] = Run{Commit: fmt.Sprintf("%s\u2028%d", commit, i), Date: time.Date(2026, 11, 1+i, 0, 0, 0, 0, time.UTC)}
	}
	s := &Series{Machine: "m|`<b>", Benchmark: bench, Unit: unit}
	for i := range runs {
		s.Points = append(s.Points, Point{Run: i})
	}
	ch := Change{Change: changepoint.Change{Index: 3, Before: 1, After: 2, Delta: 1}, Run: 3, Commit: runs[3].Commit, Date: runs[3].Date}
	su := Change{Change: changepoint.Change{Index: 6, Before: 2, After: 1, Delta: -0.5}, Run: 6, Commit: runs[6].Commit, Date: runs[6].Date}
	s.Changes, s.Suspect = []Change{ch}, &su
	m := &Machine{Key: s.Machine, Runs: runs, Series: []*Series{s}, LatestErr: errors.New("bad | `x` <script>alert(3)</script>\nsecond line")}
	return &History{Machines: []*Machine{m}}
}

// TestHostileStrings: no field of any format can break out of its place.
func TestHostileStrings(t *testing.T) {
	h := hostile()
	var text bytes.Buffer
	if err := h.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n"); len(lines) != 2 {
		t.Errorf("text: %d lines for 1 change and 1 suspect:\n%s", len(lines), text.String())
	} else {
		field := `("(?:[^"\\]|\\.)*"|[^\s"]+)`
		line := regexp.MustCompile(`^` + field + ` ` + field + ` ` + field + ` \S+ at ` + field + ` \(2026-11-0[47]\): `)
		for i, l := range lines {
			f := line.FindStringSubmatch(l)
			if f == nil {
				t.Errorf("text line's fields are not its own: %q", l)
				continue
			}
			if c, err := strconv.Unquote(f[4]); err != nil || c != h.Machines[0].Runs[3+3*i].Commit {
				t.Errorf("text line's commit %s reads back as %q (%v)", f[4], c, err)
			}
			if u, err := strconv.Unquote(f[3]); err != nil || u != h.Machines[0].Series[0].Unit {
				t.Errorf("text line's unit %s reads back as %q (%v)", f[3], u, err)
			}
		}
	}
	var md bytes.Buffer
	if err := h.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	unescapedPipe := regexp.MustCompile(`(^|[^\\])\|`)
	for _, l := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(l, "| ") {
			if n := len(unescapedPipe.FindAllString(strings.ReplaceAll(l, "||", "| |"), -1)); n != 9 {
				t.Errorf("markdown row has %d cell borders, want 9: %q", n, l)
			}
		}
		for _, bad := range []string{"<script", "<img", "<b>", "<i>", " @all", "**@", "](http", "$x$"} {
			if strings.Contains(l, bad) {
				t.Errorf("markdown line holds %q: %q", bad, l)
			}
		}
		if strings.Contains(l, "`") && !regexp.MustCompile("^[^`]*(\\\\`[^`]*)*$").MatchString(l) {
			t.Errorf("markdown line holds an unescaped backtick: %q", l)
		}
	}
	if !strings.Contains(md.String(), "Suspected steps at the end of a series") {
		t.Error("markdown lacks the suspected step")
	}
	var page bytes.Buffer
	if err := h.WritePage(context.Background(), &page, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>alert", "<img", "<b>", "<i>"} {
		if strings.Contains(page.String(), bad) {
			t.Errorf("page holds %q", bad)
		}
	}
}

// TestCancelledReport: a cancelled context stops Load and WritePage with
// its error, and WritePage writes nothing.
func TestCancelledReport(t *testing.T) {
	store := seededStore(t, 6, -1, "Test CPU")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, store, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Load: %v", err)
	}
	h, err := Load(context.Background(), store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := h.WritePage(ctx, &page, time.Now()); !errors.Is(err, context.Canceled) || page.Len() != 0 {
		t.Errorf("WritePage: %v, %d bytes written", err, page.Len())
	}
}

// TestSuspectedStepReported: an 8% drop the test cannot confirm — in the
// last 3 of 20 runs, or half way through 12 — is reported as a suspected
// step, in the text and markdown reports and on the page.
func TestSuspectedStepReported(t *testing.T) {
	for _, tc := range []struct{ n, at int }{{20, 17}, {12, 6}} {
		store := seededStore(t, tc.n, tc.at, "Test CPU")
		h, err := Load(context.Background(), store, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if cs := h.Changes(); len(cs) != 0 {
			t.Errorf("%d runs: changes %v where the test cannot confirm one", tc.n, cs)
		}
		var text, md, page bytes.Buffer
		h.WriteText(&text)
		h.WriteMarkdown(&md)
		h.WritePage(context.Background(), &page, time.Now())
		want := fmt.Sprintf("at c%06d", tc.at)
		if !strings.Contains(text.String(), want) || !strings.Contains(text.String(), fmt.Sprintf("suspected regression (the last %d runs; too few to confirm)", tc.n-tc.at)) {
			t.Errorf("%d runs: text:\n%s", tc.n, text.String())
		}
		if !strings.Contains(md.String(), "### Suspected steps at the end of a series") || !strings.Contains(md.String(), fmt.Sprintf("`c%06d`", tc.at)) {
			t.Errorf("%d runs: markdown:\n%s", tc.n, md.String())
		}
		if !strings.Contains(page.String(), "Suspected steps at the end of a series") || !strings.Contains(page.String(), `"suspect":{"run":`+fmt.Sprint(tc.at)) {
			t.Errorf("%d runs: the page lacks the suspected step", tc.n)
		}
	}
}
