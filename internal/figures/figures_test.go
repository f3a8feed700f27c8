package figures

import (
	"bufio"
	"fmt"
	"golang.org/x/perf/benchmath"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

// root is the repository's root, two levels above this package.
var root = filepath.Join("..", "..")

// file is a committed result file, read once.
type file struct {
	path string
	rs   []*benchfmt.Result
}

var (
	filesMu sync.Mutex
	files   = map[string]*file{}
)

// load reads the result file at path (relative to the root) once.
func load(t *testing.T, path string) *file {
	t.Helper()
	filesMu.Lock()
	defer filesMu.Unlock()
	if f, ok := files[path]; ok {
		return f
	}
	rs, err := resultfile.Read(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	f := &file{path: path, rs: rs}
	files[path] = f
	return f
}

// sameName says whether a result's name is name, less "Benchmark" and
// with or without a GOMAXPROCS suffix ("-2").
func sameName(r *benchfmt.Result, name string) bool {
	full := string(r.Name)
	if full == name {
		return true
	}
	rest, ok := strings.CutPrefix(full, name+"-")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// runs are the values of unit of every run of the benchmark name, in the
// file's order; a name or unit the file lacks fails the test.
func (f *file) runs(t *testing.T, name, unit string) []float64 {
	t.Helper()
	var xs []float64
	for _, r := range f.rs {
		if !sameName(r, name) {
			continue
		}
		if v, ok := resultfile.Value(r, unit); ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		t.Fatalf("%s: no %s of %s", f.path, unit, name)
	}
	return xs
}

// config is the value of a configuration line of the file.
func (f *file) config(t *testing.T, key string) string {
	t.Helper()
	for _, r := range f.rs {
		if v := r.GetConfig(key); v != "" {
			return v
		}
	}
	t.Fatalf("%s: no %s line", f.path, key)
	return ""
}

// A figure computes one number of a page from the committed files.
type figure func(t *testing.T) float64

// med is the median of unit over the runs of name in path.
func med(path, name, unit string) figure {
	return func(t *testing.T) float64 { return summary.Median(load(t, path).runs(t, name, unit)) }
}

// uP is the Mann–Whitney U test's p-value of two benchmarks' runs in
// path (benchmath.AssumeNothing, as the ladder's table tests a drop).
func uP(path, a, b, unit string) figure {
	return func(t *testing.T) float64 {
		f := load(t, path)
		thr := benchmath.DefaultThresholds
		return benchmath.AssumeNothing.Compare(benchmath.NewSample(f.runs(t, a, unit), &thr), benchmath.NewSample(f.runs(t, b, unit), &thr)).P
	}
}

// halfWidth is the half width of the 95% interval of that median, in
// percent of it (benchstat's "± x%").
func halfWidth(path, name, unit string) figure {
	return func(t *testing.T) float64 {
		return 100 * summary.Of(load(t, path).runs(t, name, unit)).HalfWidth()
	}
}

// run is the i-th run (from 0) of name in path; i < 0 counts from the end.
func run(path, name, unit string, i int) figure {
	return func(t *testing.T) float64 {
		xs := load(t, path).runs(t, name, unit)
		if i < 0 {
			i += len(xs)
		}
		return xs[i]
	}
}

// minRun is the smallest run of name in path.
func minRun(path, name, unit string) figure {
	return func(t *testing.T) float64 { return slices.Min(load(t, path).runs(t, name, unit)) }
}

// configNum is a configuration line's number (a duration in seconds).
func configNum(path, key string) figure {
	return func(t *testing.T) float64 {
		v := load(t, path).config(t, key)
		if d, err := time.ParseDuration(v); err == nil {
			return d.Seconds()
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s: %s %q is not a number", path, key, v)
		}
		return x
	}
}

// size is the file's size in bytes.
func size(path string) figure {
	return func(t *testing.T) float64 {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			t.Fatal(err)
		}
		return float64(st.Size())
	}
}

func div(a, b figure) figure {
	return func(t *testing.T) float64 { return a(t) / b(t) }
}

func mul(a, b figure) figure {
	return func(t *testing.T) float64 { return a(t) * b(t) }
}

func scale(a figure, k float64) figure {
	return func(t *testing.T) float64 { return a(t) * k }
}

// change is a/b − 1 in percent.
func change(a, b figure) figure {
	return func(t *testing.T) float64 { return 100 * (a(t)/b(t) - 1) }
}

// geomean is the geometric mean of the figures.
func geomean(fs ...figure) figure {
	return func(t *testing.T) float64 {
		s := 0.0
		for _, f := range fs {
			s += math.Log(f(t))
		}
		return math.Exp(s / float64(len(fs)))
	}
}

// floor2 rounds down to two decimals, as the peer's reports write a
// speed-up (peer.ratio).
func floor2(a figure) figure {
	return func(t *testing.T) float64 { return math.Floor(a(t)*100) / 100 }
}

// extreme is the smallest (max false) or largest (max true) of the
// figures.
func extreme(max bool, fs ...figure) figure {
	return func(t *testing.T) float64 {
		best := fs[0](t)
		for _, f := range fs[1:] {
			if v := f(t); max && v > best || !max && v < best {
				best = v
			}
		}
		return best
	}
}

// shown is a figure with its format ("%.2f", "%+.0f%%", …).
type shown struct {
	format string
	f      figure
}

func p0(f figure) shown  { return shown{"%.0f", f} }
func p1(f figure) shown  { return shown{"%.1f", f} }
func p2(f figure) shown  { return shown{"%.2f", f} }
func p3(f figure) shown  { return shown{"%.3f", f} }
func pct(f figure) shown { return shown{"%.0f%%", f} } // 38%
func signed(f figure) shown {
	return shown{"%+.0f%%", f} // +19%, written −17% with a minus sign by the pages
}

// Names of the benchmarks the cases read.
const (
	refactorBefore = "results/refactor-ab/before-002-loaders.txt"
	refactorAfter  = "results/refactor-ab/after-002-loaders.txt"
	ab42Before000  = "results/refactor-ab-r7/before-000-headspace.txt"
	ab42After000   = "results/refactor-ab-r7/after-000-headspace.txt"
	ab42Before002  = "results/refactor-ab-r7/before-002-loaders.txt"
	ab42After002   = "results/refactor-ab-r7/after-002-loaders.txt"
	calibrated     = "results/yardstick-emulated-calibrated.txt"
	nb003          = "notebooks/results/003-caching-ladder.txt"
	epyc06         = "results/06f81ea.txt"
	epycFfbc       = "results/ffbc313-epyc.txt"
	xeonFfbc       = "results/ffbc313.txt"
	xeonF266       = "results/f266ace.txt"
	blas1          = "results/peer-emulated-blas1.txt"
	peer16         = "results/gpu/nvidia-h100-80gb-hbm3-16cores-peer-9f400ae.txt"
	ondiskPeer     = "results/peer-ondisk-jpeg-emulated.txt"
	decodeFile     = "results/decode-scale-decode.txt"
	scaleOff       = "results/decode-scale-off-emulated.txt"
	scaleAuto      = "results/decode-scale-emulated.txt"
	h100Ladder     = "results/gpu/nvidia-h100-80gb-hbm3-9f400ae.txt"
	loaders16      = "results/gpu/nvidia-h100-80gb-hbm3-16cores-loaders-400-15709d7.txt"
	peerRemote     = "results/peer-remote-cross-region.txt"
	factorsFile    = "results/decode-scale-factors.txt"
	whatif2        = "results/whatif-d98ca25.txt"
)

// ab42RSSDrops are how much lower, in percent, the loaders' peak RSS is
// after issue 42's steps than before, at the rows benchstat marks
// (p < 0.05: goroutine at 1, 2, 4 and 8 workers, process at 1, 2 and 4).
func ab42RSSDrops() []figure {
	var out []figure
	for _, row := range []string{"goroutine/workers=1", "goroutine/workers=2", "goroutine/workers=4", "goroutine/workers=8", "process/workers=1", "process/workers=2", "process/workers=4"} {
		name := "Loaders/mode=" + row
		out = append(out, scale(change(med(ab42After002, name, "peak-rss-B"), med(ab42Before002, name, "peak-rss-B")), -1))
	}
	return out
}

// ladder is the name of a `headspace ladder` (make bench) point in path:
// the files from before placement and pinning were recorded in names
// (oldNames) end at the transforms.
func ladder(path, level, impl string) string {
	n := "Ladder/level=" + level + "/workers=2/transforms=" + impl
	if oldNames[path] {
		return n
	}
	return n + "/placement=host/pinned=true"
}

// oldNames are the ladder files whose names end at the transforms.
var oldNames = map[string]bool{epycFfbc: true, xeonFfbc: true, xeonF266: true}

// step003 is the name of a point of the 003 report's step.
func step003(step, level, impl string) string {
	return "Ladder/step=" + step + "/level=" + level + "/workers=2/transforms=" + impl + "/placement=host/pinned=true"
}

func peerLadder(impl, level string) string {
	return "PeerLadder/impl=" + impl + "/level=" + level + "/workers=2"
}

func peerRun(impl string, workers int) string {
	return fmt.Sprintf("Peer/impl=%s/workers=%d", impl, workers)
}

// loaders002 are the 002 document's twelve loader points.
func loaders002() []string {
	var names []string
	for _, mode := range []string{"goroutine", "process"} {
		for _, w := range []int{1, 2, 4, 8, 16, 32} {
			names = append(names, fmt.Sprintf("Loaders/mode=%s/workers=%d", mode, w))
		}
	}
	return names
}

// halfWidths002 are the half widths of every loader point's samples/s in
// both files of the refactor's A/B check.
func halfWidths002() []figure {
	var fs []figure
	for _, path := range []string{refactorBefore, refactorAfter} {
		for _, n := range loaders002() {
			fs = append(fs, halfWidth(path, n, "samples/s"))
		}
	}
	return fs
}

// theLadderGeomean is benchstat's geomean row of two ladder files: the
// geometric mean of the new medians over that of the old, less one.
func theLadderGeomean(old, cur string) figure {
	var olds, curs []figure
	for _, impl := range []string{"naive", "fast"} {
		for _, l := range []string{"device", "host", "sample", "raw", "none"} {
			olds = append(olds, med(old, ladder(old, l, impl), "steps/s"))
			curs = append(curs, med(cur, ladder(cur, l, impl), "steps/s"))
		}
	}
	return change(geomean(curs...), geomean(olds...))
}

// documentRatio is the document's steps/s at a level over its device
// level's (1/step), from the calibrated file's document-* lines.
func documentRatio(level string) figure {
	return mul(configNum(calibrated, "document-"+level+"-steps/s"), configNum(calibrated, "document-step"))
}

// codeRatio is the document's code's steps/s at a level over its own
// device level's, in the calibrated run.
func codeRatio(level string) figure {
	return div(med(calibrated, peerLadder("torch", level), "steps/s"), med(calibrated, peerLadder("torch", "device"), "steps/s"))
}

type figureCase struct {
	doc  string  // the page, from the root
	text string  // its text, the figures as verbs of the shown formats
	figs []shown // the figures, in order
}

var cases = []figureCase{
	// docs/reproduce.md: the refactor's A/B check.
	{"docs/reproduce.md", "(the loaders' samples/s ±%s to ±%s)", []shown{
		pct(extreme(false, halfWidths002()...)), pct(extreme(true, halfWidths002()...))}},
	{"docs/reproduce.md", "all peak RSS of the loaders (%s goroutine at 1 worker, %s and %s process at 2 and 4 workers)", []shown{
		{"%+.1f%%", change(med(refactorAfter, "Loaders/mode=goroutine/workers=1", "peak-rss-B"), med(refactorBefore, "Loaders/mode=goroutine/workers=1", "peak-rss-B"))},
		{"%+.1f%%", change(med(refactorAfter, "Loaders/mode=process/workers=2", "peak-rss-B"), med(refactorBefore, "Loaders/mode=process/workers=2", "peak-rss-B"))},
		{"%+.1f%%", change(med(refactorAfter, "Loaders/mode=process/workers=4", "peak-rss-B"), med(refactorBefore, "Loaders/mode=process/workers=4", "peak-rss-B"))}}},

	// docs/reproduce.md: issue 42's A/B check.
	{"docs/reproduce.md", "the fast loader phase's step time of 000 (%s, the per-step samples", []shown{
		{"%+.2f%%", change(med(ab42After000, "Headspace/transforms=fast/phase=loader", "sec/op"), med(ab42Before000, "Headspace/transforms=fast/phase=loader", "sec/op"))}}},
	{"docs/reproduce.md", "the loaders' peak RSS at 1 to 8 workers, %s–%s%% lower after", []shown{
		{"%.1f", extreme(false, ab42RSSDrops()...)}, {"%.1f", extreme(true, ab42RSSDrops()...)}}},

	// docs/yardstick.md: the calibrated, alternated run.
	{"docs/yardstick.md", "not within 15%% (%s at `raw`, %s at `none`, from the unrounded ratios)", []shown{
		signed(change(codeRatio("raw"), documentRatio("raw"))), signed(change(codeRatio("none"), documentRatio("none")))}},
	{"docs/yardstick.md", "| `raw` | %s | %s | 1.00 | 1.00 | %s× |", []shown{
		p2(documentRatio("raw")), p2(codeRatio("raw")),
		p2(div(med(calibrated, peerLadder("naive", "raw"), "steps/s"), med(calibrated, peerLadder("torch", "raw"), "steps/s")))}},
	{"docs/yardstick.md", "| `none` | %s | %s | 1.00 | 1.00 | %s× |", []shown{
		p2(documentRatio("none")), p2(codeRatio("none")),
		p2(div(med(calibrated, peerLadder("naive", "none"), "steps/s"), med(calibrated, peerLadder("torch", "none"), "steps/s")))}},
	{"docs/yardstick.md", "the document's code %s at `raw` (runs %s, %s) and %s at `none`", []shown{
		p3(med(calibrated, peerLadder("torch", "raw"), "steps/s")),
		p3(run(calibrated, peerLadder("torch", "raw"), "steps/s", 0)), p3(run(calibrated, peerLadder("torch", "raw"), "steps/s", 1)),
		p3(med(calibrated, peerLadder("torch", "none"), "steps/s"))}},
	{"docs/yardstick.md", "ratio %s, step 290 ms ÷ %s = 477.029 ms", []shown{
		p3(geomean(div(configNum(calibrated, "calibration-raw-samples/s"), configNum(calibrated, "calibration-raw-document-samples/s")),
			div(configNum(calibrated, "calibration-none-samples/s"), configNum(calibrated, "calibration-none-document-samples/s")))),
		p3(configNum(calibrated, "calibration-ratio"))}},

	// docs/history.md: what a night's run weighs.
	{"docs/history.md", "to ~%s KB (the H100's: `results/gpu/nvidia-h100-80gb-hbm3-9f400ae.txt`), so a machine adds at most ~%s MB a year", []shown{
		p0(scale(size(h100Ladder), 1e-3)), p0(scale(size(h100Ladder), 365e-6))}},
	{"docs/history.md", "a run is ~%s to ~%s KB (the full emulated ladder: `results/ffbc313.txt`, `results/06f81ea.txt`)", []shown{
		p0(scale(size(xeonFfbc), 1e-3)), p0(scale(size(epyc06), 1e-3))}},

	// docs/ladder.md: the runs side by side, the Xeon, the 003 report.
	{"docs/ladder.md", "geomean %s); naive `raw` was %s ± %s at ffbc313", []shown{
		{"%+.2f%%", theLadderGeomean(epycFfbc, epyc06)},
		p3(med(epycFfbc, ladder(epycFfbc, "raw", "naive"), "steps/s")), pct(halfWidth(epycFfbc, ladder(epycFfbc, "raw", "naive"), "steps/s"))}},
	{"docs/ladder.md", "`sample` %s, `raw` %s ± %s, `none` %s ± %s steps/s — the transforms cost %s of throughput, raw data loading a further %s", []shown{
		p3(med(xeonFfbc, ladder(xeonFfbc, "sample", "naive"), "steps/s")),
		p3(med(xeonFfbc, ladder(xeonFfbc, "raw", "naive"), "steps/s")), pct(halfWidth(xeonFfbc, ladder(xeonFfbc, "raw", "naive"), "steps/s")),
		p3(med(xeonFfbc, ladder(xeonFfbc, "none", "naive"), "steps/s")), pct(halfWidth(xeonFfbc, ladder(xeonFfbc, "none", "naive"), "steps/s")),
		pct(scale(change(med(xeonFfbc, ladder(xeonFfbc, "raw", "naive"), "steps/s"), med(xeonFfbc, ladder(xeonFfbc, "sample", "naive"), "steps/s")), -1)),
		pct(scale(change(med(xeonFfbc, ladder(xeonFfbc, "none", "naive"), "steps/s"), med(xeonFfbc, ladder(xeonFfbc, "raw", "naive"), "steps/s")), -1))}},
	{"docs/ladder.md", "the same Xeon read `raw` %s ± %s, `none` %s ± %s (`results/f266ace.txt`", []shown{
		p3(med(xeonF266, ladder(xeonF266, "raw", "naive"), "steps/s")), pct(halfWidth(xeonF266, ladder(xeonF266, "raw", "naive"), "steps/s")),
		p3(med(xeonF266, ladder(xeonF266, "none", "naive"), "steps/s")), pct(halfWidth(xeonF266, ladder(xeonF266, "none", "naive"), "steps/s"))}},
	{"docs/ladder.md", "one fast `sample` run of `results/ffbc313-epyc.txt` read %s steps/s and one `none` run %s, against medians of %s and %s", []shown{
		p2(minRun(epycFfbc, ladder(epycFfbc, "sample", "fast"), "steps/s")), p2(minRun(epycFfbc, ladder(epycFfbc, "none", "fast"), "steps/s")),
		p2(med(epycFfbc, ladder(epycFfbc, "sample", "fast"), "steps/s")), p2(med(epycFfbc, ladder(epycFfbc, "none", "fast"), "steps/s"))}},
	{"docs/ladder.md", "both blame the transforms (the ladder: %s when they are added, raw data loading %s more), as the `make bench` run of the README does (%s)", []shown{
		signed(change(med(nb003, step003("a", "raw", "naive"), "steps/s"), med(nb003, step003("a", "sample", "naive"), "steps/s"))),
		signed(change(med(nb003, step003("a", "none", "naive"), "steps/s"), med(nb003, step003("a", "raw", "naive"), "steps/s"))),
		signed(change(med(epyc06, ladder(epyc06, "raw", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "sample", "naive"), "steps/s")))}},

	// README.md: make bench at 06f81ea.
	// The table as headspace ladder prints it (issue 41): each level's
	// spread (±, its median's 95% interval), and each drop's U test: "~"
	// within the noise, else the change and p.
	{"README.md", "device %s ±%s 6 1.00 1.00 host %s ±%s 6 0.99 0.97 ~ host-to-device transfer (p=%s) sample %s ±%s 6", []shown{
		p3(med(epyc06, ladder(epyc06, "device", "naive"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "device", "naive"), "steps/s")),
		p3(med(epyc06, ladder(epyc06, "host", "naive"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "host", "naive"), "steps/s")),
		p2(uP(epyc06, ladder(epyc06, "host", "naive"), ladder(epyc06, "device", "naive"), "steps/s")),
		p3(med(epyc06, ladder(epyc06, "sample", "naive"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "sample", "naive"), "steps/s"))}},
	{"README.md", "raw %s ±%s 6 %s 0.50 %s transforms (p=%s) none %s ±%s 6 %s 0.26 ~ raw data loading (p=%s)", []shown{
		p3(med(epyc06, ladder(epyc06, "raw", "naive"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "raw", "naive"), "steps/s")),
		p2(div(med(epyc06, ladder(epyc06, "raw", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "device", "naive"), "steps/s"))),
		{"%+.0f%%", change(med(epyc06, ladder(epyc06, "raw", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "sample", "naive"), "steps/s"))},
		{"%.3f", uP(epyc06, ladder(epyc06, "raw", "naive"), ladder(epyc06, "sample", "naive"), "steps/s")},
		p3(med(epyc06, ladder(epyc06, "none", "naive"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "none", "naive"), "steps/s")),
		p2(div(med(epyc06, ladder(epyc06, "none", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "device", "naive"), "steps/s"))),
		p2(uP(epyc06, ladder(epyc06, "none", "naive"), ladder(epyc06, "raw", "naive"), "steps/s"))}},
	{"README.md", "raw %s ±%s 6 0.99 0.50 ~ transforms (p=%s) none %s ±%s 6 0.99 0.26 ~ raw data loading (p=%s)", []shown{
		p3(med(epyc06, ladder(epyc06, "raw", "fast"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "raw", "fast"), "steps/s")),
		p2(uP(epyc06, ladder(epyc06, "raw", "fast"), ladder(epyc06, "sample", "fast"), "steps/s")),
		p3(med(epyc06, ladder(epyc06, "none", "fast"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "none", "fast"), "steps/s")),
		p2(uP(epyc06, ladder(epyc06, "none", "fast"), ladder(epyc06, "raw", "fast"), "steps/s"))}},
	{"docs/ladder.md", "(benchstat's 95%% interval is ±%s at `raw` and ±%s at `none`)", []shown{
		pct(halfWidth(epyc06, ladder(epyc06, "raw", "naive"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "none", "naive"), "steps/s"))}},

	// docs/peer.md: torch's threads, and the 16-core machine.
	{"docs/peer.md", "torch made %s and %s samples/s at 1 and 2 workers (its three 2-worker runs: %s, %s, %s)", []shown{
		p1(med(blas1, peerRun("torch", 1), "samples/s")), p1(med(blas1, peerRun("torch", 2), "samples/s")),
		p1(run(blas1, peerRun("torch", 2), "samples/s", 0)), p1(run(blas1, peerRun("torch", 2), "samples/s", 1)),
		p1(run(blas1, peerRun("torch", 2), "samples/s", 2))}},
	// Rounded to the nearest, as the page writes them (the reports round down).
	{"docs/peer.md", "`naive` %s× and %s×, `fast` %s× and **%s×", []shown{
		p2((div(med(blas1, peerRun("naive", 1), "samples/s"), med(blas1, peerRun("torch", 1), "samples/s")))),
		p2((div(med(blas1, peerRun("naive", 2), "samples/s"), med(blas1, peerRun("torch", 2), "samples/s")))),
		p2((div(med(blas1, peerRun("fast", 1), "samples/s"), med(blas1, peerRun("torch", 1), "samples/s")))),
		p2((div(med(blas1, peerRun("fast", 2), "samples/s"), med(blas1, peerRun("torch", 2), "samples/s"))))}},
	{"docs/peer.md", "`fast` spent %s s of CPU for the run's 1,536 samples, `naive` %s s and torch %s s", []shown{
		p2(med(blas1, peerRun("fast", 2), "cpu-s")), p2(med(blas1, peerRun("naive", 2), "cpu-s")), p2(med(blas1, peerRun("torch", 2), "cpu-s"))}},
	{"docs/peer.md", "| 8 | %s | %s | %s | %s× | %s× | %s× | fast only |", []shown{
		p1(med(peer16, peerRun("naive", 8), "samples/s")), p1(med(peer16, peerRun("fast", 8), "samples/s")), p1(med(peer16, peerRun("torch", 8), "samples/s")),
		p2(floor2(div(med(peer16, peerRun("naive", 8), "samples/s"), med(peer16, peerRun("torch", 8), "samples/s")))),
		p2(floor2(div(med(peer16, peerRun("fast", 8), "samples/s"), med(peer16, peerRun("torch", 8), "samples/s")))),
		p2(div(med(peer16, peerRun("naive", 8), "ttfb-ns"), med(peer16, peerRun("torch", 8), "ttfb-ns")))}},
	{"docs/peer.md", "gains more from 4 to 8 workers (%s×) than ours (%s×)", []shown{
		p1(div(med(peer16, peerRun("torch", 8), "samples/s"), med(peer16, peerRun("torch", 4), "samples/s"))),
		p1(div(med(peer16, peerRun("naive", 8), "samples/s"), med(peer16, peerRun("naive", 4), "samples/s")))}},
	{"docs/peer.md", "from 8 workers on: %s → %s samples/s", []shown{
		p0(med(peer16, peerRun("fast", 8), "samples/s")), p0(med(peer16, peerRun("fast", 16), "samples/s"))}},

	// docs/real-data.md: the on-disk peer, decoding at a reduced scale.
	{"docs/real-data.md", "ours ran at %s× (naive) and %s× (fast) torch's", []shown{
		p2(floor2(div(med(ondiskPeer, peerRun("naive", 1), "samples/s"), med(ondiskPeer, peerRun("torch", 1), "samples/s")))),
		p2(floor2(div(med(ondiskPeer, peerRun("fast", 1), "samples/s"), med(ondiskPeer, peerRun("torch", 1), "samples/s"))))}},
	{"docs/real-data.md", "| turbojpeg, full 1024² | %s | %s | 0 |", []shown{
		p2(scale(med(decodeFile, "DecodeJPEG/decoder=turbojpeg", "sec/op"), 1e3)),
		p2(scale(med(decodeFile, "DecodeJPEG/decoder=turbojpeg", "cpu-ns/op"), 1e-6))}},
	{"docs/real-data.md", "| turbojpeg, `--decode-scale auto` (1/4: 256²) | %s | %s | 0 |", []shown{
		p2(scale(med(decodeFile, "DecodeJPEG/decoder=turbojpeg/decode-scale=auto/crop=256", "sec/op"), 1e3)),
		p2(scale(med(decodeFile, "DecodeJPEG/decoder=turbojpeg/decode-scale=auto/crop=256", "cpu-ns/op"), 1e-6))}},
	{"docs/real-data.md", "The scaled decode takes **%s× the CPU time** of the full one (%s× faster)", []shown{
		p2(div(med(decodeFile, "DecodeJPEG/decoder=turbojpeg/decode-scale=auto/crop=256", "cpu-ns/op"), med(decodeFile, "DecodeJPEG/decoder=turbojpeg", "cpu-ns/op"))),
		p2(div(med(decodeFile, "DecodeJPEG/decoder=turbojpeg", "cpu-ns/op"), med(decodeFile, "DecodeJPEG/decoder=turbojpeg/decode-scale=auto/crop=256", "cpu-ns/op")))}},
	{"docs/real-data.md", "| off | %s | %s | %s | %s | `results/decode-scale-off-emulated.txt` |", scaleRow(scaleOff)},
	{"docs/real-data.md", "| auto (1/4) | %s | %s | %s | %s | `results/decode-scale-emulated.txt` |", scaleRow(scaleAuto)},
	{"docs/real-data.md", "`none` runs **%s× faster** with it", []shown{
		p2(div(med(scaleAuto, scaleName(scaleAuto, "none"), "steps/s"), med(scaleOff, scaleName(scaleOff, "none"), "steps/s")))}},
}

// moreCases are the figures added by the round-3 audit (issue 32): the
// 16-core loaders and peer tables, the bucket peer's table, the decode
// factors, the rest of the README's ladder.
var moreCases = []figureCase{
	// README.md: the fast rows and the naive ratios of make bench at 06f81ea.
	{"README.md", "device %s ±%s 6 1.00 1.00 host %s ±%s 6 %s 0.97 %s host-to-device transfer (p=%s) sample %s ±%s 6 %s 0.94 %s batching (collate) (p=%s) raw %s", []shown{
		p3(med(epyc06, ladder(epyc06, "device", "fast"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "device", "fast"), "steps/s")),
		p3(med(epyc06, ladder(epyc06, "host", "fast"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "host", "fast"), "steps/s")),
		p2(div(med(epyc06, ladder(epyc06, "host", "fast"), "steps/s"), med(epyc06, ladder(epyc06, "device", "fast"), "steps/s"))),
		{"%+.0f%%", change(med(epyc06, ladder(epyc06, "host", "fast"), "steps/s"), med(epyc06, ladder(epyc06, "device", "fast"), "steps/s"))},
		{"%.3f", uP(epyc06, ladder(epyc06, "host", "fast"), ladder(epyc06, "device", "fast"), "steps/s")},
		p3(med(epyc06, ladder(epyc06, "sample", "fast"), "steps/s")), pct(halfWidth(epyc06, ladder(epyc06, "sample", "fast"), "steps/s")),
		p2(div(med(epyc06, ladder(epyc06, "sample", "fast"), "steps/s"), med(epyc06, ladder(epyc06, "device", "fast"), "steps/s"))),
		{"%+.0f%%", change(med(epyc06, ladder(epyc06, "sample", "fast"), "steps/s"), med(epyc06, ladder(epyc06, "host", "fast"), "steps/s"))},
		{"%.3f", uP(epyc06, ladder(epyc06, "sample", "fast"), ladder(epyc06, "host", "fast"), "steps/s")},
		p3(med(epyc06, ladder(epyc06, "raw", "fast"), "steps/s"))}},
	{"README.md", "host 3.417 ±0%% 6 %s 0.97 ~ host-to-device transfer (p=0.06) sample 3.383 ±50%% 6 %s 0.94 %s batching (collate) (p=%s) raw 2.277 ±41%% 6 0.66 0.50 -%s transforms (p=0.026) none 2.277 ±55%% 6 0.66 0.26 ~ raw data loading (p=0.70) bottleneck: transforms (%s of throughput lost", []shown{
		p2(div(med(epyc06, ladder(epyc06, "host", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "device", "naive"), "steps/s"))),
		p2(div(med(epyc06, ladder(epyc06, "sample", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "device", "naive"), "steps/s"))),
		{"%+.0f%%", change(med(epyc06, ladder(epyc06, "sample", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "host", "naive"), "steps/s"))},
		{"%.3f", uP(epyc06, ladder(epyc06, "sample", "naive"), ladder(epyc06, "host", "naive"), "steps/s")},
		pct(scale(change(med(epyc06, ladder(epyc06, "raw", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "sample", "naive"), "steps/s")), -1)),
		pct(scale(change(med(epyc06, ladder(epyc06, "raw", "naive"), "steps/s"), med(epyc06, ladder(epyc06, "sample", "naive"), "steps/s")), -1))}},

	// docs/ladder.md: fast within 2% of device, in the three files it names.
	{"docs/ladder.md", "the median at every level stays no more than %s%% below `device`", []shown{
		p1(extreme(true, fastDrops(nb003)...)), // the largest drop of the three files
	}},

	// docs/whatif.md: the 2-core run's neighbours.
	{"docs/whatif.md", "while other work kept %s–%s cores busy", []shown{
		p2(extreme(false, whatifNeighbours()...)), p2(extreme(true, whatifNeighbours()...))}},

	// docs/loaders.md: the 16-core loaders table, every row, and its text.
	loadersRow(1), loadersRow(2), loadersRow(4), loadersRow(8), loadersRow(16), loadersRow(32),
	{"docs/loaders.md", "| growth 1 → 32 workers | %s× | %s× |", []shown{
		p2(div(med(loaders16, "Loaders/mode=goroutine/workers=32", "ttfb-ns"), med(loaders16, "Loaders/mode=goroutine/workers=1", "ttfb-ns"))),
		p2(div(med(loaders16, "Loaders/mode=process/workers=32", "ttfb-ns"), med(loaders16, "Loaders/mode=process/workers=1", "ttfb-ns")))}},
	{"docs/loaders.md", "scales to 8 workers (%s× the 1-worker rate) and then holds, %s× the processes' at 1 worker and %s–%s× at 2–8 workers. Processes catch up at 16–32 workers (%s–%s×) at %s–%s× the memory", []shown{
		p1(div(med(loaders16, "Loaders/mode=goroutine/workers=8", "samples/s"), med(loaders16, "Loaders/mode=goroutine/workers=1", "samples/s"))),
		p2(loadersRatio(1, "samples/s")), p2(loadersRatio(2, "samples/s")), p2(loadersRatio(4, "samples/s")),
		p2(loadersRatio(16, "samples/s")), p2(loadersRatio(32, "samples/s")),
		p0(div(med(loaders16, "Loaders/mode=process/workers=16", "peak-rss-B"), med(loaders16, "Loaders/mode=goroutine/workers=16", "peak-rss-B"))),
		p0(div(med(loaders16, "Loaders/mode=process/workers=32", "peak-rss-B"), med(loaders16, "Loaders/mode=goroutine/workers=32", "peak-rss-B")))}},

	// docs/peer.md: the 16-core rows other than 8 (in cases), the bucket peer.
	peer16Row(1, "both"), peer16Row(2, "both"), peer16Row(4, "both"), peer16Row(16, "fast only"),
	{"docs/peer.md", "falls under the 2× target at 8 and 16 workers (%s×, %s×)", []shown{
		p2(floor2(div(med(peer16, peerRun("naive", 8), "samples/s"), med(peer16, peerRun("torch", 8), "samples/s")))),
		p2(floor2(div(med(peer16, peerRun("naive", 16), "samples/s"), med(peer16, peerRun("torch", 16), "samples/s"))))}},
	remoteRow("imagefolder", 1), remoteRow("imagefolder", 4), remoteRow("imagefolder", 16),
	remoteRow("shards", 1), remoteRow("shards", 4), remoteRow("shards", 16),

	// docs/real-data.md: the on-disk peer at 2 workers, and the CPU seconds.
	{"docs/real-data.md", "and %s× and %s× with 2, using %s–%s%% of its CPU seconds (%s–%s s against %s–%s s)", []shown{
		p2(floor2(div(med(ondiskPeer, peerRun("naive", 2), "samples/s"), med(ondiskPeer, peerRun("torch", 2), "samples/s")))),
		p2(floor2(div(med(ondiskPeer, peerRun("fast", 2), "samples/s"), med(ondiskPeer, peerRun("torch", 2), "samples/s")))),
		p0(extreme(false, ondiskCPUShares()...)), p0(extreme(true, ondiskCPUShares()...)),
		p1(extreme(false, ondiskCPU("naive", "fast")...)), p1(extreme(true, ondiskCPU("naive", "fast")...)),
		p1(extreme(false, ondiskCPU("torch")...)), p1(extreme(true, ondiskCPU("torch")...))}},

	// docs/real-data.md: CPU ms per 1024² image at each decode factor.
	{"docs/real-data.md", "| CPU ms/image (median of 6) | %s | %s | %s | %s | %s | %s | %s | %s |", []shown{
		factorMs(1024, "1-1"), factorMs(1024, "7-8"), factorMs(1024, "3-4"), factorMs(1024, "5-8"),
		factorMs(1024, "1-2"), factorMs(1024, "3-8"), factorMs(1024, "1-4"),
		{"%.3f", factorMs(1024, "1-8").f}}}, // 2.215 exactly: a median between two runs, written in full
	{"docs/real-data.md", "(Same run at 256²: 1/1 %s ms, 1/2 %s, 1/4 %s, 1/8 %s, 7/8 %s.)", []shown{
		factorMs(256, "1-1"), factorMs(256, "1-2"), factorMs(256, "1-4"), factorMs(256, "1-8"), factorMs(256, "7-8")}},

	// docs/node.md: whatif --accelerators against --verify, both pipelines,
	// every count and the medians; the node's table.
	nodeWhatIfRow(1), nodeWhatIfRow(2), nodeWhatIfRow(4), nodeWhatIfRow(8),
	{"docs/node.md", "| median | | | **%s%%** | | | **%s%%** |", []shown{
		p1(nodeMedianError(nodeWhatIfNaive)), p1(nodeMedianError(nodeWhatIfFast))}},
	nodeRow(1), nodeRow(2), nodeRow(4), nodeRow(8),
	nodePeerRow(1), nodePeerRow(2), nodePeerRow(4), nodePeerRow(8),
}

// nodePeerFile is the node run beside its PyTorch DDP peer (docs/node.md).
const nodePeerFile = "results/node-peer-346df48.txt"

// nodePeerRow is a row of docs/node.md's table of ours beside the peer:
// each one's smallest rank AU and samples/s at n.
func nodePeerRow(n int) figureCase {
	ours := fmt.Sprintf("Node/accelerators=%d/level=none", n)
	torch := fmt.Sprintf("NodeTorch/accelerators=%d/level=none", n)
	return figureCase{"docs/node.md", fmt.Sprintf("| %d | %%s | %%s | %%s | %%s |", n), []shown{
		p3(med(nodePeerFile, ours, "au-min")), p1(med(nodePeerFile, ours, "samples/s")),
		p3(med(nodePeerFile, torch, "au-min")), p1(med(nodePeerFile, torch, "samples/s"))}}
}

// The node's committed files (docs/node.md).
const (
	nodeWhatIfNaive = "results/node-whatif-bca00af.txt"
	nodeWhatIfFast  = "results/node-whatif-fast-bca00af.txt"
	nodeFile        = "results/node-bca00af.txt"
)

// nodeWhatIfRow is a row of docs/node.md's predicted-against-measured
// table: each pipeline's predicted AU, measured AU and error at n.
func nodeWhatIfRow(n int) figureCase {
	name := fmt.Sprintf("NodeWhatIf/accelerators=%d", n)
	var figs []shown
	for _, f := range []string{nodeWhatIfNaive, nodeWhatIfFast} {
		figs = append(figs, p3(med(f, name, "predicted-au")), p3(med(f, name, "measured-au")), shown{"%.1f%%", med(f, name, "au-error-%")})
	}
	return figureCase{"docs/node.md", fmt.Sprintf("| %d | %%s | %%s | %%s | %%s | %%s | %%s |", n), figs}
}

// nodeMedianError is the median AU error over 1, 2, 4 and 8 accelerators.
func nodeMedianError(path string) figure {
	return func(t *testing.T) float64 {
		var xs []float64
		for _, n := range []int{1, 2, 4, 8} {
			xs = append(xs, med(path, fmt.Sprintf("NodeWhatIf/accelerators=%d", n), "au-error-%")(t))
		}
		return summary.Median(xs)
	}
}

// nodeRow is a row of docs/node.md's node table at n: au, au-min, the
// host level's au, samples/s, cpu-cores, other-cores, input wait in ms.
func nodeRow(n int) figureCase {
	none := fmt.Sprintf("Node/accelerators=%d/level=none", n)
	host := fmt.Sprintf("Node/accelerators=%d/level=host", n)
	return figureCase{"docs/node.md", fmt.Sprintf("| %d | %%s | %%s | %%s | %%s | %%s | %%s | %%s ms |", n), []shown{
		p3(med(nodeFile, none, "au")), p3(med(nodeFile, none, "au-min")), p3(med(nodeFile, host, "au")),
		p1(med(nodeFile, none, "samples/s")), p2(med(nodeFile, none, "cpu-cores")), p2(med(nodeFile, none, "other-cores")),
		p2(scale(med(nodeFile, none, "input-wait-ns/op"), 1e-6))}}
}

// whatifNeighbours are the medians of the other processes' cores at each
// point the 2-core what-if run checked.
func whatifNeighbours() []figure {
	var fs []figure
	for _, m := range []string{"0.5", "2"} {
		for _, c := range []int{1, 2} {
			for _, w := range []int{1, 2, 4, 8} {
				fs = append(fs, med(whatif2, fmt.Sprintf("WhatIf/check/cores=%d/workers=%d/step=x%s", c, w, m), "other-cores"))
			}
		}
	}
	return fs
}

// ondiskCPU are the median CPU seconds of impls at 1 and 2 workers in the
// on-disk peer's file.
func ondiskCPU(impls ...string) []figure {
	var fs []figure
	for _, impl := range impls {
		for _, w := range []int{1, 2} {
			fs = append(fs, med(ondiskPeer, peerRun(impl, w), "cpu-s"))
		}
	}
	return fs
}

// ondiskCPUShares are ours' CPU seconds in percent of torch's, per
// implementation and worker count.
func ondiskCPUShares() []figure {
	var fs []figure
	for _, impl := range []string{"naive", "fast"} {
		for _, w := range []int{1, 2} {
			fs = append(fs, scale(div(med(ondiskPeer, peerRun(impl, w), "cpu-s"), med(ondiskPeer, peerRun("torch", w), "cpu-s")), 100))
		}
	}
	return fs
}

// fastDrops are the fast transforms' drops below device, in percent, at
// every level of the three files docs/ladder.md names: the 003 report's
// step (b), results/ffbc313-epyc.txt and results/06f81ea.txt.
func fastDrops(nb string) []figure {
	var fs []figure
	for _, l := range []string{"host", "sample", "raw", "none"} {
		fs = append(fs, scale(change(med(nb, step003("b", l, "fast"), "steps/s"), med(nb, step003("b", "device", "fast"), "steps/s")), -1))
		for _, path := range []string{epycFfbc, epyc06} {
			fs = append(fs, scale(change(med(path, ladder(path, l, "fast"), "steps/s"), med(path, ladder(path, "device", "fast"), "steps/s")), -1))
		}
	}
	return fs
}

// loadersRatio is goroutines' over processes' figure at w workers (or
// processes' over goroutines' for TTFB and memory: the table's
// "processes ÷ goroutines").
func loadersRatio(w int, unit string) figure {
	g := med(loaders16, fmt.Sprintf("Loaders/mode=goroutine/workers=%d", w), unit)
	p := med(loaders16, fmt.Sprintf("Loaders/mode=process/workers=%d", w), unit)
	if unit == "samples/s" {
		return div(g, p)
	}
	return div(p, g)
}

// loadersRow is a row of docs/loaders.md's 16-core table.
func loadersRow(w int) figureCase {
	g := func(unit string) figure {
		return med(loaders16, fmt.Sprintf("Loaders/mode=goroutine/workers=%d", w), unit)
	}
	p := func(unit string) figure {
		return med(loaders16, fmt.Sprintf("Loaders/mode=process/workers=%d", w), unit)
	}
	return figureCase{"docs/loaders.md", fmt.Sprintf("| %d | %%s | %%s | %%s× | %%s | %%s | %%s× | %%s | %%s | %%s× |", w), []shown{
		p1(scale(g("ttfb-ns"), 1e-6)), p1(scale(p("ttfb-ns"), 1e-6)), p2(loadersRatio(w, "ttfb-ns")),
		p0(g("samples/s")), p0(p("samples/s")), p2(loadersRatio(w, "samples/s")),
		p1(scale(g("peak-rss-B"), 1.0/(1<<20))), p1(scale(p("peak-rss-B"), 1.0/(1<<20))), p1(loadersRatio(w, "peak-rss-B"))}}
}

// peer16Row is a row of docs/peer.md's 16-core table, as the peer's
// report writes it (speed-ups rounded down).
func peer16Row(w int, met string) figureCase {
	m := func(impl, unit string) figure { return med(peer16, peerRun(impl, w), unit) }
	return figureCase{"docs/peer.md", fmt.Sprintf("| %d | %%s | %%s | %%s | %%s× | %%s× | %%s× | %s |", w, met), []shown{
		p1(m("naive", "samples/s")), p1(m("fast", "samples/s")), p1(m("torch", "samples/s")),
		p2(floor2(div(m("naive", "samples/s"), m("torch", "samples/s")))), p2(floor2(div(m("fast", "samples/s"), m("torch", "samples/s")))),
		p2(div(m("naive", "ttfb-ns"), m("torch", "ttfb-ns")))}}
}

// remoteRow is a row of docs/peer.md's bucket-peer table.
func remoteRow(layout string, w int) figureCase {
	m := func(impl string) figure {
		return med(peerRemote, fmt.Sprintf("PeerRemote/layout=%s/impl=%s/workers=%d", layout, impl, w), "samples/s")
	}
	return figureCase{"docs/peer.md", fmt.Sprintf("| %s | %d | %%s | %%s | %%s× |", layout, w), []shown{
		p1(m("fast")), p1(m("torch")), p2(floor2(div(m("fast"), m("torch"))))}}
}

// factorMs is the median CPU ms per image of a decode factor ("1-4").
func factorMs(raw int, factor string) shown {
	return p2(scale(med(factorsFile, fmt.Sprintf("DecodeScaled/raw=%d/factor=%s", raw, factor), "cpu-ns/op"), 1e-6))
}

// scaleName is the name of a level of the --decode-scale ladder runs.
func scaleName(path, level string) string { return ladder(path, level, "fast") }

// scaleRow is a row of the --decode-scale ladder table: none and device
// steps/s, their ratio, decode ms a sample at none.
func scaleRow(path string) []shown {
	none, device := med(path, scaleName(path, "none"), "steps/s"), med(path, scaleName(path, "device"), "steps/s")
	return []shown{p2(none), p2(device), p2(div(none, device)), p2(scale(med(path, scaleName(path, "none"), "decode-ns/sample"), 1e-6))}
}

// normalize collapses runs of white space to one space and writes the
// pages' minus sign (U+2212) as '-', so a figure may be quoted across a
// line break and Go's "-17%" matches a page's "−17%".
func normalize(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "−", "-")), " ")
}

