package sim_test

import (
	"fmt"
	"os"
	"time"

	"github.com/headspace-bench/headspace/harness/sim"
)

// The first animation of the post: loading is the bottleneck, and the model
// halts every 7 batches, once per round of the 7 loaders.
func ExampleRun() {
	r, err := sim.Run(sim.Config{
		Loaders:  7,
		Load:     2 * time.Second,
		Step:     100 * time.Millisecond,
		Duration: 30 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("batches:", r.Batches)
	fmt.Printf("model idle: %.1f%%\n", 100*r.ModelIdle)
	fmt.Println(r.Halting(r.Config.Step))
	// Output:
	// batches: 98
	// model idle: 67.3%
	// halts every 7 batches (14 of 14 runs; mean halt 1.3s)
}

// The third animation of the post: the loaders are twice as fast as the
// model needs, so the model only waits for the very first batch.
func ExampleResult_Summary() {
	r, err := sim.Run(sim.Config{Loaders: 7, Load: 350 * time.Millisecond, Step: 100 * time.Millisecond, Duration: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	r.Summary(os.Stdout)
	// Output:
	// simulated:         7 loaders, load 350ms, step 100ms, 30s, prefetch 2, seed 0
	// batches completed: 296 in 30s (9.87/s; the model alone could do 300)
	// model idle:        1.2%
	// mean queue length: 10.28 ready batches (max 11)
	// mean rates:        loaders 20.00/s, model 10.00/s: bound by the model
	// halting:           no halts ≥ 100ms after the first batch
}
