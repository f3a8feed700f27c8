package figures

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"fmt"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
	"slices"
	"testing"
)

// allCases are every case of TestDocsFiguresMatchTheirFiles.
func allCases() []figureCase {
	return slices.Concat(cases, moreCases, round4Cases, round5Cases, tuneCases, tuneGoalCases, tuneOursGoalCases, peersCases(), spdlCacheCases())
}

// Files the round-4 cases read (issue 41).
const (
	remoteXR = "results/remote-cross-region.txt"
)

// remoteLevel is a level's name in results/remote-cross-region.txt.
func remoteLevel(level string) string {
	return "Ladder/level=" + level + "/workers=2/transforms=fast/placement=host/pinned=true"
}

// remoteXRRow is a row of docs/remote.md's example table: steps/s, its
// interval, the ratio to device.
func remoteXRRow(level string) figureCase {
	m := med(remoteXR, remoteLevel(level), "steps/s")
	return figureCase{"docs/remote.md", fmt.Sprintf("| `%s` | %%s ± %%s | %%s |", level), []shown{
		p3(m), pct(halfWidth(remoteXR, remoteLevel(level), "steps/s")),
		p2(div(m, med(remoteXR, remoteLevel("device"), "steps/s")))}}
}

// maxRun is the largest run of name in path.
func maxRun(path, name, unit string) figure {
	return func(t *testing.T) float64 { return slices.Max(load(t, path).runs(t, name, unit)) }
}

// round4Cases are the figures of the pages issue 41 added to the scan:
// docs/remote.md, docs/gate.md, docs/history.md, docs/real-data.md, and
// the fixes of its audit elsewhere.
var round4Cases = []figureCase{
	// docs/remote.md: the cross-region example.
	remoteXRRow("device"), remoteXRRow("encoded"), remoteXRRow("local"), remoteXRRow("none"),
	{"docs/remote.md", "Fetching every sample across the region costs %s of the steps", []shown{
		pct(scale(change(med(remoteXR, remoteLevel("none"), "steps/s"), med(remoteXR, remoteLevel("device"), "steps/s")), -1))}},
	{"docs/remote.md", "At `none` a request took %s ms on average (p99 %s ms;", []shown{
		p0(scale(med(remoteXR, remoteLevel("none"), "req-mean-ns"), 1e-6)), p0(scale(med(remoteXR, remoteLevel("none"), "req-p99-ns"), 1e-6))}},
	{"docs/remote.md", "an epoch of the 1024 samples would cost $%s at the recorded prices", []shown{
		{"%.4f", med(remoteXR, remoteLevel("none"), "epoch-usd")}}},
	{"docs/remote.md", "(a run-queue delay of %s–%s%% of their wall time, the file's `run-delay-%%`", []shown{
		p1(minRun(remoteXR, remoteLevel("none"), "run-delay-%")), p1(maxRun(remoteXR, remoteLevel("none"), "run-delay-%"))}},
}

// tsv reads a committed tab-separated table: its rows, each a map from
// the header's names ('#' lines are comments).
func tsv(t *testing.T, path string) []map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	var rows []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		cols := strings.Split(line, "\t")
		if header == nil {
			header = cols
			continue
		}
		if len(cols) != len(header) {
			t.Fatalf("%s: %q has %d columns, the header %d", path, line, len(cols), len(header))
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = cols[i]
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", path)
	}
	return rows
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

// tsvExtreme is the smallest (max false) or largest value of the columns
// over the rows keep accepts.
func tsvExtreme(path string, max bool, keep func(row map[string]string) bool, cols ...string) figure {
	return func(t *testing.T) float64 {
		var xs []float64
		for _, row := range tsv(t, path) {
			if keep != nil && !keep(row) {
				continue
			}
			for _, c := range cols {
				xs = append(xs, atof(t, row[c]))
			}
		}
		if len(xs) == 0 {
			t.Fatalf("%s: no rows kept", path)
		}
		if max {
			return slices.Max(xs)
		}
		return slices.Min(xs)
	}
}

