package main

import (
	"bytes"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeScaleRefused checks the one-line usage errors (exit 2) of
// --decode-scale: without --data, without --decoder turbojpeg, on PNG or
// raw data, on a dataset headspace did not write, an unknown value.
func TestDecodeScaleRefused(t *testing.T) {
	jpegDir, pngDir, rawDir := writeTiny(t, "jpeg", "files"), writeTiny(t, "png", "files"), writeTiny(t, "raw", "files")
	folder := t.TempDir()
	if err := os.Mkdir(filepath.Join(folder, "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 48, 48)), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "cat", "a.jpg"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ladder", "--decode-scale", "auto"}, "--decode-scale needs --data"},
		{[]string{"loaders", "--decode-scale", "auto"}, "--decode-scale needs --data"},
		{[]string{"ladder", "--data", jpegDir, "--decode-scale", "auto"}, "--decode-scale auto needs --decoder turbojpeg"},
		{[]string{"ladder", "--data", jpegDir, "--decoder", "go", "--decode-scale", "auto"}, "--decode-scale auto needs --decoder turbojpeg"},
		{[]string{"ladder", "--data", pngDir, "--decoder", "turbojpeg", "--decode-scale", "auto"}, "--decode-scale auto decodes JPEGs: --data " + pngDir + " holds png images"},
		{[]string{"ladder", "--data", rawDir, "--decoder", "turbojpeg", "--decode-scale", "auto"}, "holds raw images"},
		{[]string{"ladder", "--data", folder, "--decoder", "turbojpeg", "--decode-scale", "auto"}, "--decode-scale auto reads only datasets headspace wrote"},
		{[]string{"ladder", "--data", jpegDir, "--decoder", "turbojpeg", "--decode-scale", "half"}, `--decode-scale "half": want off or auto`},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestLadderDecodeScale runs the ladder on JPEGs with --decode-scale
// auto: the output and the result file name the factor (48² with a crop
// of 16 decodes at 1/2, 24²), and a run without it refuses to add to
// that file, whose setup differs.
func TestLadderDecodeScale(t *testing.T) {
	dir := writeTiny(t, "jpeg", "files")
	out := filepath.Join(t.TempDir(), "r.txt")
	args := []string{"ladder", "--data", dir, "--decoder", "turbojpeg", "--crop", "16", "--batch", "4", "--step", "1ms", "--steps", "2",
		"--warmup", "0", "--count", "1", "--workers", "1", "--transforms", "fast", "--levels", "none,device", "--out", out}
	code, stdout, stderr := runCLI(append(args, "--decode-scale", "auto")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "decode scale auto 1/2 (48x48 to 24x24)"; !strings.Contains(stdout, want) {
		t.Errorf("output lacks %q:\n%s", want, stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "decode-scale: auto 1/2 (48x48 to 24x24)"; !strings.Contains(string(b), want) {
		t.Errorf("result file lacks %q:\n%s", want, b)
	}
	code, _, stderr = runCLI(args...)
	if code != 2 || !strings.Contains(stderr, "different setup") || !strings.Contains(stderr, "decode-scale") {
		t.Errorf("without --decode-scale into the same file: exit %d, %q; want 2, a different setup naming decode-scale", code, stderr)
	}
}
