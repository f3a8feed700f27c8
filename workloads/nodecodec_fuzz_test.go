package workloads

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// FuzzNodeCodec: whatever a file holds, NodeCodec and NodeWhatIfCodec
// decode it without panicking, and what they decode holds only what a
// run writes (every AU in [0, 1], every figure finite and 0 or more, a
// run with a node record has its N ranks' records) and encodes as
// records that decode as it again.
func FuzzNodeCodec(f *testing.F) {
	for _, name := range []string{"node-bca00af.txt", "node-peer-346df48.txt", "node-whatif-bca00af.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "results", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("BenchmarkNode/accelerators=1/level=none-2 1 1 ns/op 1 steps/s 1 samples/s 1.7 au 1 au-min 0 input-wait-ns/op\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _, err := resultfile.Parse(bytes.NewReader(b), "fuzz.txt")
		if err != nil || len(recs) == 0 {
			return
		}
		check := func(o NodeOutcome) {
			for _, r := range o.Runs {
				figs := append([]NodeFigures(nil), r.Ranks...)
				if r.Node != nil {
					figs = append(figs, *r.Node)
					if !r.Node.Partial && len(r.Ranks) != r.Point.Accelerators {
						t.Fatalf("a run of %d accelerators decoded with %d rank records", r.Point.Accelerators, len(r.Ranks))
					}
				}
				for _, fg := range figs {
					for _, v := range []float64{fg.NsPerOp, fg.StepsPerSec, fg.SamplesPerSec, fg.AU, fg.AUMin, fg.InputWait, fg.Barrier, fg.Cores, fg.OtherCores, fg.Stall} {
						if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
							t.Fatalf("decoded a figure %v", v)
						}
					}
					if fg.AU > maxAU || fg.AUMin > maxAU {
						t.Fatalf("decoded an AU %v (min %v)", fg.AU, fg.AUMin)
					}
				}
			}
		}
		if o, err := NodeCodec.Decode(recs); err == nil {
			check(o)
			back, err := NodeCodec.Decode(NodeCodec.Encode(o))
			if err != nil || !reflect.DeepEqual(back, o) {
				t.Fatalf("re-encoded, decodes as %+v (%v), want %+v", back, err, o)
			}
		}
		if o, err := NodeWhatIfCodec.Decode(recs); err == nil {
			check(o.Profile)
			check(o.Verify)
			for _, p := range o.Predictions {
				if !(p.PredictedAU >= 0 && p.PredictedAU <= maxAU) {
					t.Fatalf("decoded a predicted AU %v", p.PredictedAU)
				}
			}
		}
	})
}
