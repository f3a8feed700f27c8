package whatif

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/report"
)

// WriteMarkdown writes the what-if report section: the command, the
// profile, the predicted table, each stage's speed-up needed, the
// ladder's attribution beside the model's, and, with checks, the
// verification with its median and worst error and the reason for every
// point off by more than Threshold.
func WriteMarkdown(w io.Writer, p Profile, g Grid, checks []Check, command string) error {
	fmt.Fprintf(w, "## What it would take: the what-if model\n\n")
	fmt.Fprintf(w, "`%s`\n\n", command)
	fmt.Fprintf(w, "Profile: batch %d, %d workers, %d cores, step %v, upload %v, %.2f steps/s measured; CPU from %s.\n\n",
		p.Batch, p.Workers, p.Cores, p.Step.Round(time.Microsecond), p.Upload.Round(time.Microsecond), p.Measured, p.CPUSource)
	stages := report.Table{Align: "lrrrr", Header: []string{"stage", "workers", "CPU/sample", "wait/sample", "share of CPU"}, TightEmpty: true}
	total := p.CPUPerSample()
	share := func(cpu time.Duration) string {
		return fmt.Sprintf("%.0f%%", 100*float64(cpu)/math.Max(1, float64(total)))
	}
	for _, s := range p.Stages {
		stages.Add(s.Name, fmt.Sprint(s.Workers), s.CPU.Round(100*time.Nanosecond).String(), s.Wait.String(), share(s.CPU))
	}
	stages.Add("host (index, loop, runtime)", "", p.Host.Round(100*time.Nanosecond).String(), "", share(p.Host))
	fmt.Fprintf(w, "%s\n", &stages)
	fmt.Fprintf(w, "The pipeline kept %.2f of %d cores busy (%d CPUs; the machine's other processes kept %s busy): the model takes the other load as %.2f runnable threads, and the CPU per sample as growing %.0f%% with each core added.\n\n",
		p.Used, p.Cores, p.CPUs, neighbours(p.Neighbours), p.Other, 100*p.Growth)
	writeGridMarkdown(w, p, g)
	s := p.fill(Scenario{})
	pr := p.Predict(s)
	fmt.Fprintf(w, "At the profile's setting the %s binds (%.2f steps/s predicted). The speed-up each stage would need, alone, for the pipeline to keep up with the device:\n\n", pr.Bound, pr.StepsPerSec)
	needs := report.NewTable("lrrr", "stage", "share of CPU", "speed-up needed", "cost that must go")
	for _, n := range p.Needs(s) {
		sp, cut := n.Cells()
		needs.Add(n.Stage, fmt.Sprintf("%.0f%%", 100*n.Share), sp, cut)
	}
	fmt.Fprint(w, needs)
	c := p.Compare(s)
	fmt.Fprintf(w, "\nThe caching ladder predicted from the same costs blames **%s**; the model blames **%s**", c.LadderBlames(), c.Model)
	if c.Agree() {
		fmt.Fprintf(w, ": they agree.\n\n")
	} else {
		fmt.Fprintf(w, ": %s.\n\n", c.Reason())
	}
	if len(checks) == 0 {
		return nil
	}
	writeChecksMarkdown(w, p, checks)
	_, err := fmt.Fprintln(w)
	return err
}

// writeGridMarkdown writes the predicted steps/s over g, a table for
// each step multiplier.
func writeGridMarkdown(w io.Writer, p Profile, g Grid) {
	for _, m := range g.StepScales {
		fmt.Fprintf(w, "Predicted steps/s, step ×%g (device ceiling %.2f; model-bound with %s cores and %s):\n\n", m, p.DeviceRate(m), cores(p.CoresNeeded(m)), workersNeeded(p.WorkersNeeded(m)))
		t := report.NewTable(strings.Repeat("r", 1+len(g.Cores)), "workers")
		for _, c := range g.Cores {
			t.Header = append(t.Header, fmt.Sprintf("%d cores", c))
		}
		for _, n := range g.Workers {
			row := []string{fmt.Sprint(n)}
			for _, c := range g.Cores {
				pr := p.Predict(Scenario{Cores: c, Workers: n, StepScale: m})
				row = append(row, fmt.Sprintf("%.2f (%s)", pr.StepsPerSec, pr.Bound))
			}
			t.Add(row...)
		}
		fmt.Fprintf(w, "%s\n", t)
	}
}

// writeChecksMarkdown writes the checked points, predicted beside
// measured, and the reason for every point off by more than Threshold.
func writeChecksMarkdown(w io.Writer, p Profile, checks []Check) {
	med, worst := Errors(checks)
	fmt.Fprintf(w, "### Checked on this machine\n\n%d points, predicted beside measured (median of the runs): median error %.0f%%, worst %.0f%%.\n\n", len(checks), 100*med, 100*worst)
	t := report.NewTable("rrrrrrlr", "cores", "workers", "step", "predicted", "measured", "error", "bound", "other processes' cores")
	for _, ck := range checks {
		s := ck.Predicted.Scenario
		t.Add(fmt.Sprint(s.Cores), fmt.Sprint(s.Workers), fmt.Sprintf("×%g", s.StepScale), fmt.Sprintf("%.2f", ck.Predicted.StepsPerSec), fmt.Sprintf("%.2f", ck.Measured()),
			fmt.Sprintf("%+.0f%%", 100*ck.Error()), fmt.Sprint(ck.Predicted.Bound), neighbours(ck.NeighbourCores()))
	}
	fmt.Fprintf(w, "%s\n", t)
	for _, ck := range checks {
		if why := ck.Why(p); why != "" {
			s := ck.Predicted.Scenario
			fmt.Fprintf(w, "- cores %d, workers %d, step ×%g (%+.0f%%): %s.\n", s.Cores, s.Workers, s.StepScale, 100*ck.Error(), why)
		}
	}
}
