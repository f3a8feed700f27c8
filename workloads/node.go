package workloads

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/merge"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/internal/disturb"
	"github.com/headspace-bench/headspace/internal/rusage"
)

// Node is a node of emulated accelerators (issue 44): for each
// accelerator count N, N rank processes, each with its own loader and
// emulated device, in lockstep through the all-reduce barrier, at levels
// none and host: how many accelerators this host keeps at AU ≥ 0.90, and
// what runs out first (package node).
type Node struct {
	Accelerators []int
	Levels       []level.Level
	// Pipeline is every rank's loader (its seed made the rank's own).
	Pipeline loader.Config
	// Device is every rank's emulated device.
	Device device.EmulatedConfig
	Train  train.Config
	Count  int // runs of each point
	// Shard and Shards run every Shards-th accelerator count from the
	// Shard-th (0-based), every level of each: one node per Slurm array
	// task, which `headspace merge` joins (ShardSettings).
	Shard, Shards int
	// Timeout is the barrier's (node.DefaultTimeout when 0).
	Timeout time.Duration
	// Partial keeps a point whose run failed (a rank died or hung) as a
	// partial record (node.PartialRecord) instead of stopping the sweep.
	Partial bool
	// LinkBandwidth is the emulated link's bandwidth in bytes/s (--link),
	// for the records' link-use-%; 0 without a link.
	LinkBandwidth float64
	// Peer, if set, runs the PyTorch DDP peer (node.Peer) at every point
	// too, each of its runs after one of ours: records under
	// node.PeerPrefix.
	Peer *node.Peer
	// cmd is what headspace node's flags set beside the sweep (nil but
	// in the command).
	cmd *nodeCommand
}

// NodeSweepKind is the sweep key's value of a sharded node sweep.
const NodeSweepKind = "node"

const sweepAcceleratorsKey = "sweep-accelerators"

var nodeShardKeys = []string{SweepKey, sweepAcceleratorsKey, sweepLevelsKey, sweepCountKey, ShardsKey}

// DefaultNode is 1, 2, 4 and 8 accelerators at levels none and host,
// the document 003's pipeline after its raw images shrink to 256² with
// batches of 32 and one loader worker per rank (eight ranks of the
// document's 1024² batches of 256 would need 8 GB), the emulated device
// at the document's step, 4 measured steps after 1 warm-up, one run of
// each point.
func DefaultNode() Node {
	p := loader.DefaultConfig()
	p.Dataset.Width, p.Dataset.Height = LadderDocumentSmallRaw, LadderDocumentSmallRaw
	p.Batch, p.Workers = 32, 1
	return Node{
		Accelerators: []int{1, 2, 4, 8},
		Levels:       []level.Level{level.None, level.Host},
		Pipeline:     p,
		Device:       DocumentDevice(),
		Train:        train.Config{Steps: 4, Warmup: 1},
		Count:        1,
		Timeout:      node.DefaultTimeout,
	}
}

// QuickNode is the node at a size that runs in seconds: 1 and 2
// accelerators, tiny images, a 20 ms step.
func QuickNode() Node {
	n := DefaultNode()
	n.Accelerators = []int{1, 2}
	n.Pipeline.Dataset.Width, n.Pipeline.Dataset.Height = 96, 96
	n.Pipeline.Transforms.Crop, n.Pipeline.Batch = 32, 8
	n.Device.Step = QuickStep
	n.Train = train.Config{Steps: 3, Warmup: 1}
	return n
}

// Name is "Node": BenchmarkNode/accelerators=N/level=L[/rank=R].
func (Node) Name() string { return "Node" }

// Document is "": the node is headspace's own question (issue 44).
func (Node) Document() string { return "" }

