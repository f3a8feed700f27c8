package history

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGenerateSmall: a generated store holds its nights under the key Add
// would file them, reads back as Series series, gives the same bytes for
// the same seed, takes the next night through Add, and its one injected
// step is found at its night in every unit and nowhere else.
func TestGenerateSmall(t *testing.T) {
	g := Generator{Nights: 40, Series: 8, Seed: 1, Steps: []Step{{Night: 20, Bench: 1, Delta: -0.08}}}
	dir := filepath.Join(t.TempDir(), "store")
	if err := g.Write(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	key := MachineKey(g.Machine())
	runs, err := Runs(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 40 || runs[20].Commit != g.Commit(20) || !runs[20].Date.Equal(g.Date(20)) {
		t.Fatalf("%d runs, run 20 %+v; want 40, commit %s at %v", len(runs), runs[20], g.Commit(20), g.Date(20))
	}
	if g.Benchmarks() != 3 || len(g.Units(2)) != 2 || g.Units(3) != nil {
		t.Errorf("8 series: %d benchmarks, the last with %v", g.Benchmarks(), g.Units(2))
	}

	// Deterministic: the same generator writes the same bytes.
	again := filepath.Join(t.TempDir(), "store")
	if err := g.Write(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		a, _ := os.ReadFile(r.Path)
		b, _ := os.ReadFile(filepath.Join(again, key, filepath.Base(r.Path)))
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs between two writes of one generator", filepath.Base(r.Path))
		}
	}
	if err := g.Write(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second write into the store: %v, want a refusal", err)
	}

	// The next night goes in through Add, into the same folder.
	next := Generator{Nights: 41, Series: 8, Seed: 1, Steps: g.Steps}
	f := filepath.Join(t.TempDir(), "night40.txt")
	os.WriteFile(f, next.File(40), 0o644)
	run, err := Add(context.Background(), dir, f, AddOptions{})
	if err != nil || run.Key != key {
		t.Fatalf("Add of night 40: %v (folder %s), want it filed under %s", err, run.Key, key)
	}

	h, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Machines) != 1 || len(h.Machines[0].Series) != 8 {
		t.Fatalf("%d machines, want one with 8 series", len(h.Machines))
	}
	var got []string
	for _, c := range h.Changes() {
		got = append(got, fmt.Sprintf("%s %s %s", c.Series.Benchmark, c.Series.Unit, c.Commit))
	}
	slices.Sort(got)
	var want []string
	for _, u := range []string{"sec/op", "steps/s", "samples/s"} {
		want = append(want, fmt.Sprintf("%s %s %s", g.Benchmark(1), u, g.Commit(20)))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("changes\n%v\nwant\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// yearFinds scores a loaded generated store against its generator: how
// many of the injected steps' series (each step's benchmark in each of
// its units) have a change point at the step's night, how many do not,
// and how many change points there are beyond those.
func yearFinds(h *History, g Generator) (found, missed, others int) {
	want := map[string]bool{}
	for _, s := range g.Steps {
		for _, u := range g.Units(s.Bench) {
			if u == "ns/op" {
				u = "sec/op" // as the gate tidies it
			}
			want[g.Benchmark(s.Bench)+" "+u+" "+g.Commit(s.Night)] = true
		}
	}
	for _, c := range h.Changes() {
		if k := c.Series.Benchmark + " " + c.Series.Unit + " " + c.Commit; want[k] {
			found++
			delete(want, k)
		} else {
			others++
		}
	}
	return found, len(want), others
}

// TestYearStepsFound: on a generated year (365 nightly runs; 30 series
// here, to keep the test short under -race: BenchmarkYearLoad checks the
// full 200), the three 8% steps are found at their nights in all three
// units, and no other change point is reported.
func TestYearStepsFound(t *testing.T) {
	g := YearOfNights()
	g.Series = 30
	g.Steps = []Step{{Night: 91, Bench: 1, Delta: -0.08}, {Night: 182, Bench: 4, Delta: -0.08}, {Night: 273, Bench: 7, Delta: -0.08}}
	dir := filepath.Join(t.TempDir(), "store")
	if err := g.Write(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	h, err := Load(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if found, missed, others := yearFinds(h, g); found != 9 || missed != 0 || others != 0 {
		t.Errorf("%d of the 9 stepped series found at their night, %d missed, %d other change points; want 9, 0, 0", found, missed, others)
		for _, c := range h.Changes() {
			t.Logf("%s %s at run %d (%+.1f%%)", c.Series.Benchmark, c.Series.Unit, c.Run, 100*c.Delta)
		}
	}
}
