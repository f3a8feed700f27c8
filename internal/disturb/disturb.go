package disturb

import (
	"fmt"
	"slices"
	"time"

	"github.com/headspace-bench/headspace/internal/rusage"
)

// The units a point's disturbance is recorded in. RunDelayUnit,
// PressureUnit, RerunsUnit and DisturbedUnit describe the conditions of a
// run rather than the code (Conditions); CPUUnit and InstructionsUnit are
// metrics of the code. Every one of them is lower-is-better.
const (
	// CPUUnit is CPU time (user+sys) per training step, in ns.
	CPUUnit = "cpu-ns/op"
	// RunDelayUnit is the run-queue delay as a percentage of wall time.
	RunDelayUnit = "run-delay-%"
	// PressureUnit is the machine's CPU pressure ("some") as a
	// percentage of wall time.
	PressureUnit = "cpu-pressure-%"
	// InstructionsUnit is user-space instructions retired per step.
	InstructionsUnit = "instructions/op"
	// RerunsUnit counts the times a point was repeated for being
	// disturbed; written only when positive.
	RerunsUnit = "reruns"
	// DisturbedUnit is 1 on a point that stayed disturbed after its
	// reruns; written only then.
	DisturbedUnit = "disturbed"
	// OtherCoresUnit is the CPU time the other processes on the machine
	// used over the point, in cores (as the node records it).
	OtherCoresUnit = "other-cores"
)

// Conditions are the units that describe how disturbed a run was, not
// how fast the code is: the gate shows them but never judges them.
var Conditions = []string{RunDelayUnit, PressureUnit, RerunsUnit, DisturbedUnit, OtherCoresUnit}

// IsCondition reports whether unit is one of Conditions.
func IsCondition(unit string) bool { return slices.Contains(Conditions, unit) }

// Defaults of Policy and Quiet.
const (
	// DefaultMaxDelay is the run-queue delay, as a share of wall time,
	// beyond which a point is disturbed: 5%.
	DefaultMaxDelay = 0.05
	// DefaultReruns is how many times a disturbed point is repeated.
	DefaultReruns = 2
	// DefaultQuietBelow is the CPU pressure under which the machine
	// counts as quiet: some task waited for a CPU in less than 10% of
	// the time.
	DefaultQuietBelow = 0.10
)

// Reading is one snapshot of the counters a Sample is the difference of.
type Reading struct {
	At       time.Time
	CPU      time.Duration
	HasCPU   bool
	RunDelay time.Duration
	// HasRunDelay is false where run-queue delay cannot be read.
	HasRunDelay bool
	Pressure    time.Duration
	HasPressure bool
	// Machine is the machine's busy CPU time so far, every process's
	// (/proc/stat; HasMachine false where it cannot be read).
	Machine    time.Duration
	HasMachine bool
	// delays is the run delay by thread id, so a Stop sums only the
	// threads alive at both readings.
	delays map[int]time.Duration
}

// Sample is what disturbed one measured point: the differences of two
// Readings. A Has… field is false where the counter cannot be read.
// Others is the CPU time the other processes used over the point: the
// machine's busy time less this process's CPU time.
type Sample struct {
	Wall, CPU, RunDelay, Pressure, Others time.Duration
	HasCPU, HasRunDelay, HasOthers        bool
	HasPressure                           bool
	Instructions                          uint64
	HasInstructions                       bool
}

// OtherCores is Others over Wall: the cores the other processes used
// over the point; 0 when either is unknown.
func (s Sample) OtherCores() float64 {
	if !s.HasOthers || s.Wall <= 0 {
		return 0
	}
	return float64(s.Others) / float64(s.Wall)
}

// DisturbedShare is the share of the point's wall time its threads
// waited for a CPU because of other processes, as far as can be told:
// OthersDelay of its run-queue delay and the other processes' cores;
// where the machine's busy time cannot be read, the run-queue delay
// alone (DelayShare).
func (s Sample) DisturbedShare() float64 {
	if !s.HasOthers {
		return s.DelayShare()
	}
	return OthersDelay(100*s.DelayShare(), s.OtherCores())
}

// OthersDelay is the run-queue delay other processes can have caused, as
// a share of wall time, given the point's run-queue delay (delayPct, in
// % of wall time, summed over its threads) and the cores the other
// processes used over it (otherCores): at most the delay, and at most
// the CPU time the others took, since a thread waits on another
// process's account only while that process runs. A point's own threads
// waiting for each other (more runnable threads than cores, on an
// otherwise idle machine) is not disturbance: a regression that adds a
// thread must not hide behind a rerun. This is the one place the rule
// lives: the ladder's Policy and the paired gate's rounds both use it.
func OthersDelay(delayPct, otherCores float64) float64 {
	return max(min(delayPct/100, otherCores), 0)
}

