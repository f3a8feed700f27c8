package main

import (
	"strings"
	"testing"
)

// TestDeviceTransformsRefused: the device transform is refused, exit 2 with
// one line, where it cannot run: on the emulated device (its kernels need a
// CUDA GPU), with the host placement, and --device-crop without it.
func TestDeviceTransformsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ladder", "--transforms", "device"}, "--transforms device runs the transform as CUDA kernels: it needs --device cuda, not emulated"},
		{[]string{"ladder", "--transforms", "fast,device", "--placement", "device"}, "it needs --device cuda"},
		{[]string{"ladder", "--device-crop"}, "--device-crop needs --transforms device"},
		{[]string{"ladder", "--transforms", "device", "--device", "cuda", "--placement", "host"}, "it needs placement device"},
		{[]string{"ladder", "--cuda-graphs"}, "--cuda-graphs needs --device cuda, not emulated"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestCUDADecodeRefused: cuda decode's bad input is exit 2 with one line,
// and a directory without JPEGs is one too, found before any driver is
// needed.
func TestCUDADecodeRefused(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cuda", "decode"}, 2, "--jpegs DIR is required"},
		{[]string{"cuda", "decode", "--decoder", "gpu", "--jpegs", empty}, 2, `--decoder: unknown "gpu" (want nvjpeg, turbojpeg)`},
		{[]string{"cuda", "decode", "--jpegs", empty, "--batch", "0"}, 2, "--batch 0: want 1 to 65536"},
		{[]string{"cuda", "decode", "--jpegs", empty}, 2, "no .jpg or .jpeg files"},
		{[]string{"cuda", "frob"}, 2, "want check, decode or goals"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestPrecisionRefused: --precision tf32 and --backend cudnn or auto need
// the CUDA device (the emulated step is a set duration, which no
// precision or library changes), and an unknown precision or backend is
// refused, in ladder and cuda check, exit 2 with one line; fp32 and the
// kernels are accepted on the emulated device (they are the defaults).
func TestPrecisionRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ladder", "--precision", "tf32"}, "--precision tf32 needs --device cuda, not emulated"},
		{[]string{"ladder", "--precision", "fp16"}, `--precision "fp16": want fp32 or tf32`},
		{[]string{"cuda", "check", "--precision", "fp32,bf16"}, `--precision: unknown "bf16"`},
		{[]string{"ladder", "--backend", "cudnn"}, "--backend cudnn needs --device cuda, not emulated"},
		{[]string{"ladder", "--backend", "auto"}, "--backend auto needs --device cuda, not emulated"},
		{[]string{"ladder", "--backend", "cublas"}, `--backend "cublas": want kernels, cudnn or auto`},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	code, _, stderr := runCLI("ladder", "--precision", "fp32", "--backend", "kernels", "--levels", "none", "--workers", "1", "--steps", "1", "--warmup", "0", "--count", "1",
		"--batch", "2", "--raw-size", "64", "--crop", "32", "--step", "1ms")
	if code != 0 {
		t.Errorf("ladder --precision fp32 on the emulated device: exit %d, %s", code, stderr)
	}
}
