package workloads

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/machine"
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
	// Model is what the report renders: the node model of the rank
	// alone, the counts predicted, the AU asked, the command and the
	// verify runs' rows. Measure makes it; Decode reads it back from the
	// configuration lines of a result file's records (records without
	// them, not read from a file, leave it zero). MinAUKnown says the
	// file recorded the AU asked.
	Model      whatif.NodeWhatIf
	MinAUKnown bool
}

// NodeWhatIf is whatif --accelerators: the node model (harness/node) of
// one rank alone, profiled from Rank's runs (a Node of one accelerator
// at level none), its every rank's AU predicted at each of Accelerators
// and, with Verify, each count measured as a node and set beside the
// prediction (docs/node.md).
type NodeWhatIf struct {
	// Rank is the rank alone that is profiled: Accelerators {1}, Levels
	// {none}.
	Rank Node
	// Accelerators are the counts predicted (and, with Verify, measured).
	Accelerators []int
	Verify       bool
	// MinAU is the AU an accelerator is to be kept busy at, or more; in
	// Report, 0 is the outcome's (the file's, read back).
	MinAU float64
	// Command is the command line, for the file and the report.
	Command string
	// LinkBandwidth and LinkRequestRate are the --link's caps, where the
	// rank reads through one (node.Profile's).
	LinkBandwidth, LinkRequestRate float64
	// Target, ReportPath and PlotPath are the report's: the count whose
	// needs are printed (0: the largest), and the Markdown report's and
	// the plot's files, each where not "".
	Target               int
	ReportPath, PlotPath string
}

// DefaultNodeWhatIf predicts 1, 2, 4 and 8 accelerators from the node's
// document-sized rank, and measures each.
func DefaultNodeWhatIf() NodeWhatIf {
	return nodeWhatIfOf(DefaultNode())
}

// QuickNodeWhatIf predicts and measures 1 and 2 accelerators of the
// quick node's rank.
func QuickNodeWhatIf() NodeWhatIf {
	return nodeWhatIfOf(QuickNode())
}

// nodeWhatIfOf is the what-if of n's counts, profiled on n's rank alone,
// each count verified.
func nodeWhatIfOf(n Node) NodeWhatIf {
	accs := n.Accelerators
	n.Levels, n.Accelerators = []level.Level{level.None}, []int{1}
	return NodeWhatIf{Rank: n, Accelerators: accs, Verify: true, MinAU: node.DefaultMinAU, Command: "headspace whatif --accelerators " + joinInts(accs) + " --verify"}
}

// Name is "NodeWhatIf": BenchmarkNodeWhatIf/accelerators=N, beside
// BenchmarkNodeWhatIfProfile/… (the rank alone) and BenchmarkNode/… (the
// verify runs).
func (NodeWhatIf) Name() string { return "NodeWhatIf" }

// Document is "": headspace's own question, as Node's.
func (NodeWhatIf) Document() string { return "" }

// Validate reports the first problem with the what-if.
func (w NodeWhatIf) Validate() error {
	if len(w.Accelerators) == 0 {
		return fmt.Errorf("node what-if: no accelerator counts")
	}
	if !(w.MinAU > 0 && w.MinAU <= 1) {
		return fmt.Errorf("node what-if: min AU %v: want an AU in (0, 1]", w.MinAU)
	}
	return w.Rank.Validate()
}

// memoryPerRank is a rank's memory estimate: its pipeline's and two
// batches in flight.
func (w NodeWhatIf) memoryPerRank() int64 {
	return w.Rank.Pipeline.MemoryEstimate() + 2*w.Rank.Pipeline.BatchBytes()
}

// Settings are the rank's settings and the what-if's own lines: the AU
// asked, the memory (a rank's estimate, the machine's available now) and
// the command; a run records the memory available as it ended
// (SettingsOf).
func (w NodeWhatIf) Settings() []resultfile.Config {
	avail, _ := machine.Memory()
	return append(w.Rank.Settings(), nodeWhatIfSettings(w.MinAU, w.memoryPerRank(), avail, w.Command)...)
}

// SettingsOf are the settings of the run that measured o.
func (w NodeWhatIf) SettingsOf(o NodeWhatIfOutcome) []resultfile.Config {
	return append(w.Rank.Settings(), nodeWhatIfSettings(w.MinAU, o.Model.Profile.MemoryPerRank, o.Model.Profile.Memory, w.Command)...)
}

// Measure is MeasureEach with no callback.
func (w NodeWhatIf) Measure(ctx context.Context, env Env) (NodeWhatIfOutcome, error) {
	return w.MeasureEach(ctx, env, nil)
}

