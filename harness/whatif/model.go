package whatif

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Stage is one pipeline stage's measured cost per sample.
type Stage struct {
	Name string `json:"name"`
	// CPU is the stage's CPU time per sample.
	CPU time.Duration `json:"cpu_ns"`
	// Wait is the time per sample a task waits off the CPU by its own
	// doing (storage latency), not queue waits; its workers are held but
	// no core is used.
	Wait time.Duration `json:"wait_ns"`
	// Workers is the stage's goroutines in the measured run. Scales says
	// the count follows the loader's Workers (load, transform, collate);
	// otherwise it is fixed (the batch stage's one goroutine).
	Workers int  `json:"workers"`
	Scales  bool `json:"scales"`
}

// Profile is what the model knows of a pipeline: the costs one run
// measured and the setting it ran at.
type Profile struct {
	Batch   int `json:"batch"`   // samples per step
	Workers int `json:"workers"` // the loader's Workers in the run
	Cores   int `json:"cores"`   // GOMAXPROCS in the run
	// Step is the device's time per step: the model step and any
	// on-device conversion.
	Step time.Duration `json:"step_ns"`
	// Upload is the copy to the device per step; the device overlaps it
	// with the step before.
	Upload time.Duration `json:"upload_ns"`
	// Host is the CPU per sample spent outside the measured stages: the
	// index stage, the training loop, the Go runtime (scheduler, GC).
	Host   time.Duration `json:"host_cpu_ns"`
	Stages []Stage       `json:"stages"`
	// Measured is the run's own steps/s, to check the model at its origin.
	Measured float64 `json:"measured_steps_per_s"`
	// CPUs is the machine's logical CPUs (runtime.NumCPU) in the run.
	CPUs int `json:"cpus"`
	// Used is the cores the pipeline kept busy over the measured steps:
	// steps/s × Batch × CPU per sample.
	Used float64 `json:"cores_used"`
	// Other is the other processes' runnable threads the run competed
	// with, inferred from Used where the run was bound by the cores (see
	// FromRun); 0 when the machine was ours or it could not be told.
	Other float64 `json:"other_load"`
	// Growth is how much the CPU per sample grows with each core added
	// (0.2: 20% more at 2 cores than at 1), fitted by Calibrate from a
	// run at 1 core: cache and memory contention between workers and the
	// runtime's scheduling; 0 when not calibrated.
	Growth float64 `json:"growth_per_core"`
	// Neighbours is the cores the machine's other processes kept busy
	// during the run, for the record; negative if unknown.
	Neighbours float64 `json:"neighbour_cores"`
	// CPUSource says where the stages' CPU came from: "thread-cpu" (each
	// task's thread CPU clock) or "task-time" (wall time of the tasks,
	// an overestimate where workers outnumber cores).
	CPUSource string `json:"cpu_source"`
}

// Validate reports a profile the model cannot use.
func (p Profile) Validate() error {
	switch {
	case p.Batch <= 0:
		return fmt.Errorf("profile: batch %d must be positive", p.Batch)
	case p.Workers <= 0:
		return fmt.Errorf("profile: workers %d must be positive", p.Workers)
	case p.Cores <= 0:
		return fmt.Errorf("profile: cores %d must be positive", p.Cores)
	case p.Step < 0 || p.Upload < 0 || p.Host < 0:
		return errors.New("profile: negative step, upload or host time")
	case p.CPUs < 0 || !(p.Other >= 0) || !(p.Growth >= 0) || !(p.Used >= 0) || math.IsInf(p.Other+p.Growth+p.Used+p.Neighbours, 0) || math.IsNaN(p.Neighbours):
		return fmt.Errorf("profile: CPUs %d, other load %v, growth %v, cores used %v", p.CPUs, p.Other, p.Growth, p.Used)
	case len(p.Stages) == 0:
		return errors.New("profile: no stages")
	}
	for _, s := range p.Stages {
		if s.CPU < 0 || s.Wait < 0 || s.Workers <= 0 {
			return fmt.Errorf("profile: stage %q: CPU %v, wait %v, workers %d", s.Name, s.CPU, s.Wait, s.Workers)
		}
	}
	return nil
}

// CPUPerSample is the CPU a sample costs the host: every stage's and the
// host's own share.
func (p Profile) CPUPerSample() time.Duration {
	t := p.Host
	for _, s := range p.Stages {
		t += s.CPU
	}
	return t
}

