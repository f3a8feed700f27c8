package peer

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Figure is an image the report embeds; Path is relative to the report.
type Figure struct {
	Alt, Path string
}

// Report is everything WriteMarkdown writes.
type Report struct {
	Machine    machine.Machine     // where the comparison ran
	PeerConfig []resultfile.Config // what the peer printed: python, torch, … versions
	Command    string              // the command line that made the report
	Settings   Settings
	Count      int // rounds
	Rows       []Row
	Figures    []Figure
}

// WriteMarkdown writes the report as Markdown: machine, command, settings,
// the table of medians with their ratios to torch and the targets, a line
// per worker count saying which targets are met, and the figures.
func WriteMarkdown(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# PyTorch peer\n\n")
	fmt.Fprintf(&b, "Our goroutine loader at level `none`, with the naive and the fast transforms, against\n"+
		"the document's pipeline run by PyTorch's DataLoader (`peers/torch/dataloader.py`), at the\n"+
		"same settings, in the same run, on the same cores. Written by `headspace peer`.\n\n")
	r.writeMachine(&b)
	fmt.Fprintf(&b, "## Command\n\n```sh\n%s\n```\n\n", r.Command)
	r.writeSettings(&b)
	writeResults(&b, r.Rows)
	writeTargets(&b, r.Rows)
	if len(r.Figures) > 0 {
		fmt.Fprintf(&b, "## Figures\n\n")
		for _, f := range r.Figures {
			fmt.Fprintf(&b, "![%s](%s)\n\n", f.Alt, f.Path)
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// writeMachine writes the report's Machine section.
func (r Report) writeMachine(b *strings.Builder) {
	get := Output{Config: r.PeerConfig}.cell
	fmt.Fprintf(b, "## Machine\n\n%s\n", machineTable(r.Machine, [2]string{"Python", get("python")},
		[2]string{"PyTorch", fmt.Sprintf("torch %s, torchvision %s, numpy %s, scipy %s, Pillow %s", get("torch"), get("torchvision"), get("numpy"), get("scipy"), get("pillow"))}))
}

// machineTable is a report's Machine table: the CPU, cores, OS and Go of
// m, the peer's rows (its Python and libraries), and the commit.
func machineTable(m machine.Machine, peer ...[2]string) *report.Table {
	t := &report.Table{Header: []string{"", ""}, TightEmpty: true}
	t.Add("CPU", cell(m.CPU))
	t.Add("cores", fmt.Sprint(m.Cores))
	t.Add("OS", cell(m.Distro))
	t.Add("Go", cell(m.Go))
	for _, r := range peer {
		t.Add(r[0], r[1])
	}
	t.Add("commit", cell(m.Commit))
	return t
}

// writeSettings writes the report's Settings section.
func (r Report) writeSettings(b *strings.Builder) {
	get := Output{Config: r.PeerConfig}.cell
	s := r.Settings
	rounds := max(r.Count, 1)
	fmt.Fprintf(b, "## Settings\n\n")
	if s.Data == "" {
		fmt.Fprintf(b, "- %d×%d random raw images, cropped to %d, batches of %d, %d batches a run, seed %d.\n",
			s.Width, s.Height, s.Crop, s.Batch, s.Batches, s.Seed)
	} else {
		fmt.Fprintf(b, "- %d×%d images read from the dataset on disk `%s` by both sides (ours decoding JPEG with `%s`, the peer with PIL), cropped to %d, batches of %d, %d batches a run, seed %d.\n",
			s.Width, s.Height, s.Data, cmp.Or(s.Decoder, "go"), s.Crop, s.Batch, s.Batches, s.Seed)
	}
	if rounds == 1 {
		fmt.Fprintf(b, "- 1 round: every implementation measured once at each worker count, back to back,\n"+
			"  the order rotated from one worker count to the next; the table gives those runs.\n")
	} else {
		fmt.Fprintf(b, "- %d rounds: each measures every implementation once at each worker count, back to\n"+
			"  back, the order rotated from one group to the next; the table gives the median of %d runs.\n",
			rounds, rounds)
	}
	fmt.Fprintf(b, "- Time to first batch (TTFB): ours from the start of the loader's construction, torch's\n"+
		"  from creating the DataLoader iterator (which starts the worker processes), to the first batch.\n"+
		"  samples/s: the samples of batches 2..%d over the time from the first batch to the last.\n"+
		"  CPU: user and system seconds of every process involved. No training step: each batch is\n"+
		"  dropped when it arrives.\n", s.Batches)
	fmt.Fprintf(b, "- Workers: torch's `num_workers` (worker processes, each building whole batches;\n"+
		"  pin_memory off, there is no GPU; prefetch_factor %s; start method %s; torch threads %s);\n"+
		"  ours, goroutines per stage (load, transform, collate) sharing each batch, two batches ahead.\n\n",
		get("prefetch-factor"), get("start-method"), get("torch-threads"))
}

// writeResults writes the report's Results section: the table of
// medians with their ratios to torch and the targets.
func writeResults(b *strings.Builder, rows []Row) {
	fmt.Fprintf(b, "## Results\n\n")
	t := report.NewTable("rlrrrrrll", "workers", "implementation", "samples/s", "TTFB (s)", "CPU (s)", "samples/s ÷ torch", "TTFB ÷ torch", "target", "met")
	for _, row := range rows {
		speed, ttfb, target, met := row.ratioCells("—", "")
		t.Add(fmt.Sprint(row.Workers), fmt.Sprint(row.Impl), fmt.Sprintf("%.1f", row.SamplesPerSec), fmt.Sprintf("%.3f", row.TTFB.Seconds()),
			fmt.Sprintf("%.2f", row.CPU.Seconds()), speed, ttfb, target, met)
	}
	b.WriteString(t.String() + "\n")
}

// writeTargets writes the report's Targets section: a line per worker
// count saying which targets are met.
func writeTargets(b *strings.Builder, rows []Row) {
	fmt.Fprintf(b, "## Targets\n\n")
	verdicts := 0
	for _, w := range workerCounts(rows) {
		var parts []string
		for _, t := range Targets {
			for _, row := range rows {
				if row.Workers != w || row.Impl != t.Impl {
					continue
				}
				if m, ok := row.Met(); ok {
					parts = append(parts, fmt.Sprintf("%s %s torch's samples/s (target ≥ %g×): **%s**",
						t.Impl, ratio(row.Speedup), t.Min, map[bool]string{true: "met", false: "not met"}[m]))
				}
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(b, "- %s: %s.\n", report.Plural(w, "worker"), strings.Join(parts, "; "))
			verdicts++
		}
	}
	if verdicts == 0 {
		fmt.Fprintf(b, "- No target could be judged: a target needs our implementation and torch at the same worker count.\n")
	}
	b.WriteString("\n")
}

// ratioCells are a row's cells beside torch's: samples/s and TTFB over
// torch's, its target and whether it is met; dash where there is no ratio
// or no verdict, none where the implementation has no target.
func (row Row) ratioCells(dash, none string) (speed, ttfb, target, met string) {
	speed, ttfb, target, met = dash, dash, none, none
	if row.Speedup > 0 {
		speed, ttfb = ratio(row.Speedup), fmt.Sprintf("%.2f×", row.TTFBRatio)
	}
	if t, ok := TargetFor(row.Impl); ok {
		target, met = fmt.Sprintf("≥ %g×", t.Min), dash
		if m, ok := row.Met(); ok {
			met = yesNo(m)
		}
	}
	return speed, ttfb, target, met
}

// ratio writes a speed-up rounded down to two decimals, so that a ratio
// shown as meeting a target meets it (1.996 is 1.99×, not 2.00×).
func ratio(x float64) string {
	return fmt.Sprintf("%.2f×", math.Floor(x*100)/100)
}

// cell is the peer's configuration line k, made safe for a Markdown table
// cell; "unknown" without one.
func (o Output) cell(k string) string { return cell(o.Get(k)) }

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "unknown"
	}
	return report.EscapePipes(s)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// workerCounts lists the rows' worker counts in order of first appearance.
func workerCounts(rows []Row) []int {
	var ws []int
	for _, r := range rows {
		if len(ws) == 0 || ws[len(ws)-1] != r.Workers {
			ws = append(ws, r.Workers)
		}
	}
	return ws
}

// FileConfig is the configuration of a sweep's result file: config
// (the machine, machine.Environment, and the settings) followed by the
// lines the peer printed (its versions) whose keys config lacks.
func FileConfig(config, peer []resultfile.Config) []resultfile.Config {
	cfg := slices.Clone(config)
	for _, e := range peer {
		if !slices.ContainsFunc(cfg, func(c resultfile.Config) bool { return c.Key == e.Key }) {
			cfg = append(cfg, e)
		}
	}
	return cfg
}

// WriteTable writes the rows as a plain-text table, as Summarize orders
// them, with the same columns as the Markdown report.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\timpl\truns\tsamples/s\tTTFB (s)\tCPU (s)\tsamples/s ÷ torch\tTTFB ÷ torch\ttarget\tmet\t")
	for _, row := range rows {
		speed, ttfb, target, met := row.ratioCells("-", "-")
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.1f\t%.3f\t%.2f\t%s\t%s\t%s\t%s\t\n",
			row.Workers, row.Impl, row.Runs, row.SamplesPerSec, row.TTFB.Seconds(), row.CPU.Seconds(), speed, ttfb, target, met)
	}
	return tw.Flush()
}
