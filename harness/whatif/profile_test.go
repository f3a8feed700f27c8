package whatif

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/pipeline"
	"github.com/headspace-bench/headspace/harness/train"
)

// result is a made-up run of 100 samples (10 steps of 10, 1 s of wall
// time), each stage's CPU and task time given per sample.
func result(cpu bool, waited float64) train.Result {
	stage := func(name string, workers int, total, cpuPer time.Duration) pipeline.StageStats {
		s := pipeline.StageStats{Name: name, Workers: workers, Tasks: 100, Total: 100 * total}
		if cpu {
			s.CPU = 100 * cpuPer
		}
		return s
	}
	return train.Result{
		Batch: 10, Steps: 10, Wall: time.Second, InputWait: time.Duration(waited * float64(time.Second)),
		DeviceStats: device.Stats{Steps: 10, StepTime: 200 * ms, ConvertTime: 10 * ms, Uploads: 10, UploadTime: 30 * ms},
		Pipeline: pipeline.Stats{Stages: []pipeline.StageStats{
			stage("index", 1, time.Microsecond, 0),
			stage("load", 2, 3*ms, 1*ms),
			stage("transform", 2, 5*ms, 4*ms),
			stage("collate", 2, 1*ms, 500*time.Microsecond),
			stage("batch", 1, 2*ms, 100*time.Microsecond), // waits on the queue
		}},
	}
}

func TestFromRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cpu       bool
		run       Run
		waited    float64
		source    string
		transform time.Duration
		load      time.Duration
		host      time.Duration
		other     float64
	}{
		{"thread CPU", true, Run{Workers: 2, Cores: 2, CPUs: 2, ProcessCPU: 700 * ms}, 0, ThreadCPU, 4 * ms, 1 * ms, 1400 * time.Microsecond, 0},
		{"task time", false, Run{Workers: 2, Cores: 2, CPUs: 2}, 0, TaskTime, 5 * ms, 3 * ms, 0, 0},
		// The load stage's storage latency is a wait, not CPU.
		{"latency", false, Run{Workers: 2, Cores: 2, CPUs: 2, LoadLatency: 2 * ms}, 0, TaskTime, 5 * ms, 1 * ms, 0, 0},
		// Input-bound and cores-bound, yet 10 steps/s × 10 × 7 ms = 0.7
		// of 2 cores used: 2·2/0.7 − 2 other threads.
		{"other load", true, Run{Workers: 2, Cores: 2, CPUs: 2, ProcessCPU: 700 * ms}, 0.9, ThreadCPU, 4 * ms, 1 * ms, 1400 * time.Microsecond, 2*2/0.7 - 2},
	} {
		p, err := FromRun(result(tc.cpu, tc.waited), tc.run)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.CPUSource != tc.source || p.Stages[1].CPU != tc.transform || p.Stages[0].CPU != tc.load || p.Host != tc.host {
			t.Errorf("%s: source %s, transform %v, load %v, host %v; want %s, %v, %v, %v", tc.name, p.CPUSource, p.Stages[1].CPU, p.Stages[0].CPU, p.Host, tc.source, tc.transform, tc.load, tc.host)
		}
		if !near(p.Other, tc.other) {
			t.Errorf("%s: other load %v, want %v", tc.name, p.Other, tc.other)
		}
		if p.Step != 21*ms || p.Upload != 3*ms || p.Batch != 10 || len(p.Stages) != 4 || p.Stages[3].Scales || !p.Stages[0].Scales {
			t.Errorf("%s: step %v upload %v batch %d stages %+v", tc.name, p.Step, p.Upload, p.Batch, p.Stages)
		}
	}
	if _, err := FromRun(train.Result{Batch: 10}, Run{Workers: 1, Cores: 1}); err == nil || !strings.Contains(err.Error(), "level none") {
		t.Errorf("a run without a pipeline: %v", err)
	}
}

func TestCalibrateAndMedian(t *testing.T) {
	p := synthetic() // 6 ms a sample at 2 cores
	one := synthetic()
	one.Cores = 1
	for i := range one.Stages {
		one.Stages[i].CPU /= 2
	}
	one.Host /= 2 // 3 ms a sample at 1 core: 100% more at 2
	q, err := p.Calibrate(one)
	if err != nil || !near(q.Growth, 1) {
		t.Fatalf("Calibrate: growth %v, %v; want 1", q.Growth, err)
	}
	// At 1 core the costs are the 1-core run's: 3 ms a sample.
	if got := q.Predict(Scenario{Cores: 1, Workers: 8, StepScale: 0.01}).StepsPerSec; !near(got, 1/0.030) {
		t.Errorf("1 core after calibration: %v steps/s, want %v", got, 1/0.030)
	}
	if _, err := p.Calibrate(p); err == nil {
		t.Error("Calibrate with a 2-core profile accepted")
	}
	a, b, c := synthetic(), synthetic(), synthetic()
	a.Stages[1].CPU, b.Stages[1].CPU, c.Stages[1].CPU = 3*ms, 9*ms, 4*ms
	a.Measured, b.Measured, c.Measured = 1, 3, 2
	m, err := Median([]Profile{a, b, c})
	if err != nil || m.Stages[1].CPU != 4*ms || m.Measured != 2 || a.Stages[1].CPU != 3*ms {
		t.Errorf("Median: transform %v, measured %v, %v", m.Stages[1].CPU, m.Measured, err)
	}
	b.Cores = 4
	if _, err := Median([]Profile{a, b}); err == nil {
		t.Error("Median of profiles at different cores accepted")
	}
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "profile.json")
	p := synthetic()
	p.Growth, p.Other, p.Neighbours = 0.2, 1.5, 0.7
	if err := p.Write(path); err != nil {
		t.Fatal(err)
	}
	q, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if q.Predict(Scenario{Cores: 3}).StepsPerSec != p.Predict(Scenario{Cores: 3}).StepsPerSec || q.Growth != 0.2 || len(q.Stages) != 4 {
		t.Errorf("read back %+v", q)
	}
	for name, data := range map[string]string{
		"garbage.json": "not json",
		"format.json":  `{"format": "other/1", "profile": {}}`,
		"invalid.json": `{"format": "headspace-whatif-profile/1", "profile": {"batch": 0}}`,
		"extra.json":   `{"format": "headspace-whatif-profile/1", "profile": {}, "x": 1}`,
	} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(f); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file read")
	}
	bad := synthetic()
	bad.Batch = 0
	if err := bad.Write(filepath.Join(dir, "bad.json")); err == nil {
		t.Error("an invalid profile written")
	}
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	p := synthetic()
	dir := f.TempDir()
	if err := p.Write(filepath.Join(dir, "p.json")); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "p.json"))
	f.Add(b)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format": "headspace-whatif-profile/1", "profile": {"batch": 1, "workers": 1, "cores": 1, "stages": [{"name": "x", "workers": 1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		// A profile that decodes predicts without panicking, never below 0.
		for _, s := range []Scenario{{}, {Cores: 1, Workers: 1, StepScale: 2}, {Cores: 64, Workers: 64, StepScale: 0.1}} {
			if v := p.Predict(s).StepsPerSec; v < 0 || v != v {
				t.Fatalf("prediction %v from %s", v, data)
			}
		}
		p.Needs(Scenario{})
		p.CoresNeeded(1)
	})
}
