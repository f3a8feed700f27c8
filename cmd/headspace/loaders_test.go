package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testWorkerEnv makes this test binary, run as "<binary> worker", serve as
// the process loader's worker (the loaders command re-executes
// os.Executable(), which under test is this binary). init runs before the
// testing package parses flags.
const testWorkerEnv = "HEADSPACE_CMD_TEST_WORKER"

func init() {
	if os.Getenv(testWorkerEnv) == "1" && len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
}

func TestLoadersBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"loaders", "--mode", "fibers"}, `unknown "fibers"`},
		{[]string{"loaders", "--workers", "0"}, "--workers: 0 must be positive"},
		{[]string{"loaders", "--batches", "1"}, "--batches 1"},
		{[]string{"loaders", "--batch", "0"}, "--batch 0: want 1 to 65536"},
		{[]string{"loaders", "--transforms", "slow"}, `unknown "slow"`},
		{[]string{"loaders", "--crop", "7"}, "crop 7 must be even"},
		{[]string{"loaders", "--raw-size", "big"}, "is not N or WxH"},
		{[]string{"loaders", "--prefetch", "0"}, "--prefetch 0"},
		{[]string{"loaders", "extra"}, `unexpected argument "extra"`},
		{[]string{"worker", "extra"}, `unexpected argument "extra"`},
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

func TestLoadersWritesTableResultsAndPlots(t *testing.T) {
	t.Setenv(testWorkerEnv, "1")
	dir := t.TempDir()
	out := filepath.Join(dir, "loaders.txt")
	prefix := filepath.Join(dir, "loaders")
	code, stdout, stderr := runCLI("loaders", "--mode", "goroutine,process", "--workers", "1,2", "--repeats", "1", "--train-runs", "0",
		"--batches", "3", "--batch", "4", "--raw-size", "32x24", "--crop", "8", "--out", out, "--plot", prefix,
		"--cpuprofile", filepath.Join(dir, "cpu.prof"))
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"goroutine", "process", "TTFB (ms)", "samples/s", "peak RSS", "SPDL"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mode=goroutine/workers=1", "mode=goroutine/workers=2", "mode=process/workers=1", "mode=process/workers=2"} {
		if !strings.Contains(string(data), "BenchmarkLoaders/"+name+" ") {
			t.Errorf("results lack BenchmarkLoaders/%s:\n%s", name, data)
		}
	}
	for _, u := range []string{"ttfb-ns", "samples/s", "peak-rss-B", "cpu-s"} {
		if !strings.Contains(string(data), "Unit "+u+" better=") {
			t.Errorf("results lack the Unit line of %s", u)
		}
	}
	// A CPU profile is gzip-compressed protobuf.
	if prof, err := os.ReadFile(filepath.Join(dir, "cpu.prof")); err != nil || len(prof) < 2 || prof[0] != 0x1f || prof[1] != 0x8b {
		t.Errorf("--cpuprofile wrote no gzip profile: %v (%d bytes)", err, len(prof))
	}
	for _, p := range []string{prefix + "-ttfb.png", prefix + "-throughput.png"} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", p, err)
		}
	}
}

// TestLoadersFromRebuildsTheReport: loaders --from prints, from the file
// a run's --out wrote, the same report the run printed after measuring
// (the table of both repeats and the plots), byte for byte; a file of
// another experiment is bad input; a measuring flag with --from is
// refused. (The training comparison's pipeline is document 003's, too
// slow for a test: its lines are TestLoadersReport's.)
func TestLoadersFromRebuildsTheReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "loaders.txt")
	prefix := filepath.Join(dir, "plot")
	code, stdout, stderr := runCLI("loaders", "--mode", "goroutine", "--workers", "1", "--repeats", "2", "--train-runs", "0",
		"--batches", "3", "--batch", "4", "--raw-size", "32x24", "--crop", "8", "--out", out, "--plot", prefix)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// What the run printed after its header (what it runs, two lines)
	// and before its results line.
	lines := strings.SplitAfter(stdout, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[len(lines)-2], "results: ") {
		t.Fatalf("run's output:\n%s", stdout)
	}
	report := strings.Join(lines[2:len(lines)-2], "")
	if strings.Count(report, "  goroutine        1") != 2 || !strings.Contains(report, "plot: "+prefix+"-ttfb.png") {
		t.Errorf("the run's report lacks a repeat or its plot:\n%s", report)
	}
	code, from, stderr := runCLI("loaders", "--from", out, "--plot", prefix)
	if code != 0 {
		t.Fatalf("--from: exit %d, stderr %q", code, stderr)
	}
	if from != report {
		t.Errorf("--from printed\n%s\nthe run printed\n%s", from, report)
	}
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte("BenchmarkFoo 1 2 ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"loaders", "--from", other}, "--from " + other + ": not a result file of headspace loaders --out"},
		{[]string{"loaders", "--from", filepath.Join(dir, "missing.txt")}, "no such file"},
		{[]string{"loaders", "--from", out, "--workers", "2"}, "--workers only apply to a run that measures"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}
