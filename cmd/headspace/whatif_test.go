package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// tinyWhatIf is a profile and a check small enough for -race.
var tinyWhatIf = []string{"--raw-size", "48", "--crop", "16", "--batch", "4", "--step", "2ms", "--steps", "2", "--warmup", "1", "--count", "1"}

func TestWhatIfBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"whatif", "--workers", "0"}, "--workers 0: want 1 to"}, // as node says it (issue 52)
		{[]string{"whatif", "--count", "0"}, "--count 0"},
		{[]string{"whatif", "--steps", "0"}, "--steps 0"},
		{[]string{"whatif", "--warmup", "-1"}, "--warmup -1"},
		{[]string{"whatif", "--profile-cores", "-1"}, "--profile-cores -1"},
		{[]string{"whatif", "--cores", "0"}, "--cores: 0 must be positive"},
		{[]string{"whatif", "--at-workers", "x"}, "not a whole number"},
		{[]string{"whatif", "--at-steps", "0"}, "--at-steps: 0 must be positive"},
		{[]string{"whatif", "--at-steps", "fast"}, `"fast" is not a number`},
		{[]string{"whatif", "--verify-steps", "-2"}, "--verify-steps: -2 must be positive"},
		{[]string{"whatif", "--verify-cores", "0"}, "--verify-cores: 0"},
		{[]string{"whatif", "--transforms", "slow"}, `unknown "slow"`},
		{[]string{"whatif", "--placement", "gpu"}, `unknown "gpu"`},
		{[]string{"whatif", "--batch", "0"}, "--batch 0: want 1 to 65536"},
		{[]string{"whatif", "--plot", "out.gif"}, `--plot "out.gif": want a .png or .svg file`},
		{[]string{"whatif", "--device", "tpu"}, `--device "tpu"`},
		{[]string{"whatif", "--device", "cuda", "--verify"}, "--verify-steps 1"},
		{[]string{"whatif", "--stats", "a.json", "--save", "b.json"}, "--save"},
		{[]string{"whatif", "--stats", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"whatif", "--stats", garbage}, "garbage.json: not a what-if profile"},
		{[]string{"whatif", "--stats", "a.json", "--ladder"}, "--ladder runs the pipeline"},
		{[]string{"whatif", "extra"}, `unexpected argument "extra"`},
		// A file of whatif -- COMMAND from before its records held its
		// report (issue 53): --from says it cannot rebuild it.
		{[]string{"whatif", "--from", "../../results/own-loop-imagefolder-whatif.txt"}, "a what-if recorded before its records held its report"},
		{[]string{"whatif", "--from", "../../workloads/testdata/own-loop-whatif.txt", "--verify"}, "--verify only apply to a run that measures"},
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

// TestWhatIfProfileVerifyAndStats runs a tiny profile with --verify into a
// result file, a report, a plot and a saved profile, then the table again
// from the saved profile alone.
func TestWhatIfProfileVerifyAndStats(t *testing.T) {
	dir := t.TempDir()
	prof, out, rep, plot := filepath.Join(dir, "p.json"), filepath.Join(dir, "w.txt"), filepath.Join(dir, "w.md"), filepath.Join(dir, "w.png")
	args := append([]string{"whatif", "--workers", "1", "--profile-cores", "2", "--save", prof, "--verify", "--verify-cores", "1",
		"--verify-workers", "1,2", "--verify-steps", "2", "--cores", "1,2", "--at-workers", "1,2", "--at-steps", "1",
		"--out", out, "--report", rep, "--plot", plot, "--ladder"}, tinyWhatIf...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"profile: batch 4, 1 workers, 2 cores", "transform", "step ×1", "cores=2", "model-bound with",
		"speed-up needed alone", "ladder predicted by the model", "measured ladder:", "verification on this machine", "2 points: median error", "results: " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	rs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	checks := 0
	for _, r := range rs {
		if strings.Contains(string(r.Name), "/check/") {
			checks++
			if _, ok := r.Value("predicted-steps/s"); !ok {
				t.Errorf("%s has no prediction", r.Name)
			}
		}
	}
	if checks != 2 || len(rs) != 9 { // 2 profile runs (2 cores and 1), 5 ladder levels and 2 checks
		t.Errorf("%d results, %d checks; want 9 and 2", len(rs), checks)
	}
	md, err := os.ReadFile(rep)
	if err != nil || !strings.Contains(string(md), "## What it would take") || !strings.Contains(string(md), "### Checked on this machine") ||
		!strings.Contains(string(md), "### The ladder and the model: naive transforms, 1 workers, 2 cores") {
		t.Errorf("report: %v\n%s", err, md)
	}
	if b, err := os.ReadFile(plot); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("plot: %v", err)
	}
	p, err := whatif.Read(prof)
	if err != nil || p.Cores != 2 || p.Workers != 1 {
		t.Fatalf("saved profile %+v, %v", p, err)
	}
	code, stdout2, stderr := runCLI("whatif", "--stats", prof, "--cores", "1,2", "--at-workers", "1,2", "--at-steps", "1")
	if code != 0 {
		t.Fatalf("--stats: exit %d: %s", code, stderr)
	}
	if i := strings.Index(stdout, "verification"); i < 0 || !strings.HasPrefix(stdout, stdout2) {
		t.Errorf("--stats output differs from the run's table:\n%s\n---\n%s", stdout2, stdout)
	}
}

