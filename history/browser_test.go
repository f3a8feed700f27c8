package history

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium finds Debian's chromium (make test-deps installs it). Its
// absence fails the test: a browser test that skips is not a pass.
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("HEADSPACE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: install Debian's chromium (make test-deps does) or set HEADSPACE_CHROMIUM")
	return ""
}

// writePage writes h's page into a temporary folder and returns its path.
func writePage(t testing.TB, h *History) string {
	t.Helper()
	page := filepath.Join(t.TempDir(), "history.html")
	var b strings.Builder
	if err := h.WritePage(context.Background(), &b, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return page
}

// browse starts headless Chromium with a fresh profile and a window of
// w × h pixels, and returns a context to drive it. When the test ends it
// fails on any console error, warning or uncaught exception the pages
// showed, and checks that the browser and every helper it started are
// gone.
func browse(t testing.TB, w, h int) context.Context {
	t.Helper()
	adoptOrphans(t)
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(w, h),
	}
	// Cleanups run last first: the console's problems, the tab, the
	// browser, then the check that no process of the profile is left.
	t.Cleanup(func() { noProcessesWith(t, profile) })
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 180*time.Second)
	t.Cleanup(cancelTimeout)

	var mu sync.Mutex
	var problems []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Error(p)
		}
	})
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError {
				problems = append(problems, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	})
	if err := chromedp.Run(ctx, log.Enable()); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// drawnCharts counts the charts whose draw hook ran.
const drawnCharts = `document.querySelectorAll('.chart .uplot[data-drawn="1"]').length`

