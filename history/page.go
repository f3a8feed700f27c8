package history

import (
	"bytes"
	"compress/flate"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/internal/disturb"
	"github.com/headspace-bench/headspace/internal/summary"
)

// The charting library, vendored and pinned: uPlot (see uplot/VERSION).
// It is small (51 KB), fast with hundreds of charts on a page, has no
// dependencies, draws bands and takes plugins for the change-point
// markers and the hover box, and is embedded into every page so the page
// works offline from disk.
var (
	//go:embed uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed uplot/uPlot.min.css
	uplotCSS string
)

// pageData is what the page's script draws and compares: per machine,
// its runs and an index of its series; the samples themselves are in the
// page's sample text, one blob per series (encodeSamples, DEFLATE,
// base64), so that a chart decodes only its own series as it scrolls
// into view.
type pageData struct {
	Generated string        `json:"generated"`
	Alpha     float64       `json:"alpha"`     // the gate's, for the page's compare
	Threshold float64       `json:"threshold"` // the gate's, for the page's compare
	CI        [][2]int      `json:"ci"`        // per sample count n: the median's interval as 0-based order statistics, -1 for ±∞
	Machines  []pageMachine `json:"machines"`
}

type pageMachine struct {
	Key    string       `json:"key"`
	Runs   []pageRun    `json:"runs"`
	Series []pageSeries `json:"series"`
}

type pageRun struct {
	Commit string `json:"commit"`
	Date   string `json:"date"`
}

type pageSeries struct {
	Benchmark string       `json:"benchmark"`
	Unit      string       `json:"unit"`
	Better    string       `json:"better"`
	Binary    bool         `json:"bin,omitempty"`  // scaled by powers of 2 (benchunit.Binary)
	Condition bool         `json:"cond,omitempty"` // a run condition: shown, never judged (disturb.IsCondition)
	Exp       int          `json:"exp"`            // every sample is an integer × 10^exp in the blob
	At        int          `json:"at"`             // where its blob starts in the sample text (base64 characters)
	Len       int          `json:"len"`            // how long its blob is (base64 characters)
	Raw       int          `json:"raw"`            // how long its blob is inflated (bytes)
	Points    int          `json:"np"`             // how many points it has
	Changes   []pageChange `json:"changes"`
	Suspect   *pageChange  `json:"suspect,omitempty"` // a suspected step at the end
}

type pageChange struct {
	Run    int     `json:"run"`
	Prev   int     `json:"prev"` // the series' run before it: compare's old side
	Delta  float64 `json:"delta"`
	Before string  `json:"before"`
	After  string  `json:"after"`
	Kind   string  `json:"kind"`
}

// SampleDigits is how many significant digits of every sample the page
// keeps: the precision a benchmark's sample carries. Rounded to 6
// digits, a sample moves by at most 5 parts in a million of itself (a
// relative quantum of 1e-6 to 1e-5), thousands of times below the
// run-to-run noise of any benchmark the history holds (±2% in the year
// it is built for), while the digits a results file may hold beyond it
// (up to 17) are noise that neither DEFLATE nor the reader can use: a
// year of nights at full precision made a 2.9 MB page, at 6 digits
// 1.3 MB (TestYearPageOnFullPrecisionSamples; issue 41). The page's
// medians, intervals and U tests are computed from the rounded samples.
const SampleDigits = 6

// sampleExp is the power of ten every value of xs is a whole multiple of
// once rounded to SampleDigits significant digits, but no finer than 15
// digits below the largest (so that every integer stays exact in a
// double, below 2^53).
func sampleExp(xs []float64) int {
	exp, top := math.MaxInt, math.MinInt
	for _, v := range xs {
		if v == 0 {
			continue
		}
		m, e := decimal(v)
		exp = min(exp, e-(len(m)-1))
		top = max(top, e)
	}
	if exp == math.MaxInt {
		return 0
	}
	return max(exp, top-14)
}

// decimal is v's SampleDigits significant digits, without trailing
// zeros and sign, and the power of ten of the first.
func decimal(v float64) (digits string, exp int) {
	s := strconv.FormatFloat(math.Abs(v), 'e', SampleDigits-1, 64)
	i := strings.IndexByte(s, 'e')
	exp, _ = strconv.Atoi(s[i+1:])
	return strings.TrimRight(strings.Replace(s[:i], ".", "", 1), "0"), exp
}