// TestDocsFiguresMatchTheirFiles recomputes each case's figures from the
// committed result files and checks that its page says them, rounded as
// written.
func TestDocsFiguresMatchTheirFiles(t *testing.T) {
	pages := map[string]string{}
	figures := 0
	for _, c := range allCases() {
		page, ok := pages[c.doc]
		if !ok {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(c.doc)))
			if err != nil {
				t.Fatal(err)
			}
			page = normalize(string(data))
			pages[c.doc] = page
		}
		args := make([]any, len(c.figs))
		for i, f := range c.figs {
			args[i] = fmt.Sprintf(f.format, f.f(t))
		}
		figures += len(c.figs)
		want := normalize(fmt.Sprintf(c.text, args...))
		if !strings.Contains(page, want) {
			t.Errorf("%s does not say what its files give:\n  want %q\n  (the page's text, figures as verbs: %q)", c.doc, want, c.text)
		}
	}
	if figures < 380 {
		t.Errorf("%d figures checked, want at least 380 (95 of round 2, 147 of the round-3 audit, 143 of round 4)", figures)
	}
}

// The decoding figures of docs/real-data.md are from go test -bench
// files, which name no commit (docs/real-data.md says which tree they
// came from); the GPU suite's summaries are logs of the runs beside them,
// whose commit is in their name. Every other committed file with
// benchmark results has a commit: line.
var noCommit = map[string]string{
	"results/decode-scale-decode.txt":                            "go test output; committed with 8ea949c, its tree's exact commit not recorded (docs/real-data.md)",
	"results/decode-scale-factors.txt":                           "go test output; committed with 8ea949c, its tree's exact commit not recorded (docs/real-data.md)",
	"results/gpu/nvidia-h100-80gb-hbm3-9f400ae-torch-ladder.txt": "the torch peer's own output, beside nvidia-h100-80gb-hbm3-9f400ae.txt (commit 9f400ae)",
	"results/gpu/nvidia-h100-80gb-hbm3-15709d7-torch-ladder.txt": "the torch peer's own output, beside nvidia-h100-80gb-hbm3-15709d7.txt (commit 15709d7)",
	"results/gpu/nvidia-h200-3fcbbc1/torch-ladder.txt":           "the torch peer's own output in the bundle of 3fcbbc1 (docs/gpu.md); ladder.py writes HEADSPACE_COMMIT's commit: line since",
}

