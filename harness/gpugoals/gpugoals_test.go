package gpugoals

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

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

// h100 is the least of the H100 run's files the anchors need: level none
// and level device of the naive pipeline at 4 workers, a Net step on the
// kernels and PyTorch's at level device.
var h100 = Folder{
	Levels: []LadderRun{
		{Level: "none", Transforms: "naive", Placement: "host", Workers: 4, Pinned: true, StepsPerSec: 1},
		{Level: "device", Transforms: "naive", Placement: "host", Workers: 4, Pinned: true, StepsPerSec: 4},
	},
	Steps:       []NetStep{{Backend: BackendKernels, Precision: "fp32", Seconds: 0.3}},
	TorchLadder: []TorchLadderRun{{Level: "device", SecPerOp: 0.2, StepsPerSec: 5}},
}

// The goals read the typed lines they are given: PyTorch's lines from
// the CPU are no GPU's figure, the cuDNN steps are read where there are
// any, and the H100 anchors are read from its files (an empty one is an
// error).
func TestGoalsOfFolder(t *testing.T) {
	torch := func(device string) []TorchNetStep {
		return []TorchNetStep{{Device: device, TF32: "off", Seconds: 0.1}, {Device: device, TF32: "on", Seconds: 0.05}}
	}
	kernels := []NetStep{{Backend: BackendKernels, Precision: "fp32", Seconds: 0.12}, {Backend: BackendKernels, Precision: "tf32", Seconds: 0.06}}
	cudnn := append([]NetStep{{Backend: BackendCudnn, Precision: "fp32", Seconds: 0.08}}, kernels...)
	for _, tc := range []struct {
		name   string
		f      Folder
		figure string // the fp32 step's figure against PyTorch's
	}{
		{"cpu", Folder{Steps: kernels, TorchNetStep: torch("cpu")}, ""},
		{"kernels", Folder{Steps: kernels, TorchNetStep: torch("cuda")}, "1.20× (120.0 ms, 1 steps, against 100.0 ms, 1 runs)"},
		{"cudnn", Folder{Steps: cudnn, TorchNetStep: torch("cuda")}, "0.80× (80.0 ms, 1 steps, against 100.0 ms, 1 runs); the kernels: 1.20× (120.0 ms, 1 steps)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Goals(tc.f, h100)
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, g := range rep.Goals {
				if strings.HasSuffix(g.Name, "at matched math, fp32 (allow_tf32 off)") {
					found = true
					if g.Figure != tc.figure || g.Measured != (tc.figure != "") {
						t.Errorf("%s: figure %q (measured %v), want %q", g.Name, g.Figure, g.Measured, tc.figure)
					}
				}
				if strings.HasPrefix(g.Name, "naive none") && !strings.HasPrefix(g.Anchor, "0.25 of device") {
					t.Errorf("%s: anchor %q, want the H100 files' 0.25", g.Name, g.Anchor)
				}
			}
			if !found {
				t.Error("no fp32 goal at matched math")
			}
		})
	}
	if _, err := Goals(Folder{}, Folder{}); err == nil {
		t.Error("goals without the H100 run's anchors: no error")
	}
}