// scaled is v as an integer multiple of 10^exp (v rounded to
// SampleDigits significant digits).
func scaled(v float64, exp int) int64 {
	if v == 0 {
		return 0
	}
	d, e := decimal(v)
	n, _ := strconv.ParseInt(d, 10, 64)
	for k := e - (len(d) - 1); k > exp; k-- {
		n *= 10
	}
	for k := e - (len(d) - 1); k < exp; k++ {
		n = (n + 5) / 10 // only below the 15 digits sampleExp keeps
	}
	if v < 0 {
		n = -n
	}
	return n
}

// encodeSamples appends a series' points to blob as varints, each point
// its run less the previous point's run (the first: its run + 1), its
// sample count, its smallest sample less the previous point's smallest
// (zigzag), then each next sample less the one before (sorted, so never
// negative), every sample an integer × 10^exp. It returns the blob and
// exp.
func encodeSamples(blob []byte, points []Point) ([]byte, int) {
	var all []float64
	for _, p := range points {
		all = append(all, p.Values...)
	}
	exp := sampleExp(all)
	prevRun, prevFirst := -1, int64(0)
	for _, p := range points {
		blob = binary.AppendUvarint(blob, uint64(p.Run-prevRun))
		blob = binary.AppendUvarint(blob, uint64(len(p.Values)))
		prevRun = p.Run
		var last int64
		for i, v := range p.Values {
			n := scaled(v, exp)
			if i == 0 {
				blob = binary.AppendVarint(blob, n-prevFirst)
				prevFirst = n
			} else {
				blob = binary.AppendUvarint(blob, uint64(n-last))
			}
			last = n
		}
	}
	return blob, exp
}

// medianOrders are the 0-based order statistics that bound the median's
// confidence interval of n sorted samples (-1: ±∞), as package summary
// computes it: found by summarising the samples 1 … n.
func medianOrders(n int) [2]int {
	if n == 0 {
		return [2]int{-1, -1}
	}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	s := summary.Of(xs)
	out := [2]int{-1, -1}
	if !math.IsInf(s.Lo, 0) {
		out[0] = int(s.Lo) - 1
	}
	if !math.IsInf(s.Hi, 0) {
		out[1] = int(s.Hi) - 1
	}
	return out
}

// pageData is the page's data and its sample text: every series' blob
// (encodeSamples, raw DEFLATE, base64), one a line, where its
// pageSeries' At and Len say. Raw DEFLATE, not gzip: the page inflates
// a blob synchronously in a few lines of its own (page.js, inflate), as
// the browser's DecompressionStream, asynchronous, would cost a task
// and often a frame per series.
func (h *History) pageData(ctx context.Context, now time.Time) (pageData, []byte, error) {
	opt := gate.DefaultOptions()
	d := pageData{Generated: now.UTC().Format("2006-01-02 15:04 UTC"), Alpha: opt.Alpha, Threshold: opt.Threshold}
	var text, blob []byte
	var z bytes.Buffer
	zw, _ := flate.NewWriter(&z, flate.BestCompression)
	maxN := 0
	change := func(s *Series, c Change, suspected bool) *pageChange {
		return &pageChange{Run: c.Run, Prev: c.prev(s), Delta: c.Delta, Before: formatValue(c.Before, s.Unit),
			After: formatValue(c.After, s.Unit), Kind: kind(SeriesChange{Series: s, Change: c, Suspected: suspected})}
	}
	for _, m := range h.Machines {
		if err := ctx.Err(); err != nil {
			return d, nil, err
		}
		pm := pageMachine{Key: m.Key}
		for _, r := range m.Runs {
			pm.Runs = append(pm.Runs, pageRun{Commit: r.Commit, Date: r.Date.Format("2006-01-02 15:04 UTC")})
		}
		for _, s := range m.Series {
			ps := pageSeries{Benchmark: s.Benchmark, Unit: s.Unit, Better: s.Better.String(), Changes: []pageChange{},
				Binary: benchunit.ClassOf(s.Unit) == benchunit.Binary, Condition: disturb.IsCondition(s.Unit),
				Points: len(s.Points)}
			blob, ps.Exp = encodeSamples(blob[:0], s.Points)
			ps.Raw = len(blob)
			z.Reset()
			zw.Reset(&z)
			zw.Write(blob)
			if err := zw.Close(); err != nil {
				return d, nil, err
			}
			ps.At = len(text)
			text = base64.StdEncoding.AppendEncode(text, z.Bytes())
			ps.Len = len(text) - ps.At
			text = append(text, '\n')
			for _, p := range s.Points {
				maxN = max(maxN, len(p.Values))
			}
			for _, c := range s.Changes {
				ps.Changes = append(ps.Changes, *change(s, c, false))
			}
			if c := s.Suspect; c != nil {
				ps.Suspect = change(s, *c, true)
			}
			pm.Series = append(pm.Series, ps)
		}
		d.Machines = append(d.Machines, pm)
	}
	for n := range maxN + 1 {
		d.CI = append(d.CI, medianOrders(n))
	}
	return d, text, nil
}

