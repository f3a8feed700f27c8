package workloads

import (
	"context"
	"strconv"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Peer is the document 003's own PyTorch pipeline (peers/torch), run by
// PyTorch's DataLoader, beside our loader at level none with the naive and
// fast transforms, at the same settings, alternating in one run.
type Peer struct {
	Config peer.Config
	// cmd is what the command's flags set beside Config.
	cmd peerCommand
}

// PeerPython and PeerScript are the Python and the script DefaultPeer
// runs: Debian's python3 (`make peer` installs torch for it) and the
// document's pipeline, relative to the repository's root.
const (
	PeerPython = "/usr/bin/python3"
	PeerScript = "peers/torch/dataloader.py"
)

// DefaultPeer compares at 1 and 2 workers (this machine's cores), three
// rounds, with the given Python running the given script.
func DefaultPeer(python, script string) Peer {
	return Peer{Config: peer.Config{
		Peer:     peer.Peer{Python: python, Script: script},
		Settings: peer.DefaultSettings(),
		Workers:  []int{1, 2},
		Count:    3,
	}}
}

// QuickPeer runs one round at 1 worker on tiny images.
func QuickPeer(python, script string) Peer {
	p := DefaultPeer(python, script)
	p.Config.Settings = peer.Settings{Width: 96, Height: 96, Crop: 32, Batch: 8, Batches: 4, Seed: 1}
	p.Config.Workers, p.Config.Count = []int{1}, 1
	return p
}

// Name is "Peer": BenchmarkPeer/impl=…/workers=….
func (Peer) Name() string { return "Peer" }

// Document is "003": its pipeline, in PyTorch.
func (Peer) Document() string { return "003" }

// Settings is the configuration block of the comparison's result file
// (`headspace peer --out`): the settings both sides run at, and the
// rounds. The peer's own lines (its Python, torch's version) are known
// once it has run: they are the PeerConfig of the peer.Result Measure
// returns.
func (p Peer) Settings() []resultfile.Config {
	return append(p.Config.Settings.Config(), resultfile.Config{Key: "rounds", Value: strconv.Itoa(max(p.Config.Count, 1))})
}

// Measure is MeasureEach, each run's line on a command's log; a
// command's run keeps the peer's own lines for its file.
func (p Peer) Measure(ctx context.Context, env Env) (PeerOutcome, error) {
	var each func(peer.Measurement)
	if p.cmd.log != nil {
		each = func(m peer.Measurement) { logPeer(p.cmd.log, m) }
	}
	r, err := p.MeasureEach(ctx, env, each)
	if p.cmd.peerConfig != nil {
		*p.cmd.peerConfig = r.PeerConfig
	}
	return PeerOutcome{Result: r}, err
}

// MeasureEach runs the comparison (peer.Sweep), passing each
// peer.Measurement to each (if not nil) as it is made (`headspace peer`'s
// live line), and returns every run with the peer's own configuration
// lines, also what it measured before an error.
func (p Peer) MeasureEach(ctx context.Context, env Env, each func(peer.Measurement)) (peer.Result, error) {
	env.start(p.Name())
	return peer.Sweep(ctx, p.Config, each)
}

// Run runs the comparison (Measure) and returns its records (PeerCodec).
func (p Peer) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[PeerOutcome](ctx, p, env)
}

// Codec is PeerCodec.
func (Peer) Codec() Codec[PeerOutcome] { return PeerCodec }

var _ Typed[PeerOutcome] = Peer{}

// PeerCodec is a Peer's records codec: a record a run, in the order they
// ran, BenchmarkPeer/impl=…/workers=… (peer.Layout) with ttfb-ns,
// samples/s and cpu-s (peer.Measurement.Benchmark); a run of an
// implementation not in peer.Impls, of fewer than 2 batches or with a
// figure negative or not finite does not decode (peer.MeasurementOf, as
// the script's lines). The peer's configuration lines are the result
// file's, not its records': a decoded outcome has no PeerConfig, and
// its Config are the file's lines where a command decodes a file
// (DecodeFile).
var PeerCodec = Codec[PeerOutcome]{
	Experiment: peer.Layout.Owner,
	Keys:       peer.Layout.Keys,
	encode:     func(o PeerOutcome) []*benchfmt.Result { return recordsOf(o.Measurements, peer.Measurement.Benchmark) },
	decode: func(recs []Record) (PeerOutcome, error) {
		ms, err := decodeEach(recs, decodePeerRun)
		return PeerOutcome{Result: peer.Result{Measurements: ms}}, err
	},
}

// PeerOutcome is what a Peer measured (peer.Result) and, decoded from a
// result file by a command, the file's lines, which its report reads
// (peer.ReportOf).
type PeerOutcome struct {
	peer.Result
	Config []resultfile.Config
}

func (o *PeerOutcome) settle(config []resultfile.Config) { o.Config = config }
