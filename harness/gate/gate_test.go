package gate

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/gate")

// verdicts maps "name unit" to the verdict of each row.
func verdicts(rep Report) map[string]Verdict {
	m := map[string]Verdict{}
	for _, row := range rep.Rows {
		m[row.Name+" "+row.Unit] = row.Verdict
	}
	return m
}

const (
	raw    = "BenchmarkLadder/level=raw/workers=4/transforms=naive-2"
	host   = "BenchmarkLadder/level=host/workers=4/transforms=naive-2"
	sample = "BenchmarkLadder/level=sample/workers=4/transforms=naive-2"
)

// TestGateGolden compares crafted old/new files in testdata/gate/<case>
// and checks the text report against report.golden (go test -update
// rewrites them) as well as the verdicts that matter.
func TestGateGolden(t *testing.T) {
	all := func(v Verdict, names ...string) map[string]Verdict {
		m := map[string]Verdict{}
		for _, n := range names {
			for _, u := range []string{"sec/op", "steps/s", "samples/s", "au-%"} {
				m[n+" "+u] = v
			}
		}
		return m
	}
	merge := func(ms ...map[string]Verdict) map[string]Verdict {
		out := map[string]Verdict{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		want     map[string]Verdict // all rows
		wantText []string           // in the report
		wantErr  string
	}{
		{
			name: "regression",
			want: merge(all(Regression, raw), all(NoChange, host)),
			wantText: []string{
				"4 regressions beyond 5% at false discovery rate 0.05:",
				"FAIL: 4 regressions in 8 compared metrics:\n  " + raw + " sec/op +",
				raw + " steps/s: ",
			},
		},
		{
			name:     "noise",
			want:     all(NoChange, raw, host),
			wantText: []string{"PASS: no regressions in 8 compared metrics\n"},
		},
		{
			name:     "improvement",
			want:     merge(all(Improvement, raw), all(NoChange, host)),
			wantText: []string{"4 improvements beyond 5%:", "PASS: no regressions in 8 compared metrics\n"},
		},
		{
			name: "onesided",
			want: merge(all(NoChange, raw), all(OnlyInOld, host), all(OnlyInNew, sample),
				map[string]Verdict{raw + " peak-rss-B": OnlyInNew}),
			wantText: []string{
				"Only in old (missing from new; not compared):\n  " + host + " (sec/op, steps/s, samples/s, au-%)\n",
				"Only in new (not in old; not compared):\n  " + raw + " peak-rss-B (the benchmark is on both sides, this unit is not)\n  " + sample + " (",
				"PASS: no regressions in 4 compared metrics; 9 not checked (see above)\n",
			},
		},
		{
			name: "mixedunits",
			want: map[string]Verdict{
				"BenchmarkDecode/codec=jpeg-2 sec/op":   Improvement,
				"BenchmarkDecode/codec=jpeg-2 frames/s": Improvement, // better=higher from new.txt
				"BenchmarkDecode/codec=jpeg-2 widgets":  UnknownDirection,
				"BenchmarkStep/workers=4-2 sec/op":      Regression,
				"BenchmarkStep/workers=4-2 steps/s":     Regression, // from Units: no Unit line
				"BenchmarkStep/workers=4-2 ttfb-sec":    Regression, // ttfb-ns tidied
				"BenchmarkStep/workers=4-2 peak-rss-B":  NoChange,
			},
			wantText: []string{
				"Changed, but which way is better is unknown",
				"BenchmarkDecode/codec=jpeg-2 widgets: 49.74 → 69.39 (+39.51%, p=0.000155, q=0.000181, n=8)",
				"FAIL: 3 regressions in 7 compared metrics:\n  BenchmarkStep/workers=4-2 sec/op +",
			},
		},
		{
			name: "toofew",
			want: map[string]Verdict{
				"BenchmarkThreeEach-2 sec/op": TooFewSamples,
				"BenchmarkThreeFour-2 sec/op": TooFewSamples,
				"BenchmarkFourEach-2 sec/op":  Regression,
				"BenchmarkOneEach-2 sec/op":   TooFewSamples,
			},
			wantText: []string{
				"Too few samples to decide (not checked):\n  BenchmarkThreeEach-2 sec/op: old has 3, new has 3; the smallest p-value 3+3 samples can give is 0.1, not below alpha 0.05: the U test needs at least 4 samples per side\n",
				"BenchmarkThreeFour-2 sec/op: old has 3, new has 4; the smallest p-value 3+4 samples can give is 0.0571",
				"the U test needs at least 4 samples per side",
				"need >= 6 samples for confidence interval at level 0.95",
				"FAIL: 1 regression in 1 compared metric:\n  BenchmarkFourEach-2 sec/op +",
			},
		},
		{
			name:    "syntax",
			wantErr: filepath.Join("testdata", "gate", "syntax", "new.txt") + ":14: parsing measurement: invalid syntax",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "gate", tc.name)
			rep, err := CompareFiles(filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt"), DefaultOptions())
			var buf bytes.Buffer
			if err != nil {
				fmt.Fprintf(&buf, "error: %v\n", err)
			} else if err := rep.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			got := buf.String()

			golden := filepath.Join(dir, "report.golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err2 := os.ReadFile(golden)
			if err2 != nil {
				t.Fatalf("%v (run go test -update to create it)", err2)
			}
			if got != string(want) {
				t.Errorf("report differs from %s (go test -update rewrites it):\n%s", golden, got)
			}

			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := verdicts(rep); !mapsEqual(got, tc.want) {
				t.Errorf("verdicts:\n%v\nwant:\n%v", got, tc.want)
			}
			for _, s := range tc.wantText {
				if !strings.Contains(got, s) {
					t.Errorf("report does not contain %q", s)
				}
			}
			// Every regression is named in the summary.
			for _, row := range rep.Regressions() {
				if !strings.Contains(got, "  "+row.Name+" "+row.Unit+": ") {
					t.Errorf("regression %s %s not named in the summary", row.Name, row.Unit)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]Verdict) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// resultsOf builds one result per value, all named name, in unit.
// resultsOf returns one result per value, all recorded on one machine
// (cpu and cores set, as every file of this machine records them).
func resultsOf(name, unit string, vals ...float64) []*benchfmt.Result {
	var rs []*benchfmt.Result
	for _, v := range vals {
		rs = append(rs, &benchfmt.Result{Name: benchfmt.Name(name), Iters: 1, Values: []benchfmt.Value{{Value: v, Unit: unit}},
			Config: []benchfmt.Config{{Key: "cpu", Value: []byte("Test CPU"), File: true}, {Key: "cores", Value: []byte("2"), File: true}}})
	}
	return rs
}

// spread returns n values around center, ±1% apart.
func spread(center float64, n int) []float64 {
	var out []float64
	for i := range n {
		out = append(out, center*(1+0.02*(float64(i)/float64(max(n-1, 1))-0.5)))
	}
	return out
}

func TestVerdicts(t *testing.T) {
	higher := benchfmt.UnitMetadataMap{
		{Unit: "frames/s", Key: "better"}: &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: "frames/s", Key: "better"}, Value: "higher"},
		{Unit: "steps/s", Key: "better"}:  &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: "steps/s", Key: "better"}, Value: "lower"},
	}
	for _, tc := range []struct {
		name     string
		unit     string
		old, new []float64
		opt      Options
		want     Verdict
	}{
		{"slower ns/op", "sec/op", spread(100, 8), spread(120, 8), DefaultOptions(), Regression},
		{"faster ns/op", "sec/op", spread(100, 8), spread(80, 8), DefaultOptions(), Improvement},
		{"B/op up", "B/op", spread(100, 8), spread(120, 8), DefaultOptions(), Regression},
		{"allocs/op down", "allocs/op", spread(100, 8), spread(50, 8), DefaultOptions(), Improvement},
		{"steps/s down", "steps/s", spread(100, 8), spread(80, 8), DefaultOptions(), Regression},
		{"steps/s up", "steps/s", spread(100, 8), spread(120, 8), DefaultOptions(), Improvement},
		{"au-% down", "au-%", spread(90, 8), spread(60, 8), DefaultOptions(), Regression},
		{"GB/s down", "GB/s", spread(12, 8), spread(10, 8), DefaultOptions(), Regression},
		{"cpu-s up", "cpu-s", spread(12, 8), spread(14, 8), DefaultOptions(), Regression},
		{"step-sec (step-ns tidied) up", "step-sec", spread(0.3, 8), spread(0.4, 8), DefaultOptions(), Regression},
		{"MB/s down (benchfmt default)", "B/s", spread(100, 8), spread(80, 8), DefaultOptions(), Regression},
		{"the table beats file metadata", "steps/s", spread(100, 8), spread(120, 8), withUnits(higher), Improvement},
		{"file metadata for a custom unit", "frames/s", spread(100, 8), spread(80, 8), withUnits(higher), Regression},
		{"unknown unit changed", "widgets", spread(100, 8), spread(80, 8), DefaultOptions(), UnknownDirection},
		{"unknown unit unchanged", "widgets", spread(100, 8), spread(100.1, 8), DefaultOptions(), NoChange},
		{"within threshold", "sec/op", spread(100, 8), spread(104, 8), DefaultOptions(), NoChange},
		{"beyond a lower threshold", "sec/op", spread(100, 8), spread(104, 8), withThreshold(0.01), Regression},
		{"within a higher threshold", "sec/op", spread(100, 8), spread(120, 8), withThreshold(0.25), NoChange},
		{"overlapping", "sec/op", []float64{1, 2, 3, 4, 5, 6}, []float64{1.5, 2.5, 3.5, 4.5, 5.5, 6.5}, DefaultOptions(), NoChange},
		{"identical", "sec/op", spread(100, 8), spread(100, 8), DefaultOptions(), NoChange},
		{"constant, equal", "sec/op", []float64{5, 5, 5, 5}, []float64{5, 5, 5, 5}, DefaultOptions(), NoChange},
		{"constant, different", "sec/op", []float64{5, 5, 5, 5}, []float64{7, 7, 7, 7}, DefaultOptions(), Regression},
		{"3+3", "sec/op", spread(100, 3), spread(200, 3), DefaultOptions(), TooFewSamples},
		{"3+4", "sec/op", spread(100, 3), spread(200, 4), DefaultOptions(), TooFewSamples},
		{"4+4", "sec/op", spread(100, 4), spread(200, 4), DefaultOptions(), Regression},
		{"3+5", "sec/op", spread(100, 3), spread(200, 5), DefaultOptions(), Regression},
		{"1+39", "sec/op", spread(100, 1), spread(200, 39), DefaultOptions(), TooFewSamples},
		{"1+40", "sec/op", spread(100, 1), spread(200, 40), DefaultOptions(), Regression},
		{"4+4 at alpha 0.01", "sec/op", spread(100, 4), spread(200, 4), withAlpha(0.01), TooFewSamples},
		{"5+5 at alpha 0.01", "sec/op", spread(100, 5), spread(200, 5), withAlpha(0.01), Regression},
		{"old median 0", "sec/op", []float64{0, 0, 0, 0, 0}, spread(1, 5), DefaultOptions(), Regression},
		{"only in old", "sec/op", spread(100, 8), nil, DefaultOptions(), OnlyInOld},
		{"only in new", "sec/op", nil, spread(100, 8), DefaultOptions(), OnlyInNew},
		{"all NaN on one side", "sec/op", []float64{math.NaN(), math.NaN()}, spread(100, 8), DefaultOptions(), TooFewSamples},
		{"NaNs left out", "sec/op", append(spread(100, 8), math.NaN(), math.Inf(1)), spread(120, 8), DefaultOptions(), Regression},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Compare(resultsOf("X", tc.unit, tc.old...), resultsOf("X", tc.unit, tc.new...), tc.opt)
			if len(rep.Rows) != 1 {
				t.Fatalf("%d rows", len(rep.Rows))
			}
			row := rep.Rows[0]
			if row.Verdict != tc.want {
				t.Errorf("verdict %v, want %v (delta %s, p %.4f, note %q)", row.Verdict, tc.want, signedPct(row.Delta), row.P, row.Note)
			}
			if row.Name != "BenchmarkX" {
				t.Errorf("name %q", row.Name)
			}
			if got := len(rep.Regressions()); (got == 1) != (tc.want == Regression) {
				t.Errorf("Regressions() has %d rows", got)
			}
			var buf bytes.Buffer
			if err := rep.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			if tc.want == Regression && !strings.Contains(buf.String(), "FAIL: 1 regression in 1 compared metric:\n  BenchmarkX "+tc.unit) ||
				tc.want != Regression && !strings.Contains(buf.String(), "PASS") {
				t.Errorf("report:\n%s", buf.String())
			}
		})
	}
}