// scale is the factor the CPU per sample grows by at c cores against the
// profile's: Growth per core added, up to the most cores measured (the
// profile's, or the machine's CPUs); beyond them the growth is not known
// and is held where it was.
func (p Profile) scale(c int) float64 {
	c = min(c, max(p.Cores, p.CPUs))
	return (1 + p.Growth*float64(c-1)) / (1 + p.Growth*float64(p.Cores-1))
}

// at is the profile's costs at c cores: every CPU cost scaled by Growth.
func (p Profile) at(c int) Profile {
	f := p.scale(c)
	if f == 1 {
		return p
	}
	q := p
	q.Host = time.Duration(float64(p.Host) * f)
	q.Stages = make([]Stage, len(p.Stages))
	for i, s := range p.Stages {
		s.CPU = time.Duration(float64(s.CPU) * f)
		q.Stages[i] = s
	}
	return q
}

// Effective is the cores the process gets at GOMAXPROCS c on a machine
// with the profile's other load: c threads among Other others, sharing
// max(CPUs, c) CPUs fairly, and never more than c.
func (p Profile) Effective(c int) float64 {
	if p.Other <= 0 {
		return float64(c)
	}
	m := float64(max(p.CPUs, c))
	return math.Min(float64(c), float64(c)*m/(p.Other+float64(c)))
}

// Scenario is a setting to predict: cores (GOMAXPROCS), the loader's
// workers and a multiplier of the step time (0.5: a model twice as fast).
// Zero fields mean the profile's own.
type Scenario struct {
	Cores     int
	Workers   int
	StepScale float64
}

func (p Profile) fill(s Scenario) Scenario {
	if s.Cores <= 0 {
		s.Cores = p.Cores
	}
	if s.Workers <= 0 {
		s.Workers = p.Workers
	}
	if s.StepScale <= 0 {
		s.StepScale = 1
	}
	return s
}

// Kind is a kind of resource that can bind throughput.
type Kind int

// The resources.
const (
	StepBound    Kind = iota // the device's step
	CopyBound                // the host-to-device copy
	CoresBound               // the host's cores
	WorkersBound             // one stage's worker count
)

// Limit is one resource's ceiling on steps/s.
type Limit struct {
	Kind        Kind
	Stage       string // for WorkersBound
	Workers     int    // for WorkersBound
	StepsPerSec float64
}

func (l Limit) String() string {
	switch l.Kind {
	case StepBound:
		return "step"
	case CopyBound:
		return "copy"
	case CoresBound:
		return "cores"
	case WorkersBound:
		return fmt.Sprintf("%s workers", l.Stage)
	}
	return "?"
}

// Prediction is the model's answer for one scenario.
type Prediction struct {
	Scenario    Scenario
	StepsPerSec float64
	// Bound is the binding resource: the smallest of Limits.
	Bound Limit
	// Limits is every resource's ceiling: step, copy, cores, then each
	// stage's workers in pipeline order.
	Limits []Limit
}

// rate is n per d-long task as steps/s of batch samples; +Inf for d = 0.
func rate(n float64, d time.Duration, batch int) float64 {
	if d <= 0 {
		return math.Inf(1)
	}
	return n / (d.Seconds() * float64(batch))
}

// workers is stage s's goroutines at the loader's workers w.
func (s Stage) workersAt(w int) int {
	if s.Scales {
		return w
	}
	return s.Workers
}

// Predict returns the predicted steps/s at s and what binds it: the
// cores' limit counts the cores the process would get (Effective) and the
// CPU per sample at that many (Growth).
func (p Profile) Predict(s Scenario) Prediction {
	s = p.fill(s)
	step := time.Duration(float64(p.Step) * s.StepScale)
	p = p.at(s.Cores)
	ls := []Limit{
		{Kind: StepBound, StepsPerSec: rate(1, step, 1)},
		{Kind: CopyBound, StepsPerSec: rate(1, p.Upload, 1)},
		{Kind: CoresBound, StepsPerSec: rate(p.Effective(s.Cores), p.CPUPerSample(), p.Batch)},
	}
	for _, st := range p.Stages {
		n := st.workersAt(s.Workers)
		ls = append(ls, Limit{Kind: WorkersBound, Stage: st.Name, Workers: n, StepsPerSec: rate(float64(n), st.CPU+st.Wait, p.Batch)})
	}
	pr := Prediction{Scenario: s, Limits: ls, Bound: ls[0]}
	for _, l := range ls[1:] {
		if l.StepsPerSec < pr.Bound.StepsPerSec {
			pr.Bound = l
		}
	}
	pr.StepsPerSec = pr.Bound.StepsPerSec
	return pr
}

