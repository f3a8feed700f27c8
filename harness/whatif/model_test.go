package whatif

import (
	"github.com/headspace-bench/headspace/harness/level"
	"math"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// synthetic is a profile of made-up stage costs: 6 ms of CPU per sample
// (load 1, transform 4, collate 0.5, batch 0.1, host 0.4), batches of 10,
// a 20 ms step, measured with 4 workers on 2 cores.
func synthetic() Profile {
	return Profile{
		Batch: 10, Workers: 4, Cores: 2, Step: 20 * ms, Host: 400 * time.Microsecond, CPUSource: ThreadCPU,
		Stages: []Stage{
			{Name: "load", CPU: 1 * ms, Workers: 4, Scales: true},
			{Name: "transform", CPU: 4 * ms, Workers: 4, Scales: true},
			{Name: "collate", CPU: 500 * time.Microsecond, Workers: 4, Scales: true},
			{Name: "batch", CPU: 100 * time.Microsecond, Workers: 1},
		},
	}
}

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

func TestPredict(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(p *Profile)
		s     Scenario
		want  float64
		bound string
	}{
		// 2 cores / 60 ms of CPU a step.
		{"cores", nil, Scenario{Cores: 2, Workers: 4}, 2 / 0.060, "cores"},
		// One transform worker does 1 / 40 ms steps.
		{"one worker", nil, Scenario{Cores: 8, Workers: 1}, 25, "transform workers"},
		{"the step", nil, Scenario{Cores: 8, Workers: 8}, 50, "step"},
		{"model 2x faster", nil, Scenario{Cores: 8, Workers: 8, StepScale: 0.5}, 100, "step"},
		{"model 4x faster", nil, Scenario{Cores: 8, Workers: 8, StepScale: 0.25}, 8 / 0.060, "cores"},
		{"zero fields are the profile's", nil, Scenario{}, 2 / 0.060, "cores"},
		{"the copy", func(p *Profile) { p.Upload = 30 * ms }, Scenario{Cores: 8, Workers: 8}, 1 / 0.030, "copy"},
		// Storage latency holds workers without using cores: 2 / (10 × 11 ms).
		{"load latency", func(p *Profile) { p.Stages[0].Wait = 10 * ms }, Scenario{Cores: 8, Workers: 2}, 2 / 0.110, "load workers"},
		// The batch stage is one goroutine whatever the workers.
		{"fixed stage", func(p *Profile) { p.Stages[3].CPU = 3 * ms }, Scenario{Cores: 64, Workers: 64}, 1 / 0.030, "batch workers"},
		{"no step, no copy", func(p *Profile) { p.Step = 0 }, Scenario{Cores: 2, Workers: 4}, 2 / 0.060, "cores"},
	} {
		p := synthetic()
		if tc.edit != nil {
			tc.edit(&p)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		pr := p.Predict(tc.s)
		if !near(pr.StepsPerSec, tc.want) || pr.Bound.String() != tc.bound {
			t.Errorf("%s: %.4f steps/s bound by %s, want %.4f by %s", tc.name, pr.StepsPerSec, pr.Bound, tc.want, tc.bound)
		}
		if len(pr.Limits) != 3+len(p.Stages) {
			t.Errorf("%s: %d limits", tc.name, len(pr.Limits))
		}
		for _, l := range pr.Limits {
			if l.StepsPerSec < pr.StepsPerSec {
				t.Errorf("%s: limit %s at %.3f below the prediction %.3f", tc.name, l, l.StepsPerSec, pr.StepsPerSec)
			}
		}
	}
}

func TestNeeded(t *testing.T) {
	p := synthetic()
	for _, tc := range []struct {
		scale   float64
		cores   float64
		workers int
	}{
		{1, 3, 2},      // 50 steps/s × 60 ms; transform 50 × 10 × 4 ms = 2 workers
		{0.5, 6, 4},    // 100 steps/s
		{2, 2, 1},      // 25 steps/s: 1.5 cores of CPU, 2 cores
		{0.1, 30, 20},  // 500 steps/s: the batch stage's 0.1 ms × 10 × 500 = 0.5 of its goroutine
		{0.05, 60, 40}, // 1000 steps/s: the batch stage's goroutine exactly busy
		{0.04, 75, 0},  // 1250 steps/s: beyond what the batch stage's goroutine can do
	} {
		if got := p.CoresNeeded(tc.scale); !near(got, tc.cores) {
			t.Errorf("step ×%g: cores needed %.3f, want %.3f", tc.scale, got, tc.cores)
		}
		if got := p.WorkersNeeded(tc.scale); got != tc.workers {
			t.Errorf("step ×%g: workers needed %d, want %d", tc.scale, got, tc.workers)
		}
	}
}

func TestNeeds(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name string
		s    Scenario
		want map[string]float64 // speed-up per stage
	}{
		// 2 cores feed 4 ms of CPU a sample at 50 steps/s; the others take
		// 2 ms without transform, so transform must halve. Without load
		// (5 ms) or any other single stage the rest still needs too much.
		{"cores bind", Scenario{Cores: 2, Workers: 4}, map[string]float64{"load": inf, "transform": 2, "collate": inf, "batch": inf}},
		// 3 cores are exactly enough: nothing needs to change.
		{"enough cores", Scenario{Cores: 3, Workers: 4}, map[string]float64{"load": 1, "transform": 1, "collate": 1, "batch": 1}},
		// One worker: transform must do a sample in 2 ms (2×), and no other
		// stage can help while transform's worker binds.
		{"workers bind", Scenario{Cores: 8, Workers: 1}, map[string]float64{"load": inf, "transform": 2, "collate": inf, "batch": inf}},
	} {
		p := synthetic()
		for _, n := range p.Needs(tc.s) {
			if !near(n.Speedup, tc.want[n.Stage]) {
				t.Errorf("%s: %s needs %.3f×, want %.3f×", tc.name, n.Stage, n.Speedup, tc.want[n.Stage])
			}
			if !math.IsInf(n.Speedup, 1) && !near(n.Cut, 1-1/n.Speedup) {
				t.Errorf("%s: %s cut %.3f for speed-up %.3f", tc.name, n.Stage, n.Cut, n.Speedup)
			}
			// Applying the speed-up makes the pipeline keep up.
			if n.Speedup > 1 && !math.IsInf(n.Speedup, 1) {
				q := p
				q.Stages = append([]Stage(nil), p.Stages...)
				for i := range q.Stages {
					if q.Stages[i].Name == n.Stage {
						q.Stages[i].CPU = time.Duration(float64(q.Stages[i].CPU) / n.Speedup)
					}
				}
				if got := q.Predict(tc.s).StepsPerSec; got < p.DeviceRate(tc.s.StepScale)*(1-1e-6) {
					t.Errorf("%s: %s %.3f× faster gives %.3f steps/s, below the device's %.3f", tc.name, n.Stage, n.Speedup, got, p.DeviceRate(1))
				}
			}
		}
	}
}