// whatif --from rebuilds from the results file of a run the report and
// the plot that run wrote, byte for byte, and prints its profile and table.
func TestWhatIfFromRebuildsTheRunsReport(t *testing.T) {
	dir, again := t.TempDir(), t.TempDir()
	out, rep, plot := filepath.Join(dir, "w.txt"), filepath.Join(dir, "w.md"), filepath.Join(dir, "w.png")
	args := append([]string{"whatif", "--workers", "1", "--profile-cores", "2", "--verify", "--verify-cores", "1",
		"--verify-workers", "1,2", "--verify-steps", "2", "--cores", "1,2", "--at-workers", "1,2", "--at-steps", "1,2",
		"--out", out, "--report", rep, "--plot", plot, "--ladder"}, tinyWhatIf...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep2, plot2 := filepath.Join(again, "w.md"), filepath.Join(again, "w.png")
	code, stdout2, stderr := runCLI("whatif", "--from", out, "--report", rep2, "--plot", plot2)
	if code != 0 {
		t.Fatalf("--from: exit %d: %s", code, stderr)
	}
	table, _, _ := strings.Cut(stdout, "\nthe caching ladder")
	if !strings.HasPrefix(stdout2, table) {
		t.Errorf("--from prints\n%s\nthe run printed\n%s", stdout2, stdout)
	}
	for _, pair := range [][2]string{{rep, rep2}, {plot, plot2}} {
		a, errA := os.ReadFile(pair[0])
		b, errB := os.ReadFile(pair[1])
		if errA != nil || errB != nil {
			t.Fatalf("%v, %v", errA, errB)
		}
		if string(a) != string(b) {
			t.Errorf("%s differs from the run's %s:\n%s\n---\n%s", pair[1], pair[0], b, a)
		}
	}
	if md, _ := os.ReadFile(rep2); !strings.Contains(string(md), "### Checked on this machine") || !strings.Contains(string(md), "### The ladder and the model") {
		t.Errorf("the rebuilt report lacks the checks or the ladder:\n%s", md)
	}
}

// TestWhatIfFromOwnLoop: whatif --from a file of whatif -- COMMAND --out
// (one process's, torchrun's 2 ranks') prints the bytes its run printed
// before its results line (OwnLoopWhatIf's report, through its codec).
func TestWhatIfFromOwnLoop(t *testing.T) {
	for _, name := range []string{"own-loop-whatif", "own-loop-whatif-node"} {
		path := filepath.Join("..", "..", "workloads", "testdata", name)
		code, stdout, stderr := runCLI("whatif", "--from", path+".txt")
		want, err := os.ReadFile(path + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 || stdout != string(want) {
			t.Errorf("whatif --from %s.txt: exit %d, stderr %q, stdout:\n%s\nwant the run's:\n%s", path, code, stderr, stdout, want)
		}
	}
}

func TestWhatIfFromBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join("..", "..", "results", "whatif-3797d48.txt") // from before --out recorded the report's lines
	tampered := filepath.Join(dir, "tampered.txt")                    // a profile line that is not the run's
	bare := filepath.Join(dir, "bare.txt")                            // neither the report's lines nor profiling records
	if err := os.WriteFile(bare, []byte("transforms: naive\n\nBenchmarkWhatIf/check/cores=1/workers=1/step=x1 2 100 steps/s 1 predicted-steps/s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := whatif.Profile{Batch: 4, Workers: 1, Cores: 1, Step: 2e6, Measured: 100, CPUSource: whatif.ThreadCPU,
		Stages: []whatif.Stage{{Name: "load", CPU: 1e5, Workers: 1, Scales: true}}}
	line, err := p.Line()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tampered, []byte("command: headspace whatif\ntransforms: naive\nwhatif-table: cores=1 workers=1 steps=1\nwhatif-profile: "+line+
		"\n\nBenchmarkWhatIf/check/cores=1/workers=1/step=x1 2 100 steps/s 1 predicted-steps/s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"whatif", "--from", old, "--workers", "1"}, "--from rebuilds from a saved file; --workers only apply to a run that measures"},
		{[]string{"whatif", "--from", filepath.Join(dir, "none.txt")}, "no such file"},
		{[]string{"whatif", "--from", old}, "no command, whatif-profile, whatif-table line"},
		{[]string{"whatif", "--from", bare}, "no command, whatif-profile, whatif-table line"},
		{[]string{"whatif", "--from", tampered}, "the profile line is not the run's"},
		{[]string{"whatif", "--from", tampered, "--plot", filepath.Join(dir, "x.jpg")}, "want a .png or .svg file"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// The committed what-if report and plot are what whatif --from writes from
// their committed result file: edit the renderer or the file, never the
// report.
func TestCommittedWhatIfReportRebuilds(t *testing.T) {
	root := filepath.Join("..", "..")
	const results, report, plot = "results/whatif-d98ca25.txt", "notebooks/whatif.md", "notebooks/figures/whatif.png"
	out := t.TempDir()
	args := []string{"whatif", "--from", filepath.Join(root, results), "--report", filepath.Join(out, "whatif.md"), "--plot", filepath.Join(out, "whatif.png")}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	for got, want := range map[string]string{"whatif.md": report, "whatif.png": plot} {
		a, errA := os.ReadFile(filepath.Join(out, got))
		b, errB := os.ReadFile(filepath.Join(root, want))
		if errA != nil || errB != nil {
			t.Fatalf("%v, %v", errA, errB)
		}
		if string(a) != string(b) {
			t.Errorf("%s differs from its rebuild from %s (regenerate: headspace whatif --from %s --report %s --plot %s)", want, results, results, report, plot)
		}
	}
}

// The GPU machine's what-if report (notebooks/whatif-gpu.md, below its
// introduction) and plot are what whatif --from writes from their result
// file, whose report's lines were added once, rebuilt from its
// WhatIf/profile records, with which every recorded prediction agrees
// (issues 41, 53).
func TestCommittedWhatIfGPUReportRebuilds(t *testing.T) {
	root := filepath.Join("..", "..")
	const results, report, plot = "results/gpu/nvidia-h100-80gb-hbm3-15709d7-whatif.txt", "notebooks/whatif-gpu.md", "notebooks/figures/whatif-gpu.png"
	out := t.TempDir()
	args := []string{"whatif", "--from", filepath.Join(root, results), "--report", filepath.Join(out, "whatif.md"), "--plot", filepath.Join(out, "whatif.png")}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	rebuilt, err := os.ReadFile(filepath.Join(out, "whatif.md"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, report))
	if err != nil {
		t.Fatal(err)
	}
	const section = "## What it would take"
	_, tail, ok := strings.Cut(string(committed), section)
	if !ok || section+tail != string(rebuilt) {
		t.Errorf("%s, from %q on, differs from its rebuild from %s:\n%s", report, section, results, rebuilt)
	}
	for _, want := range []string{"Profile: batch 32, 2 workers, 16 cores, step 3.096ms", "| 16 | 8 | ×1 | 322.98 | 278.62 | +16% | step | 0.00 |"} {
		if !strings.Contains(string(rebuilt), want) {
			t.Errorf("the rebuild lacks %q", want)
		}
	}
	a, errA := os.ReadFile(filepath.Join(out, "whatif.png"))
	b, errB := os.ReadFile(filepath.Join(root, plot))
	if errA != nil || errB != nil {
		t.Fatalf("%v, %v", errA, errB)
	}
	if string(a) != string(b) {
		t.Errorf("%s differs from its rebuild from %s", plot, results)
	}
}

// TestWhatIfInterruptedKeepsTheChecks: a verification interrupted once its
// checks began prints the table of the points checked so far and exits
// 130 saying so (driver.Interrupted); one with no record keeps no file.
func TestWhatIfInterruptedKeepsTheChecks(t *testing.T) {
	dir := t.TempDir()
	prof, out := filepath.Join(dir, "p.json"), filepath.Join(dir, "w.txt")
	if code, _, stderr := runCLI(append([]string{"whatif", "--workers", "1", "--profile-cores", "1", "--save", prof, "--cores", "1", "--at-workers", "1", "--at-steps", "1"}, tinyWhatIf...)...); code != 0 {
		t.Fatalf("profile: exit %d: %s", code, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // interrupted before the first check's run
	var stdout, stderr bytes.Buffer
	args := []string{"whatif", "--stats", prof, "--cores", "1", "--at-workers", "1", "--at-steps", "1", "--verify", "--verify-cores", "1",
		"--verify-workers", "1", "--verify-steps", "1", "--out", out, "--raw-size", "48", "--crop", "16", "--batch", "4", "--step", "2ms", "--steps", "2", "--count", "1"}
	if code := run(ctx, args, &stdout, &stderr); code != 130 {
		t.Errorf("exit %d, want 130; stderr %q", code, stderr.String())
	}
	if want := "headspace whatif: interrupted: the table shows the points checked before it\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if !strings.Contains(stdout.String(), "verification on this machine") {
		t.Errorf("no table of the checks:\n%s", stdout.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an interrupted run with no record wrote %s (%v)", out, err)
	}
}
