package remedies

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/headspace-bench/headspace/harness/fetchmodel"
	"github.com/headspace-bench/headspace/harness/report"
)

// Figure is a plot the report embeds: its alt text and its path relative
// to the report.
type Figure struct{ Alt, Path string }

// WriteMarkdown writes the report: the setup, where each remedy helps
// and stops helping, the model's errors, and every point.
func WriteMarkdown(w io.Writer, r Report, figures []Figure) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	whole := r.writeSetup(p, figures)
	r.writeKnees(p)
	r.writeLayout(p)
	r.writeModel(p, whole)
	r.writePoints(p)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSetup writes the title, the command and machine, how the layouts
// read, and the figures; it reports whether any layout reads whole
// shards.
func (r Report) writeSetup(p func(string, ...any), figures []Figure) (whole bool) {
	p("# Data from a bucket: the remedies, measured and predicted\n\n")
	p("Issue 34, items 5 and 6. Level `none` reads every sample from a real S3 server (%s) through an emulated link of a given round trip (and nothing else), with a given number of requests in flight; `local` reads the same objects copied to local disk, `device` trains on a batch kept on the device. Headspace is 1 − steps/s(none) ÷ steps/s(device): the share of the accelerator's time the loader leaves idle.\n\n", r.Get("remote-server"))
	p("Command: `%s`  \nMachine: %s, %s cores (shared with other jobs), %s. Raw images %s, crop %s, batch %d, %s samples a dataset, %s measured steps after %s warm-up, %s run(s) a point; emulated step %s.\n\n",
		r.Get("command"), r.Get("cpu"), r.Get("cores"), r.Get("goos"), r.Get("raw-size"), r.Get("crop"), r.Batch, r.Get("samples"), r.Get("steps"), r.Get("warmup"), r.Get("remote-count"), r.Get("emulated-step"))
	for _, d := range r.Datasets {
		whole = whole || strings.HasSuffix(d.Layout, "-whole")
	}
	if whole {
		p("Reads: a file is one GET and a shard's member one ranged GET, one request a sample; the `-whole` layouts (`--shard-reads whole`) fetch each shard whole, once, and serve its members from memory, a request a shard. A run is measured after its warm-up steps, so a `-whole` layout whose shards the warm-up already fetched (a ~64 MB shard holds the whole dataset here) reads from memory: its samples/s is a later epoch's, not the first's.\n\n")
	} else {
		p("Reads are today's reader's: a file is one GET, a shard's member one ranged GET, so every layout costs one request a sample. Whole-shard reads (one GET a shard, its members served from memory) are not measured.\n\n")
	}
	for _, f := range figures {
		p("![%s](%s)\n\n", f.Alt, f.Path)
	}
	return whole
}

// writeKnees writes where more requests in flight stop helping, per
// dataset and round trip.
func (r Report) writeKnees(p func(string, ...any)) {
	rtts := r.RTTs()
	p("## Where more requests in flight stop helping\n\n")
	p("The lowest concurrency within 10%% of the best samples/s at each round trip, and that best (headspace at it). Device: %.0f samples/s.\n\n", r.Device)
	t := report.NewTable("lr"+strings.Repeat("l", len(rtts)), "dataset", "bytes/sample")
	for _, d := range rtts {
		t.Header = append(t.Header, d.String())
	}
	for _, d := range r.Datasets {
		row := []string{d.Name(), fmt.Sprintf("%.0f", d.BytesPerSample)}
		for _, rtt := range rtts {
			c, best := d.Knee(rtt)
			row = append(row, fmt.Sprintf("%d (%.0f/s, %s)", c, best, pct(fetchmodel.Headspace(best, r.Device))))
		}
		t.Add(row...)
	}
	p("%s", t)
}

// writeLayout writes each layout over files and each format over raw.
func (r Report) writeLayout(p func(string, ...any)) {
	p("\n## Layout and format\n\n")
	p("Median over the grid's points of one dataset's samples/s over another's (1.00: no difference).\n\n")
	t := report.NewTable("lr", "comparison", "median ratio")
	for _, d := range r.Datasets {
		if d.Layout == "files" {
			continue
		}
		if f := r.dataset(d.Format, "files"); f != nil {
			t.Add(d.Name()+" over "+f.Name(), fmt.Sprintf("%.2f", Ratios(d, *f)))
		}
	}
	for _, d := range r.Datasets {
		if d.Format == "raw" {
			continue
		}
		if raw := r.dataset("raw", d.Layout); raw != nil {
			t.Add(fmt.Sprintf("%s over %s (bytes/sample %.0f vs %.0f)", d.Name(), raw.Name(), d.BytesPerSample, raw.BytesPerSample), fmt.Sprintf("%.2f", Ratios(d, *raw)))
		}
	}
	p("%s", t)
}

