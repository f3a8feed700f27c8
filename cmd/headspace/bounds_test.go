package main

import (
	"context"
	"flag"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/internal/cli"
)

// TestEveryNumericFlagBounded walks every command's flags (each verb's,
// for a command with verbs), as its -h parses them, and for every
// numeric one (int, int64, uint, uint64, float64, duration; flags made
// by cli.NewFlagSet, whose sets cli.ParseArgs checks) checks that
// it has a bound (declared with cli.Declare), that its default lies within it, and that
// a value just outside it, on either side the flag's type can hold, is
// refused with exit 2 and one line naming the flag, before the command
// does anything. docs/commands.md promises a bound on every numeric
// flag: a flag added without one fails here.
func TestEveryNumericFlagBounded(t *testing.T) {
	type parsed struct {
		args []string // the command and verb
		fs   *flag.FlagSet
	}
	var sets []parsed
	var current []string
	cli.FlagSetMade = func(fs *flag.FlagSet) { sets = append(sets, parsed{current, fs}) }
	defer func() { cli.FlagSetMade = nil }()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range commands {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		invocations := [][]string{{name}}
		if vs := commands[name].Verbs; len(vs) > 0 {
			invocations = nil
			for _, v := range vs {
				invocations = append(invocations, []string{name, v})
			}
		}
		for _, inv := range invocations {
			current = inv
			n := len(sets)
			run(context.Background(), append(slices.Clone(inv), "-h"), io.Discard, io.Discard)
			if len(sets) == n {
				t.Errorf("%s -h made no flag set with cli.NewFlagSet: its flags cannot be checked", strings.Join(inv, " "))
			}
		}
	}
	cli.FlagSetMade = nil
	checked := 0
	for _, p := range sets {
		p.fs.VisitAll(func(f *flag.Flag) {
			def, ok := cli.NumericValue(f)
			if !ok {
				return
			}
			cmd := strings.Join(p.args, " ")
			b, ok := cli.BoundOf(p.fs, f.Name)
			if !ok {
				t.Errorf("%s --%s (%s) has no bound", cmd, f.Name, f.DefValue)
				return
			}
			checked++
			if def < b.Lo || def > b.Hi {
				t.Errorf("%s --%s: default %s outside its bound %v", cmd, f.Name, f.DefValue, b)
			}
			for _, bad := range outside(f, b) {
				code, out, stderr := runCLI(append(slices.Clone(p.args), "--"+f.Name+"="+bad)...)
				if code != 2 || !strings.Contains(stderr, "--"+f.Name+" ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("%s --%s=%s: exit %d, stdout %q, stderr %q; want 2 and one line naming --%s", cmd, f.Name, bad, code, out, stderr, f.Name)
				}
			}
		})
	}
	t.Logf("%d numeric flags of %d flag sets checked", checked, len(sets))
	if checked < 50 {
		t.Errorf("only %d numeric flags checked: the walk missed commands", checked)
	}
}

// outside are values of f just outside bound b that f's type can hold:
// below Lo and above Hi.
func outside(f *flag.Flag, b cli.Bound) []string {
	var out []string
	switch f.Value.(flag.Getter).Get().(type) {
	case int, int64:
		if b.Lo > math.MinInt64 {
			out = append(out, strconv.FormatInt(int64(b.Lo)-1, 10))
		}
		if b.Hi < math.MaxInt64 {
			out = append(out, strconv.FormatInt(int64(b.Hi)+1, 10), "9223372036854775807")
		}
	case uint, uint64:
		if b.Hi < math.MaxUint64 {
			out = append(out, strconv.FormatUint(uint64(b.Hi)+1, 10))
		}
	case float64:
		out = append(out, strconv.FormatFloat(b.Lo-1e-9-math.Abs(b.Lo), 'g', -1, 64), strconv.FormatFloat(b.Hi+1+b.Hi, 'g', -1, 64), "NaN")
	case time.Duration:
		if b.Lo > math.MinInt64 {
			out = append(out, (time.Duration(b.Lo) - 1).String())
		}
		out = append(out, (time.Duration(b.Hi) + 1).String())
	}
	return out
}
