package history

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/engines/gate"
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

// PairRuns is how many of a machine's latest runs the page can compare
// pairwise (every pair among them, compared by the gate in advance: the
// page holds no statistics code of its own).
const PairRuns = 16

// pageData is what the page's script draws.
type pageData struct {
	Generated string        `json:"generated"`
	Machines  []pageMachine `json:"machines"`
}

type pageMachine struct {
	Key    string            `json:"key"`
	Runs   []pageRun         `json:"runs"`
	Series []pageSeries      `json:"series"`
	First  int               `json:"pairFirst"` // the first run pairs exist for
	Pairs  map[string]string `json:"pairs"`     // "i-j": the gate's text report, or why not
}

type pageRun struct {
	Commit string `json:"commit"`
	Date   string `json:"date"`
	File   string `json:"file"`
}

type pageSeries struct {
	Benchmark string       `json:"benchmark"`
	Unit      string       `json:"unit"`
	Better    string       `json:"better"`
	Points    [][6]any     `json:"points"` // run, median, lo, hi, n, formatted
	Changes   []pageChange `json:"changes"`
	Suspect   *pageChange  `json:"suspect,omitempty"` // a suspected step at the end
}

type pageChange struct {
	Run    int     `json:"run"`
	Delta  float64 `json:"delta"`
	Before string  `json:"before"`
	After  string  `json:"after"`
	Kind   string  `json:"kind"`
}