func TestCompareDetails(t *testing.T) {
	old := resultsOf("BenchmarkA/k=v-4", "ns/op", 100, 101, 102, 103, 104, 105)
	cur := resultsOf("A/k=v-4", "sec/op", 120e-9, 121e-9, 122e-9, 123e-9, 124e-9, 125e-9)
	// As benchfmt.Reader would hold them: tidied.
	for _, r := range old {
		r.Values[0] = benchfmt.Value{Value: r.Values[0].Value * 1e-9, Unit: "sec/op", OrigValue: r.Values[0].Value, OrigUnit: "ns/op"}
	}
	rep := Compare(old, cur, DefaultOptions())
	if len(rep.Rows) != 1 {
		t.Fatalf("ns/op and sec/op, with and without the Benchmark prefix, did not group: %d rows", len(rep.Rows))
	}
	row := rep.Rows[0]
	if row.Name != "BenchmarkA/k=v-4" || row.Unit != "sec/op" || row.Better != resultfile.LowerIsBetter {
		t.Errorf("row %q %q %v", row.Name, row.Unit, row.Better)
	}
	if row.Old.N != 6 || row.New.N != 6 || math.Abs(row.Old.Center-102.5e-9) > 1e-15 || math.Abs(row.New.Center-122.5e-9) > 1e-15 {
		t.Errorf("sides %+v %+v", row.Old, row.New)
	}
	if math.IsInf(row.Old.Lo, 0) || row.Old.Lo > row.Old.Center || row.Old.Hi < row.Old.Center {
		t.Errorf("6 samples should have a finite 95%% interval around the median: %+v", row.Old.Summary)
	}
	if math.Abs(row.Delta-(122.5/102.5-1)) > 1e-9 {
		t.Errorf("delta %v", row.Delta)
	}
	// 6+6 entirely apart: p = 2/C(12,6) = 2/924.
	if math.Abs(row.P-2.0/924) > 1e-9 {
		t.Errorf("p = %v, want %v", row.P, 2.0/924)
	}
	if rep.Alpha != DefaultAlpha || rep.Threshold != DefaultThreshold {
		t.Errorf("defaults: alpha %v threshold %v", rep.Alpha, rep.Threshold)
	}
	// Distinct GOMAXPROCS suffixes and sub-benchmark keys are distinct benchmarks.
	rep = Compare(resultsOf("A/k=v-4", "ns/op", 1, 2, 3, 4), resultsOf("A/k=v-8", "ns/op", 1, 2, 3, 4), DefaultOptions())
	if got := verdicts(rep); !mapsEqual(got, map[string]Verdict{"BenchmarkA/k=v-4 sec/op": OnlyInOld, "BenchmarkA/k=v-8 sec/op": OnlyInNew}) {
		t.Errorf("verdicts %v", got)
	}
}