// TestLadderAndModelDisagree is document 003's caveat on made-up costs:
// transforms take most of 2 cores but fit under the step; adding raw
// loading (a small cost) tips the cores over. The ladder sees the drop
// where loading is added and blames it; the model sees the cores bind and
// blames the stage that holds most of them, which needs the smaller
// speed-up. Where loading itself is the big cost, the two agree.
func TestLadderAndModelDisagree(t *testing.T) {
	profile := func(load, transform time.Duration) Profile {
		p := synthetic()
		p.Host = 100 * time.Microsecond
		p.Stages[0].CPU, p.Stages[1].CPU = load, transform
		p.Stages[2].CPU, p.Stages[3].CPU = 200*time.Microsecond, 50*time.Microsecond
		return p
	}
	for _, tc := range []struct {
		name                  string
		load, transform       time.Duration
		ladderSays, modelSays string
	}{
		{"tipped over", 1 * ms, 3500 * time.Microsecond, "raw data loading", "transforms"},
		{"loading is the cost", 3500 * time.Microsecond, 1 * ms, "raw data loading", "raw data loading"},
		{"transforms are the cost", 100 * time.Microsecond, 6 * ms, "transforms", "transforms"},
		{"nothing binds", 100 * time.Microsecond, 100 * time.Microsecond, "model step", "model step"},
	} {
		p := profile(tc.load, tc.transform)
		s := Scenario{Cores: 2, Workers: 4}
		c := p.Compare(s)
		if c.LadderBlames() != tc.ladderSays || c.Model != tc.modelSays {
			t.Errorf("%s: ladder blames %q, model %q; want %q and %q (ladder %v)", tc.name, c.LadderBlames(), c.Model, tc.ladderSays, tc.modelSays, p.Ladder(s))
		}
		if c.Agree() != (tc.ladderSays == tc.modelSays) {
			t.Errorf("%s: Agree %v", tc.name, c.Agree())
		}
	}
}

