package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/barrier"
	"github.com/headspace-bench/headspace/harness/ladder"
	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// beforeStep, if set, is called by ServeRank before every step's barrier:
// the tests' way to make a rank die or hang.
var beforeStep func(rank, step int)

// ServeRank is the body of a rank process (the hidden "rank"
// subcommand): it reads its Spec from in, runs the training loop at the
// Spec's level with the all-reduce barrier on in and out before every
// step, and writes its RankResult on out. An error is the rank's failure;
// the caller writes it on stderr and exits non-zero.
func ServeRank(ctx context.Context, in io.Reader, out io.Writer) error {
	br := bufio.NewReader(in)
	var s Spec
	if err := readMessage(br, &s); err != nil {
		return fmt.Errorf("rank: reading its spec: %w", err)
	}
	if s.Version != protocolVersion {
		return fmt.Errorf("rank %d: protocol version %d, want %d (a stale binary?)", s.Rank, s.Version, protocolVersion)
	}
	dev, err := device.NewEmulated(s.Device)
	if err != nil {
		return fmt.Errorf("rank %d: %w", s.Rank, err)
	}
	defer dev.Close()
	var m interface{ Wait() error } = barrier.NewMember(out, br)
	if s.Barrier == BarrierShared {
		sm, err := barrier.OpenShared(os.NewFile(3, "barrier"), s.Ranks, s.Rank)
		if err != nil {
			return fmt.Errorf("rank %d: %w", s.Rank, err)
		}
		defer sm.Close()
		m = sm
	}
	var probe *disturb.Probe
	tc := train.Config{Steps: s.Steps, Warmup: s.Warmup, Barrier: func(_ context.Context, i int) error {
		if beforeStep != nil {
			beforeStep(s.Rank, i)
		}
		if err := m.Wait(); err != nil {
			return err
		}
		if i == s.Warmup {
			probe = disturb.Start() // the measured steps start here
		}
		return nil
	}}
	res, err := ladder.Run(ctx, s.Level, s.Pipeline, dev, tc)
	if err != nil {
		return fmt.Errorf("rank %d: level %s: %w", s.Rank, s.Level, err)
	}
	r := fromTrain(s.Rank, res)
	if probe != nil {
		ds := probe.Stop()
		r.CPU, r.HasCPU = ds.CPU, ds.HasCPU
		r.RunDelay, r.HasRunDelay = ds.RunDelay, ds.HasRunDelay
	}
	if _, err = out.Write([]byte{resultFrame}); err == nil {
		err = writeMessage(out, r)
	}
	if err != nil {
		return fmt.Errorf("rank %d: writing its result: %w", s.Rank, err)
	}
	return nil
}

// fromTrain is what a rank reports of its training loop's result.
func fromTrain(rank int, res train.Result) RankResult {
	return RankResult{
		Rank: rank, Steps: res.Steps, Batch: res.Batch, Wall: res.Wall,
		Compute: res.DeviceStats.StepTime, InputWait: res.InputWait, Barrier: res.BarrierWait,
		Fetched: res.Fetched, Requests: res.Requests,
	}
}
