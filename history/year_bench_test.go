package history

// Benchmarks at the scale the history is for (issue 37), on generated
// stores (Generator): the figures of docs/history.md and
// results/history-year.txt come from
//
//	go test -run '^$' -bench 'Year' -benchtime=1x -count=3 -benchmem ./history/

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/history/changepoint"
	"github.com/headspace-bench/headspace/internal/summary"
)

// benchStart dates the benchmarks' nights early enough that a long
// benchmark's extra nights are still in the past.
var benchStart = time.Date(2020, 1, 1, 3, 17, 0, 0, time.UTC)

// BenchmarkYearAdd is one `history add` into a store of 0 and of 365
// runs of the year store (the store grows by one run an iteration; the
// first add, which may build the store's index, is not timed).
func BenchmarkYearAdd(b *testing.B) {
	for _, runs := range []int{0, 365} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			g := YearOfNights()
			g.Start = benchStart
			dir := filepath.Join(b.TempDir(), "store")
			src := b.TempDir()
			night := 0
			add := func() {
				all := g
				all.Nights = night + 1
				f := filepath.Join(src, fmt.Sprintf("night%d.txt", night))
				if err := os.WriteFile(f, all.File(night), 0o644); err != nil {
					b.Fatal(err)
				}
				if _, err := Add(context.Background(), dir, f, AddOptions{}); err != nil {
					b.Fatal(err)
				}
				night++
			}
			if runs > 0 {
				g.Nights = runs
				if err := g.Write(context.Background(), dir); err != nil {
					b.Fatal(err)
				}
				night = runs
				add()
			}
			b.ResetTimer()
			for range b.N {
				if runs == 0 {
					b.StopTimer()
					dir = filepath.Join(b.TempDir(), "store")
					night = 0
					b.StartTimer()
				}
				add()
			}
		})
	}
}

// yearSeries reads the medians of every series of the store in dir, as
// Load gives them to the detector.
func yearSeries(b *testing.B, dir string) [][]float64 {
	b.Helper()
	var runs []Run
	keys, err := Machines(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range keys {
		rs, err := Runs(dir, k)
		if err != nil {
			b.Fatal(err)
		}
		runs = append(runs, rs...)
	}
	idx := map[seriesKey]int{}
	var out [][]float64
	for _, r := range runs {
		vals := map[seriesKey][]float64{}
		if _, err := resultfile.Scan(r.Path, func(res *benchfmt.Result) error {
			for _, v := range res.Values {
				k := seriesKey{string(res.Name), v.Unit}
				vals[k] = append(vals[k], v.Value)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		for k, vs := range vals {
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, nil)
			}
			out[i] = append(out[i], summary.Of(vs).Median)
		}
	}
	return out
}

// BenchmarkYearChangePoints is the change-point detection (Detect and
// Suspect, as Load runs them) of 200 series of 365 and of 730 runs that
// all change by 8% half way: a change that moves every series. The
// store is read before the timer starts.
func BenchmarkYearChangePoints(b *testing.B) {
	for _, runs := range []int{365, 730} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			g := Generator{Nights: runs, Series: 200, Seed: 37, Start: benchStart,
				Steps: []Step{{Night: runs / 2, Bench: -1, Delta: -0.08}}}
			dir := filepath.Join(b.TempDir(), "store")
			if err := g.Write(context.Background(), dir); err != nil {
				b.Fatal(err)
			}
			series := yearSeries(b, dir)
			if len(series) != 200 {
				b.Fatalf("%d series, want 200", len(series))
			}
			b.ResetTimer()
			for range b.N {
				found := 0
				for _, xs := range series {
					cs := changepoint.Detect(xs, changepoint.Options{})
					from := 0
					if len(cs) > 0 {
						from = cs[len(cs)-1].Index
					}
					changepoint.Suspect(xs, from, changepoint.Options{})
					found += len(cs)
				}
				b.ReportMetric(float64(found), "changes")
			}
		})
	}
}

// BenchmarkYearLoad is `history report`'s reading of the year store
// (YearOfNights: 365 runs × 200 series, three steps): every run read,
// every series' change points found, the latest night compared. It
// fails unless the three steps are found at their nights in all their
// units (found 9) and nothing else is (false 0).
func BenchmarkYearLoad(b *testing.B) {
	g := YearOfNights()
	dir := filepath.Join(b.TempDir(), "store")
	if err := g.Write(context.Background(), dir); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		h, err := Load(context.Background(), dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		found, missed, others := yearFinds(h, g)
		b.ReportMetric(float64(found), "found")
		b.ReportMetric(float64(others), "false")
		if found != 9 || missed != 0 || others != 0 {
			b.Fatalf("%d of the 9 stepped series found, %d missed, %d other change points", found, missed, others)
		}
	}
}