func TestMinSamples(t *testing.T) {
	for alpha, want := range map[float64]int{0.05: 4, 0.01: 5, 0.1: 4, 0.2: 3, 0.001: 7} {
		if got := MinSamples(alpha); got != want {
			t.Errorf("MinSamples(%v) = %d, want %d", alpha, got, want)
		}
	}
}

func TestWriteTextEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := Compare(nil, nil, DefaultOptions()).WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "no benchmark results to compare") {
		t.Errorf("report:\n%s", buf.String())
	}
}

func TestVerdictString(t *testing.T) {
	var got []string
	for v := NoChange; v <= Condition+1; v++ {
		got = append(got, v.String())
	}
	want := []string{"no significant change", "regression", "improvement", "too few samples", "only in old", "only in new", "unknown direction",
		"disturbed: rerun", "run condition", "Verdict(9)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q", got)
	}
}

func TestCompareFilesErrors(t *testing.T) {
	good := filepath.Join("testdata", "gate", "noise", "old.txt")
	missing := filepath.Join(t.TempDir(), "missing.txt")
	if _, err := CompareFiles(missing, good, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("missing old: %v", err)
	}
	if _, err := CompareFiles(good, missing, DefaultOptions()); err == nil {
		t.Error("missing new: no error")
	}
}

