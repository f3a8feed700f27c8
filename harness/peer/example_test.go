package peer_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/headspace-bench/headspace/harness/peer"
)

func ExampleParse() {
	// What peers/torch/dataloader.py prints, shortened.
	out := `python: 3.11.2
torch: 1.13.0a0
BenchmarkPeer/impl=torch/workers=1 8 2250000000 ttfb-ns 115.20 samples/s 21.500 cpu-s
BenchmarkPeer/impl=torch/workers=2 8 2750000000 ttfb-ns 189.00 samples/s 24.250 cpu-s
`
	o, err := peer.Parse(strings.NewReader(out), "dataloader.py")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("torch", o.Get("torch"))
	for _, m := range o.Results {
		fmt.Printf("%d workers: TTFB %v, %.1f samples/s, CPU %v\n", m.Workers, m.TTFB, m.SamplesPerSec, m.CPU)
	}
	// Output:
	// torch 1.13.0a0
	// 1 workers: TTFB 2.25s, 115.2 samples/s, CPU 21.5s
	// 2 workers: TTFB 2.75s, 189.0 samples/s, CPU 24.25s
}

func ExampleSummarize() {
	rows := peer.Summarize([]peer.Measurement{
		{Impl: peer.Torch, Workers: 2, Batches: 8, SamplesPerSec: 189},
		{Impl: peer.Fast, Workers: 2, Batches: 8, SamplesPerSec: 2079},
		{Impl: peer.Naive, Workers: 2, Batches: 8, SamplesPerSec: 340},
	})
	for _, r := range rows {
		met, ok := r.Met()
		fmt.Printf("%s: %.2f× torch, target judged %v, met %v\n", r.Impl, r.Speedup, ok, met)
	}
	// Output:
	// naive: 1.80× torch, target judged true, met false
	// fast: 11.00× torch, target judged true, met true
	// torch: 0.00× torch, target judged false, met false
}
