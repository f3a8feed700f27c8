package realpeer

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/datasets/turbojpeg"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/membw"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// LimitBenchmark is the limit records' benchmark name
// (BenchmarkRealPeerLimit/workers=<n>).
const LimitBenchmark = "RealPeerLimit"

// LimitBytesKey is the configuration key of the bytes a sample moves
// through memory in our pipeline (SampleBytes), and LimitBytesPartsKey
// its parts.
const (
	LimitBytesKey      = "limit-bytes-per-sample"
	LimitBytesPartsKey = "limit-bytes-parts"
)

// SampleBytes counts the bytes one sample of the fast transforms moves
// through memory in our pipeline, stage by stage: the encoded file read
// (fileBytes, the mean), the decoded pixels written (the w×h RGB image,
// or with decodeCrop, --decode-crop on, the window the decoder writes —
// the crop, turbojpeg.WindowMargin beyond it left, right and above, and
// half of a 4:2:0 iMCU column of 16 of alignment on average — then the
// crop copied out of it, read and written), the crop's RGB bytes read by
// the fused transform (crop, colour, scale), its float32 CHW output
// written, and the collate stage's copy of that output into the batch
// (read and written). It returns the total and the parts as one line.
func SampleBytes(fileBytes float64, w, h, crop int, decodeCrop bool) (int64, string) {
	file := int64(math.Round(fileBytes))
	cropRead := int64(crop) * int64(crop) * 3
	out := int64(crop) * int64(crop) * 3 * 4
	if decodeCrop {
		m := int64(turbojpeg.WindowMargin)
		window := (int64(crop) + 2*m + 8) * (int64(crop) + m) * 3
		total := file + window + 2*cropRead + cropRead + out + 2*out
		parts := fmt.Sprintf("file read %d, decoded window written %d (the crop's %d+%d+8 by %d+%d pixels: margins and iMCU alignment, on average), the crop copied out of it %d read + %d written, crop read by the transform %d, float32 output written %d, collate's copy into the batch %d read + %d written",
			file, window, crop, 2*m, crop, m, cropRead, cropRead, cropRead, out, out, out)
		return total, parts
	}
	decoded := int64(w) * int64(h) * 3
	total := file + decoded + cropRead + out + 2*out
	parts := fmt.Sprintf("file read %d, decoded pixels written %d, crop read by the transform %d, float32 output written %d, collate's copy into the batch %d read + %d written", file, decoded, cropRead, out, out, out)
	return total, parts
}

// StageTime is one stage of ours: its task time summed over its workers,
// per sample.
type StageTime struct {
	Stage     string
	PerSample time.Duration
}

// LimitRun is what is measured between rounds at one worker count: the
// copy bandwidth on as many goroutines as workers, and the stage times of
// one more run of ours (the loader's own pipeline statistics).
type LimitRun struct {
	Workers, Round int
	Copy           membw.Result
	Stages         []StageTime
}

// BenchName is e.g. "BenchmarkRealPeerLimit/workers=2".
func (l LimitRun) BenchName() string {
	return fmt.Sprintf("Benchmark%s/workers=%d", LimitBenchmark, l.Workers)
}

// Record is l in benchmark format: iterations the copy's reps, copy-B/s,
// then <stage>-ns/sample for each stage.
func (l LimitRun) Record() *benchfmt.Result {
	r := &benchfmt.Result{Name: benchfmt.Name(l.BenchName()), Iters: l.Copy.Reps}
	r.Values = append(r.Values, benchfmt.Value{Value: l.Copy.BytesPerSec, Unit: "copy-B/s"})
	for _, s := range l.Stages {
		r.Values = append(r.Values, benchfmt.Value{Value: float64(s.PerSample.Nanoseconds()), Unit: s.Stage + "-ns/sample"})
	}
	return r
}

// LimitRecords are ls's records.
func LimitRecords(ls []LimitRun) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, l := range ls {
		out = append(out, l.Record())
	}
	return out
}

// LimitConfig are the configuration lines of the copy benchmark: its
// buffer and trials (every setting that changes its figure).
func LimitConfig(c membw.Config) []resultfile.Config {
	return []resultfile.Config{{Key: "limit-copy", Value: fmt.Sprintf("STREAM-like copy, each goroutine (as many as the workers) copying its own %d MiB buffer into another %d times a trial, the best of %d trials, bytes read and written counted", c.Buffer>>20, c.Reps, c.Trials)}}
}

// LimitOf is the limit's run of one BenchmarkRealPeerLimit record whose
// name gives workers (package workloads' RealPeerCodec reads it).
func LimitOf(workers int, r *benchfmt.Result) (LimitRun, error) {
	full := "Benchmark" + string(r.Name)
	var l LimitRun
	n := workers
	if n <= 0 {
		return l, fmt.Errorf("benchmark %q: workers is not a positive whole number", full)
	}
	l.Workers, l.Copy.Workers, l.Copy.Reps = n, n, r.Iters
	bw, err := value(r, "copy-B/s", true)
	if err != nil {
		return l, fmt.Errorf("%s: %w", full, err)
	}
	if bw <= 0 {
		return l, fmt.Errorf("%s: copy-B/s must be positive", full)
	}
	l.Copy.BytesPerSec = bw
	for _, v := range r.Values {
		unit := v.OrigUnit
		if unit == "" {
			unit = v.Unit
		}
		stage, ok := strings.CutSuffix(unit, "-ns/sample")
		if !ok {
			continue
		}
		ns := v.OrigValue
		if v.OrigUnit == "" {
			ns = v.Value
		}
		if math.IsNaN(ns) || math.IsInf(ns, 0) || ns < 0 || ns > math.MaxInt64 {
			return l, fmt.Errorf("%s: %s %g must be finite and not negative", full, unit, ns)
		}
		l.Stages = append(l.Stages, StageTime{Stage: stage, PerSample: time.Duration(math.Round(ns))})
	}
	return l, nil
}

// MeasureLimit measures the limit at w workers: the copy bandwidth on w
// goroutines (copy's Workers set to w), then one run of ours with its
// stage statistics.
func MeasureLimit(ctx context.Context, c Config, w, round int) (LimitRun, error) {
	l := LimitRun{Workers: w, Round: round}
	cc := c.Copy
	cc.Workers = w
	var err error
	if l.Copy, err = membw.Copy(ctx, cc); err != nil {
		return l, err
	}
	pc := c.Ours
	pc.Workers = w
	pc.Recorder = nil
	ld, err := loader.New(ctx, level.None, pc, c.Settings.Batches)
	if err != nil {
		return l, fmt.Errorf("ours, for its stage times: %w", err)
	}
	defer ld.Close()
	for k := range c.Settings.Batches {
		b, err := ld.Next(ctx)
		if err != nil {
			return l, fmt.Errorf("ours, for its stage times: batch %d: %w", k, err)
		}
		ld.Release(b)
	}
	st := ld.Stats()
	if err := ld.Close(); err != nil {
		return l, err
	}
	samples := float64(c.Settings.Batches * pc.Batch)
	for _, s := range st.Stages {
		if s.Name == "index" || s.Tasks == 0 {
			continue
		}
		l.Stages = append(l.Stages, StageTime{Stage: s.Name, PerSample: time.Duration(math.Round(float64(s.Total) / samples))})
	}
	return l, nil
}