const (
	sessionsR2    = "results/paired-aa-r2/sessions.tsv"
	calibrationR2 = "results/paired-aa-r2/calibration.tsv"
)

// sessionsIn keeps the sessions from lo to hi.
func sessionsIn(lo, hi int) func(map[string]string) bool {
	return func(row map[string]string) bool {
		n, err := strconv.Atoi(row["session"])
		return err == nil && n >= lo && n <= hi
	}
}

// calibrationRatio is the smallest or largest head/base cpu-ns/op of one
// pair of the calibration at steps and share.
func calibrationRatio(steps, share string, max bool) figure {
	return func(t *testing.T) float64 {
		b, h := map[string]float64{}, map[string]float64{}
		for _, row := range tsv(t, calibrationR2) {
			if row["steps"] != steps || row["share"] != share {
				continue
			}
			v := atof(t, row["cpu_ns_op"])
			if row["side"] == "b" {
				b[row["pair"]] = v
			} else {
				h[row["pair"]] = v
			}
		}
		var rs []float64
		for pair, bv := range b {
			if hv, ok := h[pair]; ok {
				rs = append(rs, hv/bv)
			}
		}
		if len(rs) == 0 {
			t.Fatalf("%s: no pair at %s steps, share %s", calibrationR2, steps, share)
		}
		if max {
			return slices.Max(rs)
		}
		return slices.Min(rs)
	}
}

// oldSessions are the sides of the first four paired sessions
// (results/paired-aa/s1–s4).
func oldSessions() []string {
	var ps []string
	for s := 1; s <= 4; s++ {
		for _, side := range []string{"base", "head"} {
			ps = append(ps, fmt.Sprintf("results/paired-aa/s%d/%s.txt", s, side))
		}
	}
	return ps
}

// oldLevel is a level's name in the first four sessions' files.
func oldLevel(level string) string {
	return "Ladder/level=" + level + "/workers=1/transforms=fast/placement=host/pinned=true"
}

// oldSideMedians are the medians of unit of the raw runs of each side of
// the first four sessions.
func oldSideMedians(unit string) []figure {
	var fs []figure
	for _, p := range oldSessions() {
		fs = append(fs, med(p, oldLevel("raw"), unit))
	}
	return fs
}

// oldRuns is the smallest or largest run of unit over every level and
// side of the first four sessions.
func oldRuns(unit string, max bool) figure {
	var fs []figure
	for _, p := range oldSessions() {
		for _, l := range []string{"none", "raw", "host"} {
			if max {
				fs = append(fs, maxRun(p, oldLevel(l), unit))
			} else {
				fs = append(fs, minRun(p, oldLevel(l), unit))
			}
		}
	}
	return extreme(max, fs...)
}

// oldSpread is the furthest a raw run's cpu-ns/op lay below (max false)
// or above its side's median, in percent, over the first four sessions.
func oldSpread(max bool) figure {
	var fs []figure
	for _, p := range oldSessions() {
		m := med(p, oldLevel("raw"), "cpu-ns/op")
		if max {
			fs = append(fs, change(maxRun(p, oldLevel("raw"), "cpu-ns/op"), m))
		} else {
			fs = append(fs, scale(change(minRun(p, oldLevel("raw"), "cpu-ns/op"), m), -1))
		}
	}
	return extreme(true, fs...)
}

// s3CPUShare is the CPU time over the wall time of each raw run of
// session s3's base side.
func s3CPUShare(t *testing.T) []float64 {
	f := load(t, "results/paired-aa-r2/s3/base.txt")
	name := "Ladder/level=raw/workers=1/transforms=fast/placement=host/pinned=true"
	cpu, wall := f.runs(t, name, "cpu-ns/op"), f.runs(t, name, "sec/op")
	if len(cpu) != len(wall) {
		t.Fatalf("s3/base.txt: %d cpu-ns/op against %d sec/op", len(cpu), len(wall))
	}
	xs := make([]float64, len(cpu))
	for i := range cpu {
		xs[i] = cpu[i] / (wall[i] * 1e9)
	}
	return xs
}