// Validate reports the first problem with the sweep.
func (n Node) Validate() error {
	switch {
	case len(n.Accelerators) == 0 || len(n.Levels) == 0:
		return errors.New("node: no accelerator counts or no levels")
	case n.Count <= 0:
		return fmt.Errorf("node: count %d must be positive", n.Count)
	case n.Timeout < 0:
		return fmt.Errorf("node: barrier timeout %v must not be negative", n.Timeout)
	}
	for _, a := range n.Accelerators {
		if a <= 0 {
			return fmt.Errorf("node: %d accelerators: want at least 1", a)
		}
	}
	for _, l := range n.Levels {
		if l != level.None && l != level.Host {
			return fmt.Errorf("node: level %s: a node runs none (the pipeline) and host (its bound)", l)
		}
	}
	if n.Pipeline.Placement != loader.Host {
		return fmt.Errorf("node: placement %s: a rank's emulated device takes host batches", n.Pipeline.Placement)
	}
	if err := n.Pipeline.Validate(); err != nil {
		return err
	}
	if err := n.Device.Validate(); err != nil {
		return err
	}
	return n.Train.Validate()
}

// Settings is the result file's configuration block.
func (n Node) Settings() []resultfile.Config {
	s := append(n.Pipeline.Settings(), Emulated(n.Device).Settings...)
	return append(s,
		resultfile.Config{Key: "workers", Value: fmt.Sprint(n.Pipeline.Workers)},
		resultfile.Config{Key: "transforms", Value: n.Pipeline.Impl},
		resultfile.Config{Key: "node-peer", Value: n.peerName()},
		resultfile.Config{Key: "steps", Value: fmt.Sprint(n.Train.Steps)},
		resultfile.Config{Key: "warmup", Value: fmt.Sprint(n.Train.Warmup)},
	)
}

// peerName is the peer's script, "none" without one.
func (n Node) peerName() string {
	if n.Peer == nil {
		return "none"
	}
	return n.Peer.Script
}

// ShardSettings is what a run of one of shards shards of the sweep
// records beside Settings: what SweepPlan reads back.
func (n Node) ShardSettings(shards int) []resultfile.Config {
	return []resultfile.Config{
		{Key: SweepKey, Value: NodeSweepKind},
		{Key: sweepAcceleratorsKey, Value: joinInts(n.Accelerators)},
		{Key: sweepLevelsKey, Value: joined(n.Levels, level.Level.String)},
		{Key: sweepCountKey, Value: strconv.Itoa(n.Count)},
		{Key: ShardsKey, Value: strconv.Itoa(shards)},
	}
}

// Selected is the points the shard runs: every level of every
// Shards-th accelerator count from the Shard-th.
func (n Node) Selected() []node.Point {
	var acc []int
	for i, a := range n.Accelerators {
		if n.Shards <= 1 || i%n.Shards == n.Shard {
			acc = append(acc, a)
		}
	}
	return node.Points(acc, n.Levels)
}

// Todo is the runs Run still has to make: Count of each selected point
// less those env.Done says a resumed file holds.
func (n Node) Todo(env Env) int {
	t := 0
	for _, p := range n.Selected() {
		t += n.Count - min(env.done(p.BenchName()), n.Count)
		if n.Peer != nil {
			t += n.Count - min(env.done(node.PeerBenchName(p)), n.Count)
		}
	}
	return t
}

// NodeOutcome is what a Node measured: every run, ours and the PyTorch
// peer's, in the order they were made.
type NodeOutcome struct {
	Runs []NodeRun
	// Settings are the result file's lines, where headspace node's
	// command gives them (settled); the codec reads records alone.
	Settings []resultfile.Config
}

// settle gives o its file's settings.
func (o *NodeOutcome) settle(s []resultfile.Config) { o.Settings = s }

// NodeRun is one run of one point of a node: its records' figures
// (NodeCodec), and what the records do not hold.
type NodeRun struct {
	Point node.Point
	// Peer says the run is the PyTorch DDP peer's.
	Peer bool
	// Procs is the GOMAXPROCS suffix of its records' names.
	Procs int
	// Ranks are each rank's figures, in rank order; none for a partial
	// run.
	Ranks []NodeFigures
	// Node is the node's figures (or a partial run's), nil where its
	// ranks measured no time.
	Node *NodeFigures
	// Outcome is what node.Run (or the peer) measured, Others what the
	// other processes did meanwhile, Err the failure of a run kept as
	// partial: a decoded run's are zero.
	Outcome node.Outcome
	Others  node.Others
	Err     error
}

