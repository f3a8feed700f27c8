package workloads

import (
	"context"
	"fmt"
	"io"
	"slices"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"github.com/headspace-bench/headspace/internal/cli"
)

// PeerRemote is `headspace peer --remote`: our loader over data in a
// bucket (--data s3://…) beside the boto3 peer (peer.RemoteScript), on
// the same objects on the pinned S3 server on 127.0.0.1, through one
// emulated link, each layout (an ImageFolder, tar shards) at each worker
// count, alternating in one run (docs/remote.md).
type PeerRemote struct {
	// Python runs Script, the peer (peer.RemoteScript, from the
	// repository's root, unless given).
	Python, Script string
	// Job is both sides' settings (its Bucket is set once the server
	// runs).
	Job              peer.Settings
	Layouts          []string
	Workers          []int
	Impls            []string // of Naive, Fast, Torch; nil: Fast and Torch
	Count            int      // rounds
	ShardSize        int      // images per tar shard
	Link             link.Config
	FetchConcurrency int // our fetch stage's requests in flight
	// Command is the command line, for the file and the report.
	Command string
	// Log, if set, receives the line that says what is being set up.
	Log io.Writer
	// ReportPath is the Markdown report's file, where not "" (Report).
	ReportPath string
	// cmd is what the command's flags set beside these.
	cmd peerRemoteCommand
}

// DefaultPeerRemote compares at 1, 4 and 16 workers on 256×256 natural
// JPEGs cropped to 128, in batches of 32, one round, through the
// cross-region link: peer --remote's defaults.
func DefaultPeerRemote() PeerRemote {
	lc, err := link.Parse("cross-region")
	if err != nil {
		panic(err) // a preset
	}
	return PeerRemote{Python: PeerPython, Script: peer.RemoteScript,
		Job:     peer.Settings{Width: 256, Height: 256, Crop: 128, Batch: 32, Batches: 6, Seed: 1, Decoder: ondisk.DecoderGo, ShardReads: ondisk.ShardReadsWhole, Link: lc.Settings()},
		Layouts: peer.RemoteLayouts, Workers: []int{1, 4, 16}, Count: 1, ShardSize: 8, Link: lc, FetchConcurrency: bucket.DefaultConcurrency,
		Command: "headspace peer --remote"}
}

// QuickPeerRemote is one worker on tiny images, through an unlimited
// link.
func QuickPeerRemote() PeerRemote {
	r := DefaultPeerRemote()
	r.Job.Width, r.Job.Height, r.Job.Crop, r.Job.Batch, r.Job.Batches = 64, 64, 32, 4, 3
	r.Workers = []int{1}
	r.Link = link.Config{}
	r.Job.Link = r.Link.Settings()
	return r
}

// Name is "PeerRemote": BenchmarkPeerRemote/layout=…/impl=…/workers=….
func (PeerRemote) Name() string { return "PeerRemote" }

// Document is "003": its pipeline, in PyTorch, on data in a bucket.
func (PeerRemote) Document() string { return "003" }

// Settings are the file's lines known before the run: those of
// peer.RemoteSettings with no bucket yet and no layout's cost. A run's
// file records the lines of the run (PeerRemoteOutcome.Config): with
// the bucket's, the costs measured and the peer's versions.
func (r PeerRemote) Settings() []resultfile.Config {
	c := peer.RemoteConfig{Settings: r.Job, Layouts: r.Layouts, Workers: r.Workers, Impls: r.Impls, Count: r.Count}
	return peer.RemoteSettings(c, r.ShardSize, nil, "", r.Command)
}

// PeerRemoteOutcome is what peer --remote measured: the runs, with the
// peer's own lines, and the report they make. Measure makes both;
// Decode reads the runs back, and the report from the file's lines
// (records read alone, not from a file, leave it zero).
type PeerRemoteOutcome struct {
	Result peer.RemoteResult
	Report peer.RemoteReport
	// Config are the file's configuration lines: the run's settings
	// (peer.RemoteSettings), then the peer's own lines (its versions).
	Config []resultfile.Config
}

// Measure is MeasureEach, each run's line on Log where it is set; a
// command's run keeps the file's lines the run made.
func (r PeerRemote) Measure(ctx context.Context, env Env) (PeerRemoteOutcome, error) {
	var each func(peer.RemoteMeasurement)
	if r.Log != nil {
		each = func(m peer.RemoteMeasurement) { logRemote(r.Log, m) }
	}
	o, err := r.MeasureEach(ctx, env, each)
	if r.cmd.lines != nil {
		*r.cmd.lines = o.Config
	}
	return o, err
}

