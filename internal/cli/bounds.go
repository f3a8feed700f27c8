package cli

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/machine"
	"github.com/headspace-bench/headspace/history"
)

// The limits of the counting flags (steps, runs, batches): far beyond any
// experiment that ends today, and far from overflowing a product. The
// pipeline's own limits (sizes, batch, workers, prefetch) are
// loader.Config.Bounds'.
const (
	MaxSteps   = 10_000_000
	MaxCount   = 100_000
	MaxBatches = 10_000_000
)

// FirstErr is the first non-nil error: bad input is reported in one line.
func FirstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// InRange checks a numeric flag against its documented bounds.
func InRange(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return Usagef("%s %d: want %d to %d", flag, v, lo, hi)
	}
	return nil
}

// Fits refuses a run whose buffers would not fit in the memory this
// machine has available: need is the estimate (loader.Config.MemoryEstimate
// and what the command keeps on top, such as caches). Where the available
// memory cannot be read (outside Linux) every run is let through.
func Fits(what string, need int64) error {
	avail, ok := machine.Memory()
	if !ok || need <= avail {
		return nil
	}
	return Usagef("%s needs about %s of memory and this machine has %s available: use a smaller batch, image, prefetch or worker count", what, gib(need), gib(avail))
}

// FitsPipeline checks one loader (per process, times procs) and extra bytes.
func FitsPipeline(cfg loader.Config, procs int, extra int64) error {
	need := cfg.MemoryEstimate()
	if procs > 1 && need < (1<<62)/int64(procs) {
		need *= int64(procs)
	}
	if extra > 0 && need < 1<<62-extra {
		need += extra
	}
	return Fits(fmt.Sprintf("the pipeline (batch %d of %dx%d crops from %dx%d images, %d workers, prefetch %d)",
		cfg.Batch, cfg.Transforms.Crop, cfg.Transforms.Crop, cfg.Dataset.Width, cfg.Dataset.Height, cfg.Workers, cfg.Prefetch), need)
}