// clopperZero is the upper end of the exact 95% interval of 0 of n, in
// percent: 1 − 0.025^(1/n).
func clopperZero(n float64) figure {
	return func(*testing.T) float64 { return 100 * (1 - math.Pow(0.025, 1/n)) }
}

func init() {
	round4Cases = append(round4Cases, []figureCase{
		// docs/gate.md: 183 sessions' hours, the loads, the calibration.
		{"docs/gate.md", "some %s to %s hours of sessions at these lengths (%s–%s minutes a session, `sessions.tsv`)", []shown{
			p0(scale(tsvExtreme(sessionsR2, false, nil, "minutes"), 183.0/60)), p0(scale(tsvExtreme(sessionsR2, true, nil, "minutes"), 183.0/60)),
			p1(tsvExtreme(sessionsR2, false, nil, "minutes")), p1(tsvExtreme(sessionsR2, true, nil, "minutes"))}},
		{"docs/gate.md", "(1-minute load average %s to %s, so", []shown{
			p1(tsvExtreme(sessionsR2, false, sessionsIn(1, 10), "load_start", "load_end")), p1(tsvExtreme(sessionsR2, true, sessionsIn(1, 10), "load_start", "load_end"))}},
		{"docs/gate.md", "on the machine alone (load %s to %s), at 3754cfa", []shown{
			p1(tsvExtreme(sessionsR2, false, sessionsIn(11, 16), "load_start", "load_end")), p1(tsvExtreme(sessionsR2, true, sessionsIn(11, 16), "load_start", "load_end"))}},
		{"docs/gate.md", "spans %s–%s at 1000 steps and %s–%s at 2000 with nothing injected, and %s–%s at 20 steps, %s–%s at 3000 with +10%% injected", []shown{
			p2(calibrationRatio("1000", "0", false)), p2(calibrationRatio("1000", "0", true)),
			p2(calibrationRatio("2000", "0", false)), p2(calibrationRatio("2000", "0", true)),
			p2(calibrationRatio("20", "0.10", false)), p2(calibrationRatio("20", "0.10", true)),
			p2(calibrationRatio("3000", "0.10", false)), p2(calibrationRatio("3000", "0.10", true))}},
		{"docs/gate.md", "0 of 6 bounds the rate only below %s%%; 0 failures in 183 A/A sessions would bound it below 2%% (1 − 0.025^(1/183) = %s%%)", []shown{
			p0(clopperZero(6)), p3(clopperZero(183))}},
		{"docs/gate.md", "36 of 36 would show ≥ 90%%: 0.025^(1/36) = %s%%", []shown{
			p1(func(t *testing.T) float64 { return 100 - clopperZero(36)(t) })}},
		{"docs/gate.md", "their wall time was %s–%s× their CPU time (median CPU/wall %s, in `s3/base.txt`)", []shown{
			p0(func(t *testing.T) float64 { return 1 / slices.Max(s3CPUShare(t)) }),
			p0(func(t *testing.T) float64 { return 1 / slices.Min(s3CPUShare(t)) }),
			p2(func(t *testing.T) float64 { return summary.Median(s3CPUShare(t)) })}},
		// docs/gate.md: the first four sessions.
		{"docs/gate.md", "the raw runs waited for a CPU %s–%s%% of their wall time (the median of each session's side; single runs of every level %s–%s%%,", []shown{
			p0(extreme(false, oldSideMedians("run-delay-%")...)), p0(extreme(true, oldSideMedians("run-delay-%")...)),
			p1(oldRuns("run-delay-%", false)), p0(oldRuns("run-delay-%", true))}},
		{"docs/gate.md", "a 20-step raw point's `cpu-ns/op` (medians %s–%s ms a side) ran from %s%% below to %s%% above its side's median", []shown{
			p2(scale(extreme(false, oldSideMedians("cpu-ns/op")...), 1e-6)), p2(scale(extreme(true, oldSideMedians("cpu-ns/op")...), 1e-6)),
			p0(oldSpread(false)), p0(oldSpread(true))}},
	}...)
}