// DeviceRate is the device's ceiling at a step multiplier: the step or
// the copy, whichever is slower.
func (p Profile) DeviceRate(stepScale float64) float64 {
	if stepScale <= 0 {
		stepScale = 1
	}
	return math.Min(rate(1, time.Duration(float64(p.Step)*stepScale), 1), rate(1, p.Upload, 1))
}

// MaxCores is the most cores CoresNeeded looks at.
const MaxCores = 4096

// CoresNeeded is the fewest cores (GOMAXPROCS) with which the cores keep
// up with the device at a step multiplier, given enough workers: at the
// profile's CPU per sample, grown by Growth, on a machine with its other
// load. +Inf when no count up to MaxCores does, or the device has no
// ceiling.
func (p Profile) CoresNeeded(stepScale float64) float64 {
	target := p.DeviceRate(stepScale)
	if math.IsInf(target, 1) {
		return math.Inf(1)
	}
	for c := 1; c <= MaxCores; c++ {
		q := p.at(c)
		if rate(q.Effective(c), q.CPUPerSample(), p.Batch) >= target*(1-1e-9) {
			return float64(c)
		}
	}
	return math.Inf(1)
}

// WorkersNeeded is the loader's workers the pipeline needs to keep up with
// the device at a step multiplier (given enough cores): the most any
// scaling stage needs; 0 when fixed stages alone cannot keep up.
func (p Profile) WorkersNeeded(stepScale float64) int {
	target := p.DeviceRate(stepScale)
	need := 1
	for _, s := range p.Stages {
		n := int(math.Ceil(target*float64(p.Batch)*(s.CPU+s.Wait).Seconds() - 1e-9))
		if !s.Scales {
			if n > s.Workers {
				return 0
			}
			continue
		}
		need = max(need, n)
	}
	return need
}

// Need is what one stage's cost would have to become, alone, for the
// pipeline to keep up with the device in a scenario.
type Need struct {
	Stage string
	CPU   time.Duration // the stage's CPU per sample now
	// Share is the stage's part of the CPU a sample costs.
	Share float64
	// Speedup is how many times faster the stage must get, others
	// unchanged: 1 when it is not in the way, +Inf when no speed-up of
	// this stage alone is enough (the others need the cores, or another
	// stage's workers bind).
	Speedup float64
	// Cut is the share of the stage's CPU that must go: 1 − 1/Speedup.
	Cut float64
}

// Needs says, for each stage, the speed-up it would need alone for the
// pipeline to stop binding at s: to reach the device's rate.
func (p Profile) Needs(s Scenario) []Need {
	s = p.fill(s)
	target := p.DeviceRate(s.StepScale)
	p = p.at(s.Cores)
	total := p.CPUPerSample()
	perStep := float64(p.Batch) * target // samples/s to sustain
	out := make([]Need, 0, len(p.Stages))
	for i, st := range p.Stages {
		n := Need{Stage: st.Name, CPU: st.CPU}
		if total > 0 {
			n.Share = float64(st.CPU) / float64(total)
		}
		// The most CPU per sample the stage may take: what the cores
		// leave once every other stage and the host have theirs, and what
		// its workers can do after their waits.
		others := (total - st.CPU).Seconds()
		allowed := p.Effective(s.Cores)/perStep - others
		allowed = math.Min(allowed, float64(st.workersAt(s.Workers))/perStep-st.Wait.Seconds())
		blocked := false
		for j, o := range p.Stages {
			if j != i && rate(float64(o.workersAt(s.Workers)), o.CPU+o.Wait, p.Batch) < target*(1-1e-9) {
				blocked = true
			}
		}
		switch {
		case math.IsInf(target, 1) || blocked || allowed <= 0:
			n.Speedup = math.Inf(1)
		case st.CPU.Seconds() <= allowed:
			n.Speedup = 1
		default:
			n.Speedup = st.CPU.Seconds() / allowed
		}
		n.Cut = 1 - 1/n.Speedup
		out = append(out, n)
	}
	return out
}

// Cells are the speed-up the stage needs alone and the share of its cost
// that must go, as the table and the report print them: "none" and "0%"
// when it needs none, "not enough alone" and "-" when no speed-up of it
// alone would do.
func (n Need) Cells() (speedup, cut string) {
	switch {
	case n.Speedup == 1:
		return "none", "0%"
	case math.IsInf(n.Speedup, 1):
		return "not enough alone", "-"
	}
	return fmt.Sprintf("%.2f×", n.Speedup), fmt.Sprintf("%.0f%%", 100*n.Cut)
}
