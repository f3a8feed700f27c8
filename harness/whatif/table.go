package whatif

import (
	"fmt"
	"github.com/headspace-bench/headspace/harness/level"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Grid is the settings a what-if table spans.
type Grid struct {
	Cores      []int
	Workers    []int
	StepScales []float64
}

// WriteProfile prints what the model was fed: the setting, each stage's
// CPU and wait per sample with its share, the host's share, the step and
// the copy.
func WriteProfile(w io.Writer, p Profile) error {
	fmt.Fprintf(w, "profile: batch %d, %d workers, %d cores, step %v, upload %v, %.2f steps/s measured (CPU from %s)\n",
		p.Batch, p.Workers, p.Cores, p.Step.Round(time.Microsecond), p.Upload.Round(time.Microsecond), p.Measured, p.CPUSource)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  stage\tworkers\tCPU/sample\twait/sample\tshare of CPU\n")
	total := p.CPUPerSample()
	share := func(d time.Duration) string {
		if total <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(d)/float64(total))
	}
	for _, s := range p.Stages {
		fmt.Fprintf(tw, "  %s\t%d\t%v\t%v\t%s\n", s.Name, s.Workers, s.CPU.Round(100*time.Nanosecond), s.Wait, share(s.CPU))
	}
	fmt.Fprintf(tw, "  host (index, loop, runtime)\t\t%v\t\t%s\n", p.Host.Round(100*time.Nanosecond), share(p.Host))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "  the pipeline kept %.2f of %d cores busy (%d CPUs; other processes kept %s busy): other load %.2f threads; CPU per sample grows %.0f%% a core added\n",
		p.Used, p.Cores, p.CPUs, neighbours(p.Neighbours), p.Other, 100*p.Growth)
	return err
}

// WriteTable prints, for each step multiplier, predicted steps/s over
// worker counts (rows) and core counts (columns), each with its binding
// resource; then the cores and workers needed to be model-bound.
func WriteTable(w io.Writer, p Profile, g Grid) error {
	for _, m := range g.StepScales {
		fmt.Fprintf(w, "step ×%g (%v): predicted steps/s, device ceiling %.2f\n", m, time.Duration(float64(p.Step)*m).Round(time.Microsecond), p.DeviceRate(m))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "  workers")
		for _, c := range g.Cores {
			fmt.Fprintf(tw, "\tcores=%d", c)
		}
		fmt.Fprintln(tw)
		for _, n := range g.Workers {
			fmt.Fprintf(tw, "  %d", n)
			for _, c := range g.Cores {
				pr := p.Predict(Scenario{Cores: c, Workers: n, StepScale: m})
				fmt.Fprintf(tw, "\t%.2f %s", pr.StepsPerSec, pr.Bound)
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "  model-bound with %s cores and %s\n\n", cores(p.CoresNeeded(m)), workersNeeded(p.WorkersNeeded(m)))
	}
	return nil
}

func cores(c float64) string {
	if math.IsInf(c, 0) || math.IsNaN(c) {
		return "any number of"
	}
	return fmt.Sprintf("%.1f", c)
}

func workersNeeded(n int) string {
	if n == 0 {
		return "no worker count (a single-goroutine stage cannot keep up)"
	}
	if n == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", n)
}

// WriteNeeds prints, at s, what binds, each stage's speed-up needed alone
// and the share of its cost that must go, and the ladder's reading beside
// the model's.
func WriteNeeds(w io.Writer, p Profile, s Scenario) error {
	s = p.fill(s)
	pr := p.Predict(s)
	fmt.Fprintf(w, "at %d cores, %d workers, step ×%g: %.2f steps/s predicted, bound by the %s (device ceiling %.2f)\n",
		s.Cores, s.Workers, s.StepScale, pr.StepsPerSec, pr.Bound, p.DeviceRate(s.StepScale))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  stage\tshare of CPU\tspeed-up needed alone\tcost that must go\n")
	for _, n := range p.Needs(s) {
		sp, cut := n.Cells()
		fmt.Fprintf(tw, "  %s\t%.0f%%\t%s\t%s\n", n.Stage, 100*n.Share, sp, cut)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := p.Compare(s)
	lad := p.Ladder(s)
	var parts []string
	for _, l := range level.Descending(level.Document) {
		parts = append(parts, fmt.Sprintf("%s %.2f", l, lad[l]))
	}
	fmt.Fprintf(w, "  ladder predicted by the model: %s\n  %s\n", strings.Join(parts, ", "), c)
	return nil
}