// MeasureEach writes the images, starts the S3 server and the link and
// uploads both layouts (peer.StartRemote), then runs the comparison
// (peer.RemoteSweep), passing each run to each (if not nil) as it ends.
// It returns what it measured, also before an error.
func (r PeerRemote) MeasureEach(ctx context.Context, env Env, each func(peer.RemoteMeasurement)) (PeerRemoteOutcome, error) {
	var o PeerRemoteOutcome
	p := peer.Peer{Python: r.Python, Script: r.Script}
	if slices.Contains(r.impls(), peer.Torch) {
		if err := p.Check(ctx); err != nil {
			return o, withHint(err, peerRemoteHint)
		}
	}
	host := machine.Describe()
	s := r.Job
	n := s.Batch * s.Batches
	src := datasets.Synthetic{Width: s.Width, Height: s.Height, Classes: 10, N: n, Seed: s.Seed, Content: datasets.ContentNatural}
	if r.Log != nil {
		fmt.Fprintf(r.Log, "peer --remote: writing %d natural %dx%d JPEGs, starting the S3 server and the %s link, uploading…\n", n, s.Width, s.Height, r.Link.PresetName())
	}
	env.start(r.Name())
	rb, err := peer.StartRemote(ctx, src, r.ShardSize, r.Link)
	if err != nil {
		return o, err
	}
	defer rb.Close()
	// StartRemote put the server's credentials in this process's
	// environment for ours; ours reaches the server through the link.
	p.Env = rb.Env()
	s.Bucket = bucket.Options{Endpoint: rb.Link.URL(), Concurrency: r.FetchConcurrency}
	c := peer.RemoteConfig{Peer: p, Settings: s, Data: rb.URLs, Layouts: r.Layouts, Workers: r.Workers, Impls: r.Impls, Count: r.Count}
	o.Result, err = peer.RemoteSweep(ctx, c, each)
	o.Report = peer.RemoteReport{
		Machine: host, PeerConfig: o.Result.PeerConfig, Command: r.Command, Settings: s, Samples: n,
		ShardSize: r.ShardSize, Count: r.Count, Link: r.Link, FetchConcurrency: r.FetchConcurrency, Costs: rb.Costs,
		Rows: peer.SummarizeRemote(o.Result.Measurements, rb.Costs, r.Link),
	}
	o.Config = peer.FileConfig(peer.RemoteSettings(c, r.ShardSize, rb.Costs, host.Distro, r.Command), o.Result.PeerConfig)
	return o, err
}

// impls are the implementations the sweep runs.
func (r PeerRemote) impls() []string {
	if r.Impls == nil {
		return []string{peer.Fast, peer.Torch}
	}
	return r.Impls
}

// Run runs the comparison (Measure) and returns its records
// (PeerRemoteCodec).
func (r PeerRemote) Run(ctx context.Context, env Env) ([]*benchfmt.Result, error) {
	return RunTyped[PeerRemoteOutcome](ctx, r, env)
}

// Codec is PeerRemoteCodec.
func (PeerRemote) Codec() Codec[PeerRemoteOutcome] { return PeerRemoteCodec }

var _ Typed[PeerRemoteOutcome] = PeerRemote{}

// Report prints o's Markdown report and writes it to ReportPath, if set:
// the same after a run and from its file (peer --from).
func (r PeerRemote) Report(o PeerRemoteOutcome, stdout io.Writer) error {
	if o.Report.Command == "" {
		return cli.Usagef("peer --remote: no report to write: no configuration lines (headspace peer --remote --out records them)")
	}
	if err := peer.WriteRemoteMarkdown(stdout, o.Report); err != nil {
		return err
	}
	if r.ReportPath == "" {
		return nil
	}
	if err := atomicfile.WriteKind(r.ReportPath, peer.ReportKind, func(w io.Writer) error { return peer.WriteRemoteMarkdown(w, o.Report) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", r.ReportPath)
	return nil
}

// PeerRemoteCodec is a PeerRemote's records codec: a record a run, in
// the order they ran, BenchmarkPeerRemote/layout=…/impl=…/workers=…
// with ttfb-ns, samples/s and cpu-s (peer.RemoteMeasurement.Benchmark).
// A run of a layout not in peer.RemoteLayouts or an implementation not
// in peer.Impls, of fewer than 2 batches or with a figure negative or
// not finite, does not decode. The report is read back from the file's
// configuration lines (peer.RemoteReportOf), where the records have them.
var PeerRemoteCodec = Codec[PeerRemoteOutcome]{
	Experiment: peer.RemoteLayout.Owner,
	Keys:       peer.RemoteLayout.Keys,
	encode: func(o PeerRemoteOutcome) []*benchfmt.Result {
		return recordsOf(o.Result.Measurements, peer.RemoteMeasurement.Benchmark)
	},
	decode: func(recs []Record) (PeerRemoteOutcome, error) {
		var o PeerRemoteOutcome
		ms, err := decodeEach(recs, func(rec Record) (peer.RemoteMeasurement, error) {
			m, err := peer.RemoteMeasurementOf(rec.name(), rec.Result)
			return m, atLine(rec.Result, err)
		})
		o.Result.Measurements = ms
		if err != nil {
			return o, err
		}
		if o.Config = fileSettings(recs[0].Result); len(o.Config) > 0 {
			o.Report, err = peer.RemoteReportOf(filePart(recs[0].Result), o.Config, ms)
			o.Result.PeerConfig = o.Report.PeerConfig
		}
		return o, err
	},
}

// decodePeerRun is a peer comparison's run of rec (peer.MeasurementOf,
// as the script's lines decode).
func decodePeerRun(rec Record) (peer.Measurement, error) {
	m, err := peer.MeasurementOf(rec.name(), rec.Result)
	return m, atLine(rec.Result, err)
}

// peerRemoteHint is what to do when the boto3 peer cannot run.
const peerRemoteHint = "run `make peer`, which installs python3-torch, python3-torchvision, python3-scipy, python3-pil and python3-boto3 (apt-get)"
