package workloads

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestOwnLoopAnalyzeCodec: the files of analyze -- COMMAND --out (one
// process's and a node's 2 ranks', torch.multiprocessing.spawn) decode
// through OwnLoopAnalyzeCodec alone, encode as their records again, and
// their report is the bytes the run printed (golden); records without
// the file's lines, of two scripts, with a figure that is negative or not
// finite, of an unknown phase or stage, or a node's without each rank's
// are refused.
func TestOwnLoopAnalyzeCodec(t *testing.T) {
	for _, name := range []string{"own-loop-analyze", "own-loop-analyze-node"} {
		o := reencodes(t, OwnLoopAnalyzeCodec, filepath.Join("testdata", name+".txt"))
		var b bytes.Buffer
		if err := (&OwnLoopAnalyze{}).Report(o, &b); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if b.String() != string(want) {
			t.Errorf("%s: report rebuilt from the file:\n%s\nwant the run's:\n%s", name, b.String(), want)
		}
	}
	lines := "command: python3 a.py\nnum-caches: 1\nreturn-caches-after: 4\nsteps-after: 4\ntotal-steps: 10\n\n"
	loader := "BenchmarkOwnLoopAnalyzeLoader/script=a.py/loader=1 1 4 batch-size 0 workers 0 group 1 training\n"
	for _, tc := range []struct{ text, want string }{
		{loader, "no command line: records read without their file's lines"},
		{"command: python3 a.py\n\n" + loader, `num-caches "": want a positive count`},
		{lines + loader + "BenchmarkOwnLoopAnalyze/script=b.py/phase=fill 1 1e6 ns/op 0 wait-ns\n", `script "b.py", the records before "a.py"`},
		{lines + loader + "BenchmarkOwnLoopAnalyze/script=a.py/phase=fill 1 -1 ns/op 0 wait-ns\n", "want a figure 0 or more, finite"},
		{lines + loader + "BenchmarkOwnLoopAnalyze/script=a.py/phase=fill 1 NaN ns/op 0 wait-ns\n", "want a figure 0 or more, finite"},
		{lines + loader + "BenchmarkOwnLoopAnalyze/script=a.py/phase=warm 1 1 ns/op 0 wait-ns\n", `phase "warm"`},
		{lines + loader + "BenchmarkOwnLoopAnalyzeStage/script=a.py/stage=decode 1 1 decode-ns\n", `stage "decode": not a stage of the analysis`},
		{lines + loader + "BenchmarkOwnLoopAnalyzeInput/script=a.py 1 1 input-wait-ns\n", "recorded before its records held its report"},
		{lines + loader + "BenchmarkOwnLoopAnalyzeInput/script=a.py 1 2 cores\n", "too few steps to estimate"},
		{lines + strings.Replace(loader, "loader=1", "loader=1/rank=1", 1), "rank 1: want the ranks in order"},
		{lines + "BenchmarkOwnLoopAnalyzeNode/script=a.py/ranks=1 1 0 slowest-rank 0 spread-%\n" + loader, "end with the node's"},
		{"BenchmarkHeadspace/script=a.py/phase=fill 1 1 ns/op\n", "not a record of OwnLoopAnalyze"},
	} {
		if _, err := OwnLoopAnalyzeCodec.Decode(throughText(t, tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.text, err, tc.want)
		}
	}
}

// TestOwnLoopAnalyzeBefore: the committed files of analyze -- COMMAND,
// of the format before issue 53 (their records renamed), are
// OwnLoopAnalyze's records but lack the report's figures: they are
// refused with one line that says so.
func TestOwnLoopAnalyzeBefore(t *testing.T) {
	for _, name := range []string{"own-loop-imagefolder", "own-loop-ranks", "own-loop-ranks-b", "own-loop-accelerate", "own-loop-srun", "gpu/nvidia-h200-a11143c/own-loop-cuda"} {
		recs, err := resultfile.Read(filepath.Join("..", "results", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := OwnLoopAnalyzeCodec.Decode(recs); err == nil || !strings.Contains(err.Error(), "recorded before its records held its report (issue 53)") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want it refused in one line as of the format before", name, err)
		}
	}
}
