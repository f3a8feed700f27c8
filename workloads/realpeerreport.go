package workloads

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/preflight"
	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/internal/disturb"
)

// Flags are peer --peers's: --peers picks the peers (and the mode), the
// rest the job, bound to e's fields, the registry's Default size their
// defaults.
func (e *RealPeer) Flags(fs *flag.FlagSet) {
	// --peers picks the mode: its default, every peer reading files, is
	// not shown as the flag's.
	peers := e.Peers
	e.Peers = nil
	defer func() { e.Peers = peers }()
	fs.Var(peersFlag{&e.Peers}, "peers", "compare with the real `peers`, comma-separated, all (those reading files) or all-bucket: "+strings.Join(realpeer.Names(), ", "))
	fs.StringVar(&e.Python, "python", e.Python, "the peers env's python `interpreter` (by default the one make peers-env made)")
	loader.WorkersListVar(fs, &e.Workers, "comma-separated worker `counts`")
	fs.Var(sizeFlag{"raw-size", &e.Width, &e.Height}, "raw-size", "the JPEGs' `size`, N or WxH")
	fs.IntVar(&e.Job.Crop, "crop", e.Job.Crop, "random crop `side`")
	fs.IntVar(&e.Job.Batch, "batch", e.Job.Batch, "samples per `batch`")
	fs.IntVar(&e.Job.Batches, "batches", e.Job.Batches, "`batches` per run, at least 2 (the first is the time to first batch)")
	fs.Uint64Var(&e.Job.Seed, "seed", e.Job.Seed, "dataset and transform `seed`")
	fs.IntVar(&e.Count, "count", e.Count, "`rounds`: runs of ours and every peer at every worker count")
	fs.Var(givenInt{&e.Quality, &e.qualityGiven}, "jpeg-quality", "with --peers or --spdl-cache: the JPEGs' `quality`")
	fs.StringVar(&e.report, "report", "", "Markdown report `file`, e.g. docs/peers.md")
	fs.StringVar(&e.plot, "plot", "", "write `base`.png and base.svg, samples/s by peer and workers")
}

// Outputs are --report and --plot's two files, their folders made.
func (e *RealPeer) Outputs() ([]string, error) {
	if err := mkdirs(e.report, e.plot); err != nil {
		return nil, err
	}
	return []string{"report", "plot"}, cli.CheckOutputs(realPeersOutputs(e.report, e.plot)...)
}

// Invoked keeps --from's file for Report's errors.
func (e *RealPeer) Invoked(_, from string) { e.from = from }

// Prepare checks the comparison and every peer's packages (their
// versions go into the file), waits for a quiet machine, and has the
// file's lines asked for once the run has ended: what the run made
// (its images', ours's, the limit's, the missing runs').
func (e *RealPeer) Prepare(ctx context.Context, _, stderr io.Writer) (Setup, error) {
	if err := e.check(e.qualityGiven); err != nil {
		return Setup{}, err
	}
	if e.Python == "" {
		return Setup{}, cli.Usagef("--peers: no peers environment found: %s", realpeer.InstallHint)
	}
	peerConfig, err := checkRealPeers(ctx, *e)
	if err != nil {
		return Setup{}, err
	}
	busy, err := waitQuiet(ctx, stderr)
	if err != nil {
		return Setup{}, err
	}
	distro := resultfile.Config{Key: "distro", Value: machine.Describe().Distro}
	e.run = &realPeerRun{log: stderr}
	return Setup{Device: func() string { return "none" }, CommandLine: true, Lines: func() []resultfile.Config {
		return slices.Concat(busy, []resultfile.Config{distro}, e.Settings(), e.run.lines, peerConfig, realpeer.MissingConfig(e.run.runs))
	}}, nil
}