// Files of docs/history.md.
const (
	yearAfter = "results/history-year.txt"
	yearQuiet = "results/history-year-quiet.txt"
	pageQuiet = "results/history-page-quiet.txt"
)

// runsAt are the runs of name's unit in path measured at commit (a file
// that holds several commits' runs, as results/history-page.txt).
func runsAt(t *testing.T, path, commit, name, unit string) []float64 {
	t.Helper()
	var xs []float64
	for _, r := range load(t, path).rs {
		if !sameName(r, name) || r.GetConfig("commit") != commit {
			continue
		}
		if v, ok := resultfile.Value(r, unit); ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		t.Fatalf("%s: no %s of %s at %s", path, unit, name, commit)
	}
	return xs
}

// pageAt is the median (what "med"), smallest ("min") or largest ("max")
// run of a page benchmark's unit at commit.
func pageAt(path, commit, name, unit, what string) figure {
	return func(t *testing.T) float64 {
		xs := runsAt(t, path, commit, name, unit)
		switch what {
		case "min":
			return slices.Min(xs)
		case "max":
			return slices.Max(xs)
		}
		return summary.Median(xs)
	}
}

// pageMedRange is "median [smallest–largest]" of a page benchmark's unit.
func pageMedRange(path, commit, name, unit string) []shown {
	return []shown{p0(pageAt(path, commit, name, unit, "med")), p0(pageAt(path, commit, name, unit, "min")), p0(pageAt(path, commit, name, unit, "max"))}
}

// spreadOf is the largest ratio of a benchmark's slowest run to its
// fastest in ns/op over the files.
func spreadOf(paths ...string) figure {
	return func(t *testing.T) float64 {
		worst := 0.0
		for _, p := range paths {
			by := map[string][]float64{}
			for _, r := range load(t, p).rs {
				if v, ok := resultfile.Value(r, "sec/op"); ok {
					by[string(r.Name)] = append(by[string(r.Name)], v)
				}
			}
			for _, xs := range by {
				if len(xs) > 1 {
					worst = math.Max(worst, slices.Max(xs)/slices.Min(xs))
				}
			}
		}
		return worst
	}
}

