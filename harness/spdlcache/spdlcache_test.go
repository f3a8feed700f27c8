package spdlcache

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", name, got)
	}
}

func ms(vs ...float64) []time.Duration {
	out := make([]time.Duration, len(vs))
	for i, v := range vs {
		out[i] = time.Duration(v * 1e6)
	}
	return out
}

// TestSPDLRun: SPDL's side is the mean of each phase, the first step of
// each left out (the workers' start, the switch), and the share is
// 1 − after ÷ before.
func TestSPDLRun(t *testing.T) {
	c := Config{Workers: 1, ReturnCachesAfter: 4, StepsAfter: 4}
	for _, tc := range []struct {
		name          string
		steps         []time.Duration
		before, after time.Duration
		// ours' estimator on the same steps (one worker: the median)
		medBefore, medAfter time.Duration
		share               float64
		err                 string
	}{
		{name: "input-bound", steps: ms(900, 100, 100, 100, 500, 40, 60, 50), before: 100 * time.Millisecond, after: 50 * time.Millisecond, share: 0.5,
			medBefore: 100 * time.Millisecond, medAfter: 50 * time.Millisecond},
		{name: "a slow step", steps: ms(1, 80, 100, 300, 1, 100, 100, 100), before: 160 * time.Millisecond, after: 100 * time.Millisecond, share: 0.375,
			medBefore: 100 * time.Millisecond, medAfter: 100 * time.Millisecond},
		{name: "cached slower", steps: ms(1, 50, 50, 50, 1, 100, 100, 100), before: 50 * time.Millisecond, after: 100 * time.Millisecond, share: -1,
			medBefore: 50 * time.Millisecond, medAfter: 100 * time.Millisecond},
		{name: "short log", steps: ms(1, 2, 3), err: "logged 3 steps, want 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := SPDLRun(tc.steps, c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Before != tc.before || r.After != tc.after || math.Abs(r.Share()-tc.share) > 1e-12 || r.Side != SPDL || r.Steps != 8 {
				t.Errorf("got %+v share %g, want before %v after %v share %g", r, r.Share(), tc.before, tc.after, tc.share)
			}
			if r.OtherBefore != tc.medBefore || r.OtherAfter != tc.medAfter {
				t.Errorf("ours' estimator on its steps: %v and %v, want %v and %v", r.OtherBefore, r.OtherAfter, tc.medBefore, tc.medAfter)
			}
		})
	}
}

// TestOursRun: ours takes analyze's medians, and its intervals only
// where they are finite.
func TestOursRun(t *testing.T) {
	rep := analysis.Report{StepTimes: ms(9, 80, 100, 120, 9, 40, 50),
		Before: analysis.Estimate{Median: 100, Lo: 90, Hi: 110},
		After:  analysis.Estimate{Median: 40, Lo: time.Duration(math.MinInt64), Hi: time.Duration(math.MinInt64)}}
	r := OursRun(rep, 2, 4)
	if r.Before != 100 || r.After != 40 || r.BeforeLo != 90 || r.BeforeHi != 110 || r.AfterLo != 0 || r.AfterHi != 0 || r.Steps != 7 || r.Workers != 2 {
		t.Errorf("got %+v", r)
	}
	// SPDL's estimator on ours' steps: the means, the first of each
	// phase left out.
	if r.OtherBefore != 100*time.Millisecond || r.OtherAfter != 45*time.Millisecond {
		t.Errorf("means %v and %v, want 100ms and 45ms", r.OtherBefore, r.OtherAfter)
	}
}