// TestResultFilesNameTheirCommit checks that every committed result file
// under results/ and notebooks/results/ names the commit that measured it,
// but the known exceptions above. A .txt file without a benchmark line is
// not a result file but a log or a report beside one (the GPU suite's
// summaries, the paired gate's reports) and is not checked.
func TestResultFilesNameTheirCommit(t *testing.T) {
	checked := 0
	for _, dir := range []string{"results", "notebooks/results"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txt") {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			hasCommit, isResult, err := hasConfigLine(path, "commit")
			if err != nil {
				return err
			}
			if !isResult {
				if _, ok := noCommit[rel]; ok {
					t.Errorf("%s holds no benchmark line: take it off the noCommit list", rel)
				}
				return nil
			}
			_, excused := noCommit[rel]
			switch {
			case !hasCommit && !excused:
				t.Errorf("%s has no commit: line (add one, or list it in noCommit with its provenance in docs)", rel)
			case hasCommit && excused:
				t.Errorf("%s has a commit: line now: take it off the noCommit list", rel)
			}
			checked++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Errorf("checked %d result files, want the committed ones (at least 20)", checked)
	}
	for rel := range noCommit {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			t.Errorf("noCommit lists %s, which is not committed: %v", rel, err)
		}
	}
}

// hasConfigLine says whether the file has a "key: value" line.
// resultLine is a line of the Go benchmark format: a name, then an
// iteration count (a report's table row has a unit there).
var resultLine = regexp.MustCompile(`^Benchmark\S+\s+\d+\s`)

func hasConfigLine(path, key string) (has, isResult bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		has = has || strings.HasPrefix(line, key+": ")
		isResult = isResult || resultLine.MatchString(line)
	}
	return has, isResult, s.Err()
}
