package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

func TestCUDABadInputExits2(t *testing.T) {
	empty, pngs := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(pngs, "a.png"), []byte("\x89PNG"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cuda"}, "want a verb: headspace cuda check"},
		{[]string{"cuda", "run"}, `unknown verb "run": want check`},
		{[]string{"cuda", "check", "--sizes", "1,big"}, "--sizes"},
		{[]string{"cuda", "check", "--batch", "0"}, "--batch 0: want 1 to 65536"},
		{[]string{"cuda", "check", "--steps", "0"}, "--steps 0: want 1 to 10000000"},
		{[]string{"cuda", "check", "extra"}, `unexpected argument "extra"`},
		// The JPEGs are read before the GPU is opened: bad input on any
		// machine (issue 41: exit 1).
		{[]string{"cuda", "decode", "--jpegs", empty}, "--jpegs " + empty + ": no .jpg or .jpeg files in it"},
		{[]string{"cuda", "decode", "--jpegs", pngs}, "--jpegs " + pngs + ": no .jpg or .jpeg files in it"},
		{[]string{"cuda", "decode", "--jpegs", filepath.Join(empty, "missing")}, "--jpegs: open " + filepath.Join(empty, "missing") + ": no such file or directory"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
	code, out, _ := runCLI("cuda", "check", "-h")
	if code != 0 || !strings.Contains(out, "Usage: headspace cuda check") || !strings.Contains(out, "-sizes") {
		t.Errorf("cuda check -h: exit %d, output %q", code, out)
	}
}

// Issue 32, item 14: `cuda -h` lists every verb with its flags (it
// showed check's alone, and decode was missing).
func TestCUDAHelpListsEveryVerb(t *testing.T) {
	for _, args := range [][]string{{"cuda", "-h"}, {"help", "cuda"}} {
		code, out, _ := runCLI(args...)
		if code != 0 || !strings.HasPrefix(out, "Usage: headspace cuda <verb> [flags]\n") {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
		var verbs []string
		_, list, _ := strings.Cut(out, "\nVerbs:\n")
		for _, line := range strings.Split(list, "\n") {
			if !strings.HasPrefix(line, "  ") {
				break
			}
			verbs = append(verbs, strings.Fields(line)[0])
		}
		if want := "[check decode goals]"; fmt.Sprint(verbs) != want {
			t.Errorf("%v lists the verbs %v; this test and docs/commands.md know %s", args, verbs, want)
		}
		for _, v := range verbs {
			_, verb, _ := runCLI("cuda", v, "-h")
			flags := verb[strings.Index(verb, "\nFlags:\n"):]
			_, usage, _ := strings.Cut(verb[:strings.Index(verb, "\nFlags:\n")], "\n\n")
			for _, want := range []string{"\n  " + v + " ", "\nheadspace cuda " + v + " [flags]:\n", strings.TrimSpace(usage), flags} {
				if !strings.Contains(out, want) {
					t.Errorf("%v lacks verb %s's %q:\n%s", args, v, want, out)
				}
			}
		}
		for _, want := range []string{"-sizes", "-jpegs", "-decoder"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v lacks %s", args, want)
			}
		}
	}
}

// cuda decode --decoder turbojpeg decodes on the host, no GPU needed: the
// rate nvJPEG's stands beside (issue 45). Its records are the decoder's,
// its file says the host and the library; cuda goals reads it.
func TestCUDADecodeTurbo(t *testing.T) {
	dir := t.TempDir()
	jpegs := filepath.Join(dir, "jpegs")
	if code, _, stderr := runCLI("dataset", "write", "--format", "jpeg", "--layout", "files", "--content", "natural", "--n", "6", "--raw-size", "64", "--out", jpegs); code != 0 {
		t.Fatalf("dataset write: exit %d: %s", code, stderr)
	}
	out := filepath.Join(dir, "cuda-decode-turbojpeg.txt")
	code, stdout, stderr := runCLI("cuda", "decode", "--decoder", "turbojpeg", "--threads", "2", "--jpegs", jpegs, "--batch", "8", "--batches", "3", "--out", out)
	if code != 0 || !strings.Contains(stdout, "turbojpeg: median ") {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	rs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || string(rs[0].Name) != "CUDADecode/decoder=turbojpeg/batch=8/size=64x64" {
		t.Fatalf("%d records, the first %q; want 3 of CUDADecode/decoder=turbojpeg/batch=8/size=64x64", len(rs), rs[0].Name)
	}
	cfg := map[string]string{}
	for _, c := range rs[0].Config {
		cfg[c.Key] = string(c.Value)
	}
	if cfg["device"] != "host" || !strings.HasPrefix(cfg["turbojpeg"], "libturbojpeg") || cfg["threads"] != "2" {
		t.Errorf("configuration %v; want device host, the library and 2 threads", cfg)
	}
	// --from prints the run's report from its file (issue 53).
	_, report, _ := strings.Cut(stdout, "\n") // after the line of what it opened
	if code, from, stderr := runCLI("cuda", "decode", "--from", out); code != 0 || from+"results: "+out+"\n" != report {
		t.Errorf("--from: exit %d, %q (%s); want the run's %q", code, from, stderr, report)
	}
	code, stdout, _ = runCLI("cuda", "goals", dir)
	if code != 0 || !strings.Contains(stdout, "0 of 8 goals measured") {
		t.Errorf("cuda goals: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := runCLI("cuda", "goals", filepath.Join(dir, "none")); code != 2 || !strings.Contains(stderr, "not a folder") {
		t.Errorf("cuda goals of no folder: exit %d, %s", code, stderr)
	}
}

// TestCUDAWithoutADriver is the path every machine without a GPU takes:
// `cuda check` and `--device cuda` exit 1 and say the driver is missing.
// On a machine with a driver, the check runs for real, small.
func TestCUDAWithoutADriver(t *testing.T) {
	out := filepath.Join(t.TempDir(), "check.txt")
	runs := [][]string{
		{"cuda", "check", "--sizes", "1", "--reps", "1", "--batch", "2", "--side", "32", "--steps", "1", "--out", out},
		append([]string{"ladder", "--device", "cuda", "--levels", "device", "--workers", "1", "--transforms", "fast"}, tinyLadder...),
	}
	if err := cuda.Load(); err == nil {
		code, stdout, stderr := runCLI(runs[0]...)
		if code != 0 || !strings.Contains(stdout, "PTX JIT target sm_") || !strings.Contains(stdout, "Net step (fp32, kernel by kernel), batch 2 at 32x32") {
			t.Errorf("cuda check on this GPU: exit %d\n%s\n%s", code, stdout, stderr)
		}
		return
	}
	for _, args := range runs {
		code, stdout, stderr := runCLI(args...)
		want := "headspace " + args[0] + ": no CUDA driver found (libcuda.so.1): "
		if code != 1 || !strings.HasPrefix(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 1 and one line starting %q", args, code, stderr, want)
		}
		if strings.Contains(stdout, "PTX") {
			t.Errorf("%v printed GPU figures without a GPU: %s", args, stdout)
		}
	}
}

// TestCUDAFromRebuildsTheLog: cuda check and cuda decode are made from
// their experiments (issue 53): --from prints, from a committed GPU run's
// result file, the copy speeds, the Net's steps and the decode rates its
// console printed then (its .log; the steps' backend, added since, and
// their loss, which no record holds, aside), and a file of the other
// verb is refused (exit 2). Before, neither verb had --from.
func TestCUDAFromRebuildsTheLog(t *testing.T) {
	dir := filepath.Join("..", "..", "results", "gpu", "nvidia-h200-a11143c")
	for _, tc := range []struct {
		verb, file string
		lines      int // the lines of figures --from prints
	}{
		{"check", "cuda-check", 14},
		{"decode", "cuda-decode-natural", 1},
		{"decode", "cuda-decode-turbojpeg", 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			code, stdout, stderr := runCLI("cuda", tc.verb, "--from", filepath.Join(dir, tc.file+".txt"))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			log, err := os.ReadFile(filepath.Join(dir, tc.file+".log"))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, l := range strings.Split(stdout, "\n") {
				if l == "" || strings.HasPrefix(l, "device ") {
					continue
				}
				n++
				if l = strings.Replace(l, " on kernels,", ",", 1); !strings.Contains(string(log), l) {
					t.Errorf("--from printed %q, which the run's log lacks", l)
				}
			}
			if n != tc.lines {
				t.Errorf("--from printed %d lines of figures, want %d:\n%s", n, tc.lines, stdout)
			}
			other := map[string]string{"check": "decode", "decode": "check"}[tc.verb]
			if code, _, stderr := runCLI("cuda", other, "--from", filepath.Join(dir, tc.file+".txt")); code != 2 || !strings.Contains(stderr, "not a result file of headspace cuda "+other) {
				t.Errorf("cuda %s --from a %s file: exit %d, %s; want 2", other, tc.verb, code, stderr)
			}
		})
	}
}
