package loadbench

// What headspace loaders prints and draws of a sweep.

import (
	"fmt"
	"io"
)

// WriteText prints the sweep's table and, after it, the SPDL document's
// loader-only figures.
func WriteText(w io.Writer, ms []Measurement) error {
	if err := WriteTable(w, ms); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nSPDL document (ImageNet, loader only):\n\n")
	return WriteDocumented(w)
}

// SavePlots draws prefix-ttfb.png and prefix-throughput.png (Plots),
// saying where on stdout.
func SavePlots(stdout io.Writer, ms []Measurement, prefix, title string) error {
	paths, err := Plots(ms, prefix, title)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Fprintf(stdout, "plot: %s\n", p)
	}
	return nil
}

// PrefetchNote is a note where c's runs measure mostly prefetched
// batches: with maxWorkers workers, the batches requested at the start
// leave few to measure. It is "" otherwise.
func (c Config) PrefetchNote(maxWorkers int) string {
	prefetch := c.Pipeline.Prefetch
	if c.Batches > prefetch*maxWorkers+1 {
		return ""
	}
	return fmt.Sprintf("with %d workers, %d batches are requested at start; "+
		"--batches %d leaves samples/s measuring mostly prefetched batches", maxWorkers, prefetch*maxWorkers, c.Batches)
}