// NodeFigures are the figures of one record of a node run (node.Records,
// node.PartialRecord): a rank's, the node's, or a partial run's, which
// holds StepsPerSec and SamplesPerSec alone. A figure its record does
// not hold is 0, its Has… false.
type NodeFigures struct {
	// Iters is the record's iterations: the measured steps (at least
	// 1), or the steps a partial run's barrier released.
	Iters                               int
	NsPerOp, StepsPerSec, SamplesPerSec float64
	AU                                  float64
	AUMin                               float64 // the node's: its smallest rank AU
	InputWait                           float64 // ns per step
	// Barrier is ns per step: a rank's wait at the barrier (always
	// held), the node's barrier skew (HasBarrier).
	Barrier    float64
	HasBarrier bool
	CPU        float64 // a rank's CPU ns per step (HasCPU)
	HasCPU     bool
	// Cores and CPUPerSample are the node's CPU use in cores and CPU ns
	// per sample (HasCores).
	Cores, CPUPerSample float64
	HasCores            bool
	RunDelay            float64 // run-queue delay, % (HasRunDelay)
	HasRunDelay         bool
	// OtherCores and OtherThreads are the node's other processes' (node.Others).
	OtherCores, OtherThreads       float64
	HasOtherCores, HasOtherThreads bool
	// BytesPerSec, LinkUse and Requests are 0 where nothing was fetched.
	BytesPerSec, LinkUse, Requests float64
	// Stall is the longest step in ns where one stalled (node.UnitStall),
	// 0 where none did.
	Stall float64
	// Partial marks a failed run's record (node.PartialRecord).
	Partial bool
}

// Measure is MeasureEach with no callback.
func (n Node) Measure(ctx context.Context, env Env) (NodeOutcome, error) {
	return n.MeasureEach(ctx, env, nil)
}