func TestCompareConfigDiffs(t *testing.T) {
	old := withConfig(resultsOf("A", "ns/op", 1, 2, 3, 4), "cpu", "Old CPU", "commit", "a", "device", "emulated", "batch", "256")
	cur := withConfig(resultsOf("A", "ns/op", 1, 2, 3, 4), "cpu", "New CPU", "commit", "b", "device", "emulated", "pinned", "true")
	cur[0].Config = append(cur[0].Config, benchfmt.Config{Key: ".file", Value: []byte("internal")})
	rep := Compare(old, cur, DefaultOptions())
	want := []string{`cpu: old "Old CPU", new "New CPU"`, `batch: old "256", new not set`, `pinned: old not set, new "true"`}
	if !slices.Equal(rep.ConfigDiffs, want) {
		t.Errorf("ConfigDiffs = %q, want %q", rep.ConfigDiffs, want)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "warning: old and new were recorded under different configurations; they may not be comparable:\n  cpu: old") {
		t.Errorf("report:\n%s", buf.String())
	}
	if rep := Compare(old, old, DefaultOptions()); len(rep.ConfigDiffs) != 0 {
		t.Errorf("same configuration: %q", rep.ConfigDiffs)
	}
}

func withUnits(u benchfmt.UnitMetadataMap) Options { o := DefaultOptions(); o.Units = u; return o }
func withThreshold(t float64) Options              { o := DefaultOptions(); o.Threshold = t; return o }
func withAlpha(a float64) Options                  { o := DefaultOptions(); o.Alpha = a; return o }