// WritePage writes the history as one self-contained HTML page: no
// request leaves it (uPlot and the data are inside), so it works from
// disk and on any static host alike. It is built for years of nightly
// runs of hundreds of series:
//
//   - First, the summary, in the HTML itself: the latest night per
//     machine (the gate's changed rows and the change points it starts),
//     the charts of the series that changed, and every change point and
//     suspected step, each with a link that compares the runs either side.
//   - Then per machine two run pickers over all its runs: the page
//     compares the two picked as the gate does (page.js: medians, their
//     intervals, the Mann–Whitney U test, Benjamini–Hochberg, the
//     threshold), and one chart per benchmark × unit: the run medians with
//     their 95% confidence band, the change points marked (a suspected
//     step dotted, orange), a box on hover with the night under the
//     cursor, and zoom and pan to a range of nights (shared by the
//     machine's charts).
//   - The samples are a compact blob per series (encodeSamples, DEFLATE,
//     base64); a chart decodes its own series and is drawn only when it
//     scrolls into view, so the first screen decodes only the changed
//     series' samples, and a comparison only its machine's.
//
// It stops with ctx's error, having written nothing, when ctx ends while
// the page is built.
func (h *History) WritePage(ctx context.Context, w io.Writer, now time.Time) error {
	data, samples, err := h.pageData(ctx, now)
	if err != nil {
		return err
	}
	js, err := json.Marshal(data) // escapes <, > and &: safe inside <script>
	if err != nil {
		return err
	}
	var b strings.Builder
	e := html.EscapeString
	runs, series, changes := h.counts()
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>headspace history</title>\n<style>")
	b.WriteString(uplotCSS)
	b.WriteString(pageCSS)
	b.WriteString("</style></head><body>\n<h1>headspace history</h1>\n")
	fmt.Fprintf(&b, "<p class=\"meta\">%s · %s · %s · %s (E-Divisive means, permutation test) · generated %s</p>\n",
		count(len(h.Machines), "machine"), count(runs, "run"), count(series, "series"), count(changes, "change point"), e(data.Generated))

	h.writeLatest(&b)
	b.WriteString("</section>\n<section id=\"changed\"><h2>Changed series</h2>\n<p class=\"meta\">The series with a change point or a suspected step; every series is below, per machine.</p>\n<div class=\"charts\" id=\"changed-charts\"></div>\n")
	b.WriteString("</section>\n<section id=\"changes\"><h2>Change points</h2>\n")
	index := map[string]int{}
	for i, m := range h.Machines {
		index[m.Key] = i
	}
	if all := h.Changes(); len(all) == 0 {
		b.WriteString("<p>None detected.</p>\n")
	} else {
		htmlChanges(&b, all, index)
	}
	if sus := h.Suspects(); len(sus) > 0 {
		b.WriteString("</section>\n<section id=\"suspects\"><h2>Suspected steps at the end of a series</h2>\n<p>In too few of the latest runs for the test to confirm; the next nights will tell.</p>\n")
		htmlChanges(&b, sus, index)
	}
	b.WriteString("</section>\n<div id=\"machines\"></div>\n<div id=\"tip\" class=\"tip\" hidden></div>\n")
	b.WriteString("<script type=\"application/json\" id=\"data\">")
	b.Write(js)
	b.WriteString("</script>\n<script type=\"application/octet-stream\" id=\"samples\">")
	b.Write(samples)
	b.WriteString("</script>\n<script>")
	b.WriteString(uplotJS)
	b.WriteString("</script>\n<script>")
	b.WriteString(pageJS)
	b.WriteString("</script>\n</body></html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// writeLatest writes the page's first section: each machine's latest
// night against the one before it, its changed metrics and the change
// points that start at it.
func (h *History) writeLatest(b *strings.Builder) {
	e := html.EscapeString
	b.WriteString("<section id=\"latest\"><h2>Latest night</h2>\n")
	for _, m := range h.Machines {
		last := m.Runs[len(m.Runs)-1]
		fmt.Fprintf(b, "<h3>%s</h3><p><code>%s</code> (%s)", e(m.Key), e(last.Commit), e(last.Date.Format("2006-01-02 15:04 UTC")))
		switch {
		case len(m.Runs) < 2:
			b.WriteString(": the first run of this machine.</p>\n")
			continue
		case m.LatestErr != nil:
			fmt.Fprintf(b, ": not compared with <code>%s</code>: %s</p>\n", e(m.Runs[len(m.Runs)-2].Commit), e(m.LatestErr.Error()))
			continue
		}
		rows := latestRows(m)
		fmt.Fprintf(b, " against <code>%s</code>: %d regressions, %d changed metrics of %d compared.</p>\n",
			e(m.Runs[len(m.Runs)-2].Commit), len(m.Latest.Regressions()), len(rows), len(m.Latest.Rows))
		if len(rows) > 0 {
			b.WriteString("<table class=\"latest\"><tr><th>benchmark</th><th>unit</th><th>before</th><th>after</th><th>change</th><th>q</th><th>verdict</th></tr>\n")
			for _, r := range rows {
				cls := "imp"
				if r.Verdict == gate.Regression {
					cls = "reg"
				}
				fmt.Fprintf(b, "<tr class=\"%s\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.2g</td><td>%s</td></tr>\n", cls,
					e(r.Name), e(r.Unit), e(formatValue(r.Old.Center, r.Unit)), e(formatValue(r.New.Center, r.Unit)), e(signed(r.Delta)), r.Q, e(r.Verdict.String()))
			}
			b.WriteString("</table>\n")
		}
		if cs := latestChanges(h, m); len(cs) > 0 {
			b.WriteString("<p>Change points starting at this run:</p><ul>\n")
			for _, c := range cs {
				fmt.Fprintf(b, "<li>%s %s: %s (%s → %s), %s</li>\n", e(c.Series.Benchmark), e(c.Series.Unit), e(signed(c.Delta)),
					e(formatValue(c.Before, c.Series.Unit)), e(formatValue(c.After, c.Series.Unit)), e(kind(c)))
			}
			b.WriteString("</ul>\n")
		}
	}
}

// htmlChanges writes a table of changes (or suspected steps), each with
// a link that compares the series' run before it with its first run
// (index: each machine's place on the page).
func htmlChanges(b *strings.Builder, cs []SeriesChange, index map[string]int) {
	e := html.EscapeString
	b.WriteString("<table><tr><th>machine</th><th>benchmark</th><th>unit</th><th>first commit</th><th>date</th><th>change</th><th>before → after</th><th></th><th></th></tr>\n")
	for _, c := range cs {
		fmt.Fprintf(b, "<tr class=\"%s\"><td>%s</td><td>%s</td><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s → %s</td><td>%s</td>"+
			"<td><a href=\"#m-%d\" class=\"cmp-link\" data-m=\"%d\" data-old=\"%d\" data-new=\"%d\">compare</a></td></tr>\n",
			map[bool]string{true: "reg", false: "imp"}[strings.HasSuffix(kind(c), "regression")], e(c.Series.Machine), e(c.Series.Benchmark), e(c.Series.Unit),
			e(c.Commit), e(c.Date.Format("2006-01-02")), e(signed(c.Delta)), e(formatValue(c.Before, c.Series.Unit)), e(formatValue(c.After, c.Series.Unit)), e(label(c)),
			index[c.Series.Machine], index[c.Series.Machine], c.prev(c.Series), c.Run)
	}
	b.WriteString("</table>\n")
}

// The page's style and script, embedded (see WritePage).
var (
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)