// check refuses a comparison e that cannot run: a count, batch, crop or
// quality out of bounds, more images than a folder holds, a quality
// given (qualityGiven) to the bucket peers.
func (e RealPeer) check(qualityGiven bool) error {
	s := e.Job
	if err := cli.FirstErr(cli.InRange("--count", e.Count, 1, cli.MaxCount), cli.InRange("--batches", s.Batches, 2, 10_000),
		cli.InRange("--batch", s.Batch, 1, 4096), cli.InRange("--jpeg-quality", e.Quality, 1, 100)); err != nil {
		return err
	}
	for _, n := range e.Workers {
		if err := cli.InRange("--workers", n, 1, loader.MaxWorkers); err != nil {
			return err
		}
	}
	if s.Batch*s.Batches > ondisk.MaxCount {
		return cli.Usagef("--batch %d x --batches %d: at most %d images", s.Batch, s.Batches, ondisk.MaxCount)
	}
	if s.Crop <= 0 || s.Crop%2 != 0 || s.Crop > e.Width || s.Crop > e.Height {
		return cli.Usagef("--crop %d must be positive, even and fit the %dx%d images", s.Crop, e.Width, e.Height)
	}
	if e.Peers[0].Bucket && qualityGiven {
		return cli.Usagef("--jpeg-quality does not apply to the bucket peers (the images are uploaded at quality 90)")
	}
	return nil
}

// checkRealPeers is the check before anything runs: each peer's packages
// in the env's status file, then its script's --check (which imports
// them and prints its versions and settings, returned). A peer that
// cannot run is a usage error naming it and how to install it.
func checkRealPeers(ctx context.Context, e RealPeer) ([]resultfile.Config, error) {
	st, ok, err := realpeer.ReadStatus(e.Python)
	if err != nil {
		return nil, err
	}
	runner := realpeer.Runner{Python: e.Python, Dir: realpeer.ScriptDir}
	var config []resultfile.Config
	for _, p := range e.Peers {
		if ok {
			if line := st.Unavailable(p); line != "" {
				return nil, cli.Usagef("%s: %s", line, realpeer.InstallHint)
			}
		}
		o, err := runner.Probe(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, cli.Usagef("%v: %s", err, realpeer.InstallHint)
		}
		for _, c := range o.Config {
			if c.Key == "python" {
				c.Key = "peers-python"
			}
			config = append(config, c)
		}
	}
	if _, err := turbojpeg.Load(); err != nil {
		return nil, fmt.Errorf("ours decodes with libjpeg-turbo: %w", err)
	}
	return dedupe(config), nil
}

// dedupe keeps the first line of each key.
func dedupe(cs []resultfile.Config) []resultfile.Config {
	seen := map[string]bool{}
	var out []resultfile.Config
	for _, c := range cs {
		if !seen[c.Key] {
			seen[c.Key] = true
			out = append(out, c)
		}
	}
	return out
}

// waitQuiet waits (at most $HEADSPACE_QUIET_WAIT, 10 s) for a quiet
// machine; a busy one is measured all the same, said on stderr, and the
// result file says so: the line returned.
func waitQuiet(ctx context.Context, stderr io.Writer) ([]resultfile.Config, error) {
	q, err := disturb.WaitQuiet(ctx, disturb.Quiet{Max: preflight.DefaultQuietWait()})
	if err != nil || !q.Busy {
		return nil, err
	}
	fmt.Fprintf(stderr, "headspace: the machine did not get quiet (%s): measuring anyway; the result file says so\n", q)
	return []resultfile.Config{{Key: resultfile.BusyKey, Value: q.String()}}, nil
}

// realPeersOutputs are the report and the plot's two files, for the
// output policy.
func realPeersOutputs(report, plot string) []cli.Output {
	return []cli.Output{{Path: report, Kind: peer.ReportKind}, cli.Figure(cli.Prefixed(plot, ".png")), cli.Figure(cli.Prefixed(plot, ".svg"))}
}

// writeRealPeersReport prints r's table, writes its Markdown to report
// and its plot to plot's .png and .svg, each if set.
func writeRealPeersReport(stdout io.Writer, r realpeer.Report, report, plot string) error {
	if err := r.WriteText(stdout); err != nil {
		return err
	}
	if plot != "" {
		paths, err := r.Plot(plot)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", strings.Join(paths, ", "))
	}
	if report == "" {
		return nil
	}
	if err := atomicfile.WriteKind(report, peer.ReportKind, r.WriteMarkdown); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", report)
	return nil
}

// peersFlag is --peers, the real peers' names (realpeer.ParseNames).
type peersFlag struct{ p *[]realpeer.Peer }

func (f peersFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strings.Join(namesOf(*f.p), ",")
}

func (f peersFlag) Set(s string) (err error) {
	if *f.p, err = realpeer.ParseNames(s); err != nil {
		return cli.Usagef("--peers: %v", err)
	}
	return nil
}
