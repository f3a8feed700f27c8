package ownloop_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// TestWhatIfModel: the bursty loop's workers make a batch in 67 ms
// against a 5 ms step: 14 workers would keep up; with 2 the loop runs at
// the workers' rate, 2 batches every 67 ms.
func TestWhatIfModel(t *testing.T) {
	run := bursty(60, 30)
	s := ownloop.Settings{Mode: "analyze", Loader: 1, NumCaches: 4, ReturnCachesAfter: 60, StepsAfter: 30}
	rep, err := ownloop.Analyze(ownloop.Command{Argv: []string{"python3", "train.py"}, Script: "train.py"}, s, run, 1000)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ownloop.NewWhatIf(rep)
	if err != nil {
		t.Fatal(err)
	}
	if w.PerBatch != 4*66*time.Millisecond/4+time.Millisecond || w.Step != 5*time.Millisecond {
		t.Fatalf("model %+v: want 67 ms a batch, a 5 ms step", w)
	}
	if n := w.NeedWorkers(); n != 14 {
		t.Errorf("NeedWorkers = %d, want ceil(67/5) = 14", n)
	}
	if got, want := w.StepsPerSec(2, 64), 2/0.067; got < want*0.999 || got > want*1.001 {
		t.Errorf("StepsPerSec(2 workers) = %.2f, want %.2f", got, want)
	}
	if got := w.StepsPerSec(100, 64); got != 200 {
		t.Errorf("StepsPerSec(100 workers) = %.2f, want the model's 200", got)
	}
	var out bytes.Buffer
	w.WriteText(&out)
	if !strings.Contains(out.String(), "14 workers") {
		t.Errorf("report:\n%s", out.String())
	}
}
