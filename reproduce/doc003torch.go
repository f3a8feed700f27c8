package reproduce

// The yardstick of document 003: the document's own code
// (peers/torch/ladder.py, PyTorch's DataLoader) run on this machine's
// emulated device in the same run as our ladder (the last step of
// workloads.Caching, workloads.CachingYardstick), so the report can tell
// the method's reproduction (the document's code here against the
// document) from our implementation's gain (ours against the document's
// code here). This file reads and renders it, with two hooks in render003
// and WriteMarkdown.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/peer"
	reports "github.com/headspace-bench/headspace/harness/report"
	"github.com/headspace-bench/headspace/internal/summary"
	"github.com/headspace-bench/headspace/workloads"
)

// The yardstick's keys in 003's result file and their values
// (workloads.CachingYardstick writes them).
const (
	keyTorchLadder = workloads.KeyTorchLadder
	keyCalibration = workloads.KeyCalibration
	measuredValue  = workloads.Measured
	notMeasured    = workloads.NotMeasured
)

// yardstickTolerance is how close the document's code here must come to
// the document's ratios (each level ÷ device) to count as reproducing it.
const yardstickTolerance = 0.15

// DefaultTorchPeer is the document's script, run from the repository's
// root by Debian's Python.
var DefaultTorchPeer = peer.Peer{Python: "/usr/bin/python3", Script: peer.LadderScript}

// Yardstick is the document's code on this machine's emulated device,
// and the calibration of this machine against the document's host.
type Yardstick struct {
	// NotMeasured says why the document's code did not run; "" when it
	// did.
	NotMeasured string
	Runs        map[level.Level][]float64 // steps/s, one per run
	Torch       string                    // torch's version
	Command     string                    // the script's command line
	// CalibrationNotMeasured says why there is no calibration; "" when
	// there is one.
	CalibrationNotMeasured string
	// Ratio is this machine's loader throughput for the document's code
	// over the document's host's (geometric mean of raw and none); Raw and
	// None are this machine's samples/s, DocRaw and DocNone the
	// document's; Step is 290 ms over Ratio.
	Ratio, Raw, None, DocRaw, DocNone float64
	Step                              time.Duration
	CalibrationCommand                string
	// FirstWave marks a calibration that timed every batch after the
	// first, as files before calibration-timing did: the document's 4
	// workers make their first 4 batches at once, so it overstates this
	// machine's speed.
	FirstWave bool
}