func init() {
	ms := func(path, name string) figure { return scale(med(path, name, "sec/op"), 1e3) }
	sec := func(path, name string) figure { return med(path, name, "sec/op") }
	cp365, cp730 := "YearChangePoints/runs=365", "YearChangePoints/runs=730"
	round4Cases = append(round4Cases, []figureCase{
		// docs/history.md: the year store, before and after issue 37.
		{"docs/history.md", "(%s s a changed series at 365 runs on this shared 2-core machine, %s s at 730; a change that moves all 200 series of a machine, a toolchain or kernel update, took %s and %s minutes)", []shown{
			p1(scale(sec(yearBefore, cp365), 1.0/200)), p0(scale(sec(yearBefore, cp730), 1.0/200)),
			p0(scale(sec(yearBefore, cp365), 1.0/60)), p0(scale(sec(yearBefore, cp730), 1.0/60))}},
		{"docs/history.md", "(so each figure is the median of 3 runs that spread by up to %s×, slowest over fastest;", []shown{p0(spreadOf(yearBefore, yearAfter))}},
		{"docs/history.md", "| `history add`, empty store (`BenchmarkYearAdd/runs=0`) | %s ms | %s ms |", []shown{
			p1(ms(yearBefore, "YearAdd/runs=0")), p1(ms(yearAfter, "YearAdd/runs=0"))}},
		{"docs/history.md", "| `history add`, 365 runs (`runs=365`) | %s ms | %s ms |", []shown{
			p0(ms(yearBefore, "YearAdd/runs=365")), p0(ms(yearAfter, "YearAdd/runs=365"))}},
		{"docs/history.md", "| change points of 200 series that all change, 365 runs (`BenchmarkYearChangePoints`) | %s s | %s s |", []shown{
			p0(sec(yearBefore, cp365)), p1(sec(yearAfter, cp365))}},
		{"docs/history.md", "| the same, 730 runs | %s s | %s s |", []shown{p0(sec(yearBefore, cp730)), p0(sec(yearAfter, cp730))}},
		{"docs/history.md", "(`BenchmarkYearLoad`, `report` less the page) | %s s | %s s |", []shown{p1(sec(yearBefore, "YearLoad")), p1(sec(yearAfter, "YearLoad"))}},
		{"docs/history.md", "every run: %s MB and %s thousand allocations instead of %s MB and %s million.", []shown{
			p1(scale(med(yearAfter, "YearAdd/runs=365", "B/op"), 1e-6)), p0(scale(med(yearAfter, "YearAdd/runs=365", "allocs/op"), 1e-3)),
			p0(scale(med(yearBefore, "YearAdd/runs=365", "B/op"), 1e-6)), p1(scale(med(yearBefore, "YearAdd/runs=365", "allocs/op"), 1e-6))}},
		{"docs/history.md", "The change points at 730 runs cost %s× those at 365 in this run (%s× on the machine alone, below), against %s× before", []shown{
			p1(div(sec(yearAfter, cp730), sec(yearAfter, cp365))), p2(div(sec(yearQuiet, cp730), sec(yearQuiet, cp365))),
			p1(div(sec(yearBefore, cp730), sec(yearBefore, cp365)))}},
		{"docs/history.md", "medians of 3): an add %s ms on the empty store and %s ms at 365 runs, the change points of 200 changed series %s s at 365 runs and %s s at 730 (%s×), the year store read in %s s.", []shown{
			p1(ms(yearQuiet, "YearAdd/runs=0")), p1(ms(yearQuiet, "YearAdd/runs=365")),
			p1(sec(yearQuiet, cp365)), p1(sec(yearQuiet, cp730)), p2(div(sec(yearQuiet, cp730), sec(yearQuiet, cp365))),
			p2(sec(yearQuiet, "YearLoad"))}},
		// docs/history.md: the page at a year and two.
		{"docs/history.md", "The page is **%s MiB** (the first page, 37081cc, %s MiB) and **%s MiB** at 730 nights (%s MiB).", []shown{
			p2(scale(pageAt(pageFile, "5a9170c", "Page365", "page-bytes", "med"), 1.0/(1<<20))),
			p2(scale(pageAt(pageFile, "37081cc", "Page365", "page-bytes", "med"), 1.0/(1<<20))),
			p2(scale(pageAt(pageFile, "5a9170c", "Page730", "page-bytes", "med"), 1.0/(1<<20))),
			p2(scale(pageAt(pageFile, "37081cc", "Page730", "page-bytes", "med"), 1.0/(1<<20)))}},
		{"docs/history.md", "is drawn at **%s ms** [%s–%s] at 365 nights (one blob: %s [%s–%s]) and **%s ms** [%s–%s] at 730 (%s [%s–%s]); the page answers clicks (`interactive-ms`) from %s ms (%s) and %s ms (%s).", slices.Concat(
			pageMedRange(pageFile, "5a9170c", "Page365", "first-screen-ms"), pageMedRange(pageFile, "b79acde", "Page365", "first-screen-ms"),
			pageMedRange(pageFile, "5a9170c", "Page730", "first-screen-ms"), pageMedRange(pageFile, "b79acde", "Page730", "first-screen-ms"),
			[]shown{p0(pageAt(pageFile, "5a9170c", "Page365", "interactive-ms", "med")), p0(pageAt(pageFile, "b79acde", "Page365", "interactive-ms", "med")),
				p0(pageAt(pageFile, "5a9170c", "Page730", "interactive-ms", "med")), p0(pageAt(pageFile, "b79acde", "Page730", "interactive-ms", "med"))})},
		{"docs/history.md", "the 12 in view are drawn at **%s ms** [%s–%s] (%s [%s–%s]) and **%s ms** [%s–%s] (%s [%s–%s]).", slices.Concat(
			pageMedRange(pageFile, "5a9170c", "Page365", "visible-charts-ms"), pageMedRange(pageFile, "b79acde", "Page365", "visible-charts-ms"),
			pageMedRange(pageFile, "5a9170c", "Page730", "visible-charts-ms"), pageMedRange(pageFile, "b79acde", "Page730", "visible-charts-ms"))},
		{"docs/history.md", "answered clicks from %s and %s ms.", []shown{
			p0(pageAt(pageFile, "37081cc", "Page365", "interactive-ms", "med")), p0(pageAt(pageFile, "37081cc", "Page730", "interactive-ms", "med"))}},
		{"docs/history.md", "the visible charts took over 1 s in one run of 6 (%s ms)", []shown{p0(pageAt(pageFile, "5a9170c", "Page365", "visible-charts-ms", "max"))}},
		{"docs/history.md", "the first screen at **%s ms** [%s–%s] at 365 nights and **%s ms** [%s–%s] at 730, the 12 charts in view at **%s ms** [%s–%s] and **%s ms** [%s–%s], clicks answered from %s ms and %s ms", slices.Concat(
			pageMedRange(pageQuiet, "5472098", "Page365", "first-screen-ms"), pageMedRange(pageQuiet, "5472098", "Page730", "first-screen-ms"),
			pageMedRange(pageQuiet, "5472098", "Page365", "visible-charts-ms"), pageMedRange(pageQuiet, "5472098", "Page730", "visible-charts-ms"),
			[]shown{p0(pageAt(pageQuiet, "5472098", "Page365", "interactive-ms", "med")), p0(pageAt(pageQuiet, "5472098", "Page730", "interactive-ms", "med"))})},
	}...)
}