func finite(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func (h *History) pageData(ctx context.Context, now time.Time) (pageData, error) {
	d := pageData{Generated: now.UTC().Format("2006-01-02 15:04 UTC")}
	for _, m := range h.Machines {
		if err := ctx.Err(); err != nil {
			return d, err
		}
		pm := pageMachine{Key: m.Key, Pairs: map[string]string{}}
		for _, r := range m.Runs {
			pm.Runs = append(pm.Runs, pageRun{Commit: r.Commit, Date: r.Date.Format("2006-01-02 15:04 UTC"), File: r.Name()})
		}
		for _, s := range m.Series {
			ps := pageSeries{Benchmark: s.Benchmark, Unit: s.Unit, Better: s.Better.String(), Changes: []pageChange{}}
			for _, p := range s.Points {
				hw := p.Summary.Format(0)
				if i := strings.Index(hw, "±"); i >= 0 {
					hw = hw[i:]
				}
				ps.Points = append(ps.Points, [6]any{p.Run, finite(p.Median), finite(p.Lo), finite(p.Hi), p.N,
					formatValue(p.Median, s.Unit) + " " + hw})
			}
			for _, c := range s.Changes {
				ps.Changes = append(ps.Changes, pageChange{Run: c.Run, Delta: c.Delta, Before: formatValue(c.Before, s.Unit),
					After: formatValue(c.After, s.Unit), Kind: kind(SeriesChange{Series: s, Change: c})})
			}
			if c := s.Suspect; c != nil {
				ps.Suspect = &pageChange{Run: c.Run, Delta: c.Delta, Before: formatValue(c.Before, s.Unit),
					After: formatValue(c.After, s.Unit), Kind: kind(SeriesChange{Series: s, Change: *c, Suspected: true})}
			}
			pm.Series = append(pm.Series, ps)
		}
		pm.First = max(0, len(m.Runs)-PairRuns)
		for i := pm.First; i < len(m.Runs); i++ {
			for j := i + 1; j < len(m.Runs); j++ {
				if err := ctx.Err(); err != nil {
					return d, err
				}
				opt := gate.DefaultOptions()
				// One machine by construction (one folder): files written
				// before the cores: line are this machine's too.
				opt.CrossMachine = true
				rep, err := gate.CompareFiles(m.Runs[i].Path, m.Runs[j].Path, opt)
				if err == nil {
					rep.OldName, rep.NewName = m.Runs[i].Commit+" ("+m.Runs[i].Name()+")", m.Runs[j].Commit+" ("+m.Runs[j].Name()+")"
					ev := rep.Evidence(opt.MinCoverage)
					rep.CrossMachine = false
					var b strings.Builder
					if err = rep.WriteText(&b); err == nil {
						if ev != nil {
							b.WriteString("\nnote: " + ev.Error() + "\n")
						}
						pm.Pairs[fmt.Sprintf("%d-%d", i, j)] = b.String()
					}
				}
				if err != nil {
					pm.Pairs[fmt.Sprintf("%d-%d", i, j)] = "not compared: " + err.Error()
				}
			}
		}
		d.Machines = append(d.Machines, pm)
	}
	return d, nil
}

// WritePage writes the history as one self-contained HTML page: no
// request leaves it (uPlot and the data are inside), so it works from
// disk and on GitHub Pages alike. At the top, the latest night's
// changes per machine; then, per machine, a pair of run pickers showing
// compare's table for any two of its latest PairRuns runs, and one chart
// per benchmark × unit: the run medians with their 95% confidence band,
// the change points marked, and a box on hover with the commit, date,
// value and interval; a suspected step at the end of a series is marked
// apart (dotted, orange) and listed. It stops with ctx's error, having
// written nothing, when ctx ends while the page is built.
func (h *History) WritePage(ctx context.Context, w io.Writer, now time.Time) error {
	data, err := h.pageData(ctx, now)
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

	b.WriteString("<section id=\"latest\"><h2>Latest night</h2>\n")
	for _, m := range h.Machines {
		last := m.Runs[len(m.Runs)-1]
		fmt.Fprintf(&b, "<h3>%s</h3><p><code>%s</code> (%s)", e(m.Key), e(last.Commit), e(last.Date.Format("2006-01-02 15:04 UTC")))
		switch {
		case len(m.Runs) < 2:
			b.WriteString(": the first run of this machine.</p>\n")
			continue
		case m.LatestErr != nil:
			fmt.Fprintf(&b, ": not compared with <code>%s</code>: %s</p>\n", e(m.Runs[len(m.Runs)-2].Commit), e(m.LatestErr.Error()))
			continue
		}
		rows := latestRows(m)
		fmt.Fprintf(&b, " against <code>%s</code>: %d regressions, %d changed metrics of %d compared.</p>\n",
			e(m.Runs[len(m.Runs)-2].Commit), len(m.Latest.Regressions()), len(rows), len(m.Latest.Rows))
		if len(rows) > 0 {
			b.WriteString("<table class=\"latest\"><tr><th>benchmark</th><th>unit</th><th>before</th><th>after</th><th>change</th><th>q</th><th>verdict</th></tr>\n")
			for _, r := range rows {
				cls := "imp"
				if r.Verdict == gate.Regression {
					cls = "reg"
				}
				fmt.Fprintf(&b, "<tr class=\"%s\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.2g</td><td>%s</td></tr>\n", cls,
					e(r.Name), e(r.Unit), e(formatValue(r.Old.Center, r.Unit)), e(formatValue(r.New.Center, r.Unit)), e(signed(r.Delta)), r.Q, e(r.Verdict.String()))
			}
			b.WriteString("</table>\n")
		}
		if cs := latestChanges(h, m); len(cs) > 0 {
			b.WriteString("<p>Change points starting at this run:</p><ul>\n")
			for _, c := range cs {
				fmt.Fprintf(&b, "<li>%s %s: %s (%s → %s), %s</li>\n", e(c.Series.Benchmark), e(c.Series.Unit), e(signed(c.Delta)),
					e(formatValue(c.Before, c.Series.Unit)), e(formatValue(c.After, c.Series.Unit)), e(kind(c)))
			}
			b.WriteString("</ul>\n")
		}
	}
	b.WriteString("</section>\n<section id=\"changes\"><h2>Change points</h2>\n")
	if all := h.Changes(); len(all) == 0 {
		b.WriteString("<p>None detected.</p>\n")
	} else {
		htmlChanges(&b, all)
	}
	if sus := h.Suspects(); len(sus) > 0 {
		b.WriteString("</section>\n<section id=\"suspects\"><h2>Suspected steps at the end of a series</h2>\n<p>In too few of the latest runs for the test to confirm; the next nights will tell.</p>\n")
		htmlChanges(&b, sus)
	}
	b.WriteString("</section>\n<div id=\"machines\"></div>\n<div id=\"tip\" class=\"tip\" hidden></div>\n")
	b.WriteString("<script>")
	b.WriteString(uplotJS)
	b.WriteString("</script>\n<script type=\"application/json\" id=\"data\">")
	b.Write(js)
	b.WriteString("</script>\n<script>")
	b.WriteString(pageJS)
	b.WriteString("</script>\n</body></html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// htmlChanges writes a table of changes (or suspected steps).
func htmlChanges(b *strings.Builder, cs []SeriesChange) {
	e := html.EscapeString
	b.WriteString("<table><tr><th>machine</th><th>benchmark</th><th>unit</th><th>first commit</th><th>date</th><th>change</th><th>before → after</th><th></th></tr>\n")
	for _, c := range cs {
		what := kind(c)
		if c.Suspected {
			what += " (" + tail(c) + ")"
		}
		fmt.Fprintf(b, "<tr class=\"%s\"><td>%s</td><td>%s</td><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s → %s</td><td>%s</td></tr>\n",
			map[bool]string{true: "reg", false: "imp"}[strings.HasSuffix(kind(c), "regression")], e(c.Series.Machine), e(c.Series.Benchmark), e(c.Series.Unit),
			e(c.Commit), e(c.Date.Format("2006-01-02")), e(signed(c.Delta)), e(formatValue(c.Before, c.Series.Unit)), e(formatValue(c.After, c.Series.Unit)), e(what))
	}
	b.WriteString("</table>\n")
}

const pageCSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{margin:0 0 .2em}h2{border-bottom:1px solid #ccc;margin-top:1.5em}
.meta{color:#666}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;font-size:13px}
tr.reg td{background:#fde8e8}tr.imp td{background:#e8f6ea}
code,pre{font:12px ui-monospace,monospace}
pre.cmp{background:#f6f6f6;padding:.6em;overflow:auto;max-height:30em}
.charts{display:flex;flex-wrap:wrap;gap:10px}
.chart{border:1px solid #e3e3e3;padding:4px}
.chart h4{margin:0;font-size:12px;font-weight:normal;max-width:400px;overflow-wrap:anywhere}
.tip{position:fixed;pointer-events:none;background:#fff;border:1px solid #888;padding:4px 6px;font-size:12px;box-shadow:0 1px 4px rgba(0,0,0,.3);z-index:10}
.pick select{max-width:22em}
`

const pageJS = `
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var tip = document.getElementById("tip");
  var root = document.getElementById("machines");
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  function pct(d) { return (d >= 0 ? "+" : "") + (100 * d).toFixed(1) + "%"; }
  // changeMarkers draws a dashed vertical line at each change point:
  // red for a regression, green for an improvement.
  function changeMarkers(changes) {
    return { hooks: { draw: [function (u) {
      var ctx = u.ctx;
      ctx.save();
      changes.forEach(function (c) {
        var x = Math.round(u.valToPos(c.run - 0.5, "x", true));
        var suspected = c.kind.indexOf("suspected") === 0;
        ctx.strokeStyle = suspected ? "#e80" : c.kind === "regression" ? "#d33" : c.kind === "improvement" ? "#2a2" : "#888";
        ctx.lineWidth = 2 * devicePixelRatio;
        ctx.setLineDash(suspected ? [2 * devicePixelRatio, 3 * devicePixelRatio] : [5 * devicePixelRatio, 4 * devicePixelRatio]);
        ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
      });
      ctx.restore();
      u.root.setAttribute("data-drawn", "1");
    }] } };
  }
  // hoverBox shows the run under the cursor: commit, date, value, interval.
  function hoverBox(m, s, byRun) {
    return { hooks: { setCursor: [function (u) {
      var i = u.cursor.idx;
      if (i == null || byRun[i] == null) { tip.hidden = true; return; }
      var p = byRun[i], run = m.runs[i];
      var ch = s.marks.filter(function (c) { return c.run === i; });
      tip.textContent = "";
      [run.commit + "  " + run.date, s.unit + ": " + p[5],
       "95% interval: " + (p[2] == null ? "∞ (n=" + p[4] + ")" : p[2].toPrecision(4) + " – " + p[3].toPrecision(4) + " (n=" + p[4] + ")")]
        .concat(ch.map(function (c) { return (c.kind.indexOf("suspected") === 0 ? "suspected step: " : "change point: ") + pct(c.delta) + " (" + c.before + " → " + c.after + "), " + c.kind; }))
        .forEach(function (line, k) { var d = el(k === 0 ? "b" : "div", {}, line); tip.appendChild(d); if (k === 0) tip.appendChild(el("br")); });
      var r = u.over.getBoundingClientRect();
      tip.style.left = (r.left + u.cursor.left + 12) + "px";
      tip.style.top = (r.top + u.cursor.top + 12) + "px";
      tip.hidden = false;
    }] } };
  }
  data.machines.forEach(function (m, mi) {
    m.series.forEach(function (s) { s.changes = s.changes || []; s.marks = s.suspect ? s.changes.concat([s.suspect]) : s.changes; });
    var sec = el("section", { id: "m-" + m.key });
    sec.appendChild(el("h2", {}, m.key + " (" + m.runs.length + " runs)"));
    // Two runs picked: compare's table for them.
    var pick = el("div", { "class": "pick" });
    pick.appendChild(el("span", {}, "compare "));
    var a = el("select", { id: "old-" + mi }), b = el("select", { id: "new-" + mi });
    for (var i = m.pairFirst; i < m.runs.length; i++) {
      var label = m.runs[i].commit + " · " + m.runs[i].date;
      a.appendChild(el("option", { value: i }, label));
      b.appendChild(el("option", { value: i }, label));
    }
    a.value = Math.max(m.pairFirst, m.runs.length - 2); b.value = m.runs.length - 1;
    pick.appendChild(a); pick.appendChild(el("span", {}, " with ")); pick.appendChild(b);
    var pre = el("pre", { "class": "cmp", id: "cmp-" + mi });
    function show() {
      var i = +a.value, j = +b.value;
      if (i === j) { pre.textContent = "pick two different runs"; return; }
      var key = Math.min(i, j) + "-" + Math.max(i, j);
      pre.textContent = (i > j ? "(older run shown as old)\n" : "") + (m.pairs[key] || "no comparison for these runs");
    }
    a.onchange = show; b.onchange = show;
    sec.appendChild(pick); sec.appendChild(pre);
    if (m.runs.length > 1) show(); else pre.textContent = "one run: nothing to compare yet";
    var grid = el("div", { "class": "charts" });
    sec.appendChild(grid);
    root.appendChild(sec);
    m.series.forEach(function (s) {
      var box = el("div", { "class": "chart" });
      box.appendChild(el("h4", {}, s.benchmark + " · " + s.unit + " (" + s.better + " is better)"));
      grid.appendChild(box);
      var xs = [], med = [], lo = [], hi = [], byRun = {};
      for (var r = 0; r < m.runs.length; r++) { xs.push(r); med.push(null); lo.push(null); hi.push(null); }
      s.points.forEach(function (p) { med[p[0]] = p[1]; lo[p[0]] = p[2]; hi[p[0]] = p[3]; byRun[p[0]] = p; });
      var opts = {
        width: 400, height: 200,
        legend: { show: false },
        cursor: { points: { size: 7 } },
        scales: { x: { time: false, range: [-0.5, m.runs.length - 0.5] } },
        axes: [
          { values: function (u, splits) { return splits.map(function (v) { return Number.isInteger(v) && m.runs[v] ? m.runs[v].commit.slice(0, 7) : ""; }); },
            incrs: [1, 2, 5, 10, 20, 50, 100], size: 30, font: "10px sans-serif" },
          { size: 60, font: "10px sans-serif" }
        ],
        series: [
          {},
          { label: "median", stroke: "#2563eb", width: 1.5, spanGaps: true, points: { show: true, size: 5 } },
          { label: "lo", stroke: "rgba(37,99,235,0.25)", width: 0, points: { show: false } },
          { label: "hi", stroke: "rgba(37,99,235,0.25)", width: 0, points: { show: false } }
        ],
        bands: [{ series: [3, 2], fill: "rgba(37,99,235,0.15)" }],
        plugins: [changeMarkers(s.marks), hoverBox(m, s, byRun)]
      };
      var u = new uPlot(opts, [xs, med, lo, hi], box);
      u.over.addEventListener("mouseleave", function () { tip.hidden = true; });
    });
  });
  document.body.setAttribute("data-charts", String(document.querySelectorAll(".uplot").length));
})();
`
