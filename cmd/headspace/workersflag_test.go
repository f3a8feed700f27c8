package main

import (
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/internal/cli"
)

// TestWorkersFlagOneDefinition walks every command's flags (each verb's),
// as its -h makes them, and checks that every --workers is the one
// definition, loader.WorkersFlag: one type, one bound, whether the
// command takes one count or a list.
func TestWorkersFlagOneDefinition(t *testing.T) {
	var sets []*flag.FlagSet
	cli.FlagSetMade = func(fs *flag.FlagSet) { sets = append(sets, fs) }
	defer func() { cli.FlagSetMade = nil }()
	for name, c := range commands {
		invocations := [][]string{{name}}
		for _, v := range c.Verbs {
			invocations = append(invocations, []string{name, v})
		}
		for _, inv := range invocations {
			run(context.Background(), append(slices.Clone(inv), "-h"), io.Discard, io.Discard)
		}
	}
	found := 0
	for _, fs := range sets {
		if f := fs.Lookup("workers"); f != nil {
			found++
			if _, ok := f.Value.(*loader.Workers); !ok {
				t.Errorf("%s --workers is a %T, not loader.WorkersFlag's", fs.Name(), f.Value)
			}
		}
	}
	if found < 8 {
		t.Errorf("%d commands define --workers, want the 8 that do", found)
	}
}

// TestWorkersFlagList: a list's counts are read as the command reads
// them, each bounded; a single count's bad value is refused as it is
// parsed, in one line.
func TestWorkersFlagList(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"loaders", "--workers", "1,0"}, "--workers: 0 must be positive"},
		{[]string{"peer", "--workers", "1,100000"}, "--workers 100000: want 1 to"},
		{[]string{"ladder", "--workers", "2,x"}, `--workers: "x" is not a whole number`},
		{[]string{"node", "--workers", "1,2"}, `invalid value "1,2" for flag -workers`},
		{[]string{"dataset", "write", "--out", t.TempDir(), "--workers", "-1"}, "--workers -1"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}
