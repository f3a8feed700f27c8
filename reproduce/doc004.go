package reproduce

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/headspace-bench/headspace/harness/sim"
	"github.com/headspace-bench/headspace/internal/summary"
	"github.com/headspace-bench/headspace/workloads"
)

// SimRow is one simulated configuration of document 004.
type SimRow struct {
	Load     time.Duration // mean load time of a batch
	Dist     string        // sim.Constant or sim.Normal
	Stddev   time.Duration // load-time standard deviation
	Post     int           // the post's batch count, 0 when the post has no such run
	Animated bool          // the post's animation of this load time
	Seed1    int           // batches completed with seed 1 (the animated run)
	Seeds    int           // seeds simulated
	Mean, SD float64       // batches over the seeds
	Idle     float64       // the model's idle fraction, seed 1
	Halting  string        // the halting pattern, seed 1
	GIF      string        // the animation's link, when Animated
	Timeline string        // the timeline's link (PNG; an SVG beside it), when Animated
}

// Result004 is document 004's measured values.
type Result004 struct {
	Header   Header
	Loaders  int
	Step     time.Duration
	Duration time.Duration
	GIFTick  time.Duration // simulated time per animation frame
	Rows     []SimRow
}

// sim004Runs are the configurations: each of the post's runs
// (workloads.DefaultSim) with constant loads and with a spread of
// workloads.SimDocumentSpread; the animated one is the post's own.
func sim004Runs() []SimRow {
	var rows []SimRow
	for _, c := range workloads.DefaultSim().Cases {
		for _, dist := range []string{sim.Constant, sim.Normal} {
			row := SimRow{Load: c.Config.Load, Dist: dist, Post: c.Post, Animated: dist == c.Config.LoadDist}
			if dist == sim.Normal {
				row.Stddev = time.Duration(workloads.SimDocumentSpread * float64(c.Config.Load))
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// config004 is the simulation of a row and seed.
func config004(row SimRow, loaders int, step, duration time.Duration, seed int) sim.Config {
	return sim.Config{Loaders: loaders, Load: row.Load, LoadDist: row.Dist, LoadStddev: row.Stddev,
		Step: step, Duration: duration, Seed: uint64(seed)}
}

// The report of document 004: its experiment, measured by measure004 and
// rendered by render004.
func init() {
	report(Doc{ID: "004", Name: "sim", Title: "Visualizing data loaders to diagnose deep learning pipelines", Summary: "the loader simulation: the three animations and their batch counts", Source: "004 (`004_86163727c16e432a.txt`)", Experiment: workloads.Sim{}, measure: measure004, render: render004})
}

func measure004(ctx context.Context, s *settings, t *tracker) (measurement, error) {
	w := workloads.Sized[workloads.Sim](s.size())
	t.begin(len(w.Runs()))
	return s.measure(ctx, w, t)
}

func render004(f *resultFile, p *page) ([]byte, error) {
	res := Result004{Header: f.header(), Loaders: f.integer("loaders"), Step: f.duration("step"), Duration: f.duration("duration"), GIFTick: f.duration("gif-tick")}
	seeds := f.integer("seeds")
	if err := f.check(); err != nil {
		return nil, err
	}
	out, err := decoded(f, workloads.Sim{}.Codec())
	if err != nil {
		return nil, err
	}
	for _, row := range sim004Runs() {
		var counts []float64
		var first []workloads.SimRun
		for _, r := range out.Runs {
			if r.Load != row.Load || r.Dist != row.Dist {
				continue
			}
			counts = append(counts, float64(r.Batches))
			if r.Seed == 1 {
				first = append(first, r)
			}
		}
		if len(counts) != seeds {
			return nil, &FileError{Path: f.path, Err: fmt.Errorf("load %v %s: %d seeds, the configuration says %d", row.Load, row.Dist, len(counts), seeds)}
		}
		if len(first) != 1 {
			return nil, &FileError{Path: f.path, Err: fmt.Errorf("load %v %s: no single seed 1", row.Load, row.Dist)}
		}
		row.Seeds, row.Seed1, row.Idle = seeds, first[0].Batches, first[0].IdlePercent/100
		row.Mean = summary.Mean(counts)
		if seeds > 1 {
			row.SD = summary.StdDev(counts)
		}
		// The halting pattern and the figures need the simulation's
		// events, not in the file: the simulation is a function of its
		// configuration, so seed 1 runs again from the file's, and must
		// give the file's count.
		c := config004(row, res.Loaders, res.Step, res.Duration, 1)
		r, err := sim.Run(c)
		if err != nil {
			return nil, fmt.Errorf("load %v %s: %w", row.Load, row.Dist, err)
		}
		if r.Batches != row.Seed1 {
			return nil, &FileError{Path: f.path, Err: fmt.Errorf("load %v %s seed 1: %d batches, the simulation now gives %d", row.Load, row.Dist, row.Seed1, r.Batches)}
		}
		row.Halting = r.Halting(c.Step).String()
		if row.Animated {
			if row.GIF, row.Timeline, err = figures004(p, row, r, res); err != nil {
				return nil, fmt.Errorf("load %v %s: %w", row.Load, row.Dist, err)
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return markdown(res)
}

// figures004 draws a run's animation and its timeline (PNG and SVG) and
// returns their links.
func figures004(p *page, row SimRow, r *sim.Result, res Result004) (gif, png string, err error) {
	base := row.Load.String()
	gifPath, gifLink := p.figure("004", base+".gif")
	if err := r.WriteGIF(gifPath, sim.GIFOptions{Tick: res.GIFTick}); err != nil {
		return "", "", err
	}
	tlPath, tlLink := p.figure("004", base+"-timeline")
	r.Timeline.Name = fmt.Sprintf("%d loaders, %v loads (%s), %v steps: %d batches in %v", res.Loaders, row.Load, row.Dist, res.Step, r.Batches, res.Duration)
	if err := saveTimeline(r.Timeline, tlPath); err != nil {
		return "", "", err
	}
	return gifLink, tlLink + ".png", nil
}

// WriteMarkdown writes document 004's report.
func (r Result004) WriteMarkdown(w io.Writer) error {
	m := &md{w: w}
	writeHeader(m, r.Header)
	m.para("The post simulates %d loader processes that each load one whole batch at a time, as PyTorch's DataLoader does, feeding a model whose forward+backward step takes %v, and counts the batches trained in %v. `harness/sim` is a discrete-event simulation with DataLoader's dispatch (batch k to worker k mod %d, 2 batches outstanding per worker, delivery in order); its rules are in `harness/sim/doc.go`.",
		r.Loaders, r.Step, r.Duration, r.Loaders)
	m.para("## Batches in %v", r.Duration)
	var rows [][]string
	for _, x := range r.Rows {
		dist := "constant"
		if x.Dist != sim.Constant {
			dist = fmt.Sprintf("%s, sd %v (%.0f%%)", x.Dist, x.Stddev, 100*float64(x.Stddev)/float64(x.Load))
		}
		load := x.Load.String()
		if x.Animated {
			load = "**" + load + "**"
		}
		post := "–"
		if x.Post > 0 {
			post = fmt.Sprint(x.Post)
		}
		rows = append(rows, []string{load, dist, post, fmt.Sprint(x.Seed1),
			fmt.Sprintf("%.1f (sd %.1f)", x.Mean, x.SD), ratio(x.Mean, float64(x.Post)),
			fmt.Sprintf("%.0f%%", 100*x.Idle), x.Halting})
	}
	m.table("llrrrrrl", []string{"load per batch", "load times", "the post", "ours, seed 1", fmt.Sprintf("ours, mean of %d seeds", seedsOf(r.Rows)), "ours ÷ post", "model idle", "halting (seed 1)"}, rows)
	m.para("The post's run is the one in bold on each load time; the other row changes only the load-time distribution, to show what the post's count depends on.")
	var anim []SimRow
	for _, x := range r.Rows {
		if x.Animated && x.GIF != "" {
			anim = append(anim, x)
		}
	}
	if len(anim) > 0 {
		m.para("## The animations")
		head := make([]string, len(anim))
		cells := make([]string, len(anim))
		for i, x := range anim {
			head[i] = fmt.Sprintf("%v: %d batches (post: %d)", x.Load, x.Seed1, x.Post)
			cells[i] = fmt.Sprintf("![%v](%s)", x.Load, x.GIF)
		}
		m.table("", head, [][]string{cells})
		m.para("Each frame is %v of simulated time (the post's resolution is 100ms): loaders on top (a cell fills as its batch loads), the ready queue, then the model. Timelines of the same runs (SVG beside each PNG):", r.GIFTick)
		for _, x := range anim {
			m.para("![timeline, %v loads](%s)", x.Load, x.Timeline)
		}
	}
	m.para("## Where ours differs from the post")
	m.p("- **Load-time distribution.** The post gives mean load times only. Its 2 s run halts every 7 batches, which needs (nearly) constant loads; its 700 ms and 350 ms counts need loads that vary. The %.0f%% normal spread is our assumption, chosen because it reproduces both; compare the constant rows.", 100*workloads.SimDocumentSpread)
	m.p("- **Time.** The post animates in 100 ms ticks; the simulation is event-driven in nanoseconds, and the GIF samples it every %v.", r.GIFTick)
	m.p("- **Transfers** between processes and to the device are ignored, as in the post.")
	m.p("")
	return m.err
}

// seedsOf is the seed count of the rows (they share it).
func seedsOf(rows []SimRow) int {
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Seeds
}
