package workloads

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/headspace-bench/headspace/internal/rusage"
)

// Node is a node of emulated accelerators (issue 44): for each
// accelerator count N, N rank processes, each with its own loader and
// emulated device, in lockstep through the all-reduce barrier, at the
// pipeline (level none) and its bound (level host): how many
// accelerators this host keeps at AU ≥ 0.90 with the pipeline, and what
// runs out first (package node). `headspace node` runs it.
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
}

// NodeSweepKind is the sweep key's value of a sharded node sweep.
const NodeSweepKind = "node"

const (
	sweepAcceleratorsKey = "sweep-accelerators"
)

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

// Validate reports the first problem with the sweep, before anything
// runs.
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

// Settings is the result file's configuration block: the pipeline's,
// the device's, the loop's.
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
	acc := make([]string, len(n.Accelerators))
	for i, a := range n.Accelerators {
		acc[i] = strconv.Itoa(a)
	}
	lv := make([]string, len(n.Levels))
	for i, l := range n.Levels {
		lv[i] = l.String()
	}
	return []resultfile.Config{
		{Key: SweepKey, Value: NodeSweepKind},
		{Key: sweepAcceleratorsKey, Value: strings.Join(acc, ",")},
		{Key: sweepLevelsKey, Value: strings.Join(lv, ",")},
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

// NodeRun is one run of one point of a node, passed to Env.Details as it
// finishes, before its records go to Env.Result.
type NodeRun struct {
	Point   node.Point
	Outcome node.Outcome
	// Others is what the other processes did during the run.
	Others  node.Others
	Records []*benchfmt.Result
	// Err is the run's failure when it was kept as partial.
	Err error
}

// Run runs the sweep: for each selected point, Count runs (less those
// env.Done says a resumed file holds) of node.Run with env.Rank's
// binary, each run's records (its ranks', then the node's) to env.Result;
// with Peer, each followed by a run of the PyTorch DDP peer.
// A failed run stops the sweep, unless Partial: its partial record is
// kept and the sweep goes on. It returns the records made.
func (n Node) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	var out []*benchfmt.Result
	if err := n.Validate(); err != nil {
		return out, err
	}
	if env.Rank.Exe == "" {
		return out, errors.New("node: no binary to start the ranks with (Env.Rank)")
	}
	keep := env.collect(&out)
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
				env.start(p.Name())
				o, others, err := n.runOnce(ctx, p, env)
				var recs []*benchfmt.Result
				switch {
				case err == nil:
					recs = node.Records(p, o, others, n.LinkBandwidth)
				case n.Partial && ctx.Err() == nil:
					recs = []*benchfmt.Result{node.PartialRecord(p, o, n.Pipeline.Batch)}
				default:
					return out, fmt.Errorf("%s: %w", p.Name(), err)
				}
				send(env.Details.Node, NodeRun{Point: p, Outcome: o, Others: others, Records: recs, Err: err})
				for _, r := range recs {
					if err := keep(r); err != nil {
						return out, err
					}
				}
			}
			if peers > 0 {
				peers--
				env.start(node.PeerPrefix + strings.TrimPrefix(p.Name(), "Node"))
				o, err := n.Peer.Run(ctx, n.options(p, env))
				if err != nil {
					return out, fmt.Errorf("%s, the PyTorch peer: %w", p.Name(), err)
				}
				for _, r := range node.PeerRecords(p, o) {
					if err := keep(r); err != nil {
						return out, err
					}
				}
			}
		}
	}
	return out, nil
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
// it: their CPU use at the ranks' priority (node.Competing: the
// machine's busy time less the ranks' and this process's) and their
// runnable threads (node.Runnable, less the ranks' own: their CPU use in
// cores).
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
	var err error
	if n.Accelerators, err = splitEach(config, sweepAcceleratorsKey, func(s string) (int, error) {
		v, err := strconv.Atoi(s)
		if err == nil && v <= 0 {
			err = fmt.Errorf("%d must be positive", v)
		}
		return v, err
	}); err != nil {
		return merge.Plan{}, err
	}
	v, ok := config[sweepLevelsKey]
	if !ok {
		return merge.Plan{}, fmt.Errorf("no %q configuration line", sweepLevelsKey)
	}
	if n.Levels, err = level.ParseList(v); err != nil {
		return merge.Plan{}, fmt.Errorf("%s %q: %w", sweepLevelsKey, v, err)
	}
	if n.Count, err = strconv.Atoi(config[sweepCountKey]); err != nil || n.Count <= 0 {
		return merge.Plan{}, fmt.Errorf("%s %q: want a positive count", sweepCountKey, config[sweepCountKey])
	}
	shards, err := strconv.Atoi(config[ShardsKey])
	if err != nil || shards <= 0 {
		return merge.Plan{}, fmt.Errorf("%s %q: want a positive number of shards", ShardsKey, config[ShardsKey])
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

// NodeAUMin is the smallest rank AU of each run of each accelerator
// count at level none in records (a node file): what
// node.MaxMeasured reads.
func NodeAUMin(records []*benchfmt.Result) map[int][]float64 {
	out := map[int][]float64{}
	for _, r := range records {
		p, rank, ok := node.ParsePointName(string(r.Name))
		if !ok || rank >= 0 || p.Level != level.None {
			continue
		}
		if _, partial := resultfile.Value(r, node.UnitPartial); partial {
			continue
		}
		if v, ok := resultfile.Value(r, node.UnitAUMin); ok {
			out[p.Accelerators] = append(out[p.Accelerators], v)
		}
	}
	return out
}

// NodeAccelerators is the sorted accelerator counts of records
// (node.Accelerators).
func NodeAccelerators(records []*benchfmt.Result) []int { return node.Accelerators(records) }
