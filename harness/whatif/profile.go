package whatif

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/train"
	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// The CPU sources of a profile.
const (
	ThreadCPU = "thread-cpu" // each task's thread CPU clock (pipeline.Pipeline.MeasureCPU)
	TaskTime  = "task-time"  // the tasks' wall time, where no CPU clock was read
)

// Run is what FromRun needs besides the training loop's result.
type Run struct {
	Workers int // the loader's Workers
	Cores   int // GOMAXPROCS during the run
	// LoadLatency is the load stage's off-CPU wait per sample
	// (loader.Config.LoadLatency).
	LoadLatency time.Duration
	// ProcessCPU is the process's CPU time (user and system) over the
	// run; 0 if unknown, leaving Host, Used and Other at 0.
	ProcessCPU time.Duration
	// CPUs is the machine's logical CPUs (runtime.NumCPU).
	CPUs int
	// Neighbours is the cores the machine's other processes used during
	// the run (Neighbours); negative if unknown.
	Neighbours float64
}

// Neighbours is the cores the machine's other processes kept busy over an
// interval of wall time: the machine's busy CPU time less this process's,
// over the wall time; -1 where either is unknown.
func Neighbours(machineBusy, processCPU, wall time.Duration) float64 {
	if machineBusy <= 0 || wall <= 0 {
		return -1
	}
	return math.Max(0, (machineBusy-processCPU).Seconds()/wall.Seconds())
}

// InputBound is the share of a run's wall time the training loop must
// have waited for input before FromRun infers the machine's other load
// from it: the pipeline, not the device, set the pace.
const InputBound = 0.5

// FromRun makes a profile from one run of the full pipeline (ladder level
// none): each stage's CPU per sample from its statistics (thread CPU where
// the run measured it, task time otherwise), the step and the upload from
// the device's counters, and the host's share from the process's CPU less
// the stages'. The index stage is counted in the host's share.
func FromRun(r train.Result, run Run) (Profile, error) {
	p := Profile{Batch: r.Batch, Workers: run.Workers, Cores: run.Cores, CPUs: run.CPUs, Measured: r.StepsPerSec(), CPUSource: TaskTime, Neighbours: run.Neighbours}
	ds := r.DeviceStats
	if ds.Steps > 0 {
		p.Step = (ds.StepTime + ds.ConvertTime) / time.Duration(ds.Steps)
	}
	if ds.Uploads > 0 {
		p.Upload = ds.UploadTime / time.Duration(ds.Uploads)
	}
	var samples int64
	var stagesCPU time.Duration
	for _, st := range r.Pipeline.Stages {
		if st.CPU > 0 {
			p.CPUSource = ThreadCPU
		}
		if st.Name == "index" {
			samples = st.Tasks
		}
	}
	if samples <= 0 {
		return p, errors.New("whatif: the run has no pipeline statistics (run it at ladder level none)")
	}
	for _, st := range r.Pipeline.Stages {
		if st.Name == "index" {
			continue
		}
		if st.Tasks <= 0 {
			return p, fmt.Errorf("whatif: stage %s ran no tasks", st.Name)
		}
		used := st.Total
		if p.CPUSource == ThreadCPU {
			used = st.CPU
		}
		s := Stage{Name: st.Name, CPU: used / time.Duration(st.Tasks), Workers: st.Workers, Scales: st.Name != "batch"}
		if st.Name == "load" || st.Name == "fetch" { // fetch: from a dataset on disk
			s.Wait = run.LoadLatency
			if p.CPUSource == TaskTime {
				s.CPU = max(0, s.CPU-run.LoadLatency)
			}
		}
		stagesCPU += used
		p.Stages = append(p.Stages, s)
	}
	if run.ProcessCPU > stagesCPU {
		p.Host = (run.ProcessCPU - stagesCPU) / time.Duration(samples)
	}
	p.Used = p.Measured * float64(p.Batch) * p.CPUPerSample().Seconds()
	if err := p.Validate(); err != nil {
		return p, err
	}
	p.Other = p.inferOther(r.InputBound())
	return p, nil
}

