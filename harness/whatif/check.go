package whatif

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/headspace-bench/headspace/internal/summary"
)

// Check is one prediction set beside what a run at its scenario measured.
type Check struct {
	Predicted Prediction
	Runs      []float64 // measured steps/s, one per run
	// Neighbours is the cores the machine's other processes kept busy
	// during each run (negative where unknown).
	Neighbours []float64
}

// NeighbourCores is the median of Neighbours, negative if unknown.
func (c Check) NeighbourCores() float64 {
	if len(c.Neighbours) == 0 {
		return -1
	}
	return summary.Median(c.Neighbours)
}

// Measured is the median of the runs.
func (c Check) Measured() float64 { return summary.Median(c.Runs) }

// Error is the prediction's relative error: (predicted − measured) ÷
// measured; positive when the model is optimistic. NaN without runs.
func (c Check) Error() float64 {
	m := c.Measured()
	if len(c.Runs) == 0 || m <= 0 {
		return math.NaN()
	}
	return (c.Predicted.StepsPerSec - m) / m
}

// Threshold is the error beyond which a check is called off and explained.
const Threshold = 0.15

// NeighboursChange is how many cores' worth of change in the machine's
// other processes' use, between the profile and a check, Why blames first.
const NeighboursChange = 0.5

// Errors is the median and the worst absolute error of the checks with
// runs, NaN for none.
func Errors(cs []Check) (median, worst float64) {
	var es []float64
	for _, c := range cs {
		if e := c.Error(); !math.IsNaN(e) {
			es = append(es, math.Abs(e))
		}
	}
	if len(es) == 0 {
		return math.NaN(), math.NaN()
	}
	return summary.Median(es), slices.Max(es)
}

// Why is the likely reason a check is off by more than Threshold, read
// from what binds it, or "" within it. The model assumes every stage's
// cost is fixed, the cores are ours alone and work flows steadily: each
// reason names which of these the point breaks.
func (c Check) Why(p Profile) string {
	e := c.Error()
	if math.IsNaN(e) || math.Abs(e) <= Threshold {
		return ""
	}
	s := c.Predicted.Scenario
	threads := s.Workers*3 + 2
	if c.Predicted.Bound.Kind == CoresBound || c.Predicted.Bound.Kind == WorkersBound {
		if n := c.NeighbourCores(); n >= 0 && p.Neighbours >= 0 && math.Abs(n-p.Neighbours) > NeighboursChange {
			return fmt.Sprintf("the machine's other processes kept %.2f cores busy during this point and %.2f during the profile: the cores left to the pipeline changed", n, p.Neighbours)
		}
	}
	switch {
	case e > 0 && c.Predicted.Bound.Kind == CoresBound && threads > s.Cores:
		return fmt.Sprintf("cores bind: %d goroutines share %d cores with the other processes of this machine; a stage's CPU per sample grows with the contention (caches, hand-offs)", threads, s.Cores)
	case e > 0 && c.Predicted.Bound.Kind == CoresBound:
		return "cores bind: the machine's other processes take part of the cores"
	case e > 0 && c.Predicted.Bound.Kind == WorkersBound:
		return fmt.Sprintf("%s's workers bind: they share the cores with the other stages, so a task takes longer than its CPU time", c.Predicted.Bound.Stage)
	case e > 0:
		return "the device binds in the model, but the pipeline's rate is close: batches arrive unevenly and each late one costs a step"
	case c.Predicted.Bound.Kind == CoresBound && s.Cores < p.Cores:
		return "fewer cores than the profile's run: the CPU per sample measured there included contention that this point does not have"
	default:
		return "the model is pessimistic here: the profile's costs were measured under more contention than this point has"
	}
}

// WriteChecks prints the verification table: each point's scenario,
// predicted and measured steps/s, the error, the binding resource, and
// then the median and the worst error, with the reason for each point off
// by more than Threshold.
func WriteChecks(w io.Writer, p Profile, cs []Check) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "cores\tworkers\tstep\tpredicted\tmeasured\terror\tbound\tother processes' cores\n")
	for _, c := range cs {
		s := c.Predicted.Scenario
		fmt.Fprintf(tw, "%d\t%d\t×%g\t%.2f\t%.2f\t%+.0f%%\t%s\t%s\n", s.Cores, s.Workers, s.StepScale, c.Predicted.StepsPerSec, c.Measured(), 100*c.Error(), c.Predicted.Bound, neighbours(c.NeighbourCores()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	med, worst := Errors(cs)
	fmt.Fprintf(w, "\n%d points: median error %.0f%%, worst %.0f%% (absolute)\n", len(cs), 100*med, 100*worst)
	for _, c := range cs {
		if why := c.Why(p); why != "" {
			s := c.Predicted.Scenario
			fmt.Fprintf(w, "  cores %d, workers %d, step ×%g off by %+.0f%%: %s\n", s.Cores, s.Workers, s.StepScale, 100*c.Error(), why)
		}
	}
	return nil
}

// neighbours formats the cores other processes used, "?" if unknown.
func neighbours(n float64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f", n)
}
