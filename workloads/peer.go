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
// once it has run: Run passes them, in the peer.Result, to env.Details.
func (p Peer) Settings() []resultfile.Config {
	return append(p.Config.Settings.Config(), resultfile.Config{Key: "rounds", Value: strconv.Itoa(max(p.Config.Count, 1))})
}

// Run runs the comparison and returns its records
// (BenchmarkPeer/impl=…/workers=…). Each peer.Measurement goes to
// env.Details as it is made, and the whole peer.Result (with the peer's
// own configuration lines) at the end, also when the run stops early.
func (p Peer) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	var out []*benchfmt.Result
	keep := env.collect(&out)
	env.start(p.Name())
	res, err := peer.Sweep(ctx, p.Config, func(m peer.Measurement) { send(env.Details.Peer, m) })
	for _, m := range res.Measurements {
		if kerr := keep(m.Benchmark()); err == nil {
			err = kerr
		}
	}
	send(env.Details.PeerResult, res)
	return out, err
}
