package gpugoals

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The goals of a folder, against golden reports: h100-partial holds the
// files of the H100 run of 2026-11-22 at 15709d7 (results/gpu: cuda
// check, the torch ladder, our ladder), which had no decode and no
// device transforms; synthetic holds every file, with round figures
// chosen to meet some goals and miss others; synthetic-cudnn is it with
// cuda check's steps on cuDNN too (/backend=cudnn), which the Net's goals
// then read, the kernels' ratios beside them; an empty folder measures
// nothing.
func TestGoals(t *testing.T) {
	for _, dir := range []string{"h100-partial", "synthetic", "synthetic-cudnn", "empty"} {
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

// The H100 run had no PyTorch step at matched math (its torch ladder
// ran with cuDNN's TF32 on, PyTorch's default): the Net's goals are not
// measured from it (issue 57), its 1.17× is the anchor, and our TF32
// against our fp32 is not measured (it timed fp32 alone).
func TestGoalsH100(t *testing.T) {
	rep, err := Goals(filepath.Join("testdata", "h100-partial"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Goals {
		if strings.HasPrefix(g.Name, "the Net's") && g.Measured {
			t.Errorf("%s: measured %s from a run with no PyTorch step at matched math", g.Name, g.Figure)
		}
		if strings.HasPrefix(g.Name, "the Net's step against") && !strings.HasPrefix(g.Anchor, "1.17×") {
			t.Errorf("%s: anchor %q, want the H100's 1.17×", g.Name, g.Anchor)
		}
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

// The H200 runs (2026-11-27 for issue 45, 2026-11-28 after issue 42) are
// committed as the suite wrote them: each goals.txt, and the block
// docs/gpu.md quotes of it, are what Goals makes of the folder today,
// byte for byte. -update rewrites the docs' blocks (never a committed
// goals.txt, the run's own record).
func TestGoalsH200(t *testing.T) {
	for _, run := range []string{"nvidia-h200-3fcbbc1", "nvidia-h200-a11143c"} {
		t.Run(run, func(t *testing.T) { checkGoals(t, run) })
	}
}

// checkGoals checks results/gpu/run's goals.txt and docs/gpu.md's block of
// it against what Goals makes of the folder.
func checkGoals(t *testing.T, run string) {
	dir := "../../results/gpu/" + run
	rep, err := Goals(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	committed, err := os.ReadFile(filepath.Join(dir, "goals.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(committed) {
		t.Errorf("%s/goals.txt differs from headspace cuda goals %s now:\n%s\nwant:\n%s", dir, dir, committed, got)
	}
	// Every goal whose files the run wrote is measured (a run before
	// issue 57 wrote no torch-netstep.txt).
	for _, g := range rep.Goals {
		have := true
		for _, f := range strings.Split(g.From, ", ") {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				have = false
			}
		}
		if have && !g.Measured {
			t.Errorf("goal %q not measured in %s, which has its files %s", g.Name, dir, g.From)
		}
	}

	const doc = "../../docs/gpu.md"
	marker := "<!-- goals: results/gpu/" + run + " -->\n```\n"
	page, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(page, []byte(marker))
	if i < 0 {
		t.Fatalf("%s has no %q block", doc, strings.TrimSpace(marker))
	}
	start := i + len(marker)
	n := bytes.Index(page[start:], []byte("```\n"))
	if n < 0 {
		t.Fatalf("%s: the goals block is not closed", doc)
	}
	if *update {
		out := append(append(append([]byte{}, page[:start]...), got...), page[start+n:]...)
		if err := os.WriteFile(doc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(page[start:start+n]) != got {
		t.Errorf("%s's goals block differs from headspace cuda goals %s (go test -run TestGoalsH200 -update ./harness/gpugoals):\n%s\nwant:\n%s", doc, dir, page[start:start+n], got)
	}
}

// The anchors are the H100 run's committed figures (issue 57 item 5):
// level none over level device of the naive pipeline at 4 workers, and
// the Net's fp32 step over PyTorch's, recomputed here from the files
// under results/gpu as notebooks/003-caching-ladder-gpu.md reads them,
// and written so in every goal's anchor.
func TestAnchorsAreTheH100Files(t *testing.T) {
	const dir = "../../results/gpu/"
	read := func(name string) []*benchfmt.Result {
		rs, err := resultfile.Read(dir + name)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	ladder := read("nvidia-h100-80gb-hbm3-15709d7.txt")
	at := func(level string) float64 {
		var xs []float64
		for _, r := range ladder {
			if string(r.Name) == "Ladder/level="+level+"/workers=4/transforms=naive/placement=host/pinned=true-16" {
				v, _ := resultfile.Value(r, "steps/s")
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			t.Fatalf("no naive %s point at 4 workers in the H100 file", level)
		}
		return summary.Median(xs)
	}
	var step, torch []float64
	for _, r := range read("nvidia-h100-80gb-hbm3-15709d7-cuda-check.txt") {
		if v, ok := resultfile.Value(r, "step-ns"); ok && !strings.Contains(string(r.Name), "graphs") && !strings.Contains(string(r.Name), "tf32") {
			step = append(step, v)
		}
	}
	for _, r := range read("nvidia-h100-80gb-hbm3-15709d7-torch-ladder.txt") {
		if v, ok := resultfile.Value(r, "ns/op"); ok && strings.Contains(string(r.Name), "level=device") {
			torch = append(torch, v)
		}
	}
	wantNone := fmt.Sprintf("%.2f of device (host transforms, the H100 run of 2026-11-22)", at("none")/at("device"))
	wantStep := fmt.Sprintf("%.2f× PyTorch's default step (ours fp32, its cuDNN TF32 on; the H100 run of 2026-11-22)", summary.Median(step)/summary.Median(torch))
	rep, err := Goals(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Goals {
		switch {
		case strings.HasPrefix(g.Name, "naive none"):
			if g.Anchor != wantNone {
				t.Errorf("%s: anchor %q, want %q", g.Name, g.Anchor, wantNone)
			}
		case strings.HasPrefix(g.Name, "the Net's step against"):
			if g.Anchor != wantStep {
				t.Errorf("%s: anchor %q, want %q", g.Name, g.Anchor, wantStep)
			}
		}
	}
	if !strings.HasPrefix(wantNone, "0.21 ") || !strings.HasPrefix(wantStep, "1.17×") {
		t.Errorf("the H100 files give %q and %q; the notebook says 0.21 and 1.17×", wantNone, wantStep)
	}
}
