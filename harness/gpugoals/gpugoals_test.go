package gpugoals

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The goals of a folder, against golden reports: h100-partial holds the
// files of the H100 run of 2026-11-22 at 15709d7 (results/gpu: cuda
// check, the torch ladder, our ladder), which had no decode and no
// device transforms; synthetic holds every file, with round figures
// chosen to meet some goals and miss others; an empty folder measures
// nothing.
func TestGoals(t *testing.T) {
	for _, dir := range []string{"h100-partial", "synthetic", "empty"} {
		t.Run(dir, func(t *testing.T) {
			path := filepath.Join("testdata", dir)
			if dir == "empty" {
				path = t.TempDir()
			}
			rep, err := Goals(path)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", dir+".golden")
			if *update {
				os.WriteFile(golden, b.Bytes(), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("report:\n%s\nwant:\n%s", b.Bytes(), want)
			}
		})
	}
}

// The H100 run's figures come out as docs/gpu.md and issue 45 quote
// them: the Net's fp32 step at 1.17× PyTorch's, nothing else measured
// but the ladder.
func TestGoalsH100(t *testing.T) {
	rep, err := Goals(filepath.Join("testdata", "h100-partial"))
	if err != nil {
		t.Fatal(err)
	}
	var net Goal
	for _, g := range rep.Goals {
		if g.Name == "the Net's step against PyTorch's, fp32" {
			net = g
		}
	}
	if !net.Measured || net.Met || !strings.HasPrefix(net.Figure, "1.17×") {
		t.Errorf("the Net's fp32 step: %+v; want measured at 1.17×, not met", net)
	}
	if len(rep.Ladder) != 5 {
		t.Errorf("%d ladder levels, want 5: %+v", len(rep.Ladder), rep.Ladder)
	}
}

// A file that is there but is no result file is an error naming it.
func TestGoalsBadFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileCheck), []byte("BenchmarkCUDAStep/batch=256/side=256 1 lots step-ns\n"), 0o644)
	if _, err := Goals(dir); err == nil || !strings.Contains(err.Error(), FileCheck) {
		t.Errorf("error %v; want one naming %s", err, FileCheck)
	}
}

// ci/gpu-suite.sh writes every file this package reads, under the same
// names: one decision, the file's name, held in one place.
func TestSuiteWritesTheFiles(t *testing.T) {
	b, err := os.ReadFile("../../ci/gpu-suite.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Files {
		// --out "$out/NAME", or a step whose stdout (its log argument,
		// written to $out/NAME) is the result file.
		asStdout := regexp.MustCompile(`step "[^"]*" ` + regexp.QuoteMeta(f) + ` `)
		if !strings.Contains(string(b), `--out "$out/`+f+`"`) && !asStdout.Match(b) {
			t.Errorf("ci/gpu-suite.sh writes no $out/%s", f)
		}
	}
}