// pageRunSpread is how far, in percent, a single run of the page
// benchmarks at the commits lies from its median at most.
func pageRunSpread(commits ...string) figure {
	return func(t *testing.T) float64 {
		worst := 0.0
		for _, c := range commits {
			for _, n := range []string{"Page365", "Page730"} {
				for _, u := range []string{"first-screen-ms", "visible-charts-ms", "interactive-ms"} {
					xs := runsAt(t, pageFile, c, n, u)
					m := summary.Median(xs)
					for _, x := range xs {
						worst = math.Max(worst, 100*math.Abs(x/m-1))
					}
				}
			}
		}
		return worst
	}
}

func init() {
	round4Cases = append(round4Cases, []figureCase{
		{"docs/history.md", "they wait on other processes, and a single run lies up to %s%% from its median", []shown{p0(pageRunSpread("5a9170c", "b79acde"))}},
		{"docs/history.md", "Why uPlot: %s KB with no dependencies", []shown{p0(scale(size("history/uplot/uPlot.iife.min.js"), 1e-3))}},
	}...)
}

// nb003Encoded is the 003 file's encoded point of natural 1024² JPEG
// decoded by decoder.
func nb003Encoded(decoder string) string {
	return "LadderOnDisk/format=jpeg/content=natural/decoder=" + decoder + "/raw=1024/level=encoded/workers=2/transforms=fast/placement=host/pinned=true"
}

