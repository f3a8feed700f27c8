package workloads

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/preflight"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// analyzeCommand is what headspace analyze's flags set beside the
// analysis: the pipeline's and the own loop's flags, and the files its
// report writes.
type analyzeCommand struct {
	pf              pipelineFlags
	of              ownFlags
	plot, statsJSON string
	handoff         *Handoff
}

// The bounds of analyze's own flags.
var _ = cli.Declare(map[string]cli.Bound{
	"analyze load-latency":        {Lo: 0, Hi: float64(time.Minute)},
	"analyze workers":             {Lo: 1, Hi: loader.MaxWorkers},
	"analyze num-caches":          {Lo: 1, Hi: cli.MaxBatches},
	"analyze return-caches-after": {Lo: 1, Hi: cli.MaxSteps},
	"analyze steps-after":         {Lo: 1, Hi: cli.MaxSteps},
	"analyze total-steps":         {Lo: 1, Hi: 1 << 40},
	"analyze stats-every":         {Lo: 0, Hi: float64(24 * time.Hour)},
})

// Flags are analyze's: their defaults DefaultHeadspace's (one worker per
// core, 5 caches after 30 batches, 30 cached steps, both transforms).
func (h *Headspace) Flags(fs *flag.FlagSet) {
	a := &h.Analysis
	h.cmd.pf.registerFrom(fs, a.Pipeline)
	loader.WorkersVar(fs, &a.Pipeline.Workers, "loader `workers` per stage")
	fs.Var(listFlag{"transforms", &h.Transforms, []string{transforms.Naive, transforms.Fast}}, "transforms", "comma-separated transform `implementations`, an analysis each: naive, fast")
	fs.DurationVar(&a.Pipeline.LoadLatency, "load-latency", a.Pipeline.LoadLatency, "added wait per raw sample, as remote storage would (`duration`)")
	fs.IntVar(&a.NumCaches, "num-caches", a.NumCaches, "`batches` kept from the start")
	fs.IntVar(&a.ReturnCachesAfter, "return-caches-after", a.ReturnCachesAfter, "`batches` from the loader before the caches are replayed")
	fs.IntVar(&a.StepsAfter, "steps-after", a.StepsAfter, "`steps` run on cached batches")
	fs.IntVar(&a.TotalSteps, "total-steps", a.TotalSteps, "`steps` of the whole training run, for the time saved")
	fs.StringVar(&h.cmd.plot, "plot", "", "write the step-time plot to `prefix`.png and prefix.svg (prefix-TRANSFORMS.png and .svg for more than one)")
	fs.StringVar(&h.cmd.statsJSON, "stats-json", "", "write the stage statistics as JSON to `file` ({\"format\": \"headspace-stats/1\", \"stats\": …}; FILE-TRANSFORMS.json for more than one)")
	fs.DurationVar(&a.StatsEvery, "stats-every", 0, "print stage statistics to stderr this often (`interval`; 0: only at the end)")
	h.cmd.of.register(fs)
}