// DelayShare is RunDelay as a share of Wall (0.05 for 5%); 0 when either
// is unknown.
func (s Sample) DelayShare() float64 {
	if !s.HasRunDelay || s.Wall <= 0 {
		return 0
	}
	return float64(s.RunDelay) / float64(s.Wall)
}

// PressureShare is Pressure as a share of Wall; 0 when unknown.
func (s Sample) PressureShare() float64 {
	if !s.HasPressure || s.Wall <= 0 {
		return 0
	}
	return float64(s.Pressure) / float64(s.Wall)
}

// Policy says when a point is disturbed and how often it is repeated.
// The zero Policy measures but never repeats.
type Policy struct {
	// MaxDelay is the run-queue delay, as a share of wall time, beyond
	// which a point is disturbed; 0 means DefaultMaxDelay.
	MaxDelay float64
	// Reruns is how many times a disturbed point is repeated at most.
	Reruns int
}

// DefaultPolicy is DefaultMaxDelay and DefaultReruns.
func DefaultPolicy() Policy { return Policy{MaxDelay: DefaultMaxDelay, Reruns: DefaultReruns} }

// Validate says what is wrong with p, naming the flag.
func (p Policy) Validate() error {
	switch {
	case !(p.MaxDelay >= 0 && p.MaxDelay < 10):
		return fmt.Errorf("--max-run-delay %v: want a share of wall time in [0, 10), e.g. 0.05 for 5%%", p.MaxDelay)
	case p.Reruns < 0 || p.Reruns > 100:
		return fmt.Errorf("--reruns %d: want 0 to 100", p.Reruns)
	}
	return nil
}

// MaxDelayOrDefault is MaxDelay, or DefaultMaxDelay when it is 0.
func (p Policy) MaxDelayOrDefault() float64 { return p.maxDelay() }

func (p Policy) maxDelay() float64 {
	if p.MaxDelay == 0 {
		return DefaultMaxDelay
	}
	return p.MaxDelay
}

// Disturbed reports whether the run-queue delay other processes caused
// (s.DisturbedShare) exceeds the policy's share of its wall time; false
// where the delay is unknown.
func (p Policy) Disturbed(s Sample) bool {
	return s.HasRunDelay && s.DisturbedShare() > p.maxDelay()
}

// Read takes a Reading now.
func Read() Reading {
	r := Reading{At: time.Now()}
	if cpu, err := rusage.ProcessCPU(); err == nil {
		r.CPU, r.HasCPU = cpu, true
	}
	r.delays, r.HasRunDelay = threadDelays()
	for _, d := range r.delays {
		r.RunDelay += d
	}
	r.Pressure, r.HasPressure = cpuPressure()
	if busy, _, ok := cpuTicks(); ok {
		r.Machine, r.HasMachine = time.Duration(busy)*clockTick, true
	}
	return r
}

// clockTick is /proc/stat's unit, USER_HZ: 100 on every Linux
// architecture Go supports.
const clockTick = 10 * time.Millisecond

// Probe measures one point: Start it before, Stop it after.
type Probe struct {
	start    Reading
	counters *counters
}

// Start reads the counters before a point, opening instruction counters
// where the system allows.
func Start() *Probe {
	c := openCounters()
	p := &Probe{counters: c, start: Read()}
	return p
}

// Stop reads the counters after the point and returns the difference,
// closing the instruction counters.
func (p *Probe) Stop() Sample {
	end := Read()
	var s Sample
	s.Instructions, s.HasInstructions = p.counters.close()
	s = diff(p.start, end, s)
	return s
}

// diff is end - start into s (whose instruction fields are kept).
func diff(start, end Reading, s Sample) Sample {
	s.Wall = end.At.Sub(start.At)
	if start.HasCPU && end.HasCPU {
		s.CPU, s.HasCPU = max(end.CPU-start.CPU, 0), true
	}
	if start.HasRunDelay && end.HasRunDelay {
		var d time.Duration
		for tid, e := range end.delays {
			if b, ok := start.delays[tid]; ok {
				d += max(e-b, 0)
			} else {
				d += e // a thread started during the point: all its delay is the point's
			}
		}
		s.RunDelay, s.HasRunDelay = d, true
	}
	if start.HasPressure && end.HasPressure {
		s.Pressure, s.HasPressure = max(end.Pressure-start.Pressure, 0), true
	}
	if start.HasMachine && end.HasMachine && s.HasCPU {
		// The machine's ticks are sampled, this process's CPU time is
		// counted: the difference can dip below 0 on an idle machine.
		s.Others, s.HasOthers = max(end.Machine-start.Machine-s.CPU, 0), true
	}
	return s
}
