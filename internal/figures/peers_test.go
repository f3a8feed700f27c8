package figures

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/workloads"
)

// The real peers' committed runs (docs/peers.md, README): on files, and
// on a bucket.
const (
	realPeers   = "results/peers-emulated.txt"
	bucketPeers = "results/peers-bucket-emulated.txt"
	// The files run before --decode-crop, and the decoders' benchmark
	// (docs/peers.md's side by side).
	fullDecodePeers = "results/peers-emulated-full-decode.txt"
	busierPeers     = "results/peers-emulated-busier.txt"
	decodeCrop      = "results/decode-crop.txt"
	decodeCropTJ    = "results/decode-crop-tjtransform.txt"
)

// cropCPU is BenchmarkDecodeCrop's median CPU ms an image of decode
// (full or crop) with idct, in path.
func cropCPU(path, decode, idct string) shown {
	return p2(scale(med(path, "DecodeCrop/decode="+decode+"/idct="+idct, "cpu-ns/op"), 1e-6))
}

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
	r, err := workloads.ReadRealPeerReport(filepath.Join(root, path))
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
	r, err := workloads.ReadRealPeerReport(filepath.Join(root, path))
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
		{"docs/peers.md", "had ours at %s ms of CPU a sample at 2 workers and %s ms at 1, tf.data level with it at 2 workers (ours at %s× its samples/s) and ahead at 1 (%s×); with it, ours takes %s ms and %s ms, the least of every side (tf.data: %s ms and %s ms here, %s ms and %s ms then), and is ahead of tf.data at 2 workers in every round (%s×, %s–%s) and at 1 by the median (%s×)", []shown{
			p2(rowOf(fullDecodePeers, "ours", 2, "cpu")), p2(rowOf(fullDecodePeers, "ours", 1, "cpu")),
			p2(rowOf(fullDecodePeers, "tfdata", 2, "ratio")), p2(rowOf(fullDecodePeers, "tfdata", 1, "ratio")),
			p2(realRow("ours", 2, "cpu")), p2(realRow("ours", 1, "cpu")),
			p2(realRow("tfdata", 2, "cpu")), p2(realRow("tfdata", 1, "cpu")),
			p2(rowOf(fullDecodePeers, "tfdata", 2, "cpu")), p2(rowOf(fullDecodePeers, "tfdata", 1, "cpu")),
			p2(realRow("tfdata", 2, "ratio")), p2(realRow("tfdata", 2, "least")), p2(realRow("tfdata", 2, "most")), p2(realRow("tfdata", 1, "ratio"))}},
		{"docs/peers.md", "tf.data ahead of ours at 2 workers (ours at %s× its samples/s, one round of three ahead) and at 1 (%s×), with ours still the least CPU a sample (%s ms against tf.data's %s ms)", []shown{
			p2(rowOf(busierPeers, "tfdata", 2, "ratio")), p2(rowOf(busierPeers, "tfdata", 1, "ratio")),
			p2(rowOf(busierPeers, "ours", 2, "cpu")), p2(rowOf(busierPeers, "tfdata", 2, "cpu"))}},
		{"docs/peers.md", "one round of three at 1 worker (ours at %s× its samples/s in that round)", []shown{p2(realRow("tfdata", 1, "least"))}},
		{"docs/peers.md", "ours at %s× its samples/s at 2 workers, ahead in every round, and %s× at 1 by the median", []shown{
			p2(realRow("tfdata", 2, "ratio")), p2(realRow("tfdata", 1, "ratio"))}},
		// docs/peers.md: the options for decoding only the crop.
		{"docs/peers.md", "before the window's decode: %s ms against %s ms for the full decode.", []shown{
			cropCPU(decodeCropTJ, "crop", "accurate"), cropCPU(decodeCropTJ, "full", "accurate")}},
		{"docs/peers.md", "rows below it are not read at all: **%s ms against %s ms, %s× less CPU** an image.", []shown{
			cropCPU(decodeCrop, "crop", "accurate"), cropCPU(decodeCrop, "full", "accurate"),
			p2(div(med(decodeCrop, "DecodeCrop/decode=full/idct=accurate", "cpu-ns/op"), med(decodeCrop, "DecodeCrop/decode=crop/idct=accurate", "cpu-ns/op")))}},
		{"docs/peers.md", "another job (at 1/2, %s ms an image).", []shown{
			p2(scale(med(decodeCrop, "DecodeCrop/scale=1-2/idct=accurate", "cpu-ns/op"), 1e-6))}},
		{"docs/peers.md", "of the cropped decode, %s ms against %s ms, no gain", []shown{
			cropCPU(decodeCrop, "crop", "fast"), cropCPU(decodeCrop, "crop", "accurate")}},
		{"docs/peers.md", "its CPU is about %s ms an image, above", []shown{cropCPU(decodeCrop, "crop", "accurate")}},
		{"docs/peers.md", "ours reached %s%% of it\n(tf.data, by the same byte count, %s%%)", []shown{
			p1(realRow("ours", 2, "share")), p1(realRow("tfdata", 2, "share"))}},
		{"docs/peers.md", "at least equal to torch 2's DataLoader is met (%s×); at least 50%% of the limit is *not met* (%s%%", []shown{
			p2(realRow("torch2", 2, "ratio")), p1(realRow("ours", 2, "share"))}},
		{"README.md", "ours made %s× the samples/s of torch 2's DataLoader (%s× over the whole run) and %s× those of tf.data, the closest (%s× over the whole run; ahead in every round)", []shown{
			p2(realRow("torch2", 2, "ratio")), p2(realRow("torch2", 2, "wholeratio")), p2(realRow("tfdata", 2, "ratio")), p2(realRow("tfdata", 2, "wholeratio"))}},
		{"README.md", "at %s ms of CPU a sample, the least of every side (tf.data %s ms; ours %s ms before `--decode-crop`)", []shown{
			p2(realRow("ours", 2, "cpu")), p2(realRow("tfdata", 2, "cpu")), p2(rowOf(fullDecodePeers, "ours", 2, "cpu"))}},
		{"README.md", "on a busier machine an hour earlier tf.data made more (ours at %s×)", []shown{p2(rowOf(busierPeers, "tfdata", 2, "ratio"))}},
		{"README.md", "Ours reached %s%% of the limit memory bandwidth sets", []shown{p1(realRow("ours", 2, "share"))}},
	}
	cs = append(cs, figureCase{"docs/peers.md", "At 2 workers (ours: %s samples/s, %s ms of CPU a sample)", []shown{
		p1(rowOf(bucketPeers, "ours", 2, "sps")), p2(rowOf(bucketPeers, "ours", 2, "cpu"))}})
	cs = append(cs, figureCase{"docs/peers.md", "is ahead of ours in one round of three at 2 workers (ours at %s× its samples/s)", []shown{
		p2(rowOf(bucketPeers, "litdata", 2, "least"))}}, figureCase{"docs/peers.md", "so over the whole run ours is %s× Streaming and %s× litdata", []shown{
		p2(rowOf(bucketPeers, "streaming", 2, "wholeratio")), p2(rowOf(bucketPeers, "litdata", 2, "wholeratio"))}})
	for path, list := range map[string]string{realPeers: "all", bucketPeers: "all-bucket"} {
		ps, _ := realpeer.ParseNames(list)
		for _, p := range ps {
			cs = append(cs, peerLine(path, p.Name))
		}
	}
	return cs
}
