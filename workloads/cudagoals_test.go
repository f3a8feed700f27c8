package workloads

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/gpugoals"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

var updateGoals = flag.Bool("update-goals", false, "rewrite testdata/cudagoals/*.golden and docs/gpu.md's goals blocks")

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
			path := filepath.Join("testdata", "cudagoals", dir)
			if dir == "empty" {
				path = t.TempDir()
			}
			rep, err := CUDAGoals(path)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "cudagoals", dir+".golden")
			if *updateGoals {
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
	rep, err := CUDAGoals(filepath.Join("testdata", "cudagoals", "h100-partial"))
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
	os.WriteFile(filepath.Join(dir, gpugoals.FileCheck), []byte("BenchmarkCUDAStep/batch=256/side=256 1 lots step-ns\n"), 0o644)
	if _, err := CUDAGoals(dir); err == nil || !strings.Contains(err.Error(), gpugoals.FileCheck) {
		t.Errorf("error %v; want one naming %s", err, gpugoals.FileCheck)
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
	dir := "../results/gpu/" + run
	rep, err := CUDAGoals(dir)
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

	const doc = "../docs/gpu.md"
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
	if *updateGoals {
		out := append(append(append([]byte{}, page[:start]...), got...), page[start+n:]...)
		if err := os.WriteFile(doc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(page[start:start+n]) != got {
		t.Errorf("%s's goals block differs from headspace cuda goals %s (go test -run TestGoalsH200 -update-goals ./workloads):\n%s\nwant:\n%s", doc, dir, page[start:start+n], got)
	}
}

// The anchors are the H100 run's committed figures (issue 57 item 5):
// level none over level device of the naive pipeline at 4 workers, and
// the Net's fp32 step over PyTorch's, recomputed here from the files
// under results/gpu as notebooks/003-caching-ladder-gpu.md reads them,
// and written so in every goal's anchor.
func TestAnchorsAreTheH100Files(t *testing.T) {
	const dir = "../results/gpu/"
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
	rep, err := CUDAGoals(t.TempDir())
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

// A suite file is read through its codec: a line of another benchmark, a
// key more, a key's bad value or a missing unit is an error naming the
// file, where reading names by substring took them as figures.
func TestGoalsRefuseForeignRecords(t *testing.T) {
	for _, tc := range []struct{ file, line string }{
		{gpugoals.FileTorchNetStep, "BenchmarkTorchNetStep/batch=256/side=256/tf32=off/extra=1-16 10 68000000 ns/op\n"},
		{gpugoals.FileTorchNetStep, "BenchmarkTorchNetStep/batch=256/side=256/tf32=maybe-16 10 68000000 ns/op\n"},
		{gpugoals.FileTorchNetStep, "BenchmarkTorchLadder/level=device/workers=4-16 10 68000000 ns/op 14.7 steps/s\n"},
		{gpugoals.FileTorchLadder, "BenchmarkTorchLadder/level=device/workers=4-16 10 68000000 ns/op\n"},
		{gpugoals.FileTorchDecode, "BenchmarkTorchDecode/set=natural/batch=256/size=1024x1024/api=many-16 256 18000.0 images/s 18874.4 MP/s\n"},
		{gpugoals.FileTorchDecode, "BenchmarkTorchDecode/set=natural/batch=256/size=1024x1024-16 256 18000.0 images/s\n"},
		{gpugoals.FileDecodeNvjpeg, "BenchmarkCUDADecode/decoder=nvjpeg/batch=4/size=big 4 1e9 images/s\n"},
		{gpugoals.FileCheck, "BenchmarkCUDAStep/batch=256/side=256/backend=tpu 1 1e6 step-ns\n"},
		{gpugoals.FileLadderLevels, "BenchmarkLadder/level=device/workers=4/transforms=fast/placement=host/pinned=true/x=1-16 1 1 ns/op 2 steps/s\n"},
		{gpugoals.FileDeviceNone, "BenchmarkLadder/level=device/workers=4/transforms=fast/placement=host/pinned=true-16 1 1 ns/op\n"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, tc.file), []byte("torch-device: cuda\n\n"+tc.line), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := CUDAGoals(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tc.file)) {
			t.Errorf("%s: %q: error %v, want one naming the file", tc.file, tc.line, err)
		}
	}
}

// The codecs of PyTorch's scripts' records give back the lines they
// decoded, in order (the lines are the scripts', Go writes none).
func TestTorchCodecsRoundTrip(t *testing.T) {
	read := func(name string) []*benchfmt.Result {
		rs, err := resultfile.Read(filepath.Join("testdata", "cudagoals", "synthetic", name))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	check := func(name string, recs, back []*benchfmt.Result, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(back) != len(recs) {
			t.Fatalf("%s: %d records back of %d", name, len(back), len(recs))
		}
		for i := range recs {
			if back[i] != recs[i] {
				t.Errorf("%s: record %d is not the line decoded", name, i)
			}
		}
	}
	recs := read(gpugoals.FileTorchNetStep)
	ns, err := TorchNetStepCodec.Decode(recs)
	check("netstep", recs, TorchNetStepCodec.Encode(ns), err)
	if len(ns) == 0 || ns[0].Batch != 256 || ns[0].Side != 256 || ns[0].TF32 != "off" || ns[0].Device != "cuda" || ns[0].Seconds != 0.068 {
		t.Errorf("netstep's first run %+v, want batch 256, side 256, tf32 off, on cuda, 68 ms", ns[0])
	}
	recs = read(gpugoals.FileTorchLadder)
	ls, err := TorchLadderCodec.Decode(recs)
	check("ladder", recs, TorchLadderCodec.Encode(ls), err)
	if len(ls) == 0 || ls[0].Level != "device" || ls[0].Workers != 4 || ls[0].StepsPerSec != 14.7 {
		t.Errorf("ladder's first run %+v, want device, 4 workers, 14.7 steps/s", ls[0])
	}
	recs = read(gpugoals.FileTorchDecode)
	ds, err := TorchDecodeCodec.Decode(recs)
	check("decode", recs, TorchDecodeCodec.Encode(ds), err)
	var pipelines int
	for _, d := range ds {
		if d.Pipeline {
			pipelines++
			if !math.IsNaN(d.MPs) || d.Crop != "224" || d.CPUThreads != "16" {
				t.Errorf("pipeline line %+v: want no MP/s, crop 224, 16 threads", d)
			}
		}
	}
	if pipelines != 2 {
		t.Errorf("%d pipeline lines, want 2", pipelines)
	}
}
