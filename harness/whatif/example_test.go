package whatif_test

import (
	"fmt"
	"time"

	"github.com/headspace-bench/headspace/harness/whatif"
)

// A pipeline whose transform takes 4 ms of CPU a sample, batches of 10
// and a 20 ms step: what would 2 and 4 cores give, and what would a model
// twice as fast need?
func Example() {
	p := whatif.Profile{
		Batch: 10, Workers: 4, Cores: 2, Step: 20 * time.Millisecond,
		Stages: []whatif.Stage{
			{Name: "load", CPU: time.Millisecond, Workers: 4, Scales: true},
			{Name: "transform", CPU: 4 * time.Millisecond, Workers: 4, Scales: true},
		},
	}
	for _, c := range []int{2, 4} {
		pr := p.Predict(whatif.Scenario{Cores: c})
		fmt.Printf("%d cores: %.1f steps/s, bound by the %s\n", c, pr.StepsPerSec, pr.Bound)
	}
	fmt.Printf("a model twice as fast needs %.0f cores and %d workers\n", p.CoresNeeded(0.5), p.WorkersNeeded(0.5))
	for _, n := range p.Needs(whatif.Scenario{}) {
		fmt.Printf("%s alone: %.2f× faster\n", n.Stage, n.Speedup)
	}
	// Output:
	// 2 cores: 40.0 steps/s, bound by the cores
	// 4 cores: 50.0 steps/s, bound by the step
	// a model twice as fast needs 5 cores and 4 workers
	// load alone: +Inf× faster
	// transform alone: 1.33× faster
}
