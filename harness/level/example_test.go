package level

import (
	"fmt"
	"slices"
)

// withRow is the table with r inserted at level at, as adding a row to
// table in level.go does; the func it returns puts the table back.
func withRow(at Level, r row) func() {
	saved := table
	table = slices.Insert(slices.Clone(table), int(at), r)
	return func() { table = saved }
}

// A new level is one row (docs/extending.md, "A new cache level"): here a
// level that keeps the collate stage's output, one batch's slots filled,
// and runs batch, upload and step. Its cut says everything else: the
// stages it runs and keeps, the levels of each source, the attribution.
// It runs no loader (batching does not run in full), and neither the
// loader nor the ladder has a cache of collate's output: that is the
// stage's code still to write.
func Example_newLevel() {
	defer withRow(Host, row{"slots", Batch, Synthetic, "one batch's slots, filled"})()
	l, err := Parse("slots")
	if err != nil {
		fmt.Println(err)
		return
	}
	kept, _ := l.Kept(Disk)
	fmt.Println(l, "cuts at", l.Cut(), "and keeps", kept, "of data on disk; runs a loader:", l.Loader())
	fmt.Println(For(Synthetic))
	fmt.Println(Between(Sample, l), "|", Between(l, l+1))
	// Output:
	// slots cuts at batch and keeps collate of data on disk; runs a loader: false
	// [none raw sample slots host device]
	// batching (collate) | batching (collate)
}
