package reproduce

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/command"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// Count is the experiment of a new document, 005, as workloads/count.go
// would hold it (docs/extending.md, "A new experiment"): its
// specification, its two sizes, the four methods of
// workloads.Experiment, and those of workloads.Typed — Measure, whose
// outcome is a value of its own type, and Codec, that outcome's records
// codec.
type Count struct{ N int }

// CountOutcome is what a Count measured: the square of each step.
type CountOutcome struct{ Squares []int }

// DefaultCount is the document's size; QuickCount runs in no time.
func DefaultCount() Count { return Count{N: 100} }
func QuickCount() Count   { return Count{N: 3} }

func (Count) Name() string     { return "Count" }
func (Count) Document() string { return "005" }
func (c Count) Settings() []resultfile.Config {
	return []resultfile.Config{{Key: "n", Value: strconv.Itoa(c.N)}}
}

// Measure squares 1 to N.
func (c Count) Measure(ctx context.Context, env workloads.Env) (CountOutcome, error) {
	var out CountOutcome
	for i := 1; i <= c.N; i++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out.Squares = append(out.Squares, i*i)
	}
	return out, nil
}

// Run is Measure, then its records.
func (c Count) Run(ctx context.Context, env workloads.Env) ([]*benchfmt.Result, error) {
	return workloads.RunTyped[CountOutcome](ctx, c, env)
}

// Codec is CountCodec.
func (Count) Codec() workloads.Codec[CountOutcome] { return CountCodec }

// CountCodec writes one record per step, BenchmarkCount/i=…, its square
// in squares, and reads the squares back in the order of i, by the key
// benchproc reads from each name.
var CountCodec = workloads.NewCodec("Count", map[string][]string{"Count": {"i"}},
	func(o CountOutcome) []*benchfmt.Result {
		var out []*benchfmt.Result
		for i, sq := range o.Squares {
			out = append(out, &benchfmt.Result{Name: benchfmt.Name(resultfile.BenchName(fmt.Sprintf("Count/i=%d", i+1), 1)), Iters: 1,
				Values: []benchfmt.Value{{Value: float64(sq), Unit: "squares"}}})
		}
		return out
	},
	func(recs []workloads.Record) (CountOutcome, error) {
		var o CountOutcome
		for n, r := range recs {
			if i, err := strconv.Atoi(r.Keys["i"]); err != nil || i != n+1 {
				return o, fmt.Errorf("BenchmarkCount/i=%s: want i=%d", r.Keys["i"], n+1)
			}
			v, err := r.Value("squares")
			if err != nil {
				return o, err
			}
			o.Squares = append(o.Squares, int(v))
		}
		return o, nil
	})

// Flags are count's flags, each bound to a field of the experiment:
// its value, the registry's Default size, is the flag's default.
func (c *Count) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.N, "n", c.N, "square 1 to `n`")
}

// The bound of each numeric flag, declared beside it (checked as the
// flags are parsed: --n 0 exits 2).
var _ = cli.Declare(map[string]cli.Bound{"count n": {Lo: 1, Hi: 1 << 20}})

// Report is what headspace count prints of an outcome, after a run and
// from --from alike.
func (*Count) Report(o CountOutcome, w io.Writer) error {
	for i, sq := range o.Squares {
		fmt.Fprintf(w, "%d² = %d\n", i+1, sq)
	}
	return nil
}

// countCommand is headspace count, made from the experiment the one
// way, as command/count.go would hold it, with its line in
// command.Commands (command/commands.go), which headspace registers.
func countCommand() cli.Command {
	return command.CommandOf[CountOutcome, Count]("count", "the squares of 1 to n", "Squares 1 to --n.")
}

// registerCount is the one line in workloads.Registry
// (workloads/registry.go): workloads.Sizes(DefaultCount, QuickCount).
func registerCount() (undo func()) {
	saved := workloads.Registry
	workloads.Registry = append(workloads.Registry[:len(saved):len(saved)], workloads.Sizes(DefaultCount, QuickCount))
	return func() { workloads.Registry = saved }
}

// reportCount is the report's declaration, in the init of its file,
// reproduce/doc005.go, with measure005 and render005 beside it.
func reportCount() (undo func()) {
	saved := Docs
	report(Doc{ID: "005", Name: "count", Title: "Counting", Source: "005", Summary: "the squares of 1 to n", Experiment: Count{}, measure: measure005, render: render005})
	return func() { Docs = saved }
}

// measure005 runs the registered Count at the run's size.
func measure005(ctx context.Context, s *settings, t *tracker) (measurement, error) {
	return s.measure(ctx, workloads.Sized[Count](s.size()), t)
}

// render005 builds the report from the result file alone: the outcome
// its records decode to (CountCodec), never their names read as strings.
func render005(f *resultFile, p *page) ([]byte, error) {
	h, n := f.header(), f.integer("n")
	if err := f.check(); err != nil {
		return nil, err
	}
	o, err := decoded(f, CountCodec)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for i, sq := range o.Squares {
		rows = append(rows, []string{strconv.Itoa(i + 1), num(float64(sq), 0)})
	}
	var b bytes.Buffer
	m := &md{w: &b}
	writeHeader(m, h)
	m.para("## Squares of 1 to %d", n)
	m.table("rr", []string{"i", "i²"}, rows)
	return b.Bytes(), m.err
}

// Example_newExperiment adds an experiment with a report, as
// docs/extending.md's worked example does: the experiment (Count), its
// line in workloads.Registry, its report (report(Doc{…}) with its measure
// and render). `headspace reproduce --docs 005` would then run it; here
// Run does, at the quick size, and the report is rendered from the
// result file it saved. Its command is Example_newCommand's.
func Example_newExperiment() {
	defer registerCount()()
	defer reportCount()()
	out, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(out)

	fmt.Println("documents:", strings.Join(IDs(), ", "))
	paths, err := Run(context.Background(), []string{"005"}, Options{Quick: true, Out: out})
	if err != nil {
		panic(err)
	}
	rep, err := os.ReadFile(paths[0])
	if err != nil {
		panic(err)
	}
	_, table, _ := strings.Cut(string(rep), "## ")   // after the header
	table, _, _ = strings.Cut(table, "<!-- written") // before the report's mark
	fmt.Println(filepath.Base(paths[0]))
	fmt.Print("## " + strings.TrimSpace(table) + "\n")
	// Output:
	// documents: 000, 002, 003, 004, 005
	// 005-count.md
	// ## Squares of 1 to 3
	//
	// | i | i² |
	// | ---: | ---: |
	// | 1 | 1 |
	// | 2 | 4 |
	// | 3 | 9 |
}

// Example_newCommand runs the command made from Count (its Flags, its
// Report, its command's line): `headspace count --n 3 --out FILE` measures,
// writes the file and prints the report of the records read back from
// it; `--from FILE` prints the same report from the file alone.
func Example_newCommand() {
	defer registerCount()()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "count.txt")
	ctx := context.Background()
	count := countCommand()
	var run, from bytes.Buffer
	if err := count.Run(ctx, []string{"--n", "3", "--out", out}, &run, io.Discard); err != nil {
		panic(err)
	}
	if err := count.Run(ctx, []string{"--from", out}, &from, io.Discard); err != nil {
		panic(err)
	}
	fmt.Print(strings.ReplaceAll(run.String(), dir, "DIR"))
	fmt.Println("--from prints the same report:", strings.HasPrefix(run.String(), from.String()))
	// Output:
	// 1² = 1
	// 2² = 4
	// 3² = 9
	// results: DIR/count.txt
	// --from prints the same report: true
}
