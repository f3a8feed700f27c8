package history

// Generated stores (issue 37): a year of nights with injected steps, so
// that the history's figures at the scale it is for (the detector's
// finds and false alarms, the cost of add, report and the change points)
// can be measured again on any commit. It lives in package history, not
// beside it, so that the package's own tests and benchmarks (which are
// in package history) can use it without an import cycle, and so that
// it files runs exactly as Add does (MachineKey, Run.Name).

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/gate"
)

// Generator describes a generated store: one machine's runs, one a
// night, of Benchmarks() benchmarks whose units together make Series
// series, each sample a base value with uniform relative noise, and
// steps injected at chosen nights. The same Generator writes the same
// bytes: every value comes from Seed. The zero value of a field means
// its default.
type Generator struct {
	Nights  int       // runs, one a night; 365 when 0
	Series  int       // benchmark × unit series; 200 when 0
	Samples int       // samples per benchmark per run; 6 when 0
	Noise   float64   // each sample's uniform relative noise, ±Noise; 0.02 when 0
	Digits  int       // significant digits a sample is written with; 6 when 0, -1 for full precision (the shortest that reads back exactly, as a run's own figures can be)
	Seed    uint64    // the noise's and the commits' seed
	Start   time.Time // the first night; 2024-01-01T03:17:00Z when zero
	Steps   []Step    // the injected steps; none when nil
}

// Step is an injected change: from night Night on, benchmark Bench's
// throughput moves by Delta (-0.08: 8% slower), and so its time per op
// by 1/(1+Delta) - 1 (+8.7%). Bench -1 moves every benchmark.
type Step struct {
	Night int
	Bench int
	Delta float64
}

// GenUnits are the units of a generated benchmark, in order: a time and
// two throughputs (a run's steps and its samples, 4 a step), as the
// ladder records. A benchmark has all three but possibly the last, which
// has what is left of Series.
var GenUnits = []string{"ns/op", "steps/s", "samples/s"}

// YearOfNights is the store issue 37 measured: 365 nightly runs × 200
// series, 6 samples each, ±2% noise, and three 8% regressions, at
// nights 91, 182 and 273 in benchmarks 5, 31 and 57 (so 9 series
// change, in all three units, and 191 are flat).
func YearOfNights() Generator {
	return Generator{
		Nights: 365, Series: 200, Samples: 6, Noise: 0.02, Seed: 37,
		Steps: []Step{{Night: 91, Bench: 5, Delta: -0.08}, {Night: 182, Bench: 31, Delta: -0.08}, {Night: 273, Bench: 57, Delta: -0.08}},
	}
}

// The largest generated store: ten years of nights, ten times the
// year's series (at both, about 660 MB of run files). Write refuses a
// larger one, and history generate's flags stop there.
const (
	MaxNights = 3650
	MaxSeries = 2000
)

func (g Generator) withDefaults() Generator {
	if g.Nights <= 0 {
		g.Nights = 365
	}
	if g.Series <= 0 {
		g.Series = 200
	}
	if g.Samples <= 0 {
		g.Samples = 6
	}
	if g.Noise <= 0 {
		g.Noise = 0.02
	}
	if g.Digits == 0 {
		g.Digits = 6
	}
	if g.Start.IsZero() {
		g.Start = time.Date(2024, 1, 1, 3, 17, 0, 0, time.UTC)
	}
	return g
}

// Benchmarks is how many benchmarks make the generator's Series series:
// Series/3, rounded up.
func (g Generator) Benchmarks() int {
	g = g.withDefaults()
	return (g.Series + len(GenUnits) - 1) / len(GenUnits)
}

// Benchmark is benchmark i's full name as a Series names it:
// "BenchmarkYear/series=005-2".
func (g Generator) Benchmark(i int) string {
	return fmt.Sprintf("BenchmarkYear/series=%03d-2", i)
}