// withConfig gives every result the file configuration lines kv (key,
// value, key, value, …).
// withConfig sets file configuration keys (kv: key, value, …) on rs; an
// empty value removes the key.
func withConfig(rs []*benchfmt.Result, kv ...string) []*benchfmt.Result {
	for _, r := range rs {
		for i := 0; i+1 < len(kv); i += 2 {
			r.Config = slices.DeleteFunc(r.Config, func(c benchfmt.Config) bool { return c.Key == kv[i] })
			if kv[i+1] != "" {
				r.Config = append(r.Config, benchfmt.Config{Key: kv[i], Value: []byte(kv[i+1]), File: true})
			}
		}
	}
	return rs
}

func TestEvidence(t *testing.T) {
	eight := spread(100, 8)
	two := func(name string) []*benchfmt.Result {
		return append(resultsOf(name+"A", "sec/op", eight...), resultsOf(name+"B", "sec/op", eight...)...)
	}
	machine := func(rs []*benchfmt.Result, cpu string) []*benchfmt.Result {
		return withConfig(rs, "device", "emulated", "cpu", cpu, "cores", "2")
	}
	for _, tc := range []struct {
		name     string
		old, new []*benchfmt.Result
		cross    bool
		want     string // "" for enough evidence
	}{
		{"enough", two("X"), two("X"), false, ""},
		{"new empty", two("X"), nil, false, "new holds no benchmark results: nothing to gate on"},
		{"old empty", nil, two("X"), false, "old holds no benchmark results"},
		{"nothing in common", two("X"), two("Y"), false, "no metric could be compared"},
		{"too few samples everywhere", resultsOf("X", "sec/op", 1, 2), resultsOf("X", "sec/op", 1, 2), false, "no metric could be compared"},
		{"half the benchmarks", two("X"), resultsOf("XA", "sec/op", eight...), false, "new holds 1 of the 2 benchmarks of old (50%), under the 90% coverage"},
		{"other machine", machine(two("X"), "Intel Xeon"), machine(two("X"), "AMD EPYC"), false, `old and new come from different machines (cpu "Intel Xeon" ≠ "AMD EPYC")`},
		{"other machine, allowed", machine(two("X"), "Intel Xeon"), machine(two("X"), "AMD EPYC"), true, ""},
		{"a key set on one side only is unknown, not different", machine(two("X"), "Intel Xeon"), withConfig(two("X"), "cpu", "Intel Xeon"), false, ""},
		{"no cpu line is another machine", machine(two("X"), "Intel Xeon"), withConfig(two("X"), "cpu", ""), false, "new records no cpu: line"},
		{"no cores line is another machine", withConfig(two("X"), "cores", ""), two("X"), false, "old records no cores: line"},
		{"no cpu line, allowed", withConfig(two("X"), "cpu", ""), two("X"), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := DefaultOptions()
			opt.CrossMachine = tc.cross
			rep := Compare(tc.old, tc.new, opt)
			err := rep.Evidence(opt.MinCoverage)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Evidence() = %v, want %q", err, tc.want)
			}
			var buf bytes.Buffer
			if err := rep.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			if got := strings.HasPrefix(buf.String(), "CROSS-MACHINE comparison"); got != (tc.cross && len(rep.MachineDiffs) > 0) {
				t.Errorf("report starts %q", strings.SplitN(buf.String(), "\n", 2)[0])
			}
		})
	}
}

