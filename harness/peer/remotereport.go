package peer

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/report"

	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// RemoteReport is everything WriteRemoteMarkdown writes.
type RemoteReport struct {
	Machine    machine.Machine
	PeerConfig []resultfile.Config // the peer's versions
	Command    string
	Settings   Settings // raw size, crop, batch, batches, seed, decoder
	Samples    int      // images in the dataset
	ShardSize  int
	Count      int // rounds
	Link       link.Config
	// FetchConcurrency is our fetch stage's requests in flight.
	FetchConcurrency int
	Costs            map[string]LayoutCost
	Rows             []RemoteRow
}

// RemoteReportKeys are the configuration lines RemoteReportOf needs;
// headspace peer --remote --out records them.
var RemoteReportKeys = []string{"cpu", "cores", "distro", "go", "commit", "command", "raw-size", "crop", "batch",
	"batches", "seed", "rounds", "samples", "shard-size", "fetch-concurrency", "link",
	"imagefolder-bytes-per-sample", "imagefolder-requests-per-sample", "shards-bytes-per-sample", "shards-requests-per-sample"}

// CostSettings are the layouts' costs as configuration lines.
func CostSettings(costs map[string]LayoutCost) []resultfile.Config {
	var out []resultfile.Config
	for _, l := range RemoteLayouts {
		c := costs[l]
		out = append(out,
			resultfile.Config{Key: l + "-bytes-per-sample", Value: strconv.FormatFloat(c.BytesPerSample, 'g', -1, 64)},
			resultfile.Config{Key: l + "-requests-per-sample", Value: strconv.FormatFloat(c.RequestsPerSample, 'g', -1, 64)})
	}
	return out
}

// RemoteReportOf rebuilds, from a results file's configuration lines
// (config, in order) and its runs (ms, decoded by the caller through
// workloads.PeerRemoteCodec), the report the run that wrote the file
// wrote, measuring nothing (RemoteReportKeys). path names the file in
// errors.
func RemoteReportOf(path string, config []resultfile.Config, ms []RemoteMeasurement) (RemoteReport, error) {
	o := RemoteOutput{Config: config, Results: ms}
	get, err := configLines(o.Config, RemoteReportKeys, path, "headspace peer --remote --out records them")
	if err != nil {
		return RemoteReport{}, err
	}
	r := RemoteReport{PeerConfig: o.Config, Command: get["command"], Costs: map[string]LayoutCost{}}
	r.Machine, r.Settings, err = readSettings(path, get, intLine{"rounds", &r.Count}, intLine{"samples", &r.Samples},
		intLine{"shard-size", &r.ShardSize}, intLine{"fetch-concurrency", &r.FetchConcurrency})
	if err != nil {
		return RemoteReport{}, err
	}
	r.Settings.ShardReads = get["shard-reads"] // set only when whole
	// The link, from its link-<key> lines (link.Config.Settings).
	var spec []string
	for _, c := range o.Config {
		if k, ok := strings.CutPrefix(c.Key, "link-"); ok {
			spec = append(spec, k+"="+c.Value)
		}
	}
	if r.Link, err = link.Parse(strings.Join(spec, ",")); err != nil {
		return RemoteReport{}, fmt.Errorf("%s: the link's lines: %v", path, err)
	}
	for _, l := range RemoteLayouts {
		b, err1 := strconv.ParseFloat(get[l+"-bytes-per-sample"], 64)
		q, err2 := strconv.ParseFloat(get[l+"-requests-per-sample"], 64)
		if err1 != nil || err2 != nil || b < 0 || q < 0 {
			return RemoteReport{}, fmt.Errorf("%s: %s's bytes or requests per sample do not parse", path, l)
		}
		r.Costs[l] = LayoutCost{BytesPerSample: b, RequestsPerSample: q}
	}
	r.Rows = SummarizeRemote(o.Results, r.Costs, r.Link)
	return r, nil
}

