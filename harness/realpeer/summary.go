package realpeer

import (
	"math"
	"slices"
	"time"
)

// Row is one peer (or ours) at one worker count: the medians of its runs
// and ours ÷ it.
type Row struct {
	Peer    string
	Workers int
	Runs    int // runs measured
	Missing int // runs missing
	// The medians of the runs measured.
	SamplesPerSec float64
	CPUPerSample  time.Duration // CPU over the run's samples (batches × batch)
	PeakRSS       int64         // -1 where not measured
	TTFB          time.Duration
	// Ratio is the median over the rounds where both ran of ours'
	// samples/s ÷ this peer's in the same round; Least and Most its range;
	// Pairs the number of such rounds (0 for ours, or none in common).
	Ratio, Least, Most float64
	Pairs              int
}

// Summarize gives a Row for ours, then each peer in order, at each worker
// count in the order first seen; batch is the samples a batch.
func Summarize(ms []Measurement, peers []string, batch int) []Row {
	var workers []int
	for _, m := range ms {
		if !slices.Contains(workers, m.Workers) {
			workers = append(workers, m.Workers)
		}
	}
	type key struct {
		peer           string
		workers, round int
	}
	sps := map[key]float64{}
	for _, m := range ms {
		if m.Missing == "" {
			sps[key{m.Peer, m.Workers, m.Round}] = m.SamplesPerSec
		}
	}
	var rows []Row
	for _, w := range workers {
		for _, p := range append([]string{Ours}, peers...) {
			r := Row{Peer: p, Workers: w, PeakRSS: -1}
			var s, cpu, rss, ttfb, ratios []float64
			for _, m := range ms {
				if m.Peer != p || m.Workers != w {
					continue
				}
				if m.Missing != "" {
					r.Missing++
					continue
				}
				r.Runs++
				s = append(s, m.SamplesPerSec)
				cpu = append(cpu, m.CPU.Seconds()/float64(max(m.Batches*batch, 1)))
				ttfb = append(ttfb, float64(m.TTFB))
				if m.PeakRSS >= 0 {
					rss = append(rss, float64(m.PeakRSS))
				}
				if o, ok := sps[key{Ours, w, m.Round}]; ok && p != Ours && m.SamplesPerSec > 0 {
					ratios = append(ratios, o/m.SamplesPerSec)
				}
			}
			if r.Runs == 0 && r.Missing == 0 {
				continue
			}
			if r.Runs > 0 {
				r.SamplesPerSec = median(s)
				r.CPUPerSample = time.Duration(math.Round(median(cpu) * 1e9))
				r.TTFB = time.Duration(math.Round(median(ttfb)))
				if len(rss) > 0 {
					r.PeakRSS = int64(median(rss))
				}
			}
			if r.Pairs = len(ratios); r.Pairs > 0 {
				r.Ratio, r.Least, r.Most = median(ratios), slices.Min(ratios), slices.Max(ratios)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// median of xs (not empty): the middle value, or the mean of the two.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
