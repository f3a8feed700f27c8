package command

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/sim"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// simCommand is headspace sim.
func simCommand() cli.Command {
	return cli.Command{Name: "sim", Summary: "simulate loaders, their queue and the model; animate it", Runs: []string{"Sim"}, Run: runSim}
}

const simUsage = `
Simulates N loader workers that each load one whole batch at a time, with
PyTorch DataLoader's dispatch (batch k to worker k mod N, --prefetch batches
outstanding per worker, delivery in index order), and a model that takes
--step per batch, as "Visualizing data loaders to diagnose deep learning
pipelines" does. Prints the batches completed within --duration, the model's
idle fraction, the mean queue length and the halting pattern; --gif writes
the animation (one frame per 100 ms), --timeline PREFIX a static timeline
(PNG, SVG) and Chrome trace JSON (opens in Perfetto).`

// The bounds of sim's flags.
var _ = cli.Declare(map[string]cli.Bound{
	"sim loaders":     {Lo: 1, Hi: 1024},
	"sim load":        {Lo: 0, Hi: float64(10000 * time.Hour)},
	"sim load-stddev": {Lo: 0, Hi: float64(10000 * time.Hour)},
	"sim step":        {Lo: 0, Hi: float64(10000 * time.Hour)},
	"sim step-stddev": {Lo: 0, Hi: float64(10000 * time.Hour)},
	"sim duration":    {Lo: 0, Hi: float64(24 * time.Hour)},
	"sim prefetch":    {Lo: 1, Hi: 1024},
	"sim gif-tick":    {Lo: 0, Hi: float64(24 * time.Hour)},
})

// runSim is headspace sim: one simulation of the flags' case, its
// summary, and the animation and timeline its flags ask for.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("sim", simUsage, stdout)
	var c sim.Config
	fs.IntVar(&c.Loaders, "loaders", 7, "loader `workers`")
	fs.DurationVar(&c.Load, "load", 2*time.Second, "mean `time` to load one batch")
	fs.StringVar(&c.LoadDist, "load-dist", "constant", "load-time `distribution`: constant, normal or lognormal")
	fs.DurationVar(&c.LoadStddev, "load-stddev", 0, "standard deviation of load times (`duration`)")
	fs.DurationVar(&c.Step, "step", 100*time.Millisecond, "`time` of one forward+backward step")
	fs.DurationVar(&c.StepStddev, "step-stddev", 0, "standard deviation of step times (`duration`)")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "simulated `time`")
	fs.IntVar(&c.Prefetch, "prefetch", 2, "`batches` outstanding per worker")
	fs.Uint64Var(&c.Seed, "seed", 1, "random `seed`")
	gif := fs.String("gif", "", "write the animation to this GIF `file`")
	gifTick := fs.Duration("gif-tick", 100*time.Millisecond, "simulated `time` between animation frames (at most 6000 frames)")
	tl := fs.String("timeline", "", "write the timeline to `prefix`.png, prefix.svg and prefix.json (Chrome trace)")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	// The numeric flags' ranges are the bounds table's, checked as they
	// are parsed.
	if c.LoadDist == "" {
		return cli.Usagef("--load-dist is empty: want constant, normal or lognormal")
	}
	opt, err := gifOptions(*gif, *gifTick, c.Duration)
	if err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	tlBase := strings.TrimSuffix(*tl, ".png")
	if err := cli.CheckOutputs(cli.Output{Path: *gif, Kind: atomicfile.Animation}, cli.Figure(cli.Prefixed(tlBase, ".png")), cli.Figure(cli.Prefixed(tlBase, ".svg")),
		cli.Output{Path: cli.Prefixed(tlBase, ".json"), Kind: cli.TraceKind}); err != nil {
		return err
	}
	// One case, as the flags set it: its own distribution, spread and seed.
	out, err := (workloads.Sim{Cases: []workloads.SimCase{{Config: c}}, GIFTick: *gifTick}).Measure(ctx, workloads.Env{})
	if err != nil {
		return err
	}
	r := out.Runs[0].Result
	if err := r.Summary(stdout); err != nil {
		return err
	}
	if *gif != "" {
		if err := r.WriteGIF(*gif, opt); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "animation: %s\n", *gif)
	}
	if *tl != "" {
		if err := workloads.WriteTimeline(stdout, r.Timeline, *tl); err != nil {
			return err
		}
	}
	return nil
}

// gifOptions are the animation's options: a frame every tick, at most
// 6000 frames over duration (a usage error says which tick fits).
func gifOptions(gif string, tick, duration time.Duration) (sim.GIFOptions, error) {
	opt := sim.GIFOptions{Tick: tick}
	if gif == "" {
		return opt, nil
	}
	if tick <= 0 {
		return opt, cli.Usagef("--gif-tick %v must be positive", tick)
	}
	const maxFrames = 6000
	if n := opt.Frames(duration); n > maxFrames {
		return opt, cli.Usagef("--duration %v at --gif-tick %v makes %d frames, over %d: raise --gif-tick to %v or more", duration, tick, n, maxFrames, (duration/(maxFrames-1)).Round(time.Millisecond)+time.Millisecond)
	}
	opt.MaxFrames = maxFrames
	return opt, nil
}
