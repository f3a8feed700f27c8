package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/command"
	"github.com/headspace-bench/headspace/harness/analysis"
	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// Command is headspace analyze.
func (Headspace) Command() cli.Command {
	return cli.Command{Name: "analyze", Summary: "headspace analysis: step time with the loader, then with cached batches", Runs: []string{"Headspace"}, Run: runAnalyze}
}

const analyzeUsage = `
Runs the training loop with its loader wrapped in a cache, as SPDL's
CacheDataLoader does: the first --num-caches batches are kept, and after
--return-caches-after batches the loop is fed from the cache. It reports the
median step time before and after the switch with 95% confidence intervals,
the headspace in ms and %, the training time saved over --total-steps, the
stage that bounds throughput and how input-bound the run is; it writes a
plot of step time over iterations (--plot: PNG and SVG), every step in Go
benchmark format (--out, as BenchmarkHeadspace/transforms=…/phase=fill|loader|switch|cached, with the stages' statistics), and
the pipeline's stage statistics as JSON (--stats-json).

With a training command after --, as in

    headspace analyze --out results/train.txt -- python3 train.py --epochs 1

it runs that command, unmodified, under headspace's hook (a stdlib-only
Python module carried by the binary, written to a temporary directory and
removed after; docs/own-loop.md): the first DataLoader the script iterates
in its main thread (--loader picks another; one whose steps train nothing
gives way to one whose steps do) is wrapped in the same cache,
every step is timed batch to batch with the loop's wait, the dataset's
__getitem__ (its .loader and .transform where it has them) and collate are
timed in the workers (wall and CPU time), pin-memory in the main process,
and the command and all its workers are stopped once the steps are in.
The step times are medians of means over rounds of the loader's workers. The records are
BenchmarkHeadspace/script=NAME/phase=…, with the command, interpreter and
torch versions among the settings. A command that is not Python, that
never iterates a DataLoader within --first-batch-timeout, whose loop asks
for no batch for --stall-timeout, or that ends before the steps are in
exits 2 (--partial keeps what it got); a script that raises shows its
traceback and exits 1. The command's stdin is /dev/null.

A command whose ranks are processes — torchrun --nproc_per_node N
train.py, python -m torch.distributed.run, accelerate launch --multi_gpu,
srun --ntasks N python train.py, or a script that starts its ranks with
torch.multiprocessing.spawn — has every rank measured, on one node: all switch to cached batches at the same step, the records carry
rank=R, and the report gives the node's answer (the slowest rank and the
spread, the verdict and the stage in the way, what it would take from the
model of whatif --accelerators) in BenchmarkHeadspaceNode. A rank that
raises is named (exit 1); ranks that make no step for
--first-batch-timeout are stopped, the rank that hangs named (exit 1);
other launchers and ranks on more than one node exit 2.

--data DIR reads a dataset on disk (headspace dataset write, an ImageFolder
or WebDataset shards; docs/real-data.md): the load stage
becomes fetch then decode, each with its statistics; --page-cache and
--max-failures as in headspace ladder.`

func runAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("analyze", analyzeUsage, stdout)
	var pf pipelineFlags
	pf.register(fs)
	workers := fs.Int("workers", 4, "loader `workers` per stage")
	impl := fs.String("transforms", "naive", "transform `implementation`: naive or fast")
	latency := fs.Duration("load-latency", 0, "added wait per raw sample, as remote storage would (`duration`)")
	numCaches := fs.Int("num-caches", 10, "`batches` kept from the start")
	after := fs.Int("return-caches-after", 100, "`batches` from the loader before the caches are replayed")
	stepsAfter := fs.Int("steps-after", 100, "`steps` run on cached batches")
	total := fs.Int("total-steps", 200000, "`steps` of the whole training run, for the time saved")
	plotPath := fs.String("plot", "", "write the step-time plot to `prefix`.png and prefix.svg")
	out := fs.String("out", "", "benchmark-format `file` of every step's time")
	statsJSON := fs.String("stats-json", "", "write the stage statistics as JSON to `file` ({\"format\": \"headspace-stats/1\", \"stats\": …})")
	force := fs.Bool("force", false, "let --out replace a results file holding more results")
	every := fs.Duration("stats-every", 0, "print stage statistics to stderr this often (`interval`; 0: only at the end)")
	var of ownFlags
	of.register(fs)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if hasCommand(fs, args) {
		return runOwnAnalyze(ctx, fs, &of, ownAnalyzeFlags{numCaches: *numCaches, after: *after, stepsAfter: *stepsAfter, total: *total,
			out: *out, plot: *plotPath, force: *force}, stdout, stderr)
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if err := checkOwnFlags(fs, false); err != nil {
		return err
	}
	defer pf.data.Close() // the --link, if one was started
	// The numeric flags' ranges are the bounds table's, checked as they
	// are parsed.
	if _, err := cli.ParseList("--transforms", *impl, []string{"naive", "fast"}); err != nil {
		return err
	}
	pcfg, err := pf.config(ctx, *workers, *impl)
	if err != nil {
		return err
	}
	pcfg.LoadLatency = *latency
	cfg := analysis.Config{Pipeline: pcfg, NumCaches: *numCaches, ReturnCachesAfter: *after, StepsAfter: *stepsAfter, TotalSteps: *total, Skip: 1}
	if err := cfg.Validate(); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	// The caches hold NumCaches batches beside the loader's.
	if err := command.FitsPipeline(pcfg, 1, int64(*numCaches)*pcfg.BatchBytes()); err != nil {
		return err
	}
	plotBase := strings.TrimSuffix(strings.TrimSuffix(*plotPath, ".png"), ".svg")
	if err := cli.CheckOutputs(cli.Figure(cli.Prefixed(plotBase, ".png")), cli.Figure(cli.Prefixed(plotBase, ".svg")), cli.Output{Path: *statsJSON, Kind: cli.StatsKind}); err != nil {
		return err
	}
	// The progress line counts steps; the records come whole at the end,
	// and an interrupted analysis keeps nothing: no report without both
	// phases.
	h := Headspace{Analysis: cfg, Transforms: []string{*impl}}
	var rep analysis.Report
	var dev Device
	settings := func() []resultfile.Config { return driver.Settings(rep.Device, h.Settings(), dev.Settings) }
	o, err := driver.Run(ctx, driver.Job{Units: *after + *stepsAfter, Progress: stderr, Settings: settings,
		Measure: func(ctx context.Context, hooks *driver.Hooks) ([]*benchfmt.Result, error) {
			var err error
			if dev, err = pf.device(ctx); err != nil {
				return nil, err
			}
			h.Analysis.OnStep = func(int, time.Duration) { hooks.Tick() }
			if *every > 0 {
				h.Analysis.StatsEvery, h.Analysis.StatsLog = *every, stderr
			}
			o, err := h.Measure(ctx, Env{Device: dev})
			hooks.Finish()
			if err != nil {
				return nil, err
			}
			rep = o.Analyses[0].Report
			rep.WriteText(stdout)
			return h.Codec().Encode(o), writeAnalysisFiles(stdout, rep, plotBase, *plotPath != "", *statsJSON)
		}}, driver.Output{Path: *out, Benchmarks: analysis.Benchmarks, Force: *force, Beside: true})
	if err != nil || *out == "" {
		return err
	}
	cli.KeptNote(stdout, *out, o.Path)
	fmt.Fprintf(stdout, "results: %s (go tool benchstat -col /phase %s)\n", o.Path, o.Path)
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