func init() {
	factor := func(f string) figure {
		return med(factorsFile, "DecodeScaled/raw=1024/factor="+f, "cpu-ns/op")
	}
	round4Cases = append(round4Cases, []figureCase{
		// docs/real-data.md: Go's decode of a natural 1024² image, the
		// factors that do not pay, the scaled ladder's spread.
		{"docs/real-data.md", "natural content therefore costs about 5 ms of generation per 1024² sample, against %s ms for Go's JPEG decoder on the same image. That %s ms is", []shown{
			p0(scale(med(nb003, nb003Encoded("go"), "decode-ns/sample"), 1e-6)), p0(scale(med(nb003, nb003Encoded("go"), "decode-ns/sample"), 1e-6))}},
		{"docs/real-data.md", "5/8, 3/4 and 7/8 cost %s to %s times a full decode and 3/8 as much as one", []shown{
			p1(div(extreme(false, factor("5-8"), factor("3-4"), factor("7-8")), factor("1-1"))),
			p1(div(extreme(true, factor("5-8"), factor("3-4"), factor("7-8")), factor("1-1")))}},
		{"docs/real-data.md", "`none` runs **1.50× faster** with it (medians; their 95%% intervals ±%s to ±%s under the load)", []shown{
			pct(extreme(false, halfWidth(scaleOff, scaleName(scaleOff, "none"), "steps/s"), halfWidth(scaleAuto, scaleName(scaleAuto, "none"), "steps/s"))),
			pct(extreme(true, halfWidth(scaleOff, scaleName(scaleOff, "none"), "steps/s"), halfWidth(scaleAuto, scaleName(scaleAuto, "none"), "steps/s")))}},
		{"docs/real-data.md", "The pipeline gains more than the isolated decode's %s× in CPU time", []shown{
			p2(div(med(decodeFile, "DecodeJPEG/decoder=turbojpeg", "cpu-ns/op"), med(decodeFile, "DecodeJPEG/decoder=turbojpeg/decode-scale=auto/crop=256", "cpu-ns/op")))}},
	}...)
}

const (
	recheckBefore = "results/refactor-ab-r5/recheck-before-loaders.txt"
	recheckAfter  = "results/refactor-ab-r5/recheck-after-loaders.txt"
)

// torch003 is the 003 yardstick's ratio of a level to device.
func torch003(level string) figure {
	return div(med(nb003, "PeerLadder/impl=torch/level="+level+"/workers=2", "steps/s"), med(nb003, "PeerLadder/impl=torch/level=device/workers=2", "steps/s"))
}

// remoteCPU are the median CPU seconds of impl at every point of the
// bucket peer's file.
func remoteCPU(impl string) []figure {
	var fs []figure
	for _, layout := range []string{"imagefolder", "shards"} {
		for _, w := range []int{1, 4, 16} {
			fs = append(fs, med(peerRemote, fmt.Sprintf("PeerRemote/layout=%s/impl=%s/workers=%d", layout, impl, w), "cpu-s"))
		}
	}
	return fs
}

func init() {
	rss := func(path string) figure { return med(path, "Loaders/mode=goroutine/workers=4", "peak-rss-B") }
	round4Cases = append(round4Cases, []figureCase{
		// docs/reproduce.md: the r5 recheck's peak RSS.
		{"docs/reproduce.md", "the goroutine loaders' peak RSS at 4 workers, %s against %s MiB (%s, p = 0.041 in `recheck.log`)", []shown{
			p1(scale(rss(recheckBefore), 1.0/(1<<20))), p1(scale(rss(recheckAfter), 1.0/(1<<20))),
			{"%+.1f%%", change(rss(recheckAfter), rss(recheckBefore))}}},
		// docs/yardstick.md: the uncalibrated run's ratios.
		{"docs/yardstick.md", "the uncalibrated reproduce run, `notebooks/results/003-caching-ladder.txt`, gave %s and %s)", []shown{
			p2(torch003("raw")), p2(torch003("none"))}},
		// docs/peer.md: the bucket peer's CPU seconds.
		{"docs/peer.md", "Ours uses %s–%s s of CPU a run against the peer's %s–%s s.", []shown{
			p1(extreme(false, remoteCPU("fast")...)), p1(extreme(true, remoteCPU("fast")...)),
			p1(extreme(false, remoteCPU("torch")...)), p1(extreme(true, remoteCPU("torch")...))}},
	}...)
}
