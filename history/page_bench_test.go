package history

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// BenchmarkPage365 and BenchmarkPage730 measure the history page at the
// scale it is for (issue 37): a generated store of 365 (730) nightly runs
// × 200 series (YearOfNights), its report (Load and WritePage: ns/op),
// the page's size (page-bytes), and in headless Chromium (1400 × 1000,
// from disk; one load to warm the browser, then each load from a blank
// page):
//
//   - first-screen-ms: from navigation until the first screen is painted,
//     its charts included (the later of first-contentful-paint and the
//     draw of every chart in view);
//   - interactive-ms: from navigation until the page is parsed and its
//     scripts have run (domInteractive): until then it answers no click
//     or scroll;
//   - visible-charts-ms: from navigation, the page scrolled to the
//     charts of every series as soon as it is parsed, until every chart
//     then in view is drawn;
//   - first-screen-busy-ms, visible-charts-busy-ms: how long the
//     renderer's main thread was busy in those two loads (CDP's
//     TaskDuration: the wall time of its tasks), the time the page could
//     not answer the user.
//
// Run them one at a time, on a quiet machine:
//
//	go test -run '^$' -bench 'BenchmarkPage(365|730)$' -benchtime 1x -count 3 ./history/
func BenchmarkPage365(b *testing.B) { benchPage(b, 365, 0) }

// BenchmarkPage730 is BenchmarkPage365 for two years of nights.
func BenchmarkPage730(b *testing.B) { benchPage(b, 730, 0) }

// BenchmarkPage365Full is BenchmarkPage365 on samples written at full
// precision (YearOfNights with Digits -1: up to 17 significant digits, as
// a run's own figures can be), the year store of issue 41:
//
//	go test -run '^$' -bench 'BenchmarkPage365(Full)?$' -benchtime 1x -count 3 ./history/
func BenchmarkPage365Full(b *testing.B) { benchPage(b, 365, -1) }

// drawRecorder runs in the page before its own scripts: it notes when
// each chart's draw hook marks it drawn (data-drawn), and with #charts
// scrolls to the charts of every series once the page is parsed.
const drawRecorder = `
window.__drawn = new Map();
new MutationObserver(function (ms) {
  var t = performance.now();
  ms.forEach(function (m) { if (!window.__drawn.has(m.target)) window.__drawn.set(m.target, t); });
}).observe(document, { attributes: true, subtree: true, attributeFilter: ["data-drawn"] });
document.addEventListener("DOMContentLoaded", function () {
  var g = document.querySelector("#machines .charts");
  if (location.hash === "#charts" && g) g.scrollIntoView();
});`

// inView is, once every chart in the viewport is drawn, the latest time
// one was drawn and the first contentful paint (ms since navigation),
// and how many charts are in view; null until then.
const inView = `(function () {
  var t = 0, n = 0, cs = document.querySelectorAll(".chart");
  for (var i = 0; i < cs.length; i++) {
    var r = cs[i].getBoundingClientRect();
    if (r.bottom <= 0 || r.top >= innerHeight) continue;
    var u = cs[i].querySelector(".uplot");
    if (!u || !window.__drawn.has(u)) return null;
    t = Math.max(t, window.__drawn.get(u)); n++;
  }
  var fcp = performance.getEntriesByName("first-contentful-paint")[0];
  if (!fcp) return null;
  var m = function (k) { var e = performance.getEntriesByName(k)[0]; return e ? e.startTime : -1; };
  var nav = performance.getEntriesByType("navigation")[0];
  return [t, fcp.startTime, n, m("headspace-built"), nav.responseEnd, nav.domInteractive];
})()`

func benchPage(b *testing.B, nights, digits int) {
	g := YearOfNights()
	g.Nights, g.Digits = nights, digits
	store := b.TempDir()
	if err := g.Write(context.Background(), store); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "history.html")
	var html strings.Builder
	b.ResetTimer()
	for range b.N {
		h, err := Load(context.Background(), store, Options{})
		if err != nil {
			b.Fatal(err)
		}
		html.Reset()
		if err := h.WritePage(context.Background(), &html, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := os.WriteFile(path, []byte(html.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := browse(b, 1400, 1000)
	if err := chromedp.Run(ctx, performance.Enable(), chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(drawRecorder).Do(ctx)
		return err
	})); err != nil {
		b.Fatal(err)
	}
	// busy is the renderer's main-thread busy time so far, in ms (CDP's
	// TaskDuration).
	busy := func() float64 {
		var ms []*performance.Metric
		if err := chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) (err error) {
			ms, err = performance.GetMetrics().Do(ctx)
			return err
		})); err != nil {
			b.Fatal(err)
		}
		for _, m := range ms {
			if m.Name == "TaskDuration" {
				return 1000 * m.Value
			}
		}
		b.Fatal("no TaskDuration metric")
		return 0
	}
	// measure loads url and returns inView's figures and the main
	// thread's time the load took until then.
	measure := func(url string) ([]float64, float64) {
		var got []float64
		before := busy()
		if err := chromedp.Run(ctx,
			chromedp.Navigate(url),
			chromedp.Poll(inView, &got, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(20*time.Millisecond)),
		); err != nil {
			b.Fatal(err)
		}
		return got, busy() - before
	}
	// Once to warm the browser (its first page pays for starting its
	// renderer), then each load from a blank page.
	measure("file://" + path)
	chromedp.Run(ctx, chromedp.Navigate("about:blank"))
	first, firstBusy := measure("file://" + path)
	chromedp.Run(ctx, chromedp.Navigate("about:blank"))
	charts, chartsBusy := measure("file://" + path + "#charts")
	if charts[2] == 0 {
		b.Fatal("no chart in view once scrolled to the charts")
	}
	b.ReportMetric(max(first[0], first[1]), "first-screen-ms")
	b.ReportMetric(first[5], "interactive-ms")
	b.ReportMetric(charts[0], "visible-charts-ms")
	b.ReportMetric(firstBusy, "first-screen-busy-ms")
	b.ReportMetric(chartsBusy, "visible-charts-busy-ms")
	b.ReportMetric(float64(len(html.String())), "page-bytes")
	b.Logf("in page (ms since navigation; drawn, paint, charts, script ran, response end, interactive): first screen %.0f, scrolled %.0f", first, charts)
	b.Logf("%d nights: first screen %.0f ms (paint %.0f ms, %.0f charts in view), charts in view after the scroll %.0f ms (%.0f charts), page %d bytes",
		nights, max(first[0], first[1]), first[1], first[2], charts[0], charts[2], len(html.String()))
}
