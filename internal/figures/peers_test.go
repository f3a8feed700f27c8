package figures

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/harness/realpeer"
)

// The real peers' committed runs (docs/peers.md, README): on files, and
// on a bucket.
const (
	realPeers   = "results/peers-emulated.txt"
	bucketPeers = "results/peers-bucket-emulated.txt"
)

var (
	realReportsMu sync.Mutex
	realReports   = map[string]realpeer.Report{}
)

// realReport is the report of the run in path, read once.
func realReport(t *testing.T, path string) realpeer.Report {
	t.Helper()
	realReportsMu.Lock()
	defer realReportsMu.Unlock()
	if r, ok := realReports[path]; ok {
		return r
	}
	r, err := realpeer.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	realReports[path] = r
	return r
}

// realRow is a field of a row of the files run's report.
func realRow(peer string, workers int, field string) figure {
	return rowOf(realPeers, peer, workers, field)
}

// rowOf is a field of a row of the report of the run in path
// (realpeer.Summarize, as notebooks/peers.md writes it): "sps" samples/s,
// "whole" the whole run's, "cpu" CPU ms a sample, "ratio", "least",
// "most", "wholeratio" ours ÷ peer, "share" the share of the limit in %.
func rowOf(path, peer string, workers int, field string) figure {
	return func(t *testing.T) float64 {
		t.Helper()
		for _, r := range realReport(t, path).Rows {
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
			case "share":
				if r.Share < 0 {
					t.Fatalf("%s: %s at %d workers has no share of the limit", path, peer, workers)
				}
				return 100 * r.Share
			}
			t.Fatalf("realRow: no field %q", field)
		}
		t.Fatalf("%s: no row of %s at %d workers", path, peer, workers)
		return 0
	}
}

// realPeerLine is a row of one of docs/peers.md's tables at 2 workers,
// from the run in path: samples/s, ours ÷ peer and its range, the whole
// run's samples/s and ratio, CPU ms a sample.
func realPeerLine(path, peer string) figureCase {
	f := func(field string) figure { return rowOf(path, peer, 2, field) }
	return figureCase{"docs/peers.md", fmt.Sprintf("| `%s` | %%s | %%s× (%%s–%%s) | %%s | %%s× | %%s |", peer), []shown{
		p1(f("sps")), p2(f("ratio")), p2(f("least")), p2(f("most")), p1(f("whole")), p2(f("wholeratio")), p2(f("cpu"))}}
}

// peerLine is realPeerLine, or, for a peer none of whose runs at 2
// workers was measured in the committed run at path, its row saying so:
// "| `litdata` | none of its N runs ran:" and the reason.
func peerLine(path, peer string) figureCase {
	r, err := realpeer.ReadFile(filepath.Join(root, path))
	if err != nil {
		return realPeerLine(path, peer) // its check fails on the file
	}
	for _, row := range r.Rows {
		if row.Peer == peer && row.Workers == 2 && row.Runs == 0 {
			missing := func(*testing.T) float64 { return float64(row.Missing) }
			return figureCase{"docs/peers.md", fmt.Sprintf("| `%s` | none of its %%s runs ran:", peer), []shown{p0(missing)}}
		}
	}
	return realPeerLine(path, peer)
}

// peersCases are the real peers' figures in docs/peers.md and README.
func peersCases() []figureCase {
	cs := []figureCase{
		{"docs/peers.md", "ours made %s samples/s after the first batch, %s over the whole run, at %s ms of CPU a sample, %s%% of the limit", []shown{
			p1(realRow("ours", 2, "sps")), p1(realRow("ours", 2, "whole")), p2(realRow("ours", 2, "cpu")), p1(realRow("ours", 2, "share"))}},
		{"docs/peers.md", "ahead of it at 1 worker (ours at %s× its samples/s); over\nthe whole run ours is ahead at both (%s× at 2 workers)", []shown{
			p2(realRow("tfdata", 1, "ratio")), p2(realRow("tfdata", 2, "wholeratio"))}},
		{"docs/peers.md", "lowest of all at 1 worker\n   (%s ms against ours' %s ms)", []shown{
			p2(realRow("tfdata", 1, "cpu")), p2(realRow("ours", 1, "cpu"))}},
		{"docs/peers.md", "its lead turns from ours' %s× to %s×", []shown{
			p2(realRow("tfdata", 2, "ratio")), p2(realRow("tfdata", 2, "wholeratio"))}},
		{"docs/peers.md", "ours reached %s%% of it\n(tf.data, by the same byte count, %s%%)", []shown{
			p1(realRow("ours", 2, "share")), p1(realRow("tfdata", 2, "share"))}},
		{"docs/peers.md", "at least equal to torch 2's DataLoader is met (%s×); at least 50%% of the\nlimit is *not met* (%s%%", []shown{
			p2(realRow("torch2", 2, "ratio")), p1(realRow("ours", 2, "share"))}},
		{"README.md", "ours made %s× the samples/s of torch 2's DataLoader (%s× over\nthe whole run), and **tf.data was level with ours** (ours at %s× its\nsamples/s, %s× over the whole run; behind it at 1 worker)", []shown{
			p2(realRow("torch2", 2, "ratio")), p2(realRow("torch2", 2, "wholeratio")), p2(realRow("tfdata", 2, "ratio")), p2(realRow("tfdata", 2, "wholeratio"))}},
		{"README.md", "Ours reached %s%% of the limit memory bandwidth sets", []shown{p1(realRow("ours", 2, "share"))}},
	}
	cs = append(cs, figureCase{"docs/peers.md", "At 2 workers (ours: %s samples/s, %s ms of CPU a sample)", []shown{
		p1(rowOf(bucketPeers, "ours", 2, "sps")), p2(rowOf(bucketPeers, "ours", 2, "cpu"))}})
	cs = append(cs, figureCase{"docs/peers.md", "ahead of ours in one round of three at 2 workers (ours at %s× its samples/s)", []shown{
		p2(rowOf(bucketPeers, "streaming", 2, "least"))}}, figureCase{"docs/peers.md", "so over the whole run ours is %s× it", []shown{
		p2(rowOf(bucketPeers, "streaming", 2, "wholeratio"))}})
	for path, list := range map[string]string{realPeers: "all", bucketPeers: "all-bucket"} {
		ps, _ := realpeer.ParseNames(list)
		for _, p := range ps {
			cs = append(cs, peerLine(path, p.Name))
		}
	}
	return cs
}