// MeasureEach profiles the rank alone and, with Verify, runs every
// count as a node (Node.MeasureEach, each run passed to each, if not
// nil, as it ends), then predicts each count from the profile. It stops
// at the first error, or when ctx is done.
func (w NodeWhatIf) MeasureEach(ctx context.Context, env Env, each func(NodeRun) error) (NodeWhatIfOutcome, error) {
	var o NodeWhatIfOutcome
	if err := w.Validate(); err != nil {
		return o, err
	}
	var err error
	if o.Profile, err = w.Rank.MeasureEach(ctx, env, each); err == nil && w.Verify {
		v := w.Rank
		v.Accelerators = w.Accelerators
		o.Verify, err = v.MeasureEach(ctx, env, each)
	}
	if err != nil {
		return o, err
	}
	one := node.Row{Accelerators: 1}
	if rows := o.Profile.Rows(false); len(rows) > 0 {
		one = rows[0]
	}
	p, err := node.ProfileOf(one, float64(runtime.NumCPU()), w.Rank.Pipeline.Batch, w.Rank.Pipeline.Workers, w.Rank.Device.Step)
	if err != nil {
		return o, err
	}
	p.MemoryPerRank = w.memoryPerRank()
	p.Memory, _ = machine.Memory()
	p.LinkBandwidth, p.LinkRequestRate = w.LinkBandwidth, w.LinkRequestRate
	o.Predictions = nodePredictions(p, w.Accelerators, o.Verify.Rows(false))
	o.Model = whatif.NodeWhatIf{Profile: p, Accelerators: w.Accelerators, MinAU: w.MinAU, Command: w.Command, Measured: o.Verify.Rows(false)}
	o.MinAUKnown = true
	return o, nil
}

// Run measures the what-if (Measure) and returns its records
// (NodeWhatIfCodec).
func (w NodeWhatIf) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[NodeWhatIfOutcome](ctx, w, env)
}

// Codec is NodeWhatIfCodec.
func (NodeWhatIf) Codec() Codec[NodeWhatIfOutcome] { return NodeWhatIfCodec }

var _ Typed[NodeWhatIfOutcome] = NodeWhatIf{}

// Report prints o's prediction (and verification) to stdout, and
// writes the Markdown report and the plot where ReportPath and PlotPath
// say: the same after a run and from its file (whatif --from). The AU
// asked is w's, or o's where w's is 0; the count whose needs are
// printed is w's Target.
func (w NodeWhatIf) Report(o NodeWhatIfOutcome, stdout io.Writer) error {
	m := o.Model
	if len(m.Accelerators) == 0 {
		return fmt.Errorf("node what-if: no model to report (records read without their file's configuration lines)")
	}
	if w.MinAU > 0 {
		m.MinAU = w.MinAU
	}
	m.Target = w.Target
	return m.Write(stdout, w.ReportPath, w.PlotPath)
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
	nodeProfileName = "NodeWhatIfProfile"
)

// NodeWhatIfCodec is whatif --accelerators' records codec: the runs of
// one rank alone as a Node's records (NodeCodec) renamed
// BenchmarkNodeWhatIfProfile/…, then the verify runs' records as a Node's,
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
		if o.Verify, err = decodeNode(verify); err != nil {
			return o, err
		}
	}
	if cfg := recs[0].Result; len(cfg.Config) > 0 {
		err = decodeNodeModel(&o, cfg)
	}
	return o, err
}

// decodeNodeModel reads o's Model back from the configuration lines of
// cfg, the file's first record: the profile of the rank alone, the AU
// asked where the file records one, the command, the counts predicted
// and the verify runs' rows.
func decodeNodeModel(o *NodeWhatIfOutcome, cfg *benchfmt.Result) error {
	if len(o.Profile.Runs) == 0 {
		return fmt.Errorf("%s: no node profile (Benchmark%s/…): not a file of whatif --accelerators", filePart(cfg), nodeProfileName)
	}
	if len(o.Predictions) == 0 {
		return fmt.Errorf("%s: no predictions (BenchmarkNodeWhatIf/…)", filePart(cfg))
	}
	one := node.Row{Accelerators: 1}
	if rows := o.Profile.Rows(false); len(rows) > 0 && rows[0].Accelerators == 1 {
		one = rows[0]
	}
	m := &o.Model
	var err error
	if m.Profile, err = nodeFileProfile(cfg, one); err != nil {
		return fmt.Errorf("%s: %w", filePart(cfg), err)
	}
	m.Profile.MemoryPerRank, _ = strconv.ParseInt(cfg.GetConfig(memoryPerRankKey), 10, 64)
	m.Profile.Memory, _ = strconv.ParseInt(cfg.GetConfig(memoryAvailableKey), 10, 64)
	if v := cfg.GetConfig(minAUKey); v != "" {
		au, err := strconv.ParseFloat(v, 64)
		if err != nil || !(au > 0 && au <= 1) {
			return fmt.Errorf("%s: %s %q: want an AU in (0, 1]", filePart(cfg), minAUKey, v)
		}
		m.MinAU, o.MinAUKnown = au, true
	}
	m.Command = cfg.GetConfig(keyCommand)
	m.Measured = o.Verify.Rows(false)
	for _, p := range o.Predictions {
		m.Accelerators = append(m.Accelerators, p.Accelerators)
	}
	return nil
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
// file through NodeWhatIfCodec (its Model rebuilt from the file's
// configuration lines). Its errors name the file, and the line where one
// is at fault.
func ReadNodeWhatIf(path string) (NodeWhatIfOutcome, error) {
	recs, err := resultfile.Read(path)
	if err != nil {
		return NodeWhatIfOutcome{}, err
	}
	o, err := NodeWhatIfCodec.Decode(recs)
	if err != nil {
		return o, inFile(path, err)
	}
	if len(o.Model.Accelerators) == 0 {
		// A file with no configuration lines at all.
		return o, fmt.Errorf("%s: no configuration lines (headspace whatif --accelerators --out records them; the report cannot be rebuilt without them)", path)
	}
	return o, nil
}
