//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLadderDecodesOnTheDevice runs `ladder --device cuda --decoder
// nvjpeg` end to end on package cuda's fake driver and fake nvJPEG
// (cuda/testdata/fakecuda.c as libcuda.so.1, fakenvjpeg.c through
// HEADSPACE_NVJPEG), which take real JPEGs: every level of data on disk
// runs, the levels that decode hand the device the files, and the result
// file records decoder nvjpeg, the library's version and the implied
// device crop. The fake computes nothing a GPU would, so the test checks
// what the run makes, never a figure.
func TestLadderDecodesOnTheDevice(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("the fake CUDA driver needs the C compiler cc (part of this project's machines): %v", err)
	}
	bin := buildHeadspace(t)
	lib := t.TempDir()
	for _, f := range [][2]string{{"libcuda.so.1", "fakecuda.c"}, {"libfakenvjpeg.so", "fakenvjpeg.c"}} {
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", filepath.Join(lib, f[0]), "../../cuda/testdata/"+f[1]).CombinedOutput(); err != nil {
			t.Fatalf("cc %s: %v\n%s", f[1], err, out)
		}
	}
	data := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCLI("dataset", "write", "--n", "12", "--raw-size", "48", "--format", "jpeg", "--layout", "shards", "--out", data); code != 0 {
		t.Fatalf("dataset write: %s", stderr)
	}
	out := filepath.Join(t.TempDir(), "ladder.txt")
	cmd := exec.Command(bin, "ladder", "--device", "cuda", "--data", data, "--decoder", "nvjpeg", "--transforms", "device", "--placement", "device",
		"--levels", "none,encoded,raw,device", "--workers", "2", "--crop", "16", "--batch", "4", "--steps", "3", "--count", "1", "--quiet-wait", "0", "--out", out)
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib, "HEADSPACE_NVJPEG="+filepath.Join(lib, "libfakenvjpeg.so"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ladder: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	file := string(b)
	for _, want := range []string{"\ndecoder: nvjpeg\n", "\nnvjpeg: libfakenvjpeg.so 12.4.127\n", "\nnvjpeg-backend: hardware\n", "\ndevice-crop: true\n", "\ngpu: Fake GPU",
		"BenchmarkLadder/level=none/", "BenchmarkLadder/level=encoded/", "BenchmarkLadder/level=raw/", "BenchmarkLadder/level=device/"} {
		if !strings.Contains(file, want) {
			t.Errorf("the result file lacks %q:\n%s", want, file)
		}
	}
	for _, line := range strings.Split(file, "\n") {
		if strings.HasPrefix(line, "BenchmarkLadder/level=none/") && strings.Contains(line, "decode-ns/sample") {
			t.Errorf("level none decoded on the host: %s", line)
		}
	}
}

// TestDeviceDecoderRefused: --decoder nvjpeg is refused, exit 2 with one
// line, where it cannot run, before any GPU is needed.
func TestDeviceDecoderRefused(t *testing.T) {
	jpegs := filepath.Join(t.TempDir(), "jpegs")
	pngs := filepath.Join(t.TempDir(), "pngs")
	for dir, format := range map[string]string{jpegs: "jpeg", pngs: "png"} {
		if code, _, stderr := runCLI("dataset", "write", "--n", "4", "--raw-size", "48", "--format", format, "--out", dir); code != 0 {
			t.Fatalf("dataset write: %s", stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ladder", "--data", jpegs, "--decoder", "nvjpeg"}, "--decoder nvjpeg decodes the JPEGs on the GPU: it needs --device cuda, not emulated"},
		{[]string{"ladder", "--data", jpegs, "--decoder", "nvjpeg", "--device", "cuda", "--transforms", "fast"}, "it needs transforms device, not fast"},
		{[]string{"ladder", "--data", pngs, "--decoder", "nvjpeg", "--device", "cuda", "--transforms", "device", "--placement", "device"}, "--decoder nvjpeg decodes JPEGs: --data " + pngs + " holds png"},
		{[]string{"ladder", "--data", jpegs, "--decoder", "gpu"}, `--decoder "gpu": want go, turbojpeg or nvjpeg`},
	} {
		code, _, stderr := runCLI(append(tc.args, tinyLadder...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}