// MeasureEach runs the sweep: for each selected point, Count runs (less
// those env.Done says a resumed file holds) of node.Run with env.Rank's
// binary; with Peer, each followed by a run of the PyTorch DDP peer.
// Each run is passed to each (if not nil) as it finishes: an error from
// each stops the sweep. A failed run stops the sweep, unless Partial:
// its partial record is kept and the sweep goes on.
func (n Node) MeasureEach(ctx context.Context, env Env, each func(NodeRun) error) (NodeOutcome, error) {
	var out NodeOutcome
	if err := n.Validate(); err != nil {
		return out, err
	}
	if env.Rank.Exe == "" {
		return out, errors.New("node: no binary to start the ranks with (Env.Rank)")
	}
	keep := func(r NodeRun) error {
		out.Runs = append(out.Runs, r)
		if each != nil {
			return each(r)
		}
		return nil
	}
	for _, p := range n.Selected() {
		ours := n.Count - min(env.done(p.BenchName()), n.Count)
		peers := 0
		if n.Peer != nil {
			peers = n.Count - min(env.done(node.PeerBenchName(p)), n.Count)
		}
		// Ours, then the peer's, alternating, so that both see the
		// machine as it is.
		for ours > 0 || peers > 0 {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			if err := n.Pipeline.PreparePageCache(ctx); err != nil {
				return out, err
			}
			if ours > 0 {
				ours--
				r, err := n.runOurs(ctx, p, env)
				if err != nil {
					return out, err
				}
				if err := keep(r); err != nil {
					return out, err
				}
			}
			if peers > 0 {
				peers--
				r, err := n.runPeer(ctx, p, env)
				if err != nil {
					return out, err
				}
				if err := keep(r); err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

// runOurs is one run of point p by node.Run: a failed run is kept as
// partial (its Err set) where n.Partial and ctx is not done, else it is
// an error that names the point.
func (n Node) runOurs(ctx context.Context, p node.Point, env Env) (NodeRun, error) {
	env.start(p.Name())
	o, others, err := n.runOnce(ctx, p, env)
	var recs []*benchfmt.Result
	switch {
	case err == nil:
		recs = node.Records(p, o, others, n.LinkBandwidth)
	case n.Partial && ctx.Err() == nil:
		recs = []*benchfmt.Result{node.PartialRecord(p, o, n.Pipeline.Batch)}
	default:
		return NodeRun{}, fmt.Errorf("%s: %w", p.Name(), err)
	}
	r, derr := nodeRunOf(p, false, recs)
	if derr != nil {
		return NodeRun{}, fmt.Errorf("%s: %w", p.Name(), derr)
	}
	r.Outcome, r.Others, r.Err = o, others, err
	return r, nil
}

// runPeer is one run of point p by the PyTorch DDP peer.
func (n Node) runPeer(ctx context.Context, p node.Point, env Env) (NodeRun, error) {
	env.start(node.PeerPrefix + strings.TrimPrefix(p.Name(), "Node"))
	o, err := n.Peer.Run(ctx, n.options(p, env))
	if err != nil {
		return NodeRun{}, fmt.Errorf("%s, the PyTorch peer: %w", p.Name(), err)
	}
	r, err := nodeRunOf(p, true, node.PeerRecords(p, o))
	if err != nil {
		return NodeRun{}, fmt.Errorf("%s, the PyTorch peer: %w", p.Name(), err)
	}
	r.Outcome, r.Others = o, node.Others{Cores: -1, Threads: -1}
	return r, nil
}

// nodeRunOf is the run of p whose records (node.Records,
// node.PartialRecord or node.PeerRecords) are recs, read by NodeCodec.
func nodeRunOf(p node.Point, peer bool, recs []*benchfmt.Result) (NodeRun, error) {
	if len(recs) == 0 {
		return NodeRun{Point: p, Peer: peer, Procs: runtime.GOMAXPROCS(0)}, nil // no rank measured
	}
	o, err := NodeCodec.Decode(recs)
	if err != nil {
		return NodeRun{}, err
	}
	if len(o.Runs) != 1 || o.Runs[0].Point != p || o.Runs[0].Peer != peer {
		return NodeRun{}, fmt.Errorf("records of %d runs, want one of %s", len(o.Runs), p.Name())
	}
	return o.Runs[0], nil
}

// Run measures the sweep (MeasureEach) and returns its records
// (NodeCodec), each run's given to env.Add together as it finishes.
func (n Node) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	var recs []*benchfmt.Result
	_, err := n.MeasureEach(ctx, env, func(r NodeRun) error {
		if r.Err != nil && n.cmd != nil && n.cmd.stderr != nil {
			fmt.Fprintf(n.cmd.stderr, "headspace node: %s kept as partial: %v\n", r.Point.Name(), r.Err)
		}
		run := r.records()
		recs = append(recs, run...)
		return env.add(run...)
	})
	return recs, err
}

// Codec is NodeCodec.
func (Node) Codec() Codec[NodeOutcome] { return NodeCodec }

var _ Typed[NodeOutcome] = Node{}

// NodeCodec is a Node's records codec: a run's records are each rank's,
// BenchmarkNode/accelerators=…/level=…/rank=…, then the node's,
// BenchmarkNode/accelerators=…/level=… (node.Records; a partial run's
// alone, node.PartialRecord), each with its GOMAXPROCS suffix; the
// PyTorch peer's are the same under BenchmarkNodeTorch (node.PeerRecords).
var NodeCodec = Codec[NodeOutcome]{
	Experiment: "Node",
	Keys: map[string][]string{
		"Node":          {"accelerators", "level", "rank"},
		node.PeerPrefix: {"accelerators", "level", "rank"},
	},
	Optional: map[string][]string{"Node": {"rank"}, node.PeerPrefix: {"rank"}},
	Procs:    true,
	encode: func(o NodeOutcome) []*benchfmt.Result {
		var out []*benchfmt.Result
		for _, r := range o.Runs {
			out = append(out, r.records()...)
		}
		return out
	},
	decode: decodeNode,
}

// records are the run's records, as node.Records wrote them.
func (r NodeRun) records() []*benchfmt.Result {
	prefix := "Node"
	if r.Peer {
		prefix = node.PeerPrefix
	}
	name := prefix + strings.TrimPrefix(r.Point.Name(), "Node")
	var out []*benchfmt.Result
	for i, f := range r.Ranks {
		out = append(out, f.record(fmt.Sprintf("%s/rank=%d", name, i), r.Procs, true))
	}
	if r.Node != nil {
		out = append(out, r.Node.record(name, r.Procs, false))
	}
	return out
}

// nodeValue is one value of a Node record: its unit, its figure, and
// whether the record holds it always (has nil, not nonzero), where *has,
// or (nonzero) where the figure is not 0.
type nodeValue struct {
	unit    string
	v       *float64
	has     *bool
	nonzero bool
}

// values are f's values in the order its record holds them: a rank's
// (rank) or the node's (node.Records), or a partial run's
// (node.PartialRecord), whose partial 1 follows them.
func (f *NodeFigures) values(rank bool) []nodeValue {
	if f.Partial {
		return []nodeValue{{unit: "steps/s", v: &f.StepsPerSec}, {unit: "samples/s", v: &f.SamplesPerSec}}
	}
	vs := []nodeValue{{unit: "ns/op", v: &f.NsPerOp}, {unit: "steps/s", v: &f.StepsPerSec}, {unit: "samples/s", v: &f.SamplesPerSec},
		{unit: node.UnitAU, v: &f.AU}}
	if rank {
		vs = append(vs, nodeValue{unit: node.UnitInputWait, v: &f.InputWait}, nodeValue{unit: node.UnitBarrier, v: &f.Barrier},
			nodeValue{unit: disturb.CPUUnit, v: &f.CPU, has: &f.HasCPU}, nodeValue{unit: disturb.RunDelayUnit, v: &f.RunDelay, has: &f.HasRunDelay})
	} else {
		vs = append(vs, nodeValue{unit: node.UnitAUMin, v: &f.AUMin}, nodeValue{unit: node.UnitInputWait, v: &f.InputWait},
			nodeValue{unit: node.UnitBarrier, v: &f.Barrier, has: &f.HasBarrier},
			nodeValue{unit: node.UnitCores, v: &f.Cores, has: &f.HasCores}, nodeValue{unit: node.UnitCPUSample, v: &f.CPUPerSample, has: &f.HasCores},
			nodeValue{unit: disturb.RunDelayUnit, v: &f.RunDelay, has: &f.HasRunDelay},
			nodeValue{unit: disturb.OtherCoresUnit, v: &f.OtherCores, has: &f.HasOtherCores},
			nodeValue{unit: node.UnitOtherThreads, v: &f.OtherThreads, has: &f.HasOtherThreads})
	}
	vs = append(vs, nodeValue{unit: node.UnitBytes, v: &f.BytesPerSec, nonzero: true})
	if !rank {
		vs = append(vs, nodeValue{unit: node.UnitLinkUse, v: &f.LinkUse, nonzero: true})
	}
	vs = append(vs, nodeValue{unit: node.UnitRequests, v: &f.Requests, nonzero: true})
	if !rank {
		vs = append(vs, nodeValue{unit: node.UnitStall, v: &f.Stall, nonzero: true})
	}
	return vs
}

// record is f as the record name (without "Benchmark") at procs: a
// rank's (rank), the node's or a partial run's.
func (f NodeFigures) record(name string, procs int, rank bool) *benchfmt.Result {
	res := newRecord(name, procs, f.Iters)
	for _, v := range f.values(rank) {
		if v.has == nil && !v.nonzero || v.has != nil && *v.has || v.nonzero && *v.v != 0 {
			res.Values = append(res.Values, benchfmt.Value{Value: *v.v, Unit: v.unit})
		}
	}
	if f.Partial {
		res.Values = append(res.Values, benchfmt.Value{Value: 1, Unit: node.UnitPartial})
	}
	return res
}

// decodeNode reads the runs back from their records, in order: a run is
// its ranks' records, rank 0 first, then its node's (of the same point,
// ours or the peer's), or a node's record alone (a partial run's), or
// its N ranks' records that measured no time with no node record after
// them (node.Records). A run is whole: a node record after other than
// its N ranks' records, or ranks' records with no node record after them
// (a line lost or repeated, a file cut short), is refused, naming the
// record.
func decodeNode(recs []Record) (NodeOutcome, error) {
	var d nodeDecoder
	for _, rec := range recs {
		if err := d.add(rec); err != nil {
			return d.out, err
		}
	}
	return d.out, d.flush(nil)
}

// nodeDecoder is decodeNode's state: the runs read, and the run being
// read.
type nodeDecoder struct {
	out  NodeOutcome
	cur  *NodeRun // the run whose ranks are read, until its node's record
	last Record   // the record read last
}

// flush ends the ranks-only run being read, at next (nil at the end).
func (d *nodeDecoder) flush(next *Record) error {
	if d.cur == nil {
		return nil
	}
	run := *d.cur
	d.cur = nil
	whole := len(run.Ranks) == run.Point.Accelerators
	for _, f := range run.Ranks {
		whole = whole && f.NsPerOp == 0
	}
	switch {
	case whole:
		d.out.Runs = append(d.out.Runs, run)
		return nil
	case next == nil:
		return fmt.Errorf("%s: rank records with no node record after them: the file is cut short", at(d.last.Result))
	default:
		return fmt.Errorf("%s: a record of another run after %d rank records of %d accelerators and no node record: a line lost or repeated", at(next.Result), len(run.Ranks), run.Point.Accelerators)
	}
}

// add reads the next record: a rank's adds to the run being read, which
// a record of another run ends first; a node's (or a partial run's)
// ends it.
func (d *nodeDecoder) add(rec Record) error {
	p, err := nodePoint(rec)
	if err != nil {
		return err
	}
	peer := rec.Benchmark == node.PeerPrefix
	rankKey, isRank := rec.Keys["rank"]
	// A rank 0, a record of another point, of another procs, or a
	// partial run's ends the run being read.
	if d.cur != nil && (rankKey == "0" || d.cur.Point != p || d.cur.Peer != peer || d.cur.Procs != rec.Procs) {
		if err := d.flush(&rec); err != nil {
			return err
		}
	}
	if d.cur == nil {
		d.cur = &NodeRun{Point: p, Peer: peer, Procs: rec.Procs}
	}
	if isRank {
		return d.addRank(rec, p, rankKey)
	}
	return d.addNode(rec, p, peer)
}

// nodePoint is the point a Node record's name gives.
func nodePoint(rec Record) (node.Point, error) {
	var p node.Point
	var err error
	if p.Accelerators, err = rec.count("accelerators", true); err != nil {
		return p, err
	}
	if p.Level, err = level.Parse(rec.Keys["level"]); err != nil {
		return p, fmt.Errorf("%s: level: %w", at(rec.Result), err)
	}
	return p, nil
}

// addRank adds rec, the record of rank rankKey of a run of p, to the run
// being read, whose next rank it must be.
func (d *nodeDecoder) addRank(rec Record, p node.Point, rankKey string) error {
	rank, err := strconv.Atoi(rankKey)
	if err != nil || rank != len(d.cur.Ranks) || rank >= p.Accelerators {
		return fmt.Errorf("%s: rank %s, want rank %d of its run of %d", at(rec.Result), rankKey, len(d.cur.Ranks), p.Accelerators)
	}
	f, err := nodeFigures(rec, true)
	if err != nil {
		return err
	}
	d.cur.Ranks = append(d.cur.Ranks, f)
	d.last = rec
	return nil
}

// addNode ends the run being read with rec, its node's record after all
// its ranks', or a partial run's record, which stands alone.
func (d *nodeDecoder) addNode(rec Record, p node.Point, peer bool) error {
	f, err := nodeFigures(rec, false)
	if err != nil {
		return err
	}
	if f.Partial && len(d.cur.Ranks) > 0 {
		// A partial run's record stands alone: the ranks before it
		// were a run with no node record.
		if err := d.flush(&rec); err != nil {
			return err
		}
		d.cur = &NodeRun{Point: p, Peer: peer, Procs: rec.Procs}
	}
	if !f.Partial && len(d.cur.Ranks) != p.Accelerators {
		return fmt.Errorf("%s: the node's record after %d rank records, want %d: a line lost or repeated", at(rec.Result), len(d.cur.Ranks), p.Accelerators)
	}
	d.cur.Node = &f
	d.out.Runs = append(d.out.Runs, *d.cur)
	d.cur = nil
	d.last = rec
	return nil
}

// maxAU is the largest AU a record may hold: 1, and the clocks' rounding.
const maxAU = 1 + 1e-6

// nodeFigures reads rec's figures: a rank's record (rank), or the
// node's, or a partial run's. A value in a unit its record does not
// hold is an error, so that what decodes encodes as it was.
func nodeFigures(rec Record, rank bool) (NodeFigures, error) {
	name := at(rec.Result)
	f := NodeFigures{Iters: rec.Iters}
	partial, ok := resultfile.Value(rec.Result, node.UnitPartial)
	f.Partial = ok
	switch {
	case f.Partial && rank:
		return f, fmt.Errorf("%s: a rank's record marked partial", name)
	case f.Partial && partial != 1:
		return f, fmt.Errorf("%s: partial %v, want 1", name, partial)
	}
	// The values every such record holds, the first missing named.
	required := []string{"steps/s", "samples/s"}
	if !f.Partial {
		last := node.UnitAUMin
		if rank {
			last = node.UnitBarrier
		}
		required = append(required, "ns/op", node.UnitAU, node.UnitInputWait, last)
	}
	if _, err := rec.valuesIn(required...); err != nil {
		return f, err
	}
	if f.Iters < 1 {
		return f, fmt.Errorf("%s: %d iterations: want 1 or more", name, f.Iters)
	}
	used := map[string]bool{node.UnitPartial: f.Partial}
	for _, v := range f.values(rank) {
		x, ok := resultfile.Value(rec.Result, v.unit)
		switch {
		case ok && (math.IsNaN(x) || math.IsInf(x, 0) || x < 0):
			return f, fmt.Errorf("%s: %s %v: want a finite figure, 0 or more", name, v.unit, x)
		case ok && (v.unit == node.UnitAU || v.unit == node.UnitAUMin) && x > maxAU:
			return f, fmt.Errorf("%s: %s %v: an AU (compute time / total time) is at most 1", name, v.unit, x)
		case ok && v.nonzero && x == 0:
			return f, fmt.Errorf("%s: %s 0, which a Node record leaves out", name, v.unit)
		case ok:
			*v.v, used[v.unit] = x, true
			if v.has != nil {
				*v.has = true
			}
		}
	}
	if used[node.UnitCores] != used[node.UnitCPUSample] {
		return f, fmt.Errorf("%s: %s without %s, or the other way", name, node.UnitCores, node.UnitCPUSample)
	}
	for _, v := range rec.Values {
		if unit := cmp.Or(v.OrigUnit, v.Unit); !used[unit] {
			return f, fmt.Errorf("%s: a value in %s, which a Node record does not hold", name, unit)
		}
	}
	return f, nil
}

// options are node.Run's options of point p.
func (n Node) options(p node.Point, env Env) node.Options {
	return node.Options{
		Exe: env.Rank.Exe, Args: env.Rank.Args, Env: env.Rank.Env,
		Ranks: p.Accelerators, Level: p.Level, Pipeline: n.Pipeline, Device: n.Device,
		Steps: n.Train.Steps, Warmup: n.Train.Warmup, Timeout: n.Timeout,
	}
}

// runOnce is one node.Run of p, with what the other processes did over
// it: their CPU use at the ranks' priority (node.Competing, less the
// ranks' and this process's) and their runnable threads (node.Runnable,
// less the ranks' CPU use in cores).
func (n Node) runOnce(ctx context.Context, p node.Point, env Env) (node.Outcome, node.Others, error) {
	niced := node.Niced()
	busy0, errB := node.ReadCPUTimes()
	self0, errS := rusage.ProcessCPU()
	stop := node.Runnable(10 * time.Millisecond)
	t0 := time.Now()
	o, err := node.Run(ctx, n.options(p, env))
	wall := time.Since(t0)
	runnable, okR := stop()
	busy1, errB1 := node.ReadCPUTimes()
	self1, errS1 := rusage.ProcessCPU()
	others := node.Others{Cores: -1, Threads: -1}
	if errS == nil && errS1 == nil && o.RanksCPU > 0 && wall > 0 {
		ours := (o.RanksCPU + self1 - self0).Seconds() / wall.Seconds()
		if errB == nil && errB1 == nil {
			others.Cores = max(node.Competing(busy0, busy1, niced).Seconds()/wall.Seconds()-ours, 0)
		}
		if okR {
			others.Threads = max(runnable-ours, 0)
		}
	}
	return o, others, err
}

// NodePlan reads a sharded node sweep's ShardSettings back: its points
// (each node record and its ranks' records) and the shard of each.
func NodePlan(config map[string]string) (merge.Plan, error) {
	var n Node
	levels, count, shards, err := sweepRuns(config)
	if err != nil {
		return merge.Plan{}, err
	}
	n.Levels, n.Count = levels, count
	if n.Accelerators, err = splitEach(config, sweepAcceleratorsKey, positive); err != nil {
		return merge.Plan{}, err
	}
	p := merge.Plan{Shards: shards, Count: n.Count, Keys: nodeShardKeys}
	// A sweep run with --peer holds the peer's records too (node-peer).
	prefixes := []string{"Node"}
	if peer := config["node-peer"]; peer != "" && peer != "none" {
		prefixes = append(prefixes, node.PeerPrefix)
	}
	for s := range shards {
		sh := n
		sh.Shard, sh.Shards = s, shards
		for _, pt := range sh.Selected() {
			for _, prefix := range prefixes {
				name := func(n string) string { return prefix + strings.TrimPrefix(n, "Node") }
				for r := range pt.Accelerators {
					p.Points = append(p.Points, name(pt.RankName(r)))
					p.Shard = append(p.Shard, s)
				}
				p.Points = append(p.Points, name(pt.Name()))
				p.Shard = append(p.Shard, s)
			}
		}
	}
	return p, nil
}

// Figures are the node records of o's runs, ours or (peer) the PyTorch
// peer's, in order, as node.Rows reads them: a run with no node record
// (its ranks measured no time) has none.
func (o NodeOutcome) Figures(peer bool) []node.Figures {
	var out []node.Figures
	for _, r := range o.Runs {
		if r.Peer != peer || r.Node == nil {
			continue
		}
		f, nan := r.Node, math.NaN()
		fig := node.Figures{Point: r.Point, Partial: f.Partial, Stall: time.Duration(f.Stall), AU: nan, AUMin: nan, SamplesPerSec: nan, Cores: nan, CPUPerSample: nan,
			InputWait: nan, RunDelay: nan, OtherCores: nan, OtherThreads: nan, BytesPerSec: nan, Requests: nan}
		if !f.Partial {
			fig.AU, fig.AUMin, fig.SamplesPerSec, fig.InputWait = f.AU, f.AUMin, f.SamplesPerSec, f.InputWait
			if f.HasCores {
				fig.Cores, fig.CPUPerSample = f.Cores, f.CPUPerSample
			}
			if f.HasRunDelay {
				fig.RunDelay = f.RunDelay
			}
			if f.HasOtherCores {
				fig.OtherCores = f.OtherCores
			}
			if f.HasOtherThreads {
				fig.OtherThreads = f.OtherThreads
			}
			if f.BytesPerSec != 0 {
				fig.BytesPerSec = f.BytesPerSec
			}
			if f.Requests != 0 {
				fig.Requests = f.Requests
			}
		}
		out = append(out, fig)
	}
	return out
}

// Rows are o's table: ours, or (peer) the PyTorch peer's.
func (o NodeOutcome) Rows(peer bool) []node.Row { return node.Rows(o.Figures(peer)) }

// nodeFileProfile is node.ProfileOf of row with the machine's cores, the
// batch, the emulated step and the workers rec's configuration (a node
// result file's) records.
func nodeFileProfile(rec *benchfmt.Result, row node.Row) (node.Profile, error) {
	return nodeProfileOf(rec.GetConfig, row)
}

// nodeProfileOf is nodeFileProfile of the file's settings get gives.
func nodeProfileOf(get func(key string) string, row node.Row) (node.Profile, error) {
	keys := []string{"cores", "batch", "emulated-step", "workers"}
	cores, err0 := strconv.ParseFloat(get(keys[0]), 64)
	batch, err1 := strconv.Atoi(get(keys[1]))
	step, err2 := time.ParseDuration(get(keys[2]))
	workers, err3 := strconv.Atoi(get(keys[3]))
	for i, err := range []error{err0, err1, err2, err3} {
		if err != nil {
			return node.Profile{}, fmt.Errorf("node profile: the file's %s %q: %w", keys[i], get(keys[i]), err)
		}
	}
	return node.ProfileOf(row, cores, batch, workers, step)
}

// inFile is err naming path, where it does not already.
func inFile(path string, err error) error {
	if strings.HasPrefix(err.Error(), path+":") {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
