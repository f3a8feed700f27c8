package gate

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

// synthetic returns n benchmarks × samples results of one machine, each
// value 1 ms × (1 + slow for the first slowed benchmarks) × (1 + u) with
// u uniform in [-noise, +noise], drawn from a PCG seeded with seed: the
// same data on every run.
func synthetic(seed uint64, n, samples int, noise, slow float64, slowed int) []*benchfmt.Result {
	rng := rand.New(rand.NewPCG(seed, 22))
	var rs []*benchfmt.Result
	for b := range n {
		name := fmt.Sprintf("Synthetic/b=%04d-2", b)
		base := 1e-3
		if b < slowed {
			base *= 1 + slow
		}
		for range samples {
			v := base * (1 + noise*(2*rng.Float64()-1))
			rs = append(rs, withConfig(resultsOf(name, "sec/op", v), "device", "emulated")...)
		}
	}
	return rs
}

// TestFDRNoFalseAlarmAA: two files drawn from one distribution, 2000
// benchmarks × 8 samples with ±10% noise, raise no alarm. Without the
// Benjamini–Hochberg adjustment the raw p-values flag dozens (the issue
// counted 46): the test checks that too, so it shows what the correction
// does.
func TestFDRNoFalseAlarmAA(t *testing.T) {
	old, cur := synthetic(1, 2000, 8, 0.10, 0, 0), synthetic(2, 2000, 8, 0.10, 0, 0)
	rep := Compare(old, cur, DefaultOptions())
	if err := rep.Evidence(DefaultMinCoverage); err != nil {
		t.Fatal(err)
	}
	if rep.Tested != 2000 {
		t.Errorf("tested %d metrics, want 2000", rep.Tested)
	}
	if regs := rep.Regressions(); len(regs) != 0 {
		t.Errorf("A/A: %d regressions, want none (first: %s %+.1f%% p=%.3g q=%.3g)", len(regs), regs[0].Name, 100*regs[0].Delta, regs[0].P, regs[0].Q)
	}
	raw := 0
	for _, r := range rep.Rows {
		if r.P < DefaultAlpha && r.Delta > DefaultThreshold {
			raw++
		}
	}
	if raw == 0 {
		t.Errorf("no raw p < %g beyond the threshold among 2000 A/A metrics: the data does not exercise the correction", DefaultAlpha)
	}
	t.Logf("A/A: %d metrics with raw p < alpha beyond the threshold (uncorrected alarms), 0 after Benjamini–Hochberg", raw)
}

// TestFDRCatchesRealSlowdown: 20 of 2000 benchmarks 12% slower, ±4%
// noise, 8 samples: every one of them is a regression, and nothing else.
func TestFDRCatchesRealSlowdown(t *testing.T) {
	old, cur := synthetic(3, 2000, 8, 0.04, 0, 0), synthetic(4, 2000, 8, 0.04, 0.12, 20)
	rep := Compare(old, cur, DefaultOptions())
	regs := rep.Regressions()
	got := map[string]bool{}
	for _, r := range regs {
		got[r.Name] = true
	}
	for b := range 20 {
		if name := fmt.Sprintf("BenchmarkSynthetic/b=%04d-2", b); !got[name] {
			t.Errorf("the 12%% slowdown of %s was not caught", name)
		}
	}
	if len(regs) != 20 {
		t.Errorf("%d regressions, want the 20 slowed benchmarks", len(regs))
	}
}

// TestSpreadBetweenRuns: a significant 8% change is a regression alone,
// but not when the history measured a 4% spread between runs (3 × 4% =
// 12% > 8%), and still one beyond it.
func TestSpreadBetweenRuns(t *testing.T) {
	old, cur := resultsOf("X", "sec/op", spread(100, 8)...), resultsOf("X", "sec/op", spread(108, 8)...)
	m := Metric{"BenchmarkX", "sec/op"}
	for _, tc := range []struct {
		spread float64
		want   Verdict
	}{{0, Regression}, {0.04, NoChange}, {0.02, Regression}} {
		opt := DefaultOptions()
		if tc.spread > 0 {
			opt.Spread = map[Metric]float64{m: tc.spread}
		}
		rep := Compare(old, cur, opt)
		if v := rep.Rows[0].Verdict; v != tc.want {
			t.Errorf("spread %g: %v, want %v (%s)", tc.spread, v, tc.want, rep.Rows[0].Note)
		}
		var b strings.Builder
		rep.WriteText(&b)
		if tc.spread == 0.04 && !strings.Contains(b.String(), "within the spread between runs") {
			t.Errorf("report does not say the change is within the spread:\n%s", b.String())
		}
		// Each metric's spread between runs is shown beside its delta.
		if hasCol := strings.Contains(b.String(), "run-to-run"); hasCol != (tc.spread > 0) ||
			(tc.spread > 0 && !strings.Contains(b.String(), "±"+pct(tc.spread))) {
			t.Errorf("spread %g: the table's run-to-run column:\n%s", tc.spread, b.String())
		}
	}
}

// TestUnitDirectionFromTable: compare takes a known unit's direction from
// headspace's table; a file that declares the other one is refused,
// naming the unit; files that disagree about an unknown unit are refused.
func TestUnitDirectionFromTable(t *testing.T) {
	dir := t.TempDir()
	file := func(name, units string, steps float64) string {
		var b strings.Builder
		b.WriteString(units + "cpu: X\ncores: 2\ndevice: emulated\n\n")
		for i := range 8 {
			fmt.Fprintf(&b, "BenchmarkA-2 1 %g steps/s %g frames/s\n", steps*(1+0.001*float64(i)), steps)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := file("old.txt", "Unit steps/s better=higher\n", 100)
	liar := file("liar.txt", "Unit steps/s better=lower\n", 50)
	if _, err := CompareFiles(old, liar, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "steps/s better=lower") || !strings.Contains(err.Error(), "liar.txt") {
		t.Errorf("a NEW file declaring steps/s better=lower: err = %v, want a refusal naming the file and the unit", err)
	}
	if _, err := CompareFiles(liar, old, DefaultOptions()); err == nil {
		t.Error("an OLD file declaring steps/s better=lower was not refused")
	}
	// No Unit line at all: the table's direction, a 50% drop a regression.
	plain := file("plain.txt", "", 50)
	rep, err := CompareFiles(old, plain, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Regressions()) != 1 || rep.Regressions()[0].Unit != "steps/s" {
		t.Errorf("steps/s down 50%%: regressions %v", rep.Regressions())
	}
	a := file("a.txt", "Unit frames/s better=higher\n", 100)
	b := file("b.txt", "Unit frames/s better=lower\n", 100)
	if _, err := CompareFiles(a, b, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "frames/s") {
		t.Errorf("files disagreeing about frames/s: err = %v", err)
	}
}