func TestAtLevel(t *testing.T) {
	p := synthetic()
	p.Upload = 5 * ms
	p.Stages[0].Wait = ms
	for _, tc := range []struct {
		level  string
		cpu    time.Duration // CPU per sample left
		upload time.Duration
	}{
		{"none", 6 * ms, 5 * ms},
		{"raw", 5 * ms, 5 * ms},
		{"sample", 1 * ms, 5 * ms},
		{"host", 0, 5 * ms},
		{"device", 0, 0},
	} {
		l, err := level.Parse(tc.level)
		if err != nil {
			t.Fatal(err)
		}
		q := p.AtLevel(l)
		if q.CPUPerSample() != tc.cpu || q.Upload != tc.upload {
			t.Errorf("%s: CPU %v upload %v, want %v and %v", tc.level, q.CPUPerSample(), q.Upload, tc.cpu, tc.upload)
		}
	}
	if p.Stages[1].CPU != 4*ms || p.Stages[0].Wait != ms {
		t.Error("AtLevel changed the profile it was called on")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(p *Profile)
	}{
		{"batch", func(p *Profile) { p.Batch = 0 }},
		{"workers", func(p *Profile) { p.Workers = -1 }},
		{"cores", func(p *Profile) { p.Cores = 0 }},
		{"step", func(p *Profile) { p.Step = -ms }},
		{"stages", func(p *Profile) { p.Stages = nil }},
		{"stage CPU", func(p *Profile) { p.Stages[1].CPU = -1 }},
		{"stage workers", func(p *Profile) { p.Stages[3].Workers = 0 }},
	} {
		p := synthetic()
		tc.edit(&p)
		if p.Validate() == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func TestReadLadder(t *testing.T) {
	p := synthetic() // cores bind at 2 cores, transform holds 67% of them
	measured := map[level.Level]float64{level.Device: 50, level.Host: 50, level.Sample: 49, level.Raw: 45, level.None: 33}
	r := p.ReadLadder(measured)
	c := r.Comparison()
	if c.LadderBlames() != "raw data loading" || c.Model != "transforms" || c.Agree() || !strings.Contains(c.Reason(), "only tips them over") {
		t.Errorf("reading: ladder %q, model %q, reason %q", c.LadderBlames(), c.Model, c.Reason())
	}
	if !near(r.Predicted[level.None], 2/0.060) {
		t.Errorf("predicted none %v", r.Predicted[level.None])
	}
	var text, md strings.Builder
	if err := WriteLadder(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteLadderMarkdown(&md, "naive", r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"none    33.00     33.33", "measured ladder: raw data loading (27% of throughput lost when it is added)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(md.String(), "| none | raw data loading | 33.00 | 33.33 |") || !strings.Contains(md.String(), "blames **transforms**") {
		t.Errorf("Markdown:\n%s", md.String())
	}
}
