package resultfile_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// A result file is written by the one writer, package driver, and read
// back here.
func Example_writeAndRead() {
	dir, err := os.MkdirTemp("", "results-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ladder.txt")

	// A sweep would use machine.Environment(device) for the machine.
	config := []resultfile.Config{{Key: "goos", Value: "linux"}, {Key: "commit", Value: "1a2b3c4"}, {Key: "device", Value: "emulated"}}
	var rs []*benchfmt.Result
	for _, ns := range []float64{581e6, 579e6} {
		rs = append(rs, &benchfmt.Result{
			Name:  benchfmt.Name("BenchmarkLadder/level=raw/workers=4/transforms=naive"),
			Iters: 10,
			Values: []benchfmt.Value{
				{Value: ns, Unit: "ns/op"},
				{Value: 1e9 / ns, Unit: "steps/s"},
			},
		})
	}
	// The run's Measure returns its records; Run writes them whole.
	job := driver.Job{Settings: func() []resultfile.Config { return config },
		Measure: func(context.Context, *driver.Hooks) ([]*benchfmt.Result, error) { return rs, nil }}
	if _, err := driver.Run(context.Background(), job, driver.Output{Path: path}); err != nil {
		log.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(data))

	read, err := resultfile.Read(path)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range read {
		sec, _ := r.Value("sec/op") // benchfmt tidies ns/op to sec/op
		steps, _ := r.Value("steps/s")
		fmt.Printf("%s commit=%s: %.3f sec/op, %.3f steps/s\n", r.Name, r.GetConfig("commit"), sec, steps)
	}
	// Output:
	// Unit steps/s better=higher
	//
	// goos: linux
	// commit: 1a2b3c4
	// device: emulated
	//
	// BenchmarkLadder/level=raw/workers=4/transforms=naive 10 5.81e+08 ns/op 1.721170395869191 steps/s
	// BenchmarkLadder/level=raw/workers=4/transforms=naive 10 5.79e+08 ns/op 1.7271157167530224 steps/s
	// Ladder/level=raw/workers=4/transforms=naive commit=1a2b3c4: 0.581 sec/op, 1.721 steps/s
	// Ladder/level=raw/workers=4/transforms=naive commit=1a2b3c4: 0.579 sec/op, 1.727 steps/s
}
