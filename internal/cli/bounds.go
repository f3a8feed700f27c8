package cli

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The limits of the counting flags (steps, runs, batches): far beyond any
// experiment that ends today, and far from overflowing a product. The
// pipeline's own limits (sizes, batch, workers, prefetch) are
// loader.Config.Bounds', declared by package loader.
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

// Bound is a numeric flag's range, Lo to Hi inclusive, in the flag's own
// unit (nanoseconds for a duration).
type Bound struct{ Lo, Hi float64 }

// anyUint64 is the bound of a flag whose every value is valid (a seed).
var anyUint64 = Bound{0, math.MaxUint64}

// bounds is the table CheckBounds reads: by flag name, the bound of a
// flag several commands define alike; by "command flag" ("history
// generate nights"), a command's own, which takes precedence. Every
// numeric flag of every command has one or the other
// (TestEveryNumericFlagBounded), and ParseArgs refuses a value outside
// it before the command does anything: docs/commands.md's promise that
// every numeric flag has a bound. A command checks what depends on other
// flags (a crop within the image, a count of samples) itself.
//
// The table holds the counting flags' bounds, which are this package's;
// every other bound is declared by the package that defines its flag,
// beside the flag (Declare).
var bounds = map[string]Bound{
	"seed":    anyUint64,
	"steps":   {1, MaxSteps},
	"warmup":  {0, MaxSteps},
	"count":   {1, MaxCount},
	"batches": {1, MaxBatches},
}

// boundsMu guards bounds: Declare runs as packages initialise, a
// check as flags are parsed.
var boundsMu sync.RWMutex

// Declare adds bs to the bounds table, by flag name or by "command
// flag", and returns nothing of use (so that a package declares the
// bounds of the flags it defines beside them, as a package-level
// var _ = cli.Declare(…)). One name declared twice is one decision made
// in two places: Declare panics, naming it.
func Declare(bs map[string]Bound) struct{} {
	boundsMu.Lock()
	defer boundsMu.Unlock()
	for name, b := range bs {
		if _, ok := bounds[name]; ok {
			panic("cli.Declare: the bound of --" + name + " is declared twice")
		}
		bounds[name] = b
	}
	return struct{}{}
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
	boundsMu.RLock()
	defer boundsMu.RUnlock()
	if b, ok := bounds[commandOf(fs)+" "+name]; ok {
		return b, true
	}
	b, ok := bounds[name]
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
			err = fmt.Errorf("headspace %s: --%s has no bound (declare it beside the flag: cli.Declare)", commandOf(fs), f.Name)
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