// ladderLike returns one result per ns/op value with steps/s (its
// headline unit) after it: steps[i], or none where steps is shorter.
func ladderLike(name string, ns, steps []float64) []*benchfmt.Result {
	rs := resultsOf(name, "ns/op", ns...)
	for i, r := range rs {
		r.Values[0].Value = ns[i]
		if i < len(steps) {
			r.Values = append(r.Values, benchfmt.Value{Value: steps[i], Unit: "steps/s"})
		}
	}
	return rs
}

// Issue 32, item 15: a benchmark's headline metric (steps/s for the
// ladder) missing or not finite in any of its results is short evidence,
// whatever the other metrics say: the gate passed a new file whose
// steps/s was NaN everywhere because its ns/op compared fine.
func TestEvidenceHeadline(t *testing.T) {
	ns, steps := spread(1e8, 8), spread(10, 8)
	nan := slices.Repeat([]float64{math.NaN()}, 8)
	withNaN := slices.Clone(steps)
	withNaN[0], withNaN[5] = math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name     string
		old, new []*benchfmt.Result
		want     string // "" for enough evidence
	}{
		{"both finite", ladderLike("L", ns, steps), ladderLike("L", ns, steps), ""},
		{"NaN everywhere in new", ladderLike("L", ns, steps), ladderLike("L", ns, nan),
			"new: BenchmarkL steps/s, the benchmark's headline metric, is missing or not finite in 8 of its results there"},
		{"NaN everywhere in old", ladderLike("L", ns, nan), ladderLike("L", ns, steps), "old: BenchmarkL steps/s, the benchmark's headline metric"},
		{"absent from new", ladderLike("L", ns, steps), ladderLike("L", ns, nil), "new: BenchmarkL steps/s, the benchmark's headline metric, is missing or not finite in 8"},
		{"absent from all but 1 of new", ladderLike("L", ns, steps), ladderLike("L", ns, steps[:1]), "new: BenchmarkL steps/s, the benchmark's headline metric, is missing or not finite in 7"},
		{"two non-finite in new", ladderLike("L", ns, steps), ladderLike("L", ns, withNaN), "new: BenchmarkL steps/s, the benchmark's headline metric, is missing or not finite in 2"},
		{"absent from 6 of new", ladderLike("L", ns, steps), ladderLike("L", ns, steps[:2]), "new: BenchmarkL steps/s, the benchmark's headline metric, is missing or not finite in 6"},
		{"other units non-finite: compared as before", ladderLike("L", slices.Concat(ns[:7], nan[:1]), steps), ladderLike("L", ns, steps), ""},
		{"plain Go benchmark: ns/op is its headline", resultsOf("G", "ns/op", ns...), resultsOf("G", "ns/op", ns...), ""},
		{"a benchmark only in old is coverage's business", append(ladderLike("L", ns, steps), ladderLike("M", ns, nan)...),
			append(append(ladderLike("L", ns, steps), ladderLike("N", ns, steps)...), ladderLike("P", ns, steps)...), "holds 1 of the 2 benchmarks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := DefaultOptions()
			rep := Compare(tc.old, tc.new, opt)
			err := rep.Evidence(opt.MinCoverage)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Evidence() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestHeadline(t *testing.T) {
	for _, tc := range []struct {
		units []string
		want  string
	}{
		{[]string{"ns/op", "steps/s", "samples/s"}, "steps/s"},
		{[]string{"ns/op"}, "sec/op"},
		{[]string{"GB/s"}, "GB/s"},
		{[]string{"step-ns"}, "step-sec"},
		{[]string{"ttfb-ns", "samples/s"}, "ttfb-sec"},
		{[]string{"ns/op", "B/op", "allocs/op"}, "B/op"},
		{nil, ""},
	} {
		r := &benchfmt.Result{Name: benchfmt.Name("X"), Iters: 1}
		for _, u := range tc.units {
			r.Values = append(r.Values, benchfmt.Value{Value: 1, Unit: u})
		}
		if got := Headline(r); got != tc.want {
			t.Errorf("Headline(%v) = %q, want %q", tc.units, got, tc.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		threshold, alpha, coverage float64
		want                       string
	}{
		{0.05, 0.05, 0.9, ""},
		{0, 0.05, 0, ""},
		{math.Inf(1), 0.05, 0.9, "--threshold +Inf"},
		{math.NaN(), 0.05, 0.9, "--threshold NaN"},
		{-0.1, 0.05, 0.9, "--threshold -0.1"},
		{1, 0.05, 0.9, "--threshold 1"},
		{0.05, 0, 0.9, "--alpha 0"},
		{0.05, 0.05, 1.5, "--min-coverage 1.5"},
	} {
		err := Options{Threshold: tc.threshold, Alpha: tc.alpha, MinCoverage: tc.coverage}.Validate()
		if (tc.want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Validate(%v, %v, %v) = %v, want %q", tc.threshold, tc.alpha, tc.coverage, err, tc.want)
		}
	}
}

// TestCompareFilesStreams: the accumulator keeps one group per benchmark
// and unit however many results stream past, and no result.
func TestCompareFilesStreams(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("cpu: X\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "BenchmarkA/k=%d 1 %d ns/op\n", i%3, 100+i%7)
	}
	path := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var acc accumulator
	if _, err := resultfile.Scan(path, func(r *benchfmt.Result) error { acc.add(0, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(acc.groups) != 3 || acc.results[0] != 20000 || len(acc.config[0]["cpu"]) != 1 {
		t.Errorf("%d groups, %d results, cpu values %v; want 3, 20000, one", len(acc.groups), acc.results[0], acc.config[0]["cpu"])
	}
}

func TestBaselinePath(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ file, want string }{
		{"device: emulated\ncpu: Intel(R) Xeon(R) Processor\n\nBenchmarkA-2 1 5 ns/op\n", "results/baseline/emulated-intel-r-xeon-r-processor-2c.txt"},
		{"device: cuda\ncpu: AMD EPYC\ncores: 16\n\nBenchmarkA-16 1 5 ns/op\n", "results/baseline/cuda-amd-epyc-16c.txt"},
		{"device: emulated\n\nBenchmarkA-2 1 5 ns/op\n", "names no machine"},
		{"", "names no machine"},
	} {
		path := filepath.Join(dir, "r.txt")
		if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := BaselinePath(path)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, filepath.FromSlash(tc.want)) {
			t.Errorf("BaselinePath(%q) = %q, want %q", tc.file, got, tc.want)
		}
	}
}

// TestCommittedBaselines: every committed baseline is found under the name
// its own machine gives it, so ci/gate.sh finds it on that machine.
func TestCommittedBaselines(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", BaselineDir, "*.txt"))
	if len(paths) == 0 {
		t.Fatal("no committed baseline")
	}
	for _, p := range paths {
		want, err := BaselinePath(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if filepath.Base(want) != filepath.Base(p) {
			t.Errorf("%s is named for another machine: its own name is %s", p, want)
		}
	}
}

// TestGateScriptExit: ci/gate.sh's exit over its two comparisons is the
// most telling one, a regression (1) before short evidence (2) before a
// rerun (3) before a pass (0). It took the larger number, so a rerun on
// one comparison hid a regression on the other (issue 52).
func TestGateScriptExit(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("ci/gate.sh needs bash: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "ci", "gate.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ baseline, previous, want int }{
		{0, 0, 0}, {0, 3, 3}, {3, 0, 3}, {1, 3, 1}, {3, 1, 1}, {2, 3, 2}, {3, 2, 2}, {1, 2, 1}, {2, 1, 1},
	} {
		dir := t.TempDir()
		// A stand-in headspace: compare exits as told for each OLD.
		fake := filepath.Join(dir, "headspace")
		src := fmt.Sprintf("#!/usr/bin/env bash\ncase $1 in\nbaseline) echo %s/baseline.txt ;;\ncompare) case $2 in *baseline.txt) exit %d ;; *) exit %d ;; esac ;;\nesac\n", dir, tc.baseline, tc.previous)
		if err := os.WriteFile(fake, []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"baseline.txt", "new.txt", "prev.txt"} {
			os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644)
		}
		cmd := exec.Command(bash, script, filepath.Join(dir, "new.txt"), filepath.Join(dir, "prev.txt"))
		cmd.Env = append(os.Environ(), "HEADSPACE="+fake, "HISTORY=", "GATE_BASE=")
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != tc.want {
			t.Errorf("baseline comparison %d, previous %d: ci/gate.sh exit %d, want %d\n%s", tc.baseline, tc.previous, got, tc.want, out)
		}
	}
}
