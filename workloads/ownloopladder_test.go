package workloads

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestOwnLoopLadderCodec: the committed own-loop ladders decode through
// OwnLoopLadderCodec alone and encode as their records again; their
// report, rebuilt from the file, is the table docs/own-loop.md quotes;
// the synthetic ladder's file and the own loop's do not decode through
// each other's codec; a record of a level the ladder on a command does
// not run, or of two scripts, is refused.
func TestOwnLoopLadderCodec(t *testing.T) {
	path := filepath.Join("..", "results", "own-loop-imagefolder-ladder.txt")
	o := reencodes(t, OwnLoopLadderCodec, path)
	if o.Script != "train_imagefolder.py" || o.Count != 3 || o.Steps != 16 || len(o.Points) != 12 || o.Torch == "" {
		t.Fatalf("read back script %q, %d runs a level, %d steps, %d points, torch %q; want the file's", o.Script, o.Count, o.Steps, len(o.Points), o.Torch)
	}
	var b strings.Builder
	if err := (OwnLoopLadder{}).Report(o, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"command: /usr/bin/python3 examples/own-loop/train_imagefolder.py", "16 steps a run after the warm-up, 3 runs a level",
		"host          13.14", "sample         9.14", "raw            4.10", "none           3.60"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	reencodes(t, OwnLoopLadderCodec, filepath.Join("..", "results", "gpu", "nvidia-h200-a11143c", "own-loop-cuda-ladder.txt"))

	own, err := resultfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	synthetic, err := resultfile.Read(filepath.Join("..", "results", "node-bca00af.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LadderCodec.Decode(own); err == nil {
		t.Error("an own-loop ladder decodes through LadderCodec")
	}
	if _, err := OwnLoopLadderCodec.Decode(synthetic); err == nil || !strings.Contains(err.Error(), "not a record of OwnLoopLadder") {
		t.Errorf("a node's file through OwnLoopLadderCodec: %v", err)
	}
	for _, tc := range []struct{ text, want string }{
		{"BenchmarkOwnLoopLadder/level=encoded/script=a.py/workers=2 4 1e8 ns/op 10 steps/s\n", `level "encoded": not a level of the ladder on a command`},
		{"BenchmarkOwnLoopLadder/level=host/script=a.py/workers=2 4 1e8 ns/op 10 steps/s\nBenchmarkOwnLoopLadder/level=none/script=b.py/workers=2 4 1e8 ns/op 10 steps/s\n", `script "b.py", the records before "a.py"`},
		{"BenchmarkOwnLoopLadder/level=host/script=a.py/workers=2 4 0 ns/op 10 steps/s\n", "want a step or more, each figure positive and finite"},
		{"BenchmarkLadder/level=host/script=a.py/workers=2 4 1e8 ns/op 10 steps/s\n", "not a record of OwnLoopLadder"},
	} {
		if _, err := OwnLoopLadderCodec.Decode(throughText(t, tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.text, err, tc.want)
		}
	}
}