// Units are benchmark i's units (GenUnits, or the first of them for the
// last benchmark).
func (g Generator) Units(i int) []string {
	g = g.withDefaults()
	n := min(len(GenUnits), g.Series-i*len(GenUnits))
	if n <= 0 {
		return nil
	}
	return GenUnits[:n]
}

// Machine is the machine the runs record.
func (g Generator) Machine() gate.Machine {
	return gate.Machine{Device: "emulated", CPU: "Generated CPU", Cores: "2"}
}

// Commit is night n's commit: 40 hex digits from Seed and n.
func (g Generator) Commit(n int) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], g.Seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	sum := sha256.Sum256(b[:])
	return hex.EncodeToString(sum[:20])
}

// Date is night n's date.
func (g Generator) Date(n int) time.Time {
	g = g.withDefaults()
	return g.Start.AddDate(0, 0, n)
}

// File is night n's results file: the header a ladder run writes (units,
// machine, commit, date) and Samples lines per benchmark.
func (g Generator) File(n int) []byte {
	g = g.withDefaults()
	m := g.Machine()
	var b strings.Builder
	fmt.Fprintf(&b, "Unit steps/s better=higher\nUnit samples/s better=higher\n\ngoos: linux\ngoarch: amd64\npkg: github.com/headspace-bench/headspace/history\ncpu: %s\ncores: %s\ncommit: %s\ndate: %s\ndevice: %s\nbatch: 4\n",
		m.CPU, m.Cores, g.Commit(n), g.Date(n).Format(time.RFC3339), m.Device)
	rng := rand.New(rand.NewPCG(g.Seed, uint64(n)))
	for i := range g.Benchmarks() {
		base := 50 + 10*float64(i%17) // steps/s
		for _, s := range g.Steps {
			if (s.Bench == i || s.Bench == -1) && n >= s.Night {
				base *= 1 + s.Delta
			}
		}
		units := g.Units(i)
		for range g.Samples {
			v := base * (1 + g.Noise*(2*rng.Float64()-1))
			vals := [...]float64{1e9 / v, v, 4 * v} // GenUnits' values
			fmt.Fprintf(&b, "%s 4", g.Benchmark(i))
			for j, u := range units {
				fmt.Fprintf(&b, " %s %s", g.format(vals[j]), u)
			}
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// format is v as the generator writes it: Digits significant digits,
// or all of them when Digits is negative.
func (g Generator) format(v float64) string {
	if g.Digits < 0 {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', g.Digits, 64)
}

// Write writes the generator's nights into the store in dir (created if
// missing), as Add files them: DIR/<MachineKey>/<date>-<commit>.txt,
// mode StoreMode. It refuses a store that already holds the machine's
// folder, and a last night in the future (Add would refuse every later
// run). It writes the files directly, not through Add: a generated year
// is the input of Add's benchmark, not its output. ctx stops it between
// files.
func (g Generator) Write(ctx context.Context, dir string) error {
	g = g.withDefaults()
	if g.Nights > MaxNights || g.Series > MaxSeries {
		return fmt.Errorf("generate: %d nights × %d series: at most %d nights and %d series", g.Nights, g.Series, MaxNights, MaxSeries)
	}
	if err := CheckDate(g.Date(g.Nights-1), time.Now()); err != nil {
		return fmt.Errorf("generate: the last night %v", err)
	}
	mdir := filepath.Join(dir, MachineKey(g.Machine()))
	if _, err := os.Lstat(mdir); err == nil {
		return fmt.Errorf("generate: %s already exists: a generated store starts empty", mdir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("generate: %v", err)
	}
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		return fmt.Errorf("generate: %v", err)
	}
	for n := range g.Nights {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := Run{Commit: g.Commit(n), Date: g.Date(n)}
		p := filepath.Join(mdir, r.Name())
		if err := driver.Place(p, g.File(n), StoreMode); err != nil {
			return fmt.Errorf("generate: %v", err)
		}
	}
	return nil
}
