package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// PeerScript is the PyTorch DDP peer of a node (ranks by
// torch.multiprocessing.spawn, gloo on 127.0.0.1, an all_reduce before
// every step, the document's pipeline per rank, the emulated step),
// relative to the repository's root.
const PeerScript = "peers/torch/node.py"

// PeerPrefix names the peer's records: "NodeTorch/accelerators=N/level=L".
const PeerPrefix = "NodeTorch"

// Peer runs the PyTorch DDP peer: Python with torch running Script.
type Peer struct {
	Python, Script string
}

// peerLine is one rank's line of the peer's output.
type peerLine struct {
	Rank         int     `json:"rank"`
	Accelerators int     `json:"accelerators"`
	Steps        int     `json:"steps"`
	Batch        int     `json:"batch"`
	Wall         float64 `json:"wall_s"`
	Compute      float64 `json:"compute_s"`
	InputWait    float64 `json:"input_wait_s"`
	Barrier      float64 `json:"barrier_s"`
}

// Run runs the peer for a node of o.Ranks accelerators at o.Level with
// o's pipeline (raw size, crop, batch, workers, seed), step and pinned
// bandwidth, and returns each rank's result. Cancelling ctx kills it
// (and, through torch's spawn, its ranks).
func (pr Peer) Run(ctx context.Context, o Options) (Outcome, error) {
	args := []string{pr.Script,
		"--accelerators", fmt.Sprint(o.Ranks), "--level", o.Level.String(),
		"--raw-size", fmt.Sprintf("%dx%d", o.Pipeline.Dataset.Width, o.Pipeline.Dataset.Height),
		"--crop", fmt.Sprint(o.Pipeline.Transforms.Crop), "--batch", fmt.Sprint(o.Pipeline.Batch),
		"--workers", fmt.Sprint(o.Pipeline.Workers), "--step", goDuration(o.Device.Step),
		"--steps", fmt.Sprint(o.Steps), "--warmup", fmt.Sprint(o.Warmup),
		"--seed", fmt.Sprint(o.Pipeline.Dataset.Seed), "--pinned-gbps", fmt.Sprint(o.Device.PinnedBandwidth / 1e9),
	}
	cmd := exec.CommandContext(ctx, pr.Python, args...)
	cmd.SysProcAttr = peerAttr()
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Outcome{}, ctx.Err()
		}
		return Outcome{}, fmt.Errorf("node peer %s: %v: %s", pr.Script, err, lastLine(stderr.String()))
	}
	var out Outcome
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var l peerLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return Outcome{}, fmt.Errorf("node peer %s: a line that is not a rank's result: %q", pr.Script, sc.Text())
		}
		out.Ranks = append(out.Ranks, RankResult{Rank: l.Rank, Steps: l.Steps, Batch: l.Batch,
			Wall: seconds(l.Wall), Compute: seconds(l.Compute), InputWait: seconds(l.InputWait), Barrier: seconds(l.Barrier)})
	}
	if len(out.Ranks) != o.Ranks {
		return Outcome{}, fmt.Errorf("node peer %s: %d ranks' results, want %d", pr.Script, len(out.Ranks), o.Ranks)
	}
	slices.SortFunc(out.Ranks, func(a, b RankResult) int { return a.Rank - b.Rank })
	return out, nil
}

// PeerRecords are the peer's records of p: its ranks' and its node's, as
// Records names ours, under PeerPrefix.
func PeerRecords(p Point, o Outcome) []*benchfmt.Result {
	recs := Records(p, o, Others{Cores: -1, Threads: -1}, 0)
	for _, r := range recs {
		r.Name = benchfmt.Name("Benchmark" + PeerPrefix + strings.TrimPrefix(string(r.Name), "BenchmarkNode"))
	}
	return recs
}

// PeerBenchName is the peer's node record's name of p.
func PeerBenchName(p Point) string {
	return resultfile.BenchName(PeerPrefix+strings.TrimPrefix(p.Name(), "Node"), runtime.GOMAXPROCS(0))
}

func seconds(s float64) time.Duration { return time.Duration(s * 1e9) }

// goDuration is d as the peer's --step reads it: milliseconds.
func goDuration(d time.Duration) string { return fmt.Sprintf("%gms", float64(d)/1e6) }

// lastLine is the last non-empty line of s (a Python traceback's error).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
