package realpeer

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// ReportKeys are the configuration lines a results file must hold for
// ReportOf to rebuild its report; `headspace peer --peers --out` records
// them (and the machine's goos, goarch and device).
var ReportKeys = []string{"cpu", "cores", "distro", "go", "commit", "command", "peers", "workers", "rounds", "batch", "batches", "crop", "raw-size", "images", "dataset", "transforms", "ours"}

// Report is a comparison's outcome as its results file holds it.
type Report struct {
	Config []resultfile.Config // the file's configuration lines, in order
	Runs   []Measurement
	Peers  []string // in the order of the file's peers line
	Batch  int
	Rows   []Row
	// Limits are the limit's measurements (none in a file from before
	// them); SampleBytes the bytes a sample moves through memory, 0
	// without its configuration line (LimitBytesKey).
	Limits      []LimitRun
	SampleBytes int64
}

// NewReport is the report of runs ms with the file's configuration lines
// config (which must hold ReportKeys); path names the file in errors.
// limits are the limit's measurements, if any (Row.Share).
func NewReport(config []resultfile.Config, ms []Measurement, limits []LimitRun, path string) (Report, error) {
	r := Report{Config: config, Runs: ms, Limits: limits}
	var missing []string
	for _, k := range ReportKeys {
		if r.get(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return r, fmt.Errorf("%s: no %s line (headspace peer --peers --out records them; the report cannot be rebuilt without them)", path, strings.Join(missing, ", "))
	}
	var err error
	if r.Batch, err = strconv.Atoi(r.get("batch")); err != nil || r.Batch < 1 {
		return r, fmt.Errorf("%s: batch %q is not a positive whole number", path, r.get("batch"))
	}
	for _, name := range strings.Split(r.get("peers"), ",") {
		if _, ok := Lookup(name); !ok {
			return r, fmt.Errorf("%s: peers line names %q, no peer", path, name)
		}
		r.Peers = append(r.Peers, name)
	}
	r.Rows = Summarize(ms, r.Peers, r.Batch)
	if v := r.get(LimitBytesKey); v != "" {
		if r.SampleBytes, err = strconv.ParseInt(v, 10, 64); err != nil || r.SampleBytes < 1 {
			return r, fmt.Errorf("%s: %s %q is not a positive whole number", path, LimitBytesKey, v)
		}
	}
	for i := range r.Rows {
		r.Rows[i].Share = -1
		if bw := r.CopyBandwidth(r.Rows[i].Workers); bw > 0 && r.SampleBytes > 0 && r.Rows[i].Runs > 0 {
			r.Rows[i].Share = r.Rows[i].SamplesPerSec * float64(r.SampleBytes) / bw
		}
	}
	return r, nil
}

func (r Report) get(key string) string {
	for i := len(r.Config) - 1; i >= 0; i-- {
		if r.Config[i].Key == key {
			return r.Config[i].Value
		}
	}
	return ""
}

var missingKey = regexp.MustCompile(`^missing-(.+)-w([0-9]+)-r([0-9]+)$`)

// ReportOf is the report of a results file `headspace peer --peers --out`
// wrote, at path, decoded (package workloads' RealPeerCodec): its
// configuration lines, its runs in the order they ran (MeasurementOf),
// each then set in its round (the k-th record of a peer at a worker count
// is its k-th round not listed missing; the missing runs from their
// configuration lines, MissingKey), and the limit's runs (LimitOf).
// Nothing is measured.
func ReportOf(path string, config []resultfile.Config, ms []Measurement, limits []LimitRun) (Report, error) {
	if len(ms) == 0 {
		return Report{}, fmt.Errorf("%s: no Benchmark%s records", path, Benchmark)
	}
	type point struct {
		peer    string
		workers int
	}
	skip := map[point]map[int]bool{}
	var missing []Measurement
	for _, c := range config {
		g := missingKey.FindStringSubmatch(c.Key)
		if g == nil {
			continue
		}
		w, _ := strconv.Atoi(g[2])
		round, _ := strconv.Atoi(g[3])
		p := point{g[1], w}
		if skip[p] == nil {
			skip[p] = map[int]bool{}
		}
		skip[p][round] = true
		missing = append(missing, Measurement{Peer: g[1], Workers: w, Round: round, PeakRSS: -1, Missing: c.Value})
	}
	next := map[point]int{}
	for i := range ms {
		p := point{ms[i].Peer, ms[i].Workers}
		round := next[p] + 1
		for skip[p][round] {
			round++
		}
		next[p] = round
		ms[i].Round = round
	}
	return NewReport(config, append(ms, missing...), limits, path)
}

// WriteText prints the table.
func (r Report) WriteText(w io.Writer) error {
	return r.table(w)
}

// table writes the Markdown table of the rows.
func (r Report) table(w io.Writer) error {
	t := report.NewTable("lrrrrrrrrrr", "peer", "workers", "samples/s", "ours ÷ peer (least–most)", "whole run samples/s", "ours ÷ peer, whole run", "CPU ms/sample", "share of the limit", "peak RSS MiB", "TTFB ms", "runs")
	for _, row := range r.Rows {
		runs := strconv.Itoa(row.Runs)
		if row.Missing > 0 {
			runs += fmt.Sprintf(" (%d missing)", row.Missing)
		}
		if row.Runs == 0 {
			t.Add(row.Peer, strconv.Itoa(row.Workers), "—", "—", "—", "—", "—", "—", "—", "—", runs)
			continue
		}
		rss := "—"
		if row.PeakRSS >= 0 {
			rss = fmt.Sprintf("%.0f", float64(row.PeakRSS)/(1<<20))
		}
		ratio, whole := "—", "—"
		if row.Pairs > 0 {
			ratio = fmt.Sprintf("%.2f× (%.2f–%.2f)", row.Ratio, row.Least, row.Most)
			whole = fmt.Sprintf("%.2f×", row.WholeRatio)
		}
		share := "—"
		if row.Share >= 0 {
			share = fmt.Sprintf("%.1f%%", 100*row.Share)
		}
		t.Add(row.Peer, strconv.Itoa(row.Workers), fmt.Sprintf("%.1f", row.SamplesPerSec), ratio,
			fmt.Sprintf("%.1f", row.WholeRun), whole, fmt.Sprintf("%.2f", row.CPUPerSample.Seconds()*1e3), share, rss, fmt.Sprintf("%.0f", row.TTFB.Seconds()*1e3), runs)
	}
	_, err := t.WriteTo(w)
	return err
}

// WriteMarkdown writes the report: the machine and the command, the job
// every side did, the table, the missing runs with their reasons, and each
// peer's package versions and settings as its --check printed them.
func (r Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Real peers beside headspace's loader\n\n")
	fmt.Fprintf(&b, "Written by `headspace peer --peers` from its results file; `headspace peer --from FILE --report FILE` rebuilds it byte for byte (docs/peers.md).\n\n")
	fmt.Fprintf(&b, "- machine: %s, %s cores, %s/%s, %s; Go %s, commit %s\n", r.get("cpu"), r.get("cores"), r.get("goos"), r.get("goarch"), r.get("distro"), strings.TrimPrefix(r.get("go"), "go"), r.get("commit"))
	if busy := r.get(resultfile.BusyKey); busy != "" {
		fmt.Fprintf(&b, "- the machine did not get quiet before the run (%s): other work shared its cores, alike for every side (they alternate), so read the ratios more than the figures\n", busy)
	}
	fmt.Fprintf(&b, "- command: `%s`\n", r.get("command"))
	fmt.Fprintf(&b, "- data: %s images, %s, %s\n", r.get("images"), r.get("raw-size"), r.get("dataset"))
	fmt.Fprintf(&b, "- the job, every side: %s; crop %s, batches of %s, %s batches a run; the medians of %s rounds, ours and each peer alternated in each\n", r.get("transforms"), r.get("crop"), r.get("batch"), r.get("batches"), r.get("rounds"))
	fmt.Fprintf(&b, "- ours: %s\n", r.get("ours"))
	fmt.Fprintf(&b, "- workers: what each uses, %s of them: ", r.get("workers"))
	for i, name := range r.Peers {
		p, _ := Lookup(name)
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s, %s", name, p.Uses)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "CPU ms/sample is the run's CPU seconds of every process over its samples (first batch included); peak RSS the peak of the summed resident memory of the run's processes (ours: headspace's own process); ours ÷ peer the median over the rounds of ours' samples/s over the peer's in the same round, with the least and the most. samples/s counts from the first batch on, so a side that prefetches deep while it makes its first batch gains there what its TTFB loses; the whole run's samples/s (every sample over the time from the start to the last batch) and its ratio do not.\n\n")
	if err := r.table(&b); err != nil {
		return err
	}
	r.limitSection(&b)
	var missing []Measurement
	for _, m := range r.Runs {
		if m.Missing != "" {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		b.WriteString("\nMissing runs:\n\n")
		for _, m := range missing {
			fmt.Fprintf(&b, "- %s, workers %d, round %d: %s\n", m.Peer, m.Workers, m.Round, m.Missing)
		}
	}
	b.WriteString("\nVersions and settings, as each peer's script printed them:\n\n")
	for _, name := range r.Peers {
		var lines []string
		for _, c := range r.Config {
			if strings.HasPrefix(c.Key, name+"-") && !missingKey.MatchString(c.Key) {
				lines = append(lines, fmt.Sprintf("%s %s", strings.TrimPrefix(c.Key, name+"-"), c.Value))
			}
		}
		fmt.Fprintf(&b, "- %s: %s\n", name, strings.Join(lines, ", "))
	}
	if py := r.get("peers-python"); py != "" {
		fmt.Fprintf(&b, "- python: %s\n", py)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CopyBandwidth is the median copy bandwidth measured at w workers, in
// bytes a second; 0 if none was.
func (r Report) CopyBandwidth(w int) float64 {
	var bws []float64
	for _, l := range r.Limits {
		if l.Workers == w {
			bws = append(bws, l.Copy.BytesPerSec)
		}
	}
	if len(bws) == 0 {
		return 0
	}
	return median(bws)
}

// StageTimes are the medians, over the rounds, of ours' stage times a
// sample at w workers, in the order the first run lists them.
func (r Report) StageTimes(w int) []StageTime {
	var order []string
	per := map[string][]float64{}
	for _, l := range r.Limits {
		if l.Workers != w {
			continue
		}
		for _, s := range l.Stages {
			if _, ok := per[s.Stage]; !ok {
				order = append(order, s.Stage)
			}
			per[s.Stage] = append(per[s.Stage], float64(s.PerSample))
		}
	}
	var out []StageTime
	for _, name := range order {
		out = append(out, StageTime{Stage: name, PerSample: time.Duration(math.Round(median(per[name])))})
	}
	return out
}

// limitSection writes what the share of the limit is, from what, and,
// for ours at each worker count, where its time goes: the stage times a
// sample and the stage that takes most. A file without the limit says so.
func (r Report) limitSection(b *strings.Builder) {
	b.WriteString("\n")
	if r.SampleBytes == 0 || len(r.Limits) == 0 {
		b.WriteString("The share of the limit is not in this file: it was written before `headspace peer --peers` measured the copy bandwidth (— in the table).\n")
		return
	}
	fmt.Fprintf(b, "**The limit.** A sample of ours moves %d bytes through memory (%s); the share of the limit is samples/s × those bytes ÷ the copy bandwidth measured on the same cores between rounds (%s), for every side by the same byte count.\n\n", r.SampleBytes, r.get(LimitBytesPartsKey), r.get("limit-copy"))
	var workers []int
	for _, l := range r.Limits {
		if !slices.Contains(workers, l.Workers) {
			workers = append(workers, l.Workers)
		}
	}
	for _, w := range workers {
		bw := r.CopyBandwidth(w)
		fmt.Fprintf(b, "- %s: copy bandwidth %.2f GB/s, a limit of %.0f samples/s", report.Plural(w, "worker"), bw/1e9, bw/float64(r.SampleBytes))
		for _, row := range r.Rows {
			if row.Peer == Ours && row.Workers == w && row.Share >= 0 {
				fmt.Fprintf(b, "; ours at %.1f%% of it", 100*row.Share)
			}
		}
		st := r.StageTimes(w)
		if len(st) == 0 {
			b.WriteString("\n")
			continue
		}
		var total time.Duration
		top := st[0]
		parts := make([]string, len(st))
		for i, s := range st {
			total += s.PerSample
			if s.PerSample > top.PerSample {
				top = s
			}
			parts[i] = fmt.Sprintf("%s %.3f ms", s.Stage, s.PerSample.Seconds()*1e3)
		}
		fmt.Fprintf(b, ". Where ours' time goes (each stage's task time summed over its workers, a sample, medians of one more run of ours a round): %s; %s takes most, %.0f%% of the stages' time", strings.Join(parts, ", "), top.Stage, 100*top.PerSample.Seconds()/total.Seconds())
		for _, row := range r.Rows {
			if row.Peer == Ours && row.Workers == w && row.Share >= 0 && row.Share < 0.5 {
				fmt.Fprintf(b, ": the share is low because the time goes to computing in %s, not to moving its bytes", top.Stage)
			}
		}
		b.WriteString(".\n")
	}
}
