package gate_test

import (
	"fmt"

	"github.com/headspace-bench/headspace/harness/gate"
)

func ExampleCompareFiles() {
	rep, err := gate.CompareFiles("testdata/gate/toofew/old.txt", "testdata/gate/toofew/new.txt", gate.DefaultOptions())
	if err != nil {
		fmt.Println(err) // a command exits 2 here
		return
	}
	for _, row := range rep.Rows {
		fmt.Printf("%s %s: %v (n=%d+%d)\n", row.Name, row.Unit, row.Verdict, row.Old.N, row.New.N)
	}
	if err := rep.Evidence(gate.DefaultMinCoverage); err != nil {
		fmt.Println("exit 2:", err)
		return
	}
	if len(rep.Regressions()) > 0 {
		fmt.Println("exit 1")
	}
	// Output:
	// BenchmarkThreeEach-2 sec/op: too few samples (n=3+3)
	// BenchmarkThreeFour-2 sec/op: too few samples (n=3+4)
	// BenchmarkFourEach-2 sec/op: regression (n=4+4)
	// BenchmarkOneEach-2 sec/op: too few samples (n=1+1)
	// exit 1
}
