package gate

// The gate's defaults and Options: what Compare is asked, checked by
// Validate before anything is read.

import (
	"fmt"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/internal/summary"
)

// Gate defaults.
const (
	// DefaultThreshold is the relative change beyond which a
	// significant change counts: 5%.
	DefaultThreshold = 0.05
	// DefaultAlpha is benchstat's significance level,
	// benchmath.DefaultThresholds.CompareAlpha.
	DefaultAlpha = 0.05
	// DefaultMinCoverage is the share of the old side's benchmarks the
	// new side must hold for the gate to decide: 90%.
	DefaultMinCoverage = 0.9
	// Confidence is the level of the medians' confidence intervals,
	// benchstat's default (internal/summary's).
	Confidence = summary.Confidence
)

// MachineKeys are the configuration keys that say which machine and
// device a file was recorded on; two files that differ in one of them
// (both setting it) come from different machines.
// A file that records no cpu or no cores line names no machine, and is
// treated as another machine than any file.
var MachineKeys = []string{"device", "gpu", "cpu", "cores", "goos", "goarch"}

// RequiredMachineKeys must be recorded on both sides for the files to
// count as one machine's: without them nothing says which machine a
// file comes from.
var RequiredMachineKeys = []string{"cpu", "cores"}

// DefaultSpreadZ is how many between-run spreads (Options.Spread) a
// change must exceed to count: 3.
const DefaultSpreadZ = 3

// Options configures Compare and the evidence it needs.
type Options struct {
	// Threshold is the relative change of the median a significant
	// change must exceed to count, 0.05 for 5%; in [0, 1). Zero gates on
	// any significant change.
	Threshold float64

	// Alpha is the significance level: a change is significant when the
	// Mann–Whitney U test's p-value is below it; in (0, 1).
	Alpha float64

	// MinCoverage is the share of the old side's benchmarks that the new
	// side must also hold, in [0, 1]: a run that crashed half-way has
	// too few to pass on.
	MinCoverage float64

	// CrossMachine allows files from different machines (MachineKeys)
	// to be compared; the report then says so first.
	CrossMachine bool

	// Units is unit metadata from the compared files (ReadUnits); its
	// better= entries give the direction of units that headspace's own
	// table (resultfile.KnownDirection) does not know. A known unit always
	// takes the table's direction. May be nil.
	Units benchfmt.UnitMetadataMap

	// Spread is each metric's measured spread between runs on this
	// machine, as a fraction of its median (0.03 for 3%), from a history
	// of earlier runs (package history). A change of a metric listed
	// here counts only beyond SpreadZ times its spread, as well as beyond
	// Threshold: noise between runs that the within-run test cannot see.
	// May be nil.
	Spread map[Metric]float64

	// SpreadZ is how many spreads a change must exceed; DefaultSpreadZ
	// when zero.
	SpreadZ float64
}

// Metric names one benchmark (with its "Benchmark" prefix, as in Row)
// and one tidied unit.
type Metric struct{ Name, Unit string }

// DefaultOptions are benchstat's alpha, a 5% threshold and 90% coverage.
func DefaultOptions() Options {
	return Options{Threshold: DefaultThreshold, Alpha: DefaultAlpha, MinCoverage: DefaultMinCoverage}
}

// Validate says what is wrong with o's numbers, naming the flag.
func (o Options) Validate() error {
	switch {
	case !(o.Threshold >= 0 && o.Threshold < 1):
		return fmt.Errorf("--threshold %v: want a finite change in [0, 1), e.g. 0.05 for 5%%", o.Threshold)
	case !(o.Alpha > 0 && o.Alpha < 1):
		return fmt.Errorf("--alpha %v: want a significance level in (0, 1)", o.Alpha)
	case !(o.MinCoverage >= 0 && o.MinCoverage <= 1):
		return fmt.Errorf("--min-coverage %v: want a share in [0, 1]", o.MinCoverage)
	}
	return nil
}
