package main

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeScaleRefused checks the one-line usage errors (exit 2) of
// --decode-scale: without --data, without --decoder turbojpeg, on PNG or
// raw data, on an ImageFolder without JPEGs, an unknown value.
func TestDecodeScaleRefused(t *testing.T) {
	jpegDir, pngDir, rawDir := writeTiny(t, "jpeg", "files"), writeTiny(t, "png", "files"), writeTiny(t, "raw", "files")
	folder := t.TempDir() // an ImageFolder of PNGs
	if err := os.Mkdir(filepath.Join(folder, "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 48, 48))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "cat", "a.png"), buf.Bytes(), 0o644); err != nil {
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
		{[]string{"ladder", "--data", folder, "--decoder", "turbojpeg", "--decode-scale", "auto"}, "holds imagefolder-png images"},
		{[]string{"ladder", "--data", jpegDir, "--decoder", "turbojpeg", "--decode-scale", "half"}, `--decode-scale "half": want off or auto`},
		// --decode-crop (the same flag family): the same kind of refusals.
		{[]string{"ladder", "--decode-crop", "on"}, "--decode-crop needs --data"},
		{[]string{"ladder", "--data", jpegDir, "--decode-crop", "on"}, "--decode-crop on needs --decoder turbojpeg"},
		{[]string{"ladder", "--data", jpegDir, "--decoder", "turbojpeg", "--decode-crop", "yes"}, `--decode-crop "yes": want off or on`},
		{[]string{"ladder", "--data", jpegDir, "--decoder", "turbojpeg", "--decode-crop", "on", "--decode-scale", "auto"}, "not with --decode-scale auto"},
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

// TestLadderDecodeScaleForeign runs the ladder on an ImageFolder of
// JPEGs with --decode-scale auto: the images, 48x48 and 64x64, are
// decoded at reduced scale and resized to the scaled raw size (the most
// common size, 48x48, with a crop of 16: 1/2, 24x24), which the result
// file records; the folder is left as it was.
func TestLadderDecodeScaleForeign(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	folder := t.TempDir()
	for i, side := range []int{48, 48, 64, 48} {
		c := filepath.Join(folder, []string{"cat", "dog"}[i%2])
		if err := os.MkdirAll(c, 0o755); err != nil {
			t.Fatal(err)
		}
		img := image.NewRGBA(image.Rect(0, 0, side, side))
		for p := range img.Pix {
			img.Pix[p] = byte(p * (i + 3))
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, nil); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c, fmt.Sprintf("%d.jpg", i)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := treeSum(t, folder)
	out := filepath.Join(t.TempDir(), "r.txt")
	code, stdout, stderr := runCLI("ladder", "--data", folder, "--decoder", "turbojpeg", "--decode-scale", "auto", "--crop", "16", "--batch", "4",
		"--step", "1ms", "--steps", "2", "--warmup", "0", "--count", "1", "--workers", "1", "--transforms", "fast", "--levels", "none,device", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "decode scale auto 1/2 (48x48 to 24x24)") {
		t.Errorf("output lacks the decode scale:\n%s", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"decode-scale: auto 1/2 (48x48 to 24x24)", "data-resize: bilinear to 24x24 (decode-scale auto: 48x48 scaled)"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q", want)
		}
	}
	if after := treeSum(t, folder); after != before {
		t.Error("the ladder changed the user's folder")
	}
}
