package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestAnalyzeFromRebuildsTheReport: analyze --from prints, from the file
// a run's --out wrote, the report the run printed after measuring, byte
// for byte, and writes the same --stats-json and the plot.
func TestAnalyzeFromRebuildsTheReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "an.txt")
	stats, plot := filepath.Join(dir, "run.json"), filepath.Join(dir, "run")
	tiny := []string{"--raw-size", "32", "--crop", "16", "--batch", "2", "--workers", "1", "--num-caches", "2", "--return-caches-after", "6", "--steps-after", "5", "--step", "1ms"}
	code, stdout, stderr := runCLI(append([]string{"analyze", "--transforms", "naive", "--out", out, "--stats-json", stats, "--plot", plot}, tiny...)...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	report, ok := strings.CutSuffix(stdout, "results: "+out+"\n")
	if !ok || !strings.Contains(report, "verdict: ") || !strings.Contains(report, "[batch    ] Processed") {
		t.Fatalf("the run printed\n%s", stdout)
	}
	fromStats, fromPlot := filepath.Join(dir, "from.json"), filepath.Join(dir, "from")
	code, from, stderr := runCLI("analyze", "--from", out, "--stats-json", fromStats, "--plot", fromPlot)
	if code != 0 {
		t.Fatalf("--from: exit %d, stderr %q", code, stderr)
	}
	if want := strings.ReplaceAll(report, plot, fromPlot); from != want {
		t.Errorf("--from printed\n%s\nthe run printed\n%s", from, want)
	}
	a, _ := os.ReadFile(stats)
	b, err := os.ReadFile(fromStats)
	if err != nil || len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("--from's --stats-json differs from the run's (%v):\n%s\n%s", err, b, a)
	}
	for _, p := range []string{fromPlot + ".png", fromPlot + ".svg"} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("no plot %s: %v", p, err)
		}
	}
}

// TestAnalyzeDefaultsAreTheExperiments: analyze's flags default to the
// registry's Default size of its experiment (DefaultHeadspace): a worker
// per core, 5 caches after 30 batches, 30 cached steps, both transforms.
func TestAnalyzeDefaultsAreTheExperiments(t *testing.T) {
	code, help, _ := runCLI("analyze", "-h")
	if code != 0 {
		t.Fatalf("analyze -h: exit %d", code)
	}
	for _, want := range []string{
		fmt.Sprintf("loader workers per stage (default %d)", runtime.GOMAXPROCS(0)),
		"batches kept from the start (default 5)",
		"batches from the loader before the caches are replayed (default 30)",
		"steps run on cached batches (default 30)",
		"(default naive,fast)",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("analyze -h lacks %q", want)
		}
	}
}

// TestLadderFromRebuildsTheTable: ladder --from prints, from the file a
// run's --out wrote, the table the run printed, byte for byte (the
// setup's line from the file's settings), and refuses a file that is
// not a ladder's (exit 2); --fresh still needs --out.
func TestLadderFromRebuildsTheTable(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ladder.txt")
	tiny := []string{"--raw-size", "32", "--crop", "16", "--batch", "2", "--workers", "1", "--step", "1ms", "--steps", "2", "--warmup", "0",
		"--count", "2", "--levels", "device,none", "--transforms", "naive,fast"}
	code, stdout, stderr := runCLI(append([]string{"ladder", "--out", out}, tiny...)...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	table, ok := strings.CutSuffix(stdout, fmt.Sprintf("results: %s (compare with: go tool benchstat %s)\n", out, out))
	if !ok || !strings.HasPrefix(table, "device emulated, batch 2, raw 32x32, crop 16, 2 runs of 2 steps each\n") || !strings.Contains(table, "transforms=fast") {
		t.Fatalf("the run printed\n%s", stdout)
	}
	code, from, stderr := runCLI("ladder", "--from", out)
	if code != 0 || from != table {
		t.Errorf("--from: exit %d, stderr %q, printed\n%s\nthe run printed\n%s", code, stderr, from, table)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ladder", "--from", filepath.Join("..", "..", "results", "analyze-emulated.txt")}, "not a result file of headspace ladder --out"},
		{[]string{"ladder", "--from", out, "--levels", "none"}, "--levels"},
		{append([]string{"ladder", "--fresh"}, tiny...), "--fresh needs --out"},
	} {
		if code, _, stderr := runCLI(tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
