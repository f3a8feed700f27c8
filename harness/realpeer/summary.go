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
	// WholeRun is the samples of the whole run over its whole time, first
	// batch included (WholeRunRate): a side that fills a deep prefetch
	// buffer before its first batch gets no credit for it here.
	WholeRun     float64
	CPUPerSample time.Duration // CPU over the run's samples (batches × batch)
	PeakRSS      int64         // -1 where not measured
	TTFB         time.Duration
	// Ratio is the median over the rounds where both ran of ours'
	// samples/s ÷ this peer's in the same round; Least and Most its range;
	// Pairs the number of such rounds (0 for ours, or none in common).
	// WholeRatio is the same median of WholeRun's ratios.
	Ratio, Least, Most float64
	WholeRatio         float64
	Pairs              int
	// Share is the share of the limit: SamplesPerSec × the bytes a sample
	// moves through memory ÷ the copy bandwidth at this worker count
	// (Report.CopyBandwidth); -1 where the file has no limit.
	Share float64
}

// WholeRunRate is m's samples over the whole run's time: the time to the
// first batch and the rest at SamplesPerSec, batch samples a batch; 0 if
// the run has no rate.
func WholeRunRate(m Measurement, batch int) float64 {
	if m.SamplesPerSec <= 0 || m.Missing != "" {
		return 0
	}
	rest := float64((m.Batches-1)*batch) / m.SamplesPerSec
	return float64(m.Batches*batch) / (m.TTFB.Seconds() + rest)
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
	ours := oursByRound(ms, batch)
	var rows []Row
	for _, w := range workers {
		for _, p := range append([]string{Ours}, peers...) {
			if r := summarizeRuns(ms, p, w, batch, ours); r.Runs > 0 || r.Missing > 0 {
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// roundKey is one round at one worker count.
type roundKey struct{ workers, round int }

// runRates are a run's samples/s and its whole-run rate (WholeRunRate).
type runRates struct{ sps, whole float64 }

// oursByRound are our measured runs' rates by worker count and round.
func oursByRound(ms []Measurement, batch int) map[roundKey]runRates {
	ours := map[roundKey]runRates{}
	for _, m := range ms {
		if m.Missing == "" && m.Peer == Ours {
			ours[roundKey{m.Workers, m.Round}] = runRates{m.SamplesPerSec, WholeRunRate(m, batch)}
		}
	}
	return ours
}

// summarizeRuns is peer p's Row at w workers: the medians of its runs
// measured, its runs missing, and ours (by round) ÷ it in each round
// where both ran.
func summarizeRuns(ms []Measurement, p string, w, batch int, ours map[roundKey]runRates) Row {
	r := Row{Peer: p, Workers: w, PeakRSS: -1}
	var s, whole, cpu, rss, ttfb, ratios, wholeRatios []float64
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
		whole = append(whole, WholeRunRate(m, batch))
		cpu = append(cpu, m.CPU.Seconds()/float64(max(m.Batches*batch, 1)))
		ttfb = append(ttfb, float64(m.TTFB))
		if m.PeakRSS >= 0 {
			rss = append(rss, float64(m.PeakRSS))
		}
		if o, ok := ours[roundKey{w, m.Round}]; ok && p != Ours && m.SamplesPerSec > 0 {
			ratios = append(ratios, o.sps/m.SamplesPerSec)
			wholeRatios = append(wholeRatios, o.whole/WholeRunRate(m, batch))
		}
	}
	if r.Runs > 0 {
		r.SamplesPerSec = median(s)
		r.WholeRun = median(whole)
		r.CPUPerSample = time.Duration(math.Round(median(cpu) * 1e9))
		r.TTFB = time.Duration(math.Round(median(ttfb)))
		if len(rss) > 0 {
			r.PeakRSS = int64(median(rss))
		}
	}
	if r.Pairs = len(ratios); r.Pairs > 0 {
		r.Ratio, r.Least, r.Most = median(ratios), slices.Min(ratios), slices.Max(ratios)
		r.WholeRatio = median(wholeRatios)
	}
	return r
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