// inferOther is the other processes' runnable threads a run competed
// with: where the pipeline set the pace (the loop waited for input at
// least InputBound of the time) and the model, with the cores all ours,
// says the cores bind, the process should have kept Cores cores busy; if
// it used fewer, fair sharing of max(CPUs, Cores) CPUs among Cores threads
// of ours and L others gave it Cores·CPUs/(L+Cores): L = Cores·CPUs/Used −
// Cores. 0 where that cannot be told.
func (p Profile) inferOther(inputBound float64) float64 {
	if inputBound < InputBound || p.Used <= 0 || p.CPUs <= 0 {
		return 0
	}
	q := p
	q.Other = 0
	if q.Predict(Scenario{}).Bound.Kind != CoresBound {
		return 0
	}
	c := float64(p.Cores)
	if p.Used >= c {
		return 0
	}
	return c*float64(max(p.CPUs, p.Cores))/p.Used - c
}

// Calibrate fits Growth from a profile of the same pipeline at 1 core:
// the CPU per sample at p's cores over one's, per core added (0 where p
// ran at 1 core, or the CPU per sample did not grow). p's costs stay
// those measured at its cores.
func (p Profile) Calibrate(one Profile) (Profile, error) {
	if one.Cores != 1 {
		return p, fmt.Errorf("whatif: calibrating with a profile at %d cores, want 1", one.Cores)
	}
	if one.Batch != p.Batch || len(one.Stages) != len(p.Stages) {
		return p, errors.New("whatif: calibrating with a profile of another pipeline")
	}
	if p.Cores <= 1 || one.CPUPerSample() <= 0 {
		return p, nil
	}
	g := (float64(p.CPUPerSample())/float64(one.CPUPerSample()) - 1) / float64(p.Cores-1)
	p.Growth = max(0, g)
	return p, nil
}

// fileFormat is the saved profile's format marker.
const fileFormat = "headspace-whatif-profile/1"

type file struct {
	Format  string  `json:"format"`
	Profile Profile `json:"profile"`
}

// Write saves p to path as JSON, atomically.
func (p Profile) Write(path string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(file{Format: fileFormat, Profile: p}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteKindBytes(path, FileKind, append(b, '\n'))
}

// Decode reads a profile that Write saved.
func Decode(r io.Reader) (Profile, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return Profile{}, fmt.Errorf("not a what-if profile: %w", err)
	}
	if f.Format != fileFormat {
		return Profile{}, fmt.Errorf("format %q, want %q", f.Format, fileFormat)
	}
	if dec.More() {
		return Profile{}, errors.New("data after the profile")
	}
	return f.Profile, f.Profile.Validate()
}

// maxFile is the largest saved profile Read takes (one is a few KiB).
const maxFile = 16 << 20

// FileKind is what a saved profile is, for the output policy
// (harness/atomicfile): JSON whose first member is its format.
var FileKind = atomicfile.JSON("what-if profile", fileFormat)

// Read reads the profile saved at path, a regular file of at most 16 MiB;
// errors name the file.
func Read(path string) (Profile, error) {
	b, err := atomicfile.ReadFileLimit(path, maxFile)
	if err != nil {
		return Profile{}, err
	}
	p, err := Decode(bytes.NewReader(b))
	if err != nil {
		return Profile{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// WithProcessCPU sets the host's share from the process's CPU per sample
// in a run that did not measure the stages: that less the stages' CPU
// (never below 0), so measuring's own cost is not counted as the host's.
// Used, which counts the host's share, follows.
func (p Profile) WithProcessCPU(perSample time.Duration) (Profile, error) {
	if perSample <= 0 {
		return p, fmt.Errorf("whatif: process CPU per sample %v must be positive", perSample)
	}
	var stages time.Duration
	for _, s := range p.Stages {
		stages += s.CPU
	}
	p.Host = max(0, perSample-stages)
	if p.Used > 0 {
		p.Used = p.Measured * float64(p.Batch) * p.CPUPerSample().Seconds()
	}
	return p, p.Validate()
}

// Line is p as one line of JSON in the saved profile's format (Write's,
// without the indentation), for a result file's configuration line: the
// profile a report was written from, so the report can be rebuilt from
// the file (workloads.WhatIfCodec).
func (p Profile) Line() (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(file{Format: fileFormat, Profile: p})
	return string(b), err
}

// ParseLine reads a profile that Line wrote.
func ParseLine(s string) (Profile, error) { return Decode(strings.NewReader(s)) }
