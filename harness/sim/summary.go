package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/headspace-bench/headspace/harness/timeline"
)

// Halting describes where the model stopped for lack of data: its idle gaps
// and the number of batches it stepped between them.
type Halting struct {
	// MinGap is the shortest idle interval counted as a halt.
	MinGap time.Duration
	// Gaps are the model's idle intervals of at least MinGap, in time
	// order: the wait for the first batch (Spans 0), the halts between busy
	// runs, and an idle interval running to Duration.
	Gaps []timeline.Gap
	// Runs are the numbers of batches stepped in each complete busy run:
	// between the first batch and the first halt, then between consecutive
	// halts. A run still going at Duration is left out.
	Runs []int
	// Every is the most common run length (the shorter on ties), 0 if
	// there are no runs.
	Every int
	// Share is the fraction of Runs of length Every.
	Share float64
	// Regular reports a clear "halts every n batches" pattern: at least
	// two runs and at least 80% of them of length Every.
	Regular bool
}

// Halting finds the model's idle gaps of at least minGap in the timeline
// and the number of batches between them. With a pipeline bound by
// loading and synchronized loaders (constant load times, all starting
// together), the model halts every Loaders batches.
func (r *Result) Halting(minGap time.Duration) Halting {
	h := Halting{MinGap: minGap, Gaps: r.Timeline.Gaps(ModelTrack, minGap)}
	count := map[int]int{}
	for _, g := range h.Gaps {
		if g.Spans > 0 {
			h.Runs = append(h.Runs, g.Spans)
			count[g.Spans]++
		}
	}
	for n, k := range count {
		if k > count[h.Every] || k == count[h.Every] && n < h.Every {
			h.Every = n
		}
	}
	if len(h.Runs) > 0 {
		h.Share = float64(count[h.Every]) / float64(len(h.Runs))
	}
	h.Regular = len(h.Runs) >= 2 && h.Share >= 0.8
	return h
}

// String summarises the pattern in one line.
func (h Halting) String() string {
	if len(h.Runs) == 0 {
		return fmt.Sprintf("no halts ≥ %v after the first batch", h.MinGap)
	}
	lo, hi, sum := h.Runs[0], h.Runs[0], 0
	for _, n := range h.Runs {
		lo, hi, sum = min(lo, n), max(hi, n), sum+n
	}
	var idle time.Duration
	halts := 0
	for _, g := range h.Gaps {
		if g.Spans > 0 {
			idle += g.End - g.Start
			halts++
		}
	}
	meanIdle := (idle / time.Duration(halts)).Round(time.Millisecond)
	if h.Regular {
		return fmt.Sprintf("halts every %d batches (%d of %d runs; mean halt %v)",
			h.Every, int(h.Share*float64(len(h.Runs))+0.5), len(h.Runs), meanIdle)
	}
	return fmt.Sprintf("no regular halting: %d halts ≥ %v, %d–%d batches between (mean %.1f, most common %d in %.0f%% of runs; mean halt %v)",
		halts, h.MinGap, lo, hi, float64(sum)/float64(len(h.Runs)), h.Every, 100*h.Share, meanIdle)
}

// Summary writes a short report: the configuration, batches completed,
// model idle fraction, mean queue length, the bottleneck by mean rates and
// the halting pattern (halts of at least one mean step).
func (r *Result) Summary(w io.Writer) error {
	c := r.Config
	secs := c.Duration.Seconds()
	loadRate := float64(c.Loaders) / c.Load.Seconds()
	stepRate := 1 / c.Step.Seconds()
	bottleneck := "loading"
	switch {
	case loadRate > stepRate*1.001:
		bottleneck = "the model"
	case loadRate >= stepRate*0.999:
		bottleneck = "neither (rates match)"
	}
	if r.Batches == 0 {
		// Nothing finished: idle time, rates and a bottleneck would be
		// read from a run that never got going, so no verdict is given.
		_, err := fmt.Fprintf(w, `simulated:         %v
batches completed: 0 in %v
verdict:           none: no batch completed, so neither the loaders nor the model can be called the bottleneck; simulate longer (--duration) or with smaller load and step times or spreads
`, c, c.Duration)
		return err
	}
	_, err := fmt.Fprintf(w, `simulated:         %v
batches completed: %d in %v (%.2f/s; the model alone could do %d)
model idle:        %.1f%%
mean queue length: %.2f ready batches (max %d)
mean rates:        loaders %.2f/s, model %.2f/s: bound by %s
halting:           %v
`, c, r.Batches, c.Duration, float64(r.Batches)/secs, int(c.Duration/c.Step),
		100*r.ModelIdle, r.MeanQueueLength, r.MaxQueueLength,
		loadRate, stepRate, bottleneck, r.Halting(c.Step))
	return err
}
