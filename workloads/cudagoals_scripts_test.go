package workloads

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/gpugoals"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// debianPython is Debian's, which make test-deps gives torch and torchvision.
const debianPython = "/usr/bin/python3"

// runScript runs peers/torch/name with args on the CPU and returns its
// stdout; it fails the test where Debian's torch is missing.
func runScript(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	if err := exec.Command(debianPython, "-c", "import torch, torchvision").Run(); err != nil {
		t.Fatalf("%s cannot import torch and torchvision (make test-deps installs Debian's python3-torch and python3-torchvision): %v", debianPython, err)
	}
	cmd := exec.Command(debianPython, append([]string{filepath.Join("../peers/torch", name)}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir(), "OMP_NUM_THREADS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return out
}

// PyTorch's Net step at matched math (peers/torch/netstep.py), a tiny run
// on the CPU: a line per run and mode, read as the suite's file; Goals
// takes no CPU line as a GPU's figure, and the same lines said to come
// from the GPU are the matched peers of cuda check's steps.
func TestTorchNetStepScript(t *testing.T) {
	out := runScript(t, "netstep.py", "--device", "cpu", "--batch", "2", "--side", "16", "--steps", "2", "--count", "2")
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(gpugoals.FileTorchNetStep, out)
	rs, err := resultfile.Read(filepath.Join(dir, gpugoals.FileTorchNetStep))
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]int{}
	for _, r := range rs {
		name := string(r.Name)
		if !strings.HasPrefix(name, "TorchNetStep/batch=2/side=16/tf32=") || r.Iters != 2 {
			t.Errorf("line %s × %d: want TorchNetStep/batch=2/side=16/tf32=… × 2", name, r.Iters)
		}
		if v, ok := resultfile.Value(r, "ns/op"); !ok || v <= 0 {
			t.Errorf("%s: ns/op %v", name, v)
		}
		if got := r.GetConfig("cudnn-benchmark"); got != "true" {
			t.Errorf("%s: cudnn-benchmark %q, want true", name, got)
		}
		mode := name[strings.LastIndex(name, "=")+1:]
		mode, _, _ = strings.Cut(mode, "-")
		modes[mode]++
	}
	if modes["off"] != 2 || modes["on"] != 2 {
		t.Errorf("runs by mode %v, want 2 off and 2 on", modes)
	}
	write(gpugoals.FileCheck, []byte("BenchmarkCUDAStep/batch=2/side=16 1 1e6 step-ns\nBenchmarkCUDAStep/batch=2/side=16/precision=tf32 1 5e5 step-ns\n"))
	matched := func() (n int) {
		rep, err := CUDAGoals(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range rep.Goals {
			if strings.Contains(g.Name, "at matched math") && g.Measured {
				n++
			}
		}
		return n
	}
	if n := matched(); n != 0 {
		t.Errorf("%d matched-math goals measured from a CPU run, want 0", n)
	}
	write(gpugoals.FileTorchNetStep, bytes.ReplaceAll(out, []byte("torch-device: cpu"), []byte("torch-device: cuda")))
	if n := matched(); n != 2 {
		t.Errorf("%d matched-math goals measured, want 2 (fp32 and tf32; no Graphs lines)", n)
	}
}

// netstep.py refuses bad arguments with exit 2 and a line naming the flag.
func TestTorchNetStepScriptRefuses(t *testing.T) {
	for _, args := range [][]string{{"--side", "12"}, {"--tf32", "maybe"}, {"--count", "0"}, {"--warmup", "0"}} {
		cmd := exec.Command(debianPython, append([]string{"../peers/torch/netstep.py", "--device", "cpu"}, args...)...)
		cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !(errors.As(err, &ee) && ee.ExitCode() == 2) || !strings.Contains(string(out), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("netstep.py %v: %v\n%s\nwant exit 2 naming %s", args, err, out, args[0])
		}
	}
}

// writeJPEGs writes n JPEG files of w×h (a gradient) into a new folder.
func writeJPEGs(t *testing.T, n, w, h int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				img.Set(x, y, color.RGBA{uint8(x * 5), uint8(y * 7), uint8(i * 40), 255})
			}
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, nil); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%06d.jpg", i)), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// torchvision's decode beside nvJPEG's (peers/torch/decode.py), a tiny
// run on the CPU over two sets of different sizes: a decode line per
// batch with images/s and MP/s (the set's size), a pipeline line per
// batch at the stated threads; Goals takes no CPU line, and the same
// lines said to come from the GPU are the peers of cuda decode's files.
func TestTorchDecodeScript(t *testing.T) {
	natural, imagenet := writeJPEGs(t, 3, 48, 48), writeJPEGs(t, 2, 50, 37)
	out := runScript(t, "decode.py", "--device", "cpu", "--set", "natural="+natural, "--set", "imagenet="+imagenet,
		"--batch", "4", "--batches", "2", "--pipeline", "--crop", "16", "--threads", "1")
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(gpugoals.FileTorchDecode, out)
	rs, err := resultfile.Read(filepath.Join(dir, gpugoals.FileTorchDecode))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, r := range rs {
		name := string(r.Name)
		name = name[:strings.LastIndex(name, "-")]
		lines[name]++
		ips, ok := resultfile.Value(r, "images/s")
		if !ok || ips <= 0 || r.Iters != 4 {
			t.Errorf("%s: %d images, %v images/s; want 4, positive", name, r.Iters, ips)
		}
		if strings.HasPrefix(name, "TorchDecode/") {
			mp, _ := resultfile.Value(r, "MP/s")
			px := 48 * 48.0
			if strings.Contains(name, "set=imagenet") {
				px = 50 * 37
			}
			if math.Abs(mp/ips-px/1e6) > 1e-3*px/1e6 {
				t.Errorf("%s: %v MP/s at %v images/s: want %v megapixels an image", name, mp, ips, px/1e6)
			}
		}
	}
	want := map[string]int{
		"TorchDecode/set=natural/batch=4/size=48x48/api=single":                 2,
		"TorchDecode/set=imagenet/batch=4/size=50x37/api=single":                2,
		"TorchDecodePipeline/set=natural/batch=4/crop=16/threads=1/api=single":  2,
		"TorchDecodePipeline/set=imagenet/batch=4/crop=16/threads=1/api=single": 2,
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("lines %v, want %v", lines, want)
	}
	write(gpugoals.FileDecodeNvjpeg, []byte("BenchmarkCUDADecode/decoder=nvjpeg/batch=4/size=48x48 4 1e9 images/s\n"))
	write(gpugoals.FileDecodeImagenet, []byte("BenchmarkCUDADecode/decoder=nvjpeg/batch=4/size=50x37 4 1e9 images/s\n"))
	measured := func() (n int, notes int) {
		rep, err := CUDAGoals(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range rep.Goals {
			if strings.HasPrefix(g.Name, "nvJPEG") && g.Measured {
				n++
			}
		}
		return n, len(rep.Notes)
	}
	if n, notes := measured(); n != 0 || notes != 0 {
		t.Errorf("%d decode goals and %d notes from a CPU run, want none", n, notes)
	}
	write(gpugoals.FileTorchDecode, bytes.ReplaceAll(out, []byte("torch-device: cpu"), []byte("torch-device: cuda")))
	if n, notes := measured(); n != 2 || notes != 2 {
		t.Errorf("%d decode goals and %d notes, want 2 and 2 (a set each)", n, notes)
	}
}

// decode.py refuses a set of two sizes, an empty folder and bad flags,
// with one line naming what is wrong.
func TestTorchDecodeScriptRefuses(t *testing.T) {
	mixed := writeJPEGs(t, 1, 48, 48)
	other := writeJPEGs(t, 1, 40, 40)
	if err := os.Rename(filepath.Join(other, "000000.jpg"), filepath.Join(mixed, "000001.jpg")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--set", "a=" + mixed}, 1, "want one size"},
		{[]string{"--set", "a=" + t.TempDir()}, 1, "no *.jpg"},
		{[]string{"--set", "nodir"}, 2, "want NAME=DIR"},
		{[]string{"--set", "a=" + mixed, "--set", "a=" + mixed}, 2, "named twice"},
		{[]string{"--set", "a=" + mixed, "--batch", "0"}, 2, "--batch 0"},
	} {
		cmd := exec.Command(debianPython, append([]string{"../peers/torch/decode.py", "--device", "cpu", "--batches", "1"}, tc.args...)...)
		cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("decode.py %v: %v\n%s\nwant exit %d with %q", tc.args, err, stderr.String(), tc.code, tc.want)
		}
	}
}
