package history

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/headspace-bench/headspace/harness/gate"
)

// compareStore is a store of 10 runs of one machine whose samples take
// the page's compare down every path of the gate's: ties (values of 3
// significant digits), more samples than the exact U test takes (30
// with ties, 60 without: the normal approximation), too few samples (3),
// a step of 8% at run 5 in some, a run condition, a disturbed run (a
// regression held), a unit of unknown direction, and benchmarks that
// come and go. Its samples have at most the SampleDigits digits the
// page keeps, so that the page compares the very samples the gate does.
func compareStore(t testing.TB) string {
	src, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	for run := range 10 {
		rng := rand.New(rand.NewPCG(uint64(run), 37))
		var b strings.Builder
		d := time.Date(2026, 11, 1, 3, 17, 0, 0, time.UTC).AddDate(0, 0, run)
		fmt.Fprintf(&b, "Unit steps/s better=higher\n\ngoos: linux\ngoarch: amd64\ncpu: Test CPU\ncores: 2\ncommit: c%06d\ndate: %s\ndevice: emulated\nbatch: 4\n\n", run, d.Format(time.RFC3339))
		step := 1.0
		if run >= 5 {
			step = 0.92
		}
		line := func(name string, n int, digits int, base float64, extra string) {
			for range n {
				v := base * (1 + 0.02*(2*rng.Float64()-1))
				fmt.Fprintf(&b, "Benchmark%s 4 %.*g ns/op %.*g steps/s %.*g widgets%s\n", name, digits, 1e9/v, digits, v, digits, v/3, extra)
			}
		}
		line("Ties-2", 6, 3, 100*step, "")
		line("ManyTies-2", 30, 3, 200*step, "")
		line("Many-2", 60, SampleDigits, 300*step, "")
		line("Flat-2", 6, SampleDigits, 400, "")
		line("Few-2", 3, SampleDigits, 500*step, "")
		if run%3 != 1 {
			line("Sometimes-2", 6, SampleDigits, 600, "")
		}
		// A disturbed run on the new side of the step holds its regression.
		dist := ""
		if run == 6 {
			dist = " 1 disturbed"
		}
		line("Disturbed-2", 6, SampleDigits, 700*step, " 0.5 run-delay-%"+dist)
		p := filepath.Join(src, fmt.Sprintf("run-%d.txt", run))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Add(context.Background(), store, p, AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// pageRow is a row of the page's compare (page.js, headspaceCompare).
type pageRow struct {
	Benchmark, Unit, Verdict string
	Delta, P, Q, Old, New    any // a number, or null for NaN
}

func number(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return math.NaN()
}

// near says whether a and b agree to 1e-9 (relative), NaN with NaN.
func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// nearSample says whether medians a and b agree to the page's quantum:
// the page keeps SampleDigits significant digits of a sample (rounding
// moves it by at most 5e-6 of itself), and the gate reads the file's.
func nearSample(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return near(a, b)
	}
	return math.Abs(a-b) <= 5e-6*math.Max(math.Abs(a), math.Abs(b))
}

// nearDelta says whether changes a and b agree to 1.1e-5 (absolute): a
// change is a ratio of two medians, each within 5e-6 of the file's
// (nearSample).
func nearDelta(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return near(a, b)
	}
	return math.Abs(a-b) <= 1.1e-5
}

// TestPageCompareMatchesGate: the page's compare of any two runs, in
// Chromium, gives every row the gate's verdict, and its medians, change,
// p and q, for every pair of the store's runs (compareStore), and for
// pairs of the seeded store either side of its step.
func TestPageCompareMatchesGate(t *testing.T) {
	ctx := browse(t, 1000, 800)
	for _, tc := range []struct {
		store string
		paths []gate.Verdict // the verdicts its pairs must reach
	}{
		{compareStore(t), []gate.Verdict{gate.NoChange, gate.Regression, gate.Improvement, gate.TooFewSamples, gate.OnlyInOld,
			gate.OnlyInNew, gate.Disturbed, gate.Condition, gate.UnknownDirection}},
		{seededStore(t, 12, 6, "Test CPU"), []gate.Verdict{gate.NoChange, gate.Regression, gate.Improvement}},
	} {
		h, err := Load(context.Background(), tc.store, Options{})
		if err != nil {
			t.Fatal(err)
		}
		page := writePage(t, h)
		if err := chromedp.Run(ctx,
			chromedp.Navigate("file://"+page),
			chromedp.WaitVisible(`body[data-charts]`, chromedp.ByQuery),
		); err != nil {
			t.Fatal(err)
		}
		m := h.Machines[0]
		verdicts := map[string]int{}
		for i := range m.Runs {
			for j := range m.Runs {
				if i == j {
					continue
				}
				opt := gate.DefaultOptions()
				opt.CrossMachine = true
				rep, err := gate.CompareFiles(m.Runs[i].Path, m.Runs[j].Path, opt)
				if err != nil {
					t.Fatal(err)
				}
				var rows []pageRow
				if err := chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`headspaceCompare(0, %d, %d)`, i, j), &rows,
					func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithReturnByValue(true) })); err != nil {
					t.Fatal(err)
				}
				got := map[gate.Metric]pageRow{}
				for _, r := range rows {
					got[gate.Metric{Name: r.Benchmark, Unit: r.Unit}] = r
				}
				if len(rows) != len(rep.Rows) {
					t.Errorf("runs %d, %d: the page compares %d metrics, the gate %d", i, j, len(rows), len(rep.Rows))
				}
				for _, want := range rep.Rows {
					r, ok := got[gate.Metric{Name: want.Name, Unit: want.Unit}]
					verdicts[want.Verdict.String()]++
					switch {
					case !ok:
						t.Errorf("runs %d, %d: the page lacks %s %s", i, j, want.Name, want.Unit)
					case r.Verdict != want.Verdict.String() || !nearDelta(number(r.Delta), want.Delta) || !near(number(r.P), want.P) || !near(number(r.Q), want.Q):
						t.Errorf("runs %d, %d, %s %s: page %s (Δ %v, p %v, q %v), gate %s (Δ %v, p %v, q %v)", i, j, want.Name, want.Unit,
							r.Verdict, r.Delta, r.P, r.Q, want.Verdict, want.Delta, want.P, want.Q)
					case want.Old.N > 0 && !nearSample(number(r.Old), want.Old.Center), want.New.N > 0 && !nearSample(number(r.New), want.New.Center):
						t.Errorf("runs %d, %d, %s %s: page medians %v, %v; gate %v, %v", i, j, want.Name, want.Unit, r.Old, r.New, want.Old.Center, want.New.Center)
					}
				}
			}
		}
		t.Logf("%s: verdicts compared: %v", m.Key, verdicts)
		for _, v := range tc.paths {
			if verdicts[v.String()] == 0 {
				t.Errorf("%s: no pair reached %q", m.Key, v)
			}
		}
	}
}
