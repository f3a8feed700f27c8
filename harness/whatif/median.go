package whatif

import (
	"fmt"
	"time"

	"github.com/headspace-bench/headspace/internal/summary"
)

// Median is the profile of several runs of one setting: every cost the
// median of the runs' (package summary), so one run disturbed by the
// machine's other work does not set the model's costs.
func Median(ps []Profile) (Profile, error) {
	if len(ps) == 0 {
		return Profile{}, fmt.Errorf("whatif: no profiles")
	}
	out := ps[0]
	out.Stages = append([]Stage(nil), ps[0].Stages...)
	med := func(get func(Profile) float64) float64 {
		vs := make([]float64, len(ps))
		for i, p := range ps {
			vs[i] = get(p)
		}
		return summary.Median(vs)
	}
	dur := func(get func(Profile) time.Duration) time.Duration {
		return time.Duration(med(func(p Profile) float64 { return float64(get(p)) }))
	}
	for _, p := range ps[1:] {
		if p.Batch != out.Batch || p.Workers != out.Workers || p.Cores != out.Cores || len(p.Stages) != len(out.Stages) {
			return Profile{}, fmt.Errorf("whatif: profiles of different settings (batch %d/%d, workers %d/%d, cores %d/%d)",
				out.Batch, p.Batch, out.Workers, p.Workers, out.Cores, p.Cores)
		}
		if p.CPUSource != out.CPUSource {
			out.CPUSource = TaskTime
		}
	}
	out.Step = dur(func(p Profile) time.Duration { return p.Step })
	out.Upload = dur(func(p Profile) time.Duration { return p.Upload })
	out.Host = dur(func(p Profile) time.Duration { return p.Host })
	out.Measured = med(func(p Profile) float64 { return p.Measured })
	out.Used = med(func(p Profile) float64 { return p.Used })
	out.Other = med(func(p Profile) float64 { return p.Other })
	out.Growth = med(func(p Profile) float64 { return p.Growth })
	out.Neighbours = med(func(p Profile) float64 { return p.Neighbours })
	for i := range out.Stages {
		out.Stages[i].CPU = dur(func(p Profile) time.Duration { return p.Stages[i].CPU })
		out.Stages[i].Wait = dur(func(p Profile) time.Duration { return p.Stages[i].Wait })
	}
	return out, out.Validate()
}
