package workloads

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// NodeWhatIfOutcome is what whatif --accelerators measured and
// predicted: the runs of one rank alone its profile comes from, the
// verify runs of each count (--verify), and the model's prediction at
// each count.
type NodeWhatIfOutcome struct {
	Profile, Verify NodeOutcome
	Predictions     []NodePrediction
}

// NodePrediction is the node model's AU at a count, beside what the
// verify runs measured there (the smallest rank's AU, median over runs)
// and the error, where they did.
type NodePrediction struct {
	Accelerators int
	Procs        int // the GOMAXPROCS suffix of its record's name
	PredictedAU  float64
	// MeasuredAU and ErrorPct (|predicted − measured| / measured, %) are
	// 0 where HasMeasured is false.
	MeasuredAU, ErrorPct float64
	HasMeasured          bool
}

// The units of a node what-if's prediction records, and the prefix of
// its profile's records' names.
const (
	unitPredictedAU = "predicted-au"
	unitMeasuredAU  = "measured-au"
	unitAUError     = "au-error-%"
	nodeProfileName = "NodeProfile"
)

// NodeWhatIfCodec is whatif --accelerators' records codec: the runs of
// one rank alone as a Node's records (NodeCodec) renamed
// BenchmarkNodeProfile/…, then the verify runs' records as a Node's,
// then a record of each prediction,
// BenchmarkNodeWhatIf/accelerators=N with predicted-au, and measured-au
// and au-error-% where a verify run measured N.
var NodeWhatIfCodec = Codec[NodeWhatIfOutcome]{
	Experiment: "NodeWhatIf",
	Keys: map[string][]string{
		nodeProfileName: {"accelerators", "level", "rank"},
		"Node":          {"accelerators", "level", "rank"},
		"NodeWhatIf":    {"accelerators"},
	},
	Borrowed: []string{"Node"},
	Optional: map[string][]string{nodeProfileName: {"rank"}, "Node": {"rank"}},
	Procs:    true,
	Order:    []string{nodeProfileName, "Node", "NodeWhatIf"},
	encode: func(o NodeWhatIfOutcome) []*benchfmt.Result {
		out := NodeCodec.Encode(o.Profile)
		for _, r := range out {
			r.Name = benchfmt.Name("Benchmark" + nodeProfileName + "/" + strings.TrimPrefix(string(r.Name), "BenchmarkNode/"))
		}
		out = append(out, NodeCodec.Encode(o.Verify)...)
		for _, p := range o.Predictions {
			out = append(out, p.record())
		}
		return out
	},
	decode: decodeNodeWhatIf,
}

// record is p's record.
func (p NodePrediction) record() *benchfmt.Result {
	res := newRecord(fmt.Sprintf("NodeWhatIf/accelerators=%d", p.Accelerators), p.Procs, 1, benchfmt.Value{Value: p.PredictedAU, Unit: unitPredictedAU})
	if p.HasMeasured {
		res.Values = append(res.Values, benchfmt.Value{Value: p.MeasuredAU, Unit: unitMeasuredAU}, benchfmt.Value{Value: p.ErrorPct, Unit: unitAUError})
	}
	return res
}

// decodeNodeWhatIf reads the profile's runs, the verify runs and the
// predictions back, in the order Order gives them.
func decodeNodeWhatIf(recs []Record) (NodeWhatIfOutcome, error) {
	var o NodeWhatIfOutcome
	var prof, verify []Record
	seen := map[int]bool{}
	for _, rec := range recs {
		switch rec.Benchmark {
		case nodeProfileName:
			prof = append(prof, rec)
		case "Node":
			verify = append(verify, rec)
		default:
			p, err := decodePrediction(rec)
			if err != nil {
				return o, err
			}
			if seen[p.Accelerators] {
				return o, fmt.Errorf("%s: a second prediction of %d accelerators", at(rec.Result), p.Accelerators)
			}
			seen[p.Accelerators] = true
			o.Predictions = append(o.Predictions, p)
		}
	}
	var err error
	if len(prof) > 0 {
		if o.Profile, err = decodeNode(prof); err != nil {
			return o, err
		}
	}
	if len(verify) > 0 {
		o.Verify, err = decodeNode(verify)
	}
	return o, err
}

// decodePrediction reads a prediction's record: an AU predicted in
// [0, 1], and a measured AU in (0, 1] with its error, or neither.
func decodePrediction(rec Record) (NodePrediction, error) {
	p := NodePrediction{Procs: rec.Procs}
	var err error
	if p.Accelerators, err = rec.count("accelerators", true); err != nil {
		return p, err
	}
	if p.PredictedAU, err = rec.Value(unitPredictedAU); err != nil {
		return p, err
	}
	m, hasM := resultfile.Value(rec.Result, unitMeasuredAU)
	e, hasE := resultfile.Value(rec.Result, unitAUError)
	p.MeasuredAU, p.ErrorPct, p.HasMeasured = m, e, hasM
	switch {
	case rec.Iters != 1:
		return p, fmt.Errorf("%s: %d iterations, want 1 (a prediction)", at(rec.Result), rec.Iters)
	case hasM != hasE:
		return p, fmt.Errorf("%s: %s without %s, or the other way", at(rec.Result), unitMeasuredAU, unitAUError)
	case !(p.PredictedAU >= 0 && p.PredictedAU <= maxAU):
		return p, fmt.Errorf("%s: %s %v: want an AU in [0, 1]", at(rec.Result), unitPredictedAU, p.PredictedAU)
	case hasM && !(m > 0 && m <= maxAU):
		return p, fmt.Errorf("%s: %s %v: want an AU in (0, 1]", at(rec.Result), unitMeasuredAU, m)
	case hasE && !(e >= 0 && !math.IsInf(e, 0)):
		return p, fmt.Errorf("%s: %s %v: want a finite error, 0 or more", at(rec.Result), unitAUError, e)
	}
	for _, v := range rec.Values {
		if unit := cmp.Or(v.OrigUnit, v.Unit); unit != unitPredictedAU && unit != unitMeasuredAU && unit != unitAUError {
			return p, fmt.Errorf("%s: a value in %s, which a prediction's record does not hold", at(rec.Result), unit)
		}
	}
	return p, nil
}

