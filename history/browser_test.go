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
func chromium(t *testing.T) string {
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

// TestPageInBrowser loads a history page from disk (file://) in headless
// Chromium and checks that its console shows no error, that every
// series has a drawn chart, that hovering a chart's point shows that
// run's commit, and that picking two runs shows compare's table for
// them. With HEADSPACE_SCREENSHOT=FILE.png it saves a screenshot there.
func TestPageInBrowser(t *testing.T) {
	store := seededStore(t, 12, 6, "Test CPU", "Other CPU")
	h, err := Load(context.Background(), store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "history.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WritePage(context.Background(), f, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	nseries := 0
	for _, m := range h.Machines {
		nseries += len(m.Series)
	}

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
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// Last: the browser and every helper it started are gone.
	defer noProcessesWith(t, profile)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 120*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var problems []string
	// Whatever else fails, say what the console showed.
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Error(p)
		}
	}()
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

	var charts, drawn string
	var boxes []float64
	if err := chromedp.Run(ctx,
		log.Enable(),
		chromedp.Navigate("file://"+page),
		chromedp.WaitVisible(`body[data-charts]`, chromedp.ByQuery),
		chromedp.AttributeValue(`body`, "data-charts", &charts, nil, chromedp.ByQuery),
		// uPlot draws on the next animation frame: wait for every chart's
		// draw hook (it marks its root), at most 30 s.
		chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('.uplot[data-drawn="1"]').length >= %d`, nseries), nil,
			chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`String(document.querySelectorAll('.uplot[data-drawn="1"] canvas').length)`, &drawn),
		// The first chart's plotting area, and the x of its third run.
		chromedp.Evaluate(`(function(){document.querySelector('.uplot').scrollIntoView();
			var o=document.querySelector('.uplot .u-over').getBoundingClientRect();
			var u=document.querySelector('.uplot'); return [o.left, o.top, o.width, o.height];})()`, &boxes),
	); err != nil {
		t.Fatal(err)
	}
	if charts != fmt.Sprint(nseries) || drawn != fmt.Sprint(nseries) {
		t.Errorf("%s charts, %s drawn canvases; want %d series, each drawn", charts, drawn, nseries)
	}

	// Hover the third run (x = 2 on a range of -0.5 … runs-0.5).
	m := h.Machines[0]
	n := float64(len(m.Runs))
	x := boxes[0] + boxes[2]*(2+0.5)/n
	y := boxes[1] + boxes[3]/2
	var tip string
	var hidden bool
	if err := chromedp.Run(ctx,
		chromedp.MouseEvent(input.MouseMoved, x-5, y),
		chromedp.MouseEvent(input.MouseMoved, x, y),
		chromedp.Sleep(300*time.Millisecond),
		chromedp.Evaluate(`document.getElementById('tip').hidden`, &hidden),
		chromedp.Evaluate(`document.getElementById('tip').textContent`, &tip),
	); err != nil {
		t.Fatal(err)
	}
	if hidden || !strings.Contains(tip, m.Runs[2].Commit) || !strings.Contains(tip, "95% interval") || !strings.Contains(tip, m.Runs[2].Date.Format("2006-01-02")) {
		t.Errorf("hover on run 2 (%s): tip %q (hidden %v)", m.Runs[2].Commit, tip, hidden)
	}

	// Pick two runs either side of the step: compare's table for them.
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
	if !strings.Contains(cmp, "old: "+m.Runs[1].Commit) || !strings.Contains(cmp, "new: "+m.Runs[8].Commit) || !strings.Contains(cmp, "REGRESSION") {
		t.Errorf("compare %s with %s: %q", m.Runs[1].Commit, m.Runs[8].Commit, cmp)
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