// TestPageInBrowser loads a history page from disk (file://) in headless
// Chromium and checks that its console shows no error, that a chart is
// drawn only once it scrolls into view, and its samples decoded only then,
// and every chart then is, that hovering a chart's point shows that run's commit, that dragging across
// a chart zooms every chart of its machine to those nights and hovering
// then picks a night of them, and that picking two runs, or a change
// point's compare link, shows the comparison of those runs. With
// HEADSPACE_SCREENSHOT=FILE.png it saves a screenshot there.
func TestPageInBrowser(t *testing.T) {
	store := seededStore(t, 12, 6, "Test CPU", "Other CPU")
	h, err := Load(context.Background(), store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := writePage(t, h)
	nseries, nchanged := 0, 0
	for _, m := range h.Machines {
		nseries += len(m.Series)
		for _, s := range m.Series {
			if len(s.Changes) > 0 || s.Suspect != nil {
				nchanged++
			}
		}
	}
	if nchanged == 0 {
		t.Fatal("the seeded store has no changed series")
	}
	ctx := browse(t, 1400, 700)

	var charts string
	var first, decoded int
	if err := chromedp.Run(ctx,
		chromedp.Navigate("file://"+page),
		chromedp.WaitVisible(`body[data-charts]`, chromedp.ByQuery),
		chromedp.AttributeValue(`body`, "data-charts", &charts, nil, chromedp.ByQuery),
		// The first screen's charts: drawn, and only they.
		chromedp.Poll(drawnCharts+` > 0`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Sleep(300*time.Millisecond),
		chromedp.Evaluate(drawnCharts, &first),
		chromedp.Evaluate(`headspaceDecoded()`, &decoded),
	); err != nil {
		t.Fatal(err)
	}
	// Only the series drawn have their samples decoded (each its own blob).
	if decoded == 0 || decoded >= nseries {
		t.Errorf("%d of %d series decoded at first, %d charts drawn; want those drawn only", decoded, nseries, first)
	}
	if charts != fmt.Sprint(nseries+nchanged) {
		t.Errorf("%s charts; want %d series and %d changed ones", charts, nseries, nchanged)
	}
	if first >= nseries+nchanged {
		t.Errorf("all %d charts drawn before any scrolled into view", first)
	}
	// Scrolled through, every chart is drawn.
	var all int
	if err := chromedp.Run(ctx,
		chromedp.Evaluate(`(async function(){for (const c of document.querySelectorAll('.chart')) {c.scrollIntoView(); await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));}})()`, nil,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
		chromedp.Poll(fmt.Sprintf(`%s >= %d`, drawnCharts, nseries+nchanged), nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(drawnCharts, &all),
	); err != nil {
		t.Fatalf("%v (%d of %d charts drawn)", err, all, nseries+nchanged)
	}

	// Hover the third run (x = 2 on a range of -0.5 … runs-0.5) of the
	// first machine's first chart.
	m := h.Machines[0]
	hover := func(sel string, run, lo, hi float64) (tip string, hidden bool) {
		t.Helper()
		var box []float64
		if err := chromedp.Run(ctx,
			chromedp.Evaluate(`(function(){var c=document.querySelector(`+"`"+sel+"`"+`); c.scrollIntoView({block:"center"});
				var o=c.querySelector('.u-over').getBoundingClientRect(); return [o.left, o.top, o.width, o.height];})()`, &box),
		); err != nil {
			t.Fatal(err)
		}
		x := box[0] + box[2]*(run-lo)/(hi-lo)
		y := box[1] + box[3]/2
		if err := chromedp.Run(ctx,
			chromedp.MouseEvent(input.MouseMoved, x-5, y),
			chromedp.MouseEvent(input.MouseMoved, x, y),
			chromedp.Sleep(300*time.Millisecond),
			chromedp.Evaluate(`document.getElementById('tip').hidden`, &hidden),
			chromedp.Evaluate(`document.getElementById('tip').textContent`, &tip),
		); err != nil {
			t.Fatal(err)
		}
		return tip, hidden
	}
	n := float64(len(m.Runs))
	first0 := `#m-0 .chart`
	if tip, hidden := hover(first0, 2, -0.5, n-0.5); hidden || !strings.Contains(tip, m.Runs[2].Commit) || !strings.Contains(tip, "95% interval") || !strings.Contains(tip, m.Runs[2].Date.Format("2006-01-02")) {
		t.Errorf("hover on run 2 (%s): tip %q (hidden %v)", m.Runs[2].Commit, tip, hidden)
	}

	// Drag across runs 5 … 8 of that chart: every chart of the machine
	// shows those nights, and hovering picks run 7 of them.
	var box []float64
	if err := chromedp.Run(ctx,
		chromedp.Evaluate(`(function(){var o=document.querySelector('#m-0 .chart .u-over').getBoundingClientRect(); return [o.left, o.top, o.width, o.height];})()`, &box),
	); err != nil {
		t.Fatal(err)
	}
	xAt := func(run float64) float64 { return box[0] + box[2]*(run+0.5)/n }
	y := box[1] + box[3]/2
	var label string
	if err := chromedp.Run(ctx,
		chromedp.MouseEvent(input.MouseMoved, xAt(4.6), y),
		chromedp.MouseEvent(input.MousePressed, xAt(4.6), y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, xAt(6.5), y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, xAt(8.4), y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, xAt(8.4), y, chromedp.ButtonLeft),
		chromedp.Sleep(300*time.Millisecond),
		chromedp.Text(`#m-0 .zoom span`, &label, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
	if want := "nights " + m.Runs[5].Date.Format("2006-01-02") + " – " + m.Runs[8].Date.Format("2006-01-02"); label != want {
		t.Errorf("zoomed to %q, want %q", label, want)
	}
	var lo, hi float64 = 4.6, 8.4
	if tip, hidden := hover(`#m-0 .chart:nth-of-type(2)`, 7, lo, hi); hidden || !strings.Contains(tip, m.Runs[7].Commit) {
		t.Errorf("zoomed, hover on run 7 (%s) of another chart: tip %q (hidden %v)", m.Runs[7].Commit, tip, hidden)
	}

	// Pick two runs either side of the step: the comparison of them.
	mi := 1
	if m = h.Machines[mi]; m.Key != "emulated-test-cpu-2c-70f22c8f" {
		t.Fatalf("machine %d is %s", mi, m.Key)
	}
	var cmp string
	if err := chromedp.Run(ctx,
		chromedp.SetValue(`#old-1`, "1", chromedp.ByID),
		chromedp.SetValue(`#new-1`, "8", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById('new-1').onchange()`, nil),
		chromedp.Text(`#cmp-1`, &cmp, chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cmp, "old: "+m.Runs[1].Commit) || !strings.Contains(cmp, "new: "+m.Runs[8].Commit) || !strings.Contains(cmp, "REGRESSION: 2") {
		t.Errorf("compare %s with %s: %q", m.Runs[1].Commit, m.Runs[8].Commit, cmp)
	}
	// A change point's compare link: the runs either side of it.
	c := h.Suspects()[0] // 12 runs are too few to confirm the step
	if c.Series.Machine != m.Key {
		t.Fatalf("the suspected step is on %s", c.Series.Machine)
	}
	var old, nw string
	if err := chromedp.Run(ctx,
		chromedp.Click(`a.cmp-link`, chromedp.ByQuery),
		chromedp.Value(`#old-1`, &old, chromedp.ByID),
		chromedp.Value(`#new-1`, &nw, chromedp.ByID),
		chromedp.Text(`#cmp-1`, &cmp, chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	if old != fmt.Sprint(c.Run-1) || nw != fmt.Sprint(c.Run) || !strings.Contains(cmp, "new: "+c.Commit) {
		t.Errorf("the compare link of the change at %s picked runs %s and %s: %q", c.Commit, old, nw, cmp)
	}

	if out := os.Getenv("HEADSPACE_SCREENSHOT"); out != "" {
		var png []byte
		if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 90)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
