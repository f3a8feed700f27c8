package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReproduceBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce", "--docs", "003,005"}, `--docs: unknown "005"`},
		{[]string{"reproduce", "--docs", ""}, `--docs: unknown ""`},
		{[]string{"reproduce", "--workers", "-1"}, "--workers -1"},
		{[]string{"reproduce", "--step", "-1s"}, "--step -1s"},
		{[]string{"reproduce", "--out", ""}, "--out"},
		{[]string{"reproduce", "--device", "tpu"}, `--device "tpu"`},
		{[]string{"reproduce", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: stderr %q, want one line containing %q", tc.args, stderr, tc.want)
		}
	}
}

func TestReproduceQuickWritesAReport(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI("reproduce", "--quick", "--docs", "004", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	report := filepath.Join(dir, "004-sim.md")
	if !strings.Contains(stdout, "report: "+report) {
		t.Errorf("stdout does not name the report:\n%s", stdout)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"headspace reproduce --quick --docs 004 --out " + dir, "| 98 |", "figures/004-2s.gif"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "figures", "004-2s.gif")); err != nil {
		t.Error(err)
	}
	// Progress goes to stderr, one line per unit when it is not a terminal.
	if !strings.Contains(stderr, "reproduce 004: ") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	if code, out, _ := runCLI("reproduce", "-h"); code != 0 || !strings.Contains(out, "Usage: headspace reproduce") || !strings.Contains(out, "--quick") {
		t.Errorf("reproduce -h: exit %d, output %q", code, out)
	}
}
