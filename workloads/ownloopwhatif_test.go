package workloads

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestOwnLoopWhatIfCodec: the files of whatif -- COMMAND --out (one
// process's and torchrun's 2 ranks', both verified) decode through
// OwnLoopWhatIfCodec alone, encode as their records again, and their
// report is the bytes the run printed (golden); a file of the format
// before issue 53 (results/, its records renamed) is refused, as are
// records of two scripts, a figure that is negative or not finite, a
// node without each rank's record, or records out of a run's order.
func TestOwnLoopWhatIfCodec(t *testing.T) {
	for _, name := range []string{"own-loop-whatif", "own-loop-whatif-node"} {
		o := reencodes(t, OwnLoopWhatIfCodec, filepath.Join("testdata", name+".txt"))
		var b bytes.Buffer
		if err := (OwnLoopWhatIf{}).Report(o, &b); err != nil {
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
	for _, tc := range []struct{ text, want string }{
		{"BenchmarkOwnLoopWhatIf/model/script=a.py 1 1e6 step-ns 1e8 batch-ns/worker 1e7 batch-cpu-ns 0 main-cpu-ns/step 4 need-workers 2 need-cores\n",
			"a what-if recorded before its records held its report"},
		{model("a.py") + "BenchmarkOwnLoopWhatIf/check/script=b.py/workers=2 1 10 steps/s 12 predicted-steps/s\n", `script "b.py", the records before "a.py"`},
		{model("a.py") + "BenchmarkOwnLoopWhatIf/check/script=a.py/workers=2 1 -10 steps/s 12 predicted-steps/s\n", "want a figure 0 or more, finite"},
		{model("a.py") + "BenchmarkOwnLoopWhatIf/check/script=a.py/workers=2 1 NaN steps/s 12 predicted-steps/s\n", "want a figure 0 or more, finite"},
		{model("a.py") + "BenchmarkOwnLoopWhatIf/node/script=a.py/ranks=2 1 0 slowest-rank 5 spread-% 2 need-workers\nBenchmarkOwnLoopWhatIf/rank/script=a.py/rank=0 1 0.9 au\n",
			"the records of 1 of its 2 ranks"},
		{model("a.py") + "BenchmarkOwnLoopWhatIf/node/script=a.py/ranks=2 1 0 slowest-rank 5 spread-% 2 need-workers\nBenchmarkOwnLoopWhatIf/rank/script=a.py/rank=1 1 0.9 au\n",
			"rank 1: want the ranks in order"},
		{model("a.py") + "BenchmarkOwnLoopWhatIf/node/script=a.py/ranks=2 1 2 slowest-rank 5 spread-% 2 need-workers\n", "slowest rank 2 of 2 ranks"},
		{"BenchmarkOwnLoopWhatIf/check/script=a.py/workers=2 1 10 steps/s 12 predicted-steps/s\n" + model("a.py"), "out of the order a run makes its records in"},
		{model("a.py") + model("a.py"), "a second model"},
		{"BenchmarkWhatIf/model/script=a.py 1 1 step-ns\n", "not a record of OwnLoopWhatIf"},
	} {
		if _, err := OwnLoopWhatIfCodec.Decode(throughText(t, tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.text, err, tc.want)
		}
	}
	old := filepath.Join("..", "results", "own-loop-imagefolder-whatif.txt")
	recs, err := resultfile.Read(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OwnLoopWhatIfCodec.Decode(recs); err == nil || !strings.Contains(err.Error(), "recorded before its records held its report") {
		t.Errorf("%s: %v, want it refused as of the format before issue 53", old, err)
	}
}

// model is a what-if's model record of script.
func model(script string) string {
	return "BenchmarkOwnLoopWhatIf/model/script=" + script + " 1 1e6 step-ns 5e6 loader-step-ns 1e8 batch-ns/worker 9e7 free-batch-ns/worker 1e7 batch-cpu-ns 0 main-cpu-ns/step 8e7 stage-ns/batch 2 workers 2 cores 100 need-workers 10 need-cores\n"
}

// TestIsOwnLoopWhatIfFile: whatif --from hands a file to OwnLoopWhatIf
// by its first record: a file of its records (as its codec's layout
// reads them), and one of the what-if's before issue 53
// (BenchmarkWhatIf/model), are its; another experiment's are not. The
// test of a "BenchmarkOwnLoopWhatIf/" prefix it had could never match:
// a record read from a file has no "Benchmark" in its name.
func TestIsOwnLoopWhatIfFile(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.txt")
	if err := os.WriteFile(old, []byte("BenchmarkWhatIf/model/script=train.py 1 2 steps/s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{filepath.Join("testdata", "own-loop-whatif.txt"), true},
		{filepath.Join("testdata", "own-loop-whatif-node.txt"), true},
		{old, true},
		{filepath.Join("..", "results", "own-loop-imagefolder-ladder.txt"), false},
		{filepath.Join("..", "results", "loaders-emulated.txt"), false},
		{filepath.Join(dir, "missing.txt"), false},
	} {
		if got := IsOwnLoopWhatIfFile(tc.path); got != tc.want {
			t.Errorf("IsOwnLoopWhatIfFile(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
