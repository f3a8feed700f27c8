package figures

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/harness/realpeer"
)

// The real peers' committed run (docs/peers.md, README).
const realPeers = "results/peers-emulated.txt"

var (
	realPeersOnce sync.Once
	realPeersRep  realpeer.Report
	realPeersErr  error
)

// realRow is a field of a row of that run's report (realpeer.Summarize,
// as notebooks/peers.md writes it): "sps" samples/s, "cpu" CPU ms a
// sample, "ratio", "least", "most" ours ÷ peer.
func realRow(peer string, workers int, field string) figure {
	return func(t *testing.T) float64 {
		t.Helper()
		realPeersOnce.Do(func() { realPeersRep, realPeersErr = realpeer.ReadFile(filepath.Join(root, realPeers)) })
		if realPeersErr != nil {
			t.Fatalf("%s: %v", realPeers, realPeersErr)
		}
		for _, r := range realPeersRep.Rows {
			if r.Peer != peer || r.Workers != workers {
				continue
			}
			switch field {
			case "sps":
				return r.SamplesPerSec
			case "whole":
				return r.WholeRun
			case "wholeratio":
				return r.WholeRatio
			case "cpu":
				return r.CPUPerSample.Seconds() * 1e3
			case "ratio":
				return r.Ratio
			case "least":
				return r.Least
			case "most":
				return r.Most
			}
			t.Fatalf("realRow: no field %q", field)
		}
		t.Fatalf("%s: no row of %s at %d workers", realPeers, peer, workers)
		return 0
	}
}

// realPeerLine is a row of docs/peers.md's table at 2 workers:
// samples/s, ours ÷ peer and its range, the whole run's samples/s and
// ratio, CPU ms a sample.
func realPeerLine(peer string) figureCase {
	return figureCase{"docs/peers.md", fmt.Sprintf("| `%s` | %%s | %%s× (%%s–%%s) | %%s | %%s× | %%s |", peer), []shown{
		p1(realRow(peer, 2, "sps")), p2(realRow(peer, 2, "ratio")), p2(realRow(peer, 2, "least")), p2(realRow(peer, 2, "most")),
		p1(realRow(peer, 2, "whole")), p2(realRow(peer, 2, "wholeratio")), p2(realRow(peer, 2, "cpu"))}}
}

// peersCases are the real peers' figures in docs/peers.md and README.
func peersCases() []figureCase {
	cs := []figureCase{
		{"docs/peers.md", "ours made %s samples/s after the first batch, %s over the whole run, at %s ms of CPU a sample", []shown{
			p1(realRow("ours", 2, "sps")), p1(realRow("ours", 2, "whole")), p2(realRow("ours", 2, "cpu"))}},
		{"docs/peers.md", "lowest of all at 1 worker (%s ms against ours' %s ms) and equal to ours at 2 (%s against %s)", []shown{
			p2(realRow("tfdata", 1, "cpu")), p2(realRow("ours", 1, "cpu")), p2(realRow("tfdata", 2, "cpu")), p2(realRow("ours", 2, "cpu"))}},
		{"docs/peers.md", "its lead shrinks from ours' %s× to %s×", []shown{
			p2(realRow("tfdata", 2, "ratio")), p2(realRow("tfdata", 2, "wholeratio"))}},
		{"docs/peers.md", "ours was slower at 2 workers than at 1 (%s against %s samples/s)", []shown{
			p1(realRow("ours", 2, "sps")), p1(realRow("ours", 1, "sps"))}},
		{"docs/peers.md", "level with ours at 2 workers by samples/s (%s×) and behind over the whole run (%s×)", []shown{
			p2(realRow("nodes-threads", 2, "ratio")), p2(realRow("nodes-threads", 2, "wholeratio"))}},
		{"docs/peers.md", "at least equal to torch 2's DataLoader is met (%s×)", []shown{p2(realRow("torch2", 2, "ratio"))}},
		{"README.md", "ours made %s× the samples/s of torch 2's DataLoader (%s× over the whole run), and **tf.data was ahead of ours** (ours at %s× its samples/s, %s× over the whole run)", []shown{
			p2(realRow("torch2", 2, "ratio")), p2(realRow("torch2", 2, "wholeratio")), p2(realRow("tfdata", 2, "ratio")), p2(realRow("tfdata", 2, "wholeratio"))}},
	}
	local, _ := realpeer.ParseNames("all")
	for _, p := range local {
		cs = append(cs, realPeerLine(p.Name))
	}
	return cs
}