// writeModel writes the model, its calibration per dataset and its
// prediction errors.
func (r Report) writeModel(p func(string, ...any), whole bool) {
	rtts := r.RTTs()
	p("\n## The model\n\n")
	p("samples/s = min(link bandwidth ÷ bytes/sample, request rate × samples/request, concurrency × samples/request ÷ (round trip + bytes/request ÷ per-connection bandwidth + server time), local, device) (package fetchmodel). Per dataset, the server time is the mean request latency at round trip 0 and the lowest concurrency, the request rate the most requests/s measured at round trip 0, local and device the measured levels; every point with a round trip, and every check, is a prediction.\n\n")
	cal := report.NewTable("lrrrr", "dataset", "latency at 0", "server time", "server rate", "local")
	for _, d := range r.Datasets {
		c := d.Calibration
		cal.Add(d.Name(), report.Ms(d.CalibrationLatency, 2), report.Ms(c.ServerTime, 2), fmt.Sprintf("%.0f req/s", c.ServerRate), fmt.Sprintf("%.0f/s", c.HostRate))
	}
	p("%s", cal)
	all := r.Errors(func(Dataset, Point) bool { return true }) // MedianError's points
	p("\nMedian absolute percentage error over %d predicted points: **%s**; within 10%%: %d of %d.\n\n", len(all), pctErr(fetchmodel.Median(all)), within(all, 10), len(all))
	t := report.NewTable("lr", "predicted points", "median error")
	for _, rtt := range rtts {
		if rtt == 0 {
			continue
		}
		e := r.Errors(func(_ Dataset, p Point) bool { return p.Check == "" && p.RTT == rtt })
		t.Add(fmt.Sprintf("round trip %s (%d)", rtt, len(e)), pctErr(fetchmodel.Median(e)))
	}
	for _, name := range slices.Sorted(maps.Keys(r.Checks)) {
		e := r.Errors(func(_ Dataset, p Point) bool { return p.Check == name })
		t.Add(fmt.Sprintf("check %s: %s (%d)", name, r.Checks[name], len(e)), pctErr(fetchmodel.Median(e)))
	}
	if whole {
		// Whole-shard reads are mostly bound by the host, which the model
		// takes from level local: they would flatter the median alone.
		ranged := r.Errors(func(d Dataset, _ Point) bool { return !strings.HasSuffix(d.Layout, "-whole") })
		wh := r.Errors(func(d Dataset, _ Point) bool { return strings.HasSuffix(d.Layout, "-whole") })
		t.Add(fmt.Sprintf("a request a sample (files, ranged shards) (%d)", len(ranged)), pctErr(fetchmodel.Median(ranged)))
		t.Add(fmt.Sprintf("whole-shard reads (%d)", len(wh)), pctErr(fetchmodel.Median(wh)))
	}
	p("%s", t)
}

// writePoints writes every point, measured beside predicted.
func (r Report) writePoints(p func(string, ...any)) {
	p("\n## Every point\n\n")
	p("Calibration points (round trip 0) are marked *; their error is not a prediction's.\n\n")
	t := report.NewTable("llrrrrrlr", "dataset", "link", "concurrency", "samples/s", "headspace", "request mean", "predicted", "bound", "error")
	for _, d := range r.Datasets {
		for _, pt := range d.Points {
			l := "rtt " + pt.RTT.String()
			if pt.Check != "" {
				l = "check " + pt.Check
			}
			mark := ""
			if pt.Calibration {
				mark = "*"
			}
			t.Add(d.Name(), l, fmt.Sprint(pt.Concurrency), fmt.Sprintf("%.0f", pt.Measured), pct(pt.Headspace), report.Ms(pt.ReqMean, 2),
				fmt.Sprintf("%.0f", pt.Predicted.SamplesPerSec), fmt.Sprint(pt.Predicted.Bound), pctErr(pt.APE)+mark)
		}
	}
	p("%s", t)
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }

func pctErr(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", x)
}

func within(es []float64, limit float64) int {
	n := 0
	for _, e := range es {
		if e <= limit {
			n++
		}
	}
	return n
}
