package workloads

import (
	"context"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/engines/peer"
)

// Peer is the document 003's own PyTorch pipeline (peers/torch), run by
// PyTorch's DataLoader, beside our loader at level none with the naive and
// fast transforms, at the same settings, alternating in one run.
type Peer struct {
	Config peer.Config
}

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

// Run runs the comparison and returns what it measured and the records
// (BenchmarkPeer/impl=…/workers=…). each, if set, sees every measurement.
func (p Peer) Run(ctx context.Context, each func(peer.Measurement)) (peer.Result, []*benchfmt.Result, error) {
	res, err := peer.Sweep(ctx, p.Config, each)
	recs := make([]*benchfmt.Result, len(res.Measurements))
	for i, m := range res.Measurements {
		recs[i] = m.Benchmark()
	}
	return res, recs, err
}