// yardstick003 reads the yardstick from the file: its configuration
// lines, and its runs decoded by workloads.CachingCodec (PeerLadderCodec's);
// a file written before it existed says so.
func yardstick003(f *resultFile, runs []peer.LadderMeasurement) *Yardstick {
	y := &Yardstick{Runs: map[level.Level][]float64{}}
	status, ok := f.config[keyTorchLadder]
	if !ok {
		y.NotMeasured = "this result file was written before the document's code was run beside ours"
		y.CalibrationNotMeasured = y.NotMeasured
		return y
	}
	if why, found := strings.CutPrefix(status, notMeasured); found {
		y.NotMeasured = why
	} else if status != measuredValue && f.err == nil {
		f.err = fmt.Errorf("configuration %s: %q is neither %q nor %q…", keyTorchLadder, status, measuredValue, notMeasured)
	}
	if y.NotMeasured == "" {
		y.Torch, y.Command = f.str("torch-version"), f.str("torch-ladder-command")
		for _, m := range runs {
			if m.Impl == peer.Torch {
				y.Runs[m.Level] = append(y.Runs[m.Level], m.StepsPerSec)
			}
		}
		for _, l := range level.Document {
			if len(y.Runs[l]) == 0 && f.err == nil {
				f.err = fmt.Errorf("%s is measured but has no PeerLadder record at level %s", keyTorchLadder, l)
			}
		}
	}
	cal := f.str(keyCalibration)
	if why, found := strings.CutPrefix(cal, notMeasured); found {
		y.CalibrationNotMeasured = why
		return y
	}
	num := func(key string) float64 {
		return parsed(f, key, "a number", func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	}
	y.Ratio, y.Raw, y.None = num("calibration-ratio"), num("calibration-raw-samples/s"), num("calibration-none-samples/s")
	y.DocRaw, y.DocNone = num("calibration-raw-document-samples/s"), num("calibration-none-document-samples/s")
	y.Step = f.duration("calibrated-step")
	y.CalibrationCommand = f.str("calibration-command")
	y.FirstWave = !f.has("calibration-timing")
	return y
}

// median is the median steps/s of the document's code at l; NaN when not
// measured.
func (y *Yardstick) median(l level.Level) float64 {
	if y == nil || len(y.Runs[l]) == 0 {
		return math.NaN()
	}
	return summary.Median(y.Runs[l])
}

// writeYardstick writes the four-column table (each level ÷ device: the
// document, the document's code here, ours naive, ours fast) and its
// reading.
func (r Result003) writeYardstick(m *md) {
	y := r.Yardstick
	a, ok := r.step("a")
	if y == nil || !ok {
		return
	}
	m.para("### The yardstick: the document's code on this machine")
	m.para("Each level ÷ its own `device` level, four ways: the document's figures (A10G, 4 vCPUs); the document's own code (`peers/torch/ladder.py`: its FakeDataset, transforms and DataLoader, %d workers) run here on the same emulated device as ours, in the same run; our ladder with the naive transforms (step a) and with the fast ones (step b). The second column against the first says whether the method reproduces the document on this machine; the third against the second is what the Go implementation gains over the document's code.", r.Workers)
	devs := r.yardstickLevels(a)
	writeYardstickTable(m, y, devs)
	if y.NotMeasured != "" {
		m.para("**The document's code was not measured in this run**, so its column is empty, not estimated: %s. Without it this report cannot tell how much of the gap between the document's ratios and ours comes from this machine and how much from our implementation.", y.NotMeasured)
		return
	}
	m.para("The document's code here: torch %s, %s of each level (median), `%s`.", y.Torch, reports.Plural(len(y.Runs[level.None]), "run"), y.Command)
	writeYardstickGain(m, y, devs)
	r.writeReproduction(m, devs)
}

// yardstickLevel is one level of the yardstick's table.
type yardstickLevel struct {
	level                   level.Level
	doc, torch, naive, fast float64 // ÷ device
	naiveSteps              float64 // steps/s
}

// yardstickLevels are step a's levels, each divided by its device level
// four ways (the document, the document's code here, ours naive, ours
// fast).
func (r Result003) yardstickLevels(a LadderStep) []yardstickLevel {
	y := r.Yardstick
	torchDev := y.median(level.Device)
	var devs []yardstickLevel
	for _, row := range a.Rows {
		d := yardstickLevel{level: row.Level, torch: div(y.median(row.Level), torchDev), naiveSteps: summary.Median(row.Runs)}
		d.naive, d.doc = r.levelRatio("a", row.Level)
		d.fast, _ = r.levelRatio("b", row.Level)
		devs = append(devs, d)
	}
	return devs
}

// writeYardstickTable writes the four-column table of devs; the document's
// code's column says "not measured" when y did not run.
func writeYardstickTable(m *md, y *Yardstick, devs []yardstickLevel) {
	var rows [][]string
	for _, d := range devs {
		torchCell := num(d.torch, 2)
		if y.NotMeasured != "" {
			torchCell = "not measured"
		}
		rows = append(rows, []string{"`" + d.level.String() + "`", num(d.doc, 2), torchCell, num(d.naive, 2), num(d.fast, 2)})
	}
	m.table("lrrrr", []string{"level", "the document (A10G)", "the document's code here (emulated device)", "ours, naive", "ours, fast"}, rows)
}

// writeYardstickGain writes the gain: ours naive over the document's code
// y, in steps/s on the same device, at levels raw and none.
func writeYardstickGain(m *md, y *Yardstick, devs []yardstickLevel) {
	var gains []string
	for _, d := range devs {
		if d.level == level.Raw || d.level == level.None {
			torch, naive := y.median(d.level), d.naiveSteps
			gains = append(gains, fmt.Sprintf("at `%s` ours naive runs %s the document's code's steps/s (%s against %s)", d.level, ratio(naive, torch), num(naive, 3), num(torch, 3)))
		}
	}
	m.para("What the Go implementation gains, the third column against the second: %s. Both ran the same pipeline on the same emulated device and cores, in this run but not interleaved: ours in steps (a) and (b) near its start, the document's code at its end, so on a shared machine a change of load between the two moves this reading (compare the spread of each level's runs in step (a)'s table). `headspace peer --ladder` alternates the two level by level and is the cleaner reading of the gain (docs/yardstick.md).", strings.Join(gains, "; "))
}

// writeReproduction writes the reproduction: the document's code here
// against the document, level by level, within yardstickTolerance or not,
// and when not, what the calibration says of it.
func (r Result003) writeReproduction(m *md, devs []yardstickLevel) {
	var off []string
	sum := 0.0
	for _, d := range devs {
		if math.IsNaN(d.doc) || math.IsNaN(d.torch) {
			continue
		}
		if dev := d.torch/d.doc - 1; math.Abs(dev) > yardstickTolerance {
			off = append(off, fmt.Sprintf("`%s` %s against %s (%s)", d.level, num(d.torch, 2), num(d.doc, 2), signed(100*dev)))
			sum += dev
		}
	}
	if len(off) == 0 {
		m.para("The document's code here comes within %.0f%% of the document's ratios at every level: on this machine and its emulated device the method reproduces the document.", 100*yardstickTolerance)
		return
	}
	m.para("The document's code here does not come within %.0f%% of the document's ratios: %s. %s", 100*yardstickTolerance, strings.Join(off, ", "), r.calibrationReading(sum))
}

// calibrationReading says whether the calibration explains the document's
// code here landing off the document's ratios, sum the sum of its
// deviations beyond the tolerance (negative: lower here).
func (r Result003) calibrationReading(sum float64) string {
	y := r.Yardstick
	if y.CalibrationNotMeasured != "" {
		return "This run did not calibrate (" + y.CalibrationNotMeasured + "), so it cannot say how this CPU compares with the document's host."
	}
	measured := fmt.Sprintf("this machine runs the document's DataLoader at %.2f× the document's host (the calibration, geometric mean of raw and none; `%s`): at `raw` %s samples/s against the document's %s, at `none` %s against %s",
		y.Ratio, y.CalibrationCommand, num(y.Raw, 1), num(y.DocRaw, 1), num(y.None, 1), num(y.DocNone, 1))
	if y.FirstWave {
		measured += " (this file's calibration timed every batch after the first, and the document's 4 workers make their first 4 batches at once, so it overstates this machine's speed; calibrations since time the batches after that first wave)"
	}
	if (y.Ratio < 1) != (sum < 0) {
		return fmt.Sprintf("The calibration does not explain it: %s, which would move the loader-bound levels the other way. The remaining differences are the emulated device's (a timer step and assumed copy bandwidths, not the A10G) and the cores (%d workers here against the document's 4 on 4 vCPUs).", measured, r.Workers)
	}
	slower, lower := "slower", "lower"
	if y.Ratio > 1 {
		slower, lower = "faster", "higher"
	}
	return fmt.Sprintf("Why: %s. Its CPU is %s for the document's code while the emulated step stays the document's %v, so the levels the loader bounds land %s than the document's. `headspace peer --ladder --step calibrated` scales the step by that ratio (to %v), so that the device stands to this CPU as the A10G stood to the document's 4 vCPUs.",
		measured, slower, r.Step, lower, y.Step)
}

// step is the experiment's step with key.
func (r Result003) step(key string) (LadderStep, bool) {
	for _, st := range r.Steps {
		if st.Key == key {
			return st, true
		}
	}
	return LadderStep{}, false
}