// TakeCommand hands analyze -- COMMAND and --from of its file to the
// command layer (OwnLoopAnalyze, ownAnalyzeHandoff), or refuses the own
// loop's flags without a command.
func (h *Headspace) TakeCommand(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (bool, error) {
	h.cmd.handoff = nil
	from := fs.Lookup("from").Value.String()
	var err error
	switch {
	case hasCommand(fs, args):
		out := driver.Output{Path: fs.Lookup("out").Value.String(), Force: fs.Lookup("force").Value.String() == "true"}
		h.cmd.handoff, err = ownAnalyzeHandoff(fs, out, stderr)
		return true, err
	case from != "" && IsOwnLoopAnalyzeFile(from):
		if err := cli.ParseFlags(fs, args); err != nil {
			return true, err
		}
		h.cmd.handoff, err = ownAnalyzeFrom(fs, from)
		return true, err
	}
	return false, checkOwnFlags(fs, false)
}

// HandedOff is what TakeCommand handed to the command layer to run in
// the analysis's place (analyze -- COMMAND, and --from of its file), or
// nil.
func (h *Headspace) HandedOff() *Handoff { return h.cmd.handoff }

// Outputs are --plot's and --stats-json's files, one per transform where
// there are more than one.
func (h *Headspace) Outputs() ([]string, error) {
	var outs []cli.Output
	for _, impl := range h.Transforms {
		base, stats := h.files(impl, len(h.Transforms))
		outs = append(outs, cli.Figure(cli.Prefixed(base, ".png")), cli.Figure(cli.Prefixed(base, ".svg")), cli.Output{Path: stats, Kind: cli.StatsKind})
	}
	return []string{"plot", "stats-json"}, cli.CheckOutputs(outs...)
}

// files are the plot's prefix and the statistics' file of the analysis
// with transforms impl, one of n: --plot and --stats-json as given for
// one, each with "-impl" for more.
func (h *Headspace) files(impl string, n int) (plot, stats string) {
	plot = strings.TrimSuffix(strings.TrimSuffix(h.cmd.plot, ".png"), ".svg")
	stats = h.cmd.statsJSON
	if n > 1 {
		if plot != "" {
			plot += "-" + impl
		}
		if stats != "" {
			ext := filepath.Ext(stats)
			stats = strings.TrimSuffix(stats, ext) + "-" + impl + ext
		}
	}
	return plot, stats
}

// Prepare checks the analysis and opens its device's settings.
func (h *Headspace) Prepare(ctx context.Context, _, stderr io.Writer) (Setup, error) {
	s := Setup{Close: func() { h.cmd.pf.data.Close() }} // the --link, if one was started
	a := &h.Analysis
	if err := cli.NoRepeats("--transforms", h.Transforms); err != nil {
		return s, err
	}
	latency := a.Pipeline.LoadLatency
	pcfg, err := h.cmd.pf.config(ctx, a.Pipeline.Workers, h.Transforms[0])
	if err != nil {
		return s, err
	}
	pcfg.LoadLatency = latency
	a.Pipeline = pcfg
	for _, impl := range h.Transforms {
		c := *a
		c.Pipeline.Impl = impl
		if err := c.Validate(); err != nil {
			return s, cli.UsageError{Msg: err.Error()}
		}
	}
	// The caches hold NumCaches batches beside the loader's.
	if err := preflight.FitsPipeline(pcfg, 1, int64(a.NumCaches)*pcfg.BatchBytes()); err != nil {
		return s, err
	}
	if a.StatsEvery > 0 {
		a.StatsLog = stderr
	}
	dev, err := h.cmd.pf.device(ctx)
	if err != nil {
		return s, err
	}
	// The file's device is the one the analysis opened (cuda:NAME).
	name, open := "emulated", dev.Open
	if open != nil {
		dev.Open = func(pinned bool) (device.Device, error) {
			d, err := open(pinned)
			if err == nil {
				name = d.Name()
			}
			return d, err
		}
	}
	s.Env, s.Device = Env{Device: dev}, func() string { return name }
	s.Settings = append(h.Settings(), dev.Settings...)
	s.Units = len(h.Transforms) * (a.ReturnCachesAfter + a.StepsAfter)
	return s, nil
}

// Report is each analysis's report (analysis.Report.WriteText), rebuilt
// from its records and its file's settings, then its plot and its
// statistics' JSON where asked.
func (h *Headspace) Report(o HeadspaceOutcome, w io.Writer) error {
	for i, an := range o.Analyses {
		rep, err := an.report(o.Settings)
		if err != nil {
			return err
		}
		if len(o.Analyses) > 1 {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s transforms:\n", an.Transforms)
		}
		rep.WriteText(w)
		plot, stats := h.files(an.Transforms, len(o.Analyses))
		if err := writeAnalysisFiles(w, rep, plot, plot != "", stats); err != nil {
			return err
		}
	}
	return nil
}

// writeAnalysisFiles writes the step-time plot as base.png and base.svg
// (if asked) and the stage statistics as JSON to statsJSON (if named).
func writeAnalysisFiles(stdout io.Writer, rep analysis.Report, base string, plot bool, statsJSON string) error {
	if plot {
		if err := rep.SaveBoth(stdout, base); err != nil {
			return err
		}
	}
	if statsJSON == "" {
		return nil
	}
	b, err := json.MarshalIndent(struct {
		Format string `json:"format"`
		Stats  any    `json:"stats"`
	}{"headspace-stats/1", rep.Stats}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteKindBytes(statsJSON, cli.StatsKind, append(b, '\n'))
}
