package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/reproduce"
	"github.com/headspace-bench/headspace/workloads"
)

// reproduce's bound of --step, beside the flag (internal/cli's table).
var _ = cli.Declare(map[string]cli.Bound{
	"reproduce step": {Lo: 0, Hi: float64(time.Hour)},
})

func init() {
	register(cli.Command{Name: "reproduce", Summary: "run every document's experiment and write one Markdown report per document", Run: runReproduce})
}

func runReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("reproduce", reproduce.Usage(), stdout)
	var opt reproduce.Options
	fs.BoolVar(&opt.Quick, "quick", false, "tiny sizes: every code path in seconds, numbers not comparable")
	fs.StringVar(&opt.Out, "out", "notebooks", "`directory` of the reports (figures go to its figures/, saved measurements to its results/)")
	docsFlag := fs.String("docs", strings.Join(reproduce.IDs(), ","), "comma-separated `documents` to reproduce, in order")
	workers := loader.WorkersFlag(fs, false, "loader `workers` per stage (0: GOMAXPROCS, one per core)", 0)
	fs.DurationVar(&opt.Step, "step", 0, "emulated device: `time` of one training step (0: the document's 290ms; 20ms with --quick)")
	dev := fs.String("device", "emulated", "`device`: emulated or cuda")
	fs.BoolVar(&opt.Force, "force", false, "let a quick or smaller run replace a full run's saved results")
	fs.StringVar(&opt.TorchPeer.Python, "python", reproduce.DefaultTorchPeer.Python, "003: the Python `interpreter` that runs the document's own code (torch, torchvision, scipy, PIL)")
	fs.StringVar(&opt.TorchPeer.Script, "torch-script", reproduce.DefaultTorchPeer.Script, "003: the document's training `script`, run beside ours on the emulated device (not measured, and the report says so, where it cannot run)")
	from := fs.String("from", "", "rebuild the reports from the saved result files in `directory` (a run's --out/results), measuring nothing")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	opt.Workers = workers.N()
	allowed := reproduce.IDs()
	allowed = append(allowed[:1], append([]string{"001"}, allowed[1:]...)...) // 001 is 000's source
	ids, err := cli.ParseList("--docs", *docsFlag, allowed)
	if err == nil {
		err = cli.NoRepeats("--docs", ids)
	}
	if err != nil {
		return err
	}
	// --workers' and --step's ranges are the bounds table's, checked as
	// they are parsed.
	if opt.Out == "" {
		return cli.Usagef("--out must name a directory")
	}
	if *from != "" {
		return rebuildReports(ctx, fs, ids, *from, opt.Out, stdout, stderr)
	}
	if err := completeOptions(ctx, &opt, *dev, args, stderr); err != nil {
		return err
	}
	start := time.Now()
	paths, err := reproduce.Run(ctx, ids, opt)
	for _, p := range paths {
		fmt.Fprintf(stdout, "report: %s\n", p)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s in %v\n", report.Plural(len(paths), "report"), time.Since(start).Round(time.Second))
	return nil
}

// completeOptions gives a run this binary as the process loader's
// worker, its command line, its progress output and, for a device other
// than the emulated one, that device.
func completeOptions(ctx context.Context, opt *reproduce.Options, dev string, args []string, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the worker binary: %w", err)
	}
	opt.Worker = procloader.Options{Exe: exe}
	opt.Command = cli.CommandLine("headspace reproduce", args)
	opt.Progress = stderr
	if dev != "emulated" { // unset: the document's emulated device at the size's step
		d, err := workloads.DeviceNamed(ctx, dev, opt.Step)
		if err != nil {
			return err
		}
		opt.Device = func() (device.Device, error) { return d.Open(true) }
	}
	return nil
}

// rebuildReports is reproduce --from: the reports rebuilt from saved files.
func rebuildReports(ctx context.Context, fs *flag.FlagSet, ids []string, from, out string, stdout, stderr io.Writer) error {
	var measuring []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "quick" || f.Name == "workers" || f.Name == "step" || f.Name == "device" || f.Name == "force" || f.Name == "python" || f.Name == "torch-script" {
			measuring = append(measuring, "--"+f.Name)
		}
	})
	if len(measuring) > 0 {
		return cli.Usagef("--from rebuilds from saved files; %s only apply to a run that measures", strings.Join(measuring, ", "))
	}
	if st, err := os.Stat(from); err != nil || !st.IsDir() {
		return cli.Usagef("--from %s: not a directory", from)
	}
	paths, err := reproduce.Run(ctx, ids, reproduce.Options{Out: out, From: from, Progress: stderr})
	for _, p := range paths {
		fmt.Fprintf(stdout, "report: %s\n", p)
	}
	var fe *reproduce.FileError
	if errors.As(err, &fe) {
		return cli.Usagef("--from: %v", fe)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s rebuilt from %s\n", report.Plural(len(paths), "report"), from)
	return nil
}
