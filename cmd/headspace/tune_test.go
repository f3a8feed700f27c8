package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateTuneFrom = flag.Bool("update-tune-from", false, "rewrite testdata/tune-from-*.golden")

// TestTuneFrom checks tune --from rebuilds the report of each committed
// tune (a script's, a node's ranks', our pipeline's) against its golden
// file, measuring nothing.
func TestTuneFrom(t *testing.T) {
	for _, name := range []string{"tune-imagefolder-5d62c85", "tune-ranks-d2c5995", "tune-ours-remote-a98e6c0", "tune-ours-ladder-a98e6c0"} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), []string{"tune", "--from", "../../results/" + name + ".txt"}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr.String())
			}
			golden := filepath.Join("testdata", "tune-from-"+name+".golden")
			if *updateTuneFrom {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if stdout.String() != string(want) {
				t.Errorf("tune --from printed\n%s\nwant (%s; -update-tune-from rewrites it)\n%s", stdout.String(), golden, want)
			}
		})
	}
}

// TestTuneFromFaults checks tune --from's bad input: a tune's flags or
// a command beside it, another command's file, a missing file: one
// line, exit 2.
func TestTuneFromFaults(t *testing.T) {
	file := "../../results/tune-ours-ladder-a98e6c0.txt"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a tune's flag", []string{"--from", file, "--budget", "1m"}, "--from rebuilds from a saved file; --budget only apply to a run that measures"},
		{"a command", []string{"--from", file, "--", "python3", "train.py"}, "--from rebuilds from a saved file; the command after -- only applies to a run that measures"},
		{"another command's file", []string{"--from", "../../results/peers-spdl-cache.txt"}, "not a result file of headspace tune --out"},
		{"no file", []string{"--from", filepath.Join(t.TempDir(), "none.txt")}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"tune"}, tc.args...), &stdout, &stderr)
			if got := strings.TrimSpace(stderr.String()); code != 2 || strings.Count(got, "\n") > 0 || !strings.Contains(got, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, got, tc.want)
			}
		})
	}
}
