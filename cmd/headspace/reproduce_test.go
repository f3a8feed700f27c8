package main

import (
	"bytes"
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

// TestReproduceFrom rebuilds a --quick run's report from its saved result
// file, byte for byte, and checks that a missing, foreign or unreadable
// saved file, a missing directory and measuring flags exit 2 with one line.
func TestReproduceFrom(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI("reproduce", "--quick", "--docs", "004", "--out", dir); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	saved := filepath.Join(dir, "results")
	again := t.TempDir()
	code, stdout, stderr := runCLI("reproduce", "--from", saved, "--docs", "004", "--out", again)
	if code != 0 {
		t.Fatalf("--from: exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "report: "+filepath.Join(again, "004-sim.md")) {
		t.Errorf("stdout does not name the report:\n%s", stdout)
	}
	for _, name := range []string{"004-sim.md", "results/004-sim.txt", "figures/004-2s.gif", "figures/004-700ms-timeline.png"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(again, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the rebuild's differs from the run's (%v)", name, err)
		}
	}

	foreign := t.TempDir()
	b, err := os.ReadFile(filepath.Join(saved, "004-sim.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "004-sim.txt"), bytes.Replace(b, []byte("document: 004"), []byte("document: 003"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	garbled := t.TempDir()
	if err := os.WriteFile(filepath.Join(garbled, "004-sim.txt"), []byte("BenchmarkSim 1 x batches\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", empty}, "--from: " + filepath.Join(empty, "004-sim.txt") + ": no such file"},
		{[]string{"--from", foreign}, "--from: " + filepath.Join(foreign, "004-sim.txt") + ": not a result file of document 004 (its document: 003)"},
		{[]string{"--from", garbled}, "--from: " + filepath.Join(garbled, "004-sim.txt") + ": not a result file"},
		{[]string{"--from", filepath.Join(empty, "none")}, "not a directory"},
		{[]string{"--from", saved, "--quick", "--step", "1s"}, "--quick, --step only apply to a run that measures"},
	} {
		args := append([]string{"reproduce", "--docs", "004", "--out", t.TempDir()}, tc.args...)
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.HasPrefix(stderr, "headspace reproduce: ") || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}