// WriteRemoteMarkdown writes the report: machine, command, settings and
// link, the table per layout with ratios to the peer, the target and the
// concurrency at which each side reaches the link's ceiling.
func WriteRemoteMarkdown(w io.Writer, r RemoteReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# The boto3 peer: data from a bucket\n\n")
	fmt.Fprintf(&b, "Our loader over `--data s3://…` against what a PyTorch user writes with boto3\n"+
		"(`%s`), on the same objects, on the same S3 server (versitygw on 127.0.0.1), through\n"+
		"the same emulated link, alternated in one run. Written by `headspace peer --remote`.\n\n", RemoteScript)
	r.writeMachine(&b)
	fmt.Fprintf(&b, "## Command\n\n```sh\n%s\n```\n\n", r.Command)
	r.writeSettings(&b)
	r.writeResults(&b)
	r.writeLinkLimit(&b)
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// writeMachine writes the remote report's Machine section, with the
// peer's Python, PyTorch and boto3 versions.
func (r RemoteReport) writeMachine(b *strings.Builder) {
	get := Output{Config: r.PeerConfig}.cell
	fmt.Fprintf(b, "## Machine\n\n%s\n", machineTable(r.Machine, [2]string{"Python", get("python")},
		[2]string{"PyTorch", fmt.Sprintf("torch %s, torchvision %s, Pillow %s", get("torch"), get("torchvision"), get("pillow"))},
		[2]string{"boto3", fmt.Sprintf("boto3 %s, botocore %s", get("boto3"), get("botocore"))}))
}

// writeSettings writes the remote report's Settings section: the data
// and its layouts, the link, how each side reads, the rounds and the
// ceiling.
func (r RemoteReport) writeSettings(b *strings.Builder) {
	get := Output{Config: r.PeerConfig}.cell
	s := r.Settings
	fmt.Fprintf(b, "## Settings\n\n")
	fmt.Fprintf(b, "- %d natural %d×%d JPEGs, uploaded once as an ImageFolder (one object per image, %.0f bytes a sample)\n"+
		"  and as tar shards of %d (%.0f bytes a sample); both sides decode them (ours with `%s`, the peer with PIL),\n"+
		"  run the document's transforms (ours `fast`, the peer the document's torchvision code) on a %d crop,\n"+
		"  batches of %d, %d batches a run (the shards: every shard once, %d samples).\n",
		r.Samples, s.Width, s.Height, r.Costs[ImageFolder].BytesPerSample, r.ShardSize, r.Costs[Shards].BytesPerSample,
		cmp.Or(s.Decoder, "go"), s.Crop, s.Batch, s.Batches, r.Samples)
	fmt.Fprintf(b, "- Link: `%s` (%s): round trip %v ± %v, %s shared, %s per connection, %s requests/s.\n",
		r.Link.PresetName(), r.Link.String(), r.Link.Latency, r.Link.Jitter, link.FormatBandwidth(r.Link.Bandwidth),
		link.FormatBandwidth(r.Link.ConnBandwidth), formatRate(r.Link.RequestRate))
	fmt.Fprintf(b, "- The peer: ImageFolder, a map-style Dataset, one `get_object` per sample; shards, an\n"+
		"  IterableDataset streaming each shard with one `get_object` through `tarfile` (mode `r|`), shards split\n"+
		"  across workers. A DataLoader with `num_workers` = workers (prefetch_factor %s, start method %s):\n"+
		"  its requests in flight are its workers.\n", get("prefetch-factor"), get("start-method"))
	members := "one ranged GET per shard member"
	if s.ShardReads == ondisk.ShardReadsWhole {
		members = "one GET per shard, its members served from memory (`--shard-reads whole`)"
	}
	fmt.Fprintf(b, "- Ours: `workers` goroutines per stage, and %d fetch goroutines whatever the workers\n"+
		"  (`--fetch-concurrency`): one GET per image, %s.\n", r.FetchConcurrency, members)
	fmt.Fprintf(b, "- %s, each implementation once per layout and worker count, back to back, the order\n"+
		"  rotated; the table gives medians. samples/s: after the first batch; TTFB: to the first batch.\n"+
		"- Ceiling: the most samples/s the link lets through for the layout (its bandwidth over the bytes a\n"+
		"  sample costs, its request rate over the requests); \"reaches\" is %.0f%% of it.\n\n",
		report.Plural(max(r.Count, 1), "round"), ReachedShare*100)
}

// writeResults writes the remote report's Results table: a row per
// layout, worker count and implementation, with its ratio to the peer,
// the target and its share of the link's ceiling.
func (r RemoteReport) writeResults(b *strings.Builder) {
	fmt.Fprintf(b, "## Results\n\n")
	t := report.NewTable("lrlrrrrlr", "layout", "workers", "implementation", "samples/s", "TTFB (s)", "CPU (s)", "÷ peer", fmt.Sprintf("target ≥ %g×", RemoteTarget.Min), "of ceiling")
	for _, row := range r.Rows {
		speed, met := "—", ""
		if row.Speedup > 0 {
			speed = ratio(row.Speedup)
		}
		if m, ok := row.Met(); ok {
			met = yesNo(m)
		}
		share := "—"
		if sh := row.Share(); sh > 0 {
			share = fmt.Sprintf("%.1f%%", sh*100)
		}
		t.Add(fmt.Sprint(row.Layout), fmt.Sprint(row.Workers), implName(row.Impl), fmt.Sprintf("%.1f", row.SamplesPerSec), fmt.Sprintf("%.3f", row.TTFB.Seconds()),
			fmt.Sprintf("%.2f", row.CPU.Seconds()), speed, met, share)
	}
	b.WriteString(t.String())
}

// writeLinkLimit writes the remote report's section on the link's limit:
// for each layout measured, its ceiling and the worker count at which
// each implementation reaches it.
func (r RemoteReport) writeLinkLimit(b *strings.Builder) {
	b.WriteString("\n## The link's limit\n\n")
	for _, l := range RemoteLayouts {
		var impls []string
		for _, row := range r.Rows {
			if row.Layout == l && !slices.Contains(impls, row.Impl) {
				impls = append(impls, row.Impl)
			}
		}
		if len(impls) == 0 {
			continue
		}
		ceil := r.Costs[l].Ceiling(r.Link)
		if math.IsInf(ceil, 1) {
			fmt.Fprintf(b, "- %s: the link sets no ceiling (no bandwidth or request-rate cap).\n", l)
			continue
		}
		var parts []string
		for _, impl := range impls {
			parts = append(parts, r.reaching(l, impl))
		}
		fmt.Fprintf(b, "- %s (ceiling %.0f samples/s): %s.\n", l, ceil, strings.Join(parts, "; "))
	}
}

// reaching says at which worker count impl reaches the link's ceiling on
// layout l, or the largest share of it that impl reached.
func (r RemoteReport) reaching(l, impl string) string {
	if n, ok := Reached(r.Rows, l, impl); ok {
		return fmt.Sprintf("%s reaches it at %s", implName(impl), report.Plural(n, "worker"))
	}
	best := 0.0
	for _, row := range r.Rows {
		if row.Layout == l && row.Impl == impl {
			best = max(best, row.Share())
		}
	}
	return fmt.Sprintf("%s does not reach it at any worker count measured (at most %.1f%%)", implName(impl), best*100)
}

// implName names an implementation in the remote report.
func implName(impl string) string {
	if impl == Torch {
		return "torch + boto3"
	}
	return "ours (" + impl + ")"
}

// formatRate writes a request rate as link does.
func formatRate(r float64) string {
	if r == 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// RemoteSettings are the result-file settings of comparison c on data in
// a bucket (headspace peer --remote --out), after the machine's (the
// driver's, driver.Settings): our pipeline's on the shards less what
// each benchmark's name holds or the layouts do not share, the run's
// sizes, the layouts' costs, then the distribution and the command line.
func RemoteSettings(c RemoteConfig, shardSize int, costs map[string]LayoutCost, distro, command string) []resultfile.Config {
	s := c.Settings
	s.Data = c.Data[Shards]
	var env []resultfile.Config
	for _, kv := range s.Pipeline(Fast, 1).Settings() {
		// The layout is in each benchmark's name; the rest is both layouts'.
		if !slices.Contains([]string{"data-layout", "data-manifest-sha256", "data-image-sizes", "data-resize", "data-unreadable", "page-cache", "samples"}, kv.Key) {
			env = append(env, kv)
		}
	}
	env = append(append(env,
		resultfile.Config{Key: "samples", Value: strconv.Itoa(s.Batch * s.Batches)},
		resultfile.Config{Key: "batches", Value: strconv.Itoa(s.Batches)},
		resultfile.Config{Key: "rounds", Value: strconv.Itoa(max(c.Count, 1))},
		resultfile.Config{Key: "shard-size", Value: strconv.Itoa(shardSize)}),
		CostSettings(costs)...)
	return append(env, resultfile.Config{Key: "distro", Value: distro}, resultfile.Config{Key: "command", Value: command})
}