func gib(b int64) string {
	if b >= 1<<60 {
		return "more than an exbibyte"
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// Bound is a numeric flag's range, Lo to Hi inclusive, in the flag's own
// unit (nanoseconds for a duration).
type Bound struct{ Lo, Hi float64 }

// anyUint64 is the bound of a flag whose every value is valid (a seed).
var anyUint64 = Bound{0, math.MaxUint64}

// sharedBounds are the bounds of the numeric flags several commands
// define alike (the pipeline's, the data's, the disturbance policy's),
// by flag name; commandBounds, by "command flag", take precedence. Every
// numeric flag of every command has one or the other
// (TestEveryNumericFlagBounded), and ParseArgs refuses a value outside
// it before the command does anything: docs/commands.md's promise that
// every numeric flag has a bound. A command checks what depends on other
// flags (a crop within the image, a count of samples) itself.
var sharedBounds = map[string]Bound{
	// The pipeline (loader.Config.Bounds keeps the same limits).
	"batch":         {1, loader.MaxBatch},
	"crop":          {1, 32768},
	"prefetch":      {1, loader.MaxPrefetch},
	"workers":       {0, loader.MaxWorkers},
	"seed":          anyUint64,
	"step":          {0, float64(time.Hour)},
	"pinned-gbps":   {0, 1e4},
	"pageable-gbps": {0, 1e4},
	"convert-gbps":  {0, 1e5},
	"steps":         {1, MaxSteps},
	"warmup":        {0, MaxSteps},
	"count":         {1, MaxCount},
	"batches":       {1, MaxBatches},
	// Data on disk and in a bucket.
	"max-failures":      {0, loader.MaxMaxFailures},
	"fetch-concurrency": {1, bucket.MaxConcurrency},
	"chunk-size":        {bucket.MinChunkSize, bucket.MaxChunkSize},
	// A user's own training command (analyze, ladder, whatif -- COMMAND).
	"loader":              {1, 1 << 20},
	"first-batch-timeout": {0, float64(24 * time.Hour)},
	// Disturbance.
	"quiet-wait": {0, float64(time.Hour)},
	// The delay is summed over a run's threads, so it can pass its wall
	// time: ci/smoke.sh sets 9.9 so that a busy CI machine marks nothing.
	"max-run-delay": {0, 100},
	"reruns":        {0, 100},
}

// commandBounds are the bounds of a command's own numeric flags, by
// "command flag" ("history generate nights").
var commandBounds = map[string]Bound{
	"analyze load-latency":        {0, float64(time.Minute)},
	"analyze workers":             {1, loader.MaxWorkers},
	"analyze num-caches":          {1, MaxBatches},
	"analyze return-caches-after": {1, MaxSteps},
	"analyze steps-after":         {1, MaxSteps},
	"analyze total-steps":         {1, 1 << 40},
	"analyze stats-every":         {0, float64(24 * time.Hour)},
	"compare threshold":           {0, 1},
	"compare alpha":               {0, 1},
	"compare min-coverage":        {0, 1},
	"cuda check gpu":              {0, 1024},
	"cuda check side":             {1, 32768},
	"cuda check reps":             {1, MaxCount},
	"cuda decode gpu":             {0, 1024},
	"cuda decode threads":         {1, 1024},
	"cuda decode batches":         {1, 1_000_000},
	"dataset write n":             {1, ondisk.MaxCount},
	"dataset write workers":       {0, ondisk.MaxWorkers},
	"dataset write classes":       {1, 1 << 20},
	"dataset write quality":       {1, 100},
	"dataset write shard-size":    {1, ondisk.MaxShard},
	"dataset n":                   {1, ondisk.MaxCount},
	"dataset classes":             {1, 1 << 20},
	"dataset quality":             {1, 100},
	"dataset shard-size":          {1, ondisk.MaxShard},
	"gate rounds":                 {1, MaxCount},
	"gate confirm":                {0, MaxCount},
	"gate threshold":              {0, 1},
	"gate canary":                 {-1, 10}, // -1 (the default): not a canary; else the head's injected slowdown
	"node min-au":                 {0, 1},
	"node barrier-timeout":        {0, float64(24 * time.Hour)},
	"whatif min-au":               {0, 1},
	"whatif target":               {0, 4096},
	"history generate nights":     {1, history.MaxNights},
	"history generate series":     {1, history.MaxSeries},
	"loaders crop":                {1, 32768},
	"loaders batches":             {2, MaxBatches},
	"peer batches":                {2, MaxBatches},
	"peer calibration-batches":    {6, 1000},
	"peer shard-size":             {1, 1 << 16},
	"peer jpeg-quality":           {1, 100},
	"reproduce step":              {0, float64(time.Hour)},
	"sim loaders":                 {1, 1024},
	"sim load":                    {0, float64(10000 * time.Hour)},
	"sim load-stddev":             {0, float64(10000 * time.Hour)},
	"sim step":                    {0, float64(10000 * time.Hour)},
	"sim step-stddev":             {0, float64(10000 * time.Hour)},
	"sim duration":                {0, float64(24 * time.Hour)},
	"sim prefetch":                {1, 1024},
	"sim gif-tick":                {0, float64(24 * time.Hour)},
	"whatif profile-cores":        {0, 4096},
}

// commandOf is the command a flag set is for, from its name: "headspace
// dataset verify DIR" is "dataset verify".
func commandOf(fs *flag.FlagSet) string {
	var words []string
	for _, w := range strings.Fields(strings.TrimPrefix(fs.Name(), "headspace ")) {
		if strings.Trim(w, "abcdefghijklmnopqrstuvwxyz-") != "" {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// BoundOf is flag name's bound in fs: its command's own, else the
// shared one; ok is false for a flag that has none.
func BoundOf(fs *flag.FlagSet, name string) (Bound, bool) {
	if b, ok := commandBounds[commandOf(fs)+" "+name]; ok {
		return b, true
	}
	b, ok := sharedBounds[name]
	return b, ok
}

// NumericValue is a flag's value as a number, for the numeric kinds the
// flag package defines (int, int64, uint, uint64, float64, duration);
// ok is false for any other.
func NumericValue(f *flag.Flag) (float64, bool) {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return 0, false
	}
	switch v := g.Get().(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, true
	case time.Duration:
		return float64(v), true
	}
	return 0, false
}

// CheckBounds refuses a numeric flag of fs outside its bound, and one
// that has none (a mistake TestEveryNumericFlagBounded shows), with a
// usage error naming the flag and its range.
func CheckBounds(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := NumericValue(f)
		if !ok || err != nil {
			return
		}
		b, ok := BoundOf(fs, f.Name)
		if !ok {
			err = fmt.Errorf("headspace %s: --%s has no bound (internal/cli/bounds.go)", commandOf(fs), f.Name)
			return
		}
		if !b.holds(f, v) {
			err = Usagef("--%s %s: want %s to %s", f.Name, f.Value, b.format(f, b.Lo), b.format(f, b.Hi))
		}
	})
	return err
}

// holds says whether flag f's value (v, as NumericValue reads it) lies in
// b: integers and durations compared exactly (a float64 holds them only
// to 2^53), floats as they are, NaN never.
func (b Bound) holds(f *flag.Flag, v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch x := f.Value.(flag.Getter).Get().(type) {
	case int:
		return b.holdsInt(int64(x))
	case int64:
		return b.holdsInt(x)
	case time.Duration:
		return b.holdsInt(int64(x))
	case uint:
		return b.holdsUint(uint64(x))
	case uint64:
		return b.holdsUint(x)
	}
	return v >= b.Lo && v <= b.Hi
}

func (b Bound) holdsInt(x int64) bool {
	if b.Lo > math.MinInt64 && x < int64(b.Lo) {
		return false
	}
	return b.Hi >= math.MaxInt64 || x <= int64(b.Hi)
}

func (b Bound) holdsUint(x uint64) bool {
	if b.Lo > 0 && x < uint64(b.Lo) {
		return false
	}
	return b.Hi >= math.MaxUint64 || x <= uint64(b.Hi)
}

// format is x as flag f writes its values: a duration as one, a number
// in full.
func (Bound) format(f *flag.Flag, x float64) string {
	if _, ok := f.Value.(flag.Getter).Get().(time.Duration); ok {
		return time.Duration(x).String()
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}