// nodePredictions are the model p's AU at each count of accs, with the
// measured AU (the smallest rank's, median over runs) and the error where
// the verify runs (measured) measured the count.
func nodePredictions(p node.Profile, accs []int, measured []node.Row) []NodePrediction {
	au := map[int]float64{}
	for _, r := range measured {
		if !math.IsNaN(r.AUMin) {
			au[r.Accelerators] = r.AUMin
		}
	}
	var out []NodePrediction
	for _, n := range accs {
		pr := NodePrediction{Accelerators: n, Procs: runtime.GOMAXPROCS(0), PredictedAU: p.PredictAU(n)}
		if m, ok := au[n]; ok && m > 0 {
			pr.MeasuredAU, pr.ErrorPct, pr.HasMeasured = m, 100*math.Abs(pr.PredictedAU-m)/m, true
		}
		out = append(out, pr)
	}
	return out
}

// The configuration lines a node what-if's file adds to the run's
// settings (nodeWhatIfSettings), so that its outcome can be rebuilt
// from the file (ReadNodeWhatIf).
const (
	minAUKey           = "min-au"
	memoryPerRankKey   = "node-memory-per-rank"
	memoryAvailableKey = "memory-available"
)

// nodeWhatIfSettings are the AU asked, the profile's memory (a rank's
// estimate, the machine's available) and the command line.
func nodeWhatIfSettings(minAU float64, memPerRank, avail int64, command string) []resultfile.Config {
	return []resultfile.Config{
		{Key: minAUKey, Value: fmt.Sprint(minAU)},
		{Key: memoryPerRankKey, Value: strconv.FormatInt(memPerRank, 10)},
		{Key: memoryAvailableKey, Value: strconv.FormatInt(avail, 10)},
		{Key: keyCommand, Value: command},
	}
}

// isNodeWhatIfFile says whether recs are a node what-if's, by the
// benchmark of the first record as NodeWhatIfCodec reads it.
func isNodeWhatIfFile(recs []*benchfmt.Result) bool {
	if len(recs) == 0 {
		return false
	}
	rs, err := NodeWhatIfCodec.names(recs[:1])
	return err == nil && rs[0].Benchmark == nodeProfileName
}

// IsNodeWhatIfFile says whether path is a node what-if's result file:
// its first record is a node profile's.
func IsNodeWhatIfFile(path string) bool {
	recs, err := resultfile.Read(path)
	return err == nil && isNodeWhatIfFile(recs)
}

// ReadNodeWhatIf reads a node what-if's outcome back from its result
// file through NodeWhatIfCodec: the profile, the counts predicted, the
// command and the verify runs' rows, and the AU asked where the file
// records one (minAUKnown). Target is left 0. Its errors name the file,
// and the line where one is at fault.
func ReadNodeWhatIf(path string) (w whatif.NodeWhatIf, minAUKnown bool, err error) {
	recs, err := resultfile.Read(path)
	if err != nil {
		return w, false, err
	}
	o, err := NodeWhatIfCodec.Decode(recs)
	if err != nil {
		return w, false, inFile(path, err)
	}
	if len(o.Profile.Runs) == 0 {
		return w, false, fmt.Errorf("%s: no node profile (BenchmarkNodeProfile/…): not a file of whatif --accelerators", path)
	}
	one := node.Row{Accelerators: 1}
	if rows := o.Profile.Rows(false); len(rows) > 0 && rows[0].Accelerators == 1 {
		one = rows[0]
	}
	cfg := recs[0]
	if w.Profile, err = nodeFileProfile(cfg, one); err != nil {
		return w, false, inFile(path, err)
	}
	w.Profile.MemoryPerRank, _ = strconv.ParseInt(cfg.GetConfig(memoryPerRankKey), 10, 64)
	w.Profile.Memory, _ = strconv.ParseInt(cfg.GetConfig(memoryAvailableKey), 10, 64)
	if v := cfg.GetConfig(minAUKey); v != "" {
		au, err := strconv.ParseFloat(v, 64)
		if err != nil || !(au > 0 && au <= 1) {
			return w, false, fmt.Errorf("%s: %s %q: want an AU in (0, 1]", path, minAUKey, v)
		}
		w.MinAU, minAUKnown = au, true
	}
	w.Command = cfg.GetConfig(keyCommand)
	w.Measured = o.Verify.Rows(false)
	for _, p := range o.Predictions {
		w.Accelerators = append(w.Accelerators, p.Accelerators)
	}
	if len(w.Accelerators) == 0 {
		return w, minAUKnown, fmt.Errorf("%s: no predictions (BenchmarkNodeWhatIf/…)", path)
	}
	return w, minAUKnown, nil
}
