package workloads

import (
	"fmt"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/engines/sim"
)

// Sim is the loader simulation of "Visualizing data loaders" (document
// 004): DataLoader's workers and prefetch as a discrete-event simulation,
// each case's batches trained in its duration beside the post's count.
type Sim struct {
	Cases []SimCase
}

// SimCase is one simulated pipeline and the post's figure for it.
type SimCase struct {
	Config sim.Config
	// Post is the batches the post's animation counts; 0 where it gives none.
	Post int
}

// SimDocumentSpread is the load-time spread (standard deviation over mean)
// of the post's random loads that reproduces its 275 and 295
// (harness/engines/sim/doc.go).
const SimDocumentSpread = 0.22

// The post's setting: 7 loader workers, a 100 ms step, 30 s of training.
const (
	SimDocumentLoaders  = 7
	SimDocumentStep     = 100 * time.Millisecond
	SimDocumentDuration = 30 * time.Second
)

// DefaultSim is the post's three animations: 2 s loads (constant), and
// 700 ms and 350 ms loads (normal, SimDocumentSpread), with the post's
// workers, step and duration — 98, 275 and 295 batches in the post.
func DefaultSim() Sim {
	c := func(load time.Duration, dist string) sim.Config {
		cfg := sim.Config{Loaders: SimDocumentLoaders, Load: load, LoadDist: dist, Step: SimDocumentStep, Duration: SimDocumentDuration, Seed: 1}
		if dist == sim.Normal {
			cfg.LoadStddev = time.Duration(SimDocumentSpread * float64(load))
		}
		return cfg
	}
	return Sim{Cases: []SimCase{
		{c(2*time.Second, sim.Constant), 98},
		{c(700*time.Millisecond, sim.Normal), 275},
		{c(350*time.Millisecond, sim.Normal), 295},
	}}
}

// Run simulates every case and returns the results and their records:
// BenchmarkSim/load=…/dist=… with batches, model-idle-% and queue.
func (s Sim) Run() ([]*sim.Result, []*benchfmt.Result, error) {
	var out []*sim.Result
	var recs []*benchfmt.Result
	for _, c := range s.Cases {
		r, err := sim.Run(c.Config)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, r)
		recs = append(recs, &benchfmt.Result{
			Name:  benchfmt.Name(fmt.Sprintf("BenchmarkSim/load=%v/dist=%s", c.Config.Load, r.Config.LoadDist)),
			Iters: 1,
			Values: []benchfmt.Value{
				{Value: float64(r.Batches), Unit: "batches"},
				{Value: 100 * r.ModelIdle, Unit: "model-idle-%"},
				{Value: r.MeanQueueLength, Unit: "queue"},
			},
		})
	}
	return out, recs, nil
}
