package workloads

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// FuzzOwnLoopWhatIfCodec: whatever a file holds, OwnLoopWhatIfCodec
// decodes it without panicking, the report of a what-if it decodes
// prints without panicking, and its records encode again to the same
// model, node (but its launcher, a line of the file's) and checks.
func FuzzOwnLoopWhatIfCodec(f *testing.F) {
	for _, name := range []string{"own-loop-whatif.txt", "own-loop-whatif-node.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("command: c\nverdict: x\nverify-steps: 1\n\n" + model("a.py") + "BenchmarkOwnLoopWhatIf/node/script=a.py/ranks=1 1 0 slowest-rank 0 spread-% 1 need-workers\n" +
		"BenchmarkOwnLoopWhatIf/rank/script=a.py/rank=0 1 1 au\nBenchmarkOwnLoopWhatIf/check/script=a.py/workers=3 1 1 steps/s 0 predicted-steps/s\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _, err := resultfile.Parse(bytes.NewReader(b), "fuzz.txt")
		if err != nil || len(recs) == 0 {
			return
		}
		o, err := OwnLoopWhatIfCodec.Decode(recs)
		if err != nil {
			return
		}
		if o.Report.Command != "" {
			if err := (OwnLoopWhatIf{}).Report(o, io.Discard); err != nil {
				t.Fatal(err)
			}
		}
		back, err := OwnLoopWhatIfCodec.Decode(OwnLoopWhatIfCodec.Encode(o))
		if n := o.Report.Node; n != nil {
			n.Launcher = "" // a line of the file's, which the records do not hold
		}
		if err != nil || !reflect.DeepEqual(back.Report.Node, o.Report.Node) || !reflect.DeepEqual(back.Report.Checks, o.Report.Checks) || back.Report.Before != o.Report.Before {
			t.Fatalf("re-encoded, decodes to %+v (%v); want %+v", back.Report, err, o.Report)
		}
	})
}