func TestReadStepLog(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []time.Duration
		err      string
	}{
		{name: "steps", in: "{\"step\": 0, \"ns\": 5}\n{\"step\": 1, \"ns\": 7}\n", want: []time.Duration{5, 7}},
		{name: "blank lines", in: "\n{\"step\": 0, \"ns\": 5}\n\n", want: []time.Duration{5}},
		{name: "empty", in: "", want: nil},
		{name: "out of order", in: "{\"step\": 1, \"ns\": 5}\n", err: "step 1, want 0"},
		{name: "no time", in: "{\"step\": 0}\n", err: "want {\"step\""},
		{name: "zero time", in: "{\"step\": 0, \"ns\": 0}\n", err: "positive time"},
		{name: "not json", in: "step 0 5ms\n", err: "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadStepLog(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("step %d: %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func FuzzReadStepLog(f *testing.F) {
	f.Add("{\"step\": 0, \"ns\": 5}\n{\"step\": 1, \"ns\": 7}\n")
	f.Add("{\"step\": 0, \"ns\": -1}\n")
	f.Fuzz(func(t *testing.T, in string) {
		ts, err := ReadStepLog(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, d := range ts {
			if d <= 0 {
				t.Fatalf("accepted a step of %v", d)
			}
		}
	})
}

// sample are runs of three rounds, SPDL's round-2 run missing.
func sample() []Run {
	d := func(v float64) time.Duration { return time.Duration(v * 1e6) }
	return []Run{
		{Side: Ours, Workers: 2, Round: 1, Steps: 70, Before: d(116.4), After: d(81.4), BeforeLo: d(89.5), BeforeHi: d(148.8), AfterLo: d(55.9), AfterHi: d(97.5)},
		{Side: SPDL, Workers: 2, Round: 1, Steps: 70, Before: d(117.7), After: d(26.2), OtherBefore: d(110.1), OtherAfter: d(25.9)},
		{Side: SPDL, Workers: 2, Round: 2, Missing: "the script with --spdl-cache: exit status 1: RuntimeError: boom"},
		{Side: Ours, Workers: 2, Round: 2, Steps: 70, Before: d(226.8), After: d(85.5), OtherBefore: d(240.2), OtherAfter: d(88.1)},
		{Side: Ours, Workers: 2, Round: 3, Steps: 70, Before: d(109.5), After: d(54.7), BeforeLo: d(69.1), BeforeHi: d(151.1), AfterLo: d(41.9), AfterHi: d(61.4)},
		{Side: SPDL, Workers: 2, Round: 3, Steps: 70, Before: d(153.4), After: d(37.7)},
	}
}

// writeFile is runs as a results file with config.
func writeFile(t *testing.T, config []resultfile.Config, runs []Run) []byte {
	t.Helper()
	var b bytes.Buffer
	w := benchfmt.NewWriter(&b)
	cfg := append(append([]resultfile.Config(nil), config...), MissingConfig(runs)...)
	for _, rec := range Records(runs) {
		for _, c := range cfg {
			rec.Config = append(rec.Config, benchfmt.Config{Key: c.Key, Value: []byte(c.Value), File: true})
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

var sampleConfig = []resultfile.Config{
	{Key: "script-command", Value: "examples/own-loop/train_cachedataloader.py --data DATA --workers 2 --batch 16 --crop 160 --epochs 1"},
	{Key: "cpu", Value: "AMD EPYC"}, {Key: "cores", Value: "2"},
	{Key: "dataset", Value: "1152 natural JPEGs"},
	{Key: "num-caches", Value: "10"}, {Key: "return-caches-after", Value: "40"}, {Key: "steps-after", Value: "30"}, {Key: "rounds", Value: "3"},
}

// TestRecordsRoundTrip: the records, read back by RunOf with their
// runs' sides and workers (package workloads' SPDLCacheCodec reads them
// from the names), and the missing run's line set by Rounds, are the
// same runs, each in its round, and the report is the golden one.
func TestRecordsRoundTrip(t *testing.T) {
	runs := sample()
	golden(t, "results.txt", writeFile(t, sampleConfig, runs))
	recs, err := resultfile.Read("testdata/results.txt")
	if err != nil {
		t.Fatal(err)
	}
	var ran []Run
	for _, r := range runs {
		if r.Missing == "" {
			ran = append(ran, r)
		}
	}
	if len(recs) != len(ran) {
		t.Fatalf("%d records, want %d", len(recs), len(ran))
	}
	var got []Run
	for i, rec := range recs {
		r, err := RunOf(ran[i].Side, ran[i].Workers, rec)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	config := append(append([]resultfile.Config(nil), sampleConfig...), MissingConfig(runs)...)
	got = Rounds(config, got)
	key := func(r Run) string { return r.Side + "/" + string(rune('0'+r.Round)) }
	byKey := map[string]Run{}
	for _, r := range got {
		byKey[key(r)] = r
	}
	if len(got) != len(runs) {
		t.Fatalf("read %d runs, want %d", len(got), len(runs))
	}
	for _, want := range runs {
		g, ok := byKey[key(want)]
		if !ok {
			t.Errorf("run %s not read back", key(want))
			continue
		}
		if g.Missing != want.Missing || g.Before != want.Before || g.After != want.After || g.BeforeLo != want.BeforeLo || g.AfterHi != want.AfterHi {
			t.Errorf("run %s: read %+v, want %+v", key(want), g, want)
		}
	}
	rep := NewReport(config, got)
	var text, md bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt", text.Bytes())
	golden(t, "report.md", md.Bytes())
}

// TestRunOfRefuses: a record whose figures do not hold together, or of
// no side, is refused naming it.
func TestRunOfRefuses(t *testing.T) {
	for _, tc := range []struct{ name, side, line, err string }{
		{"unknown side", "dali", "BenchmarkRealPeerHeadspace/peer=dali/workers=2 70 100 step-ns 50 cached-step-ns 50 headspace-%", `peer "dali": want ours or spdl-cache`},
		{"edited share", Ours, "BenchmarkRealPeerHeadspace/peer=ours/workers=2 70 100 step-ns 50 cached-step-ns 60 headspace-%", "its step times give 50"},
		{"no cached step", Ours, "BenchmarkRealPeerHeadspace/peer=ours/workers=2 70 100 step-ns 50 headspace-%", "no value in cached-step-ns"},
		{"interval apart", Ours, "BenchmarkRealPeerHeadspace/peer=ours/workers=2 70 100 step-ns 50 cached-step-ns 50 headspace-% 110 step-lo-ns 120 step-hi-ns", "does not hold"},
		{"spdl interval", SPDL, "BenchmarkRealPeerHeadspace/peer=spdl-cache/workers=2 70 100 step-ns 50 cached-step-ns 50 headspace-% 90 step-lo-ns 120 step-hi-ns", "no interval"},
		{"zero step", Ours, "BenchmarkRealPeerHeadspace/peer=ours/workers=2 70 0 step-ns 0 cached-step-ns NaN headspace-%", "finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, _, err := resultfile.Parse(strings.NewReader(tc.line+"\n"), "r.txt")
			if err != nil || len(recs) != 1 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			if _, err := RunOf(tc.side, 2, recs[0]); err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "BenchmarkRealPeerHeadspace/") {
				t.Errorf("err %v, want %q naming the record", err, tc.err)
			}
		})
	}
}

// TestAgree: the sides agree when their intervals overlap; too few runs
// for an interval is not known.
func TestAgree(t *testing.T) {
	mk := func(ours, spdl []float64) []Run {
		var runs []Run
		for i, s := range ours {
			runs = append(runs, Run{Side: Ours, Round: i + 1, Before: 1000, After: time.Duration(1000 * (1 - s))})
		}
		for i, s := range spdl {
			runs = append(runs, Run{Side: SPDL, Round: i + 1, Before: 1000, After: time.Duration(1000 * (1 - s))})
		}
		return runs
	}
	for _, tc := range []struct {
		name              string
		ours, spdl        []float64
		agree, known      bool
		diffLo, diffHiMax float64
	}{
		{"overlap", []float64{.5, .52, .48, .51, .49, .5}, []float64{.5, .53, .47, .5, .51, .49}, true, true, -.1, .1},
		{"apart", []float64{.5, .52, .48, .51, .49, .5}, []float64{.2, .23, .21, .2, .22, .19}, false, true, .2, .4},
		{"too few", []float64{.5, .5, .5}, []float64{.5, .5, .5}, false, false, -.1, .1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport(nil, mk(tc.ours, tc.spdl))
			agree, known := r.Agree()
			if agree != tc.agree || known != tc.known {
				t.Errorf("agree %v known %v, want %v %v (ours %+v, spdl %+v)", agree, known, tc.agree, tc.known, r.Sides[0].Share, r.Sides[1].Share)
			}
			if r.Pairs != len(tc.ours) || r.DiffLo > r.Diff || r.Diff > r.DiffHi || r.Diff < tc.diffLo || r.Diff > tc.diffHiMax {
				t.Errorf("paired difference %g (%g–%g) over %d rounds", r.Diff, r.DiffLo, r.DiffHi, r.Pairs)
			}
		})
	}
}

// TestValidate: each phase needs three rounds of the workers' steps
// after the first, and the cache must fit before the switch.
func TestValidate(t *testing.T) {
	ok := Config{Workers: 2, Batch: 16, Crop: 160, NumCaches: 10, ReturnCachesAfter: 40, StepsAfter: 30, Count: 5}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.Images() != 16*72 {
		t.Errorf("Images %d, want %d", ok.Images(), 16*72)
	}
	for name, mod := range map[string]func(*Config){
		"few steps after":        func(c *Config) { c.StepsAfter = 6 },
		"few steps before":       func(c *Config) { c.ReturnCachesAfter, c.NumCaches = 6, 6 },
		"caches past the switch": func(c *Config) { c.NumCaches = 41 },
		"no rounds":              func(c *Config) { c.Count = 0 },
		"no batch":               func(c *Config) { c.Batch = 0 },
	} {
		c := ok
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, c)
		}
	}
}

// TestReportIgnoresOrder: the report of the same runs in another order is
// the same (the rounds' differences are gathered from maps, whose order
// varies), so --from rebuilds it.
func TestReportIgnoresOrder(t *testing.T) {
	var runs []Run
	for i, sh := range []float64{.31, .52, .47, .55, .6, .38, .44, .58} {
		runs = append(runs, Run{Side: Ours, Round: i + 1, Before: 1000, After: time.Duration(1000 * (1 - sh))},
			Run{Side: SPDL, Round: i + 1, Before: 1000, After: time.Duration(1000 * (1 - sh*sh*2))})
	}
	var want bytes.Buffer
	if err := NewReport(sampleConfig, runs).WriteMarkdown(&want); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		rev := append([]Run(nil), runs...)
		for j := range rev {
			k := (j*7 + i) % len(rev)
			rev[j], rev[k] = rev[k], rev[j]
		}
		var got bytes.Buffer
		if err := NewReport(sampleConfig, rev).WriteMarkdown(&got); err != nil {
			t.Fatal(err)
		}
		// The per-run table is by round, the order within a round as
		// given: compare what comes before it.
		cut := func(b []byte) string { return strings.Split(string(b), "Every run")[0] }
		if cut(got.Bytes()) != cut(want.Bytes()) {
			t.Fatalf("order %d: report differs:\n%s\n---\n%s", i, cut(got.Bytes()), cut(want.Bytes()))
		}
	}
}
