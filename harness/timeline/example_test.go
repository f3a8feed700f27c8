package timeline_test

import (
	"fmt"
	"os"
	"time"

	"github.com/headspace-bench/headspace/harness/timeline"
)

// A loader feeding a model: the model waits for the first batch, then for
// the third.
func ExampleTimeline_Gaps() {
	ms := time.Millisecond
	tl := &timeline.Timeline{
		Name:   "two batches",
		Tracks: []string{"loader 0", "model"},
		Spans: []timeline.Span{
			{Track: "loader 0", Label: "load", Start: 0, End: 200 * ms, Batch: 0, Color: 0},
			{Track: "loader 0", Label: "load", Start: 200 * ms, End: 400 * ms, Batch: 1, Color: 0},
			{Track: "model", Label: "step", Start: 200 * ms, End: 300 * ms, Batch: 0, Color: 0},
			{Track: "model", Label: "step", Start: 400 * ms, End: 500 * ms, Batch: 1, Color: 0},
		},
		End: 500 * ms,
	}
	for _, g := range tl.Gaps("model", 0) {
		fmt.Printf("idle %v–%v after %d steps\n", g.Start, g.End, g.Spans)
	}
	if err := tl.WriteChromeTrace(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// idle 0s–200ms after 0 steps
	// idle 300ms–400ms after 1 steps
	// {"displayTimeUnit":"ms","traceEvents":[
	// {"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{"name":"two batches"}},
	// {"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":1,"args":{"name":"loader 0"}},
	// {"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":1,"args":{"sort_index":0}},
	// {"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":2,"args":{"name":"model"}},
	// {"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":2,"args":{"sort_index":1}},
	// {"name":"load","cat":"loader 0","ph":"X","ts":0,"dur":200000,"pid":1,"tid":1,"args":{"batch":0,"color":0}},
	// {"name":"load","cat":"loader 0","ph":"X","ts":200000,"dur":200000,"pid":1,"tid":1,"args":{"batch":1,"color":0}},
	// {"name":"step","cat":"model","ph":"X","ts":200000,"dur":100000,"pid":1,"tid":2,"args":{"batch":0,"color":0}},
	// {"name":"step","cat":"model","ph":"X","ts":400000,"dur":100000,"pid":1,"tid":2,"args":{"batch":1,"color":0}}]}
}
