//go:build peersenv && linux

// Tests of analyze on the frameworks' training scripts in
// examples/own-loop (Lightning's Trainer, Hugging Face's Trainer with
// Accelerate's DataLoaderShard, timm's create_loader and its
// PrefetchLoader): they need the pinned peers env's torch 2 and its
// packages, and run from `make test-ownloop-torch2`
// (HEADSPACE_OWNLOOP_PYTHON names its python; without it they fail).

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// TestFrameworks runs headspace analyze on each framework's example end
// to end: the training loader found and named (its class, the user's
// line where it was made, the framework's object that iterates it), the
// other loaders iterated as they are, a headspace measured and a result
// file written.
func TestFrameworks(t *testing.T) {
	if os.Getenv(ownloop.TestPythonEnv) == "" {
		t.Fatalf("%s is not set: run these tests with make test-ownloop-torch2 (after make peers-env)", ownloop.TestPythonEnv)
	}
	for _, tc := range []struct {
		name, script, imp string
		want              []string // in the report
	}{
		{"lightning", "train_lightning.py", "lightning", []string{
			// Lightning's sanity check iterates the validation loader first.
			"loader #1 DataLoader(Synthetic, batch_size=16, num_workers=0) at train_lightning.py:41: iterated as it is: its steps trained nothing",
			"loader #2 DataLoader(Synthetic, batch_size=16, num_workers=0) at train_lightning.py:37: the training loop's: cached and timed"}},
		{"huggingface", "train_hf.py", "transformers", []string{
			"loader #1 DataLoader(Tokens, batch_size=16, num_workers=0) at train_hf.py:", ", iterated by DataLoaderShard (accelerate): the training loop's: cached and timed"}},
		{"timm", "train_timm.py", "timm", []string{
			"loader #1 DataLoader(Images, batch_size=16, num_workers=0) at train_timm.py:", ", iterated by PrefetchLoader (timm): the training loop's: cached and timed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := exec.Command(ownPython, "-c", "import "+tc.imp).CombinedOutput(); err != nil {
				t.Fatalf("%s cannot import %s (make peers-env installs it): %v\n%s", ownPython, tc.imp, err, out)
			}
			script, err := filepath.Abs(filepath.Join("..", "..", "examples", "own-loop", tc.script))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), tc.name+".txt")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"analyze", "--num-caches", "3", "--return-caches-after", "12", "--steps-after", "10", "--out", out,
				"--", ownPython, script, "--epochs", "2", "--samples", "256", "--getitem-ms", "2"}, &stdout, &stderr)
			ownLeft(t, script)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
			}
			for _, w := range append(tc.want, "headspace:", "verdict: ", "__getitem__") {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, stdout.String())
				}
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			name := tc.script // the records' script= key
			for _, w := range []string{"torch: 2.", "BenchmarkOwnLoopAnalyze/script=" + name + "/phase=loader", "BenchmarkOwnLoopAnalyze/script=" + name + "/phase=cached", "BenchmarkOwnLoopAnalyzeStage/script=" + name + "/stage=getitem"} {
				if !strings.Contains(string(b), w) {
					t.Errorf("result file lacks %q:\n%s", w, b)
				}
			}
			analyzeFromIsRun(t, out, stdout.String())
		})
	}
}

// TestWrapTFData runs headspace analyze and ladder on the tf.data example
// (examples/own-loop/train_tfdata.py, a loop over a tf.data pipeline given
// to headspace_hook.wrap(), TensorFlow from the pinned env) end to end:
// the pipeline named at wrap's name as the training loop's, a headspace
// and a verdict measured over epochs of 8 batches, its stages said to be
// not timed; the ladder runs host and none and leaves sample and raw out
// with a line.
func TestWrapTFData(t *testing.T) {
	if os.Getenv(ownloop.TestPythonEnv) == "" {
		t.Fatalf("%s is not set: run these tests with make test-ownloop-torch2 (after make peers-env)", ownloop.TestPythonEnv)
	}
	if out, err := exec.Command(ownPython, "-c", "import tensorflow").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import tensorflow (make peers-env installs tensorflow-cpu): %v\n%s", ownPython, err, out)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "examples", "own-loop", "train_tfdata.py"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--", ownPython, script, "--epochs", "20", "--samples", "256"}
	out := filepath.Join(t.TempDir(), "tfdata.txt")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"analyze", "--num-caches", "3", "--return-caches-after", "12", "--steps-after", "10", "--out", out}, args...), &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("analyze: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, w := range []string{"loader #1 _PrefetchDataset at tf.data pipeline: the training loop's: cached and timed",
		"12 steps from the loader, then 10 on 3 cached batches", "headspace:", "verdict: ", "not timed (an iterable that is not a DataLoader"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"BenchmarkOwnLoopAnalyze/script=train_tfdata.py/phase=loader", "BenchmarkOwnLoopAnalyze/script=train_tfdata.py/phase=cached"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("result file lacks %q:\n%s", w, b)
		}
	}
	analyzeFromIsRun(t, out, stdout.String())

	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), append([]string{"ladder", "--steps", "6", "--count", "1"}, args...), &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("ladder: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, l := range []string{"sample", "raw"} {
		if w := "level " + l + " left out: the training loop is an iterable given to headspace_hook.wrap()"; !strings.Contains(stdout.String()+stderr.String(), w) {
			t.Errorf("ladder's output lacks %q:\n%s\n%s", w, stdout.String(), stderr.String())
		}
	}
	for _, l := range []string{"host", "none"} {
		if !regexp.MustCompile(`(?m)^` + l + `\s+[0-9.]+\s`).MatchString(stdout.String()) {
			t.Errorf("ladder's table lacks level %s:\n%s", l, stdout.String())
		}
	}
}

// TestLightningCombined runs headspace analyze on the Lightning example
// with two training loaders (examples/own-loop/train_lightning_combined.py)
// end to end, in each of CombinedLoader's modes: a dict to trainer.fit
// (max_size_cycle), min_size and max_size through trainer.fit, sequential
// in the script's own loop (Lightning's Trainer refuses it for training).
// Both loaders are named, the first the training loop's and the other
// cached from the same step beside it; the script checks every combined
// batch and fails on one half cached or of two different steps; a
// headspace is measured and the result file written.
func TestLightningCombined(t *testing.T) {
	if os.Getenv(ownloop.TestPythonEnv) == "" {
		t.Fatalf("%s is not set: run these tests with make test-ownloop-torch2 (after make peers-env)", ownloop.TestPythonEnv)
	}
	if out, err := exec.Command(ownPython, "-c", "import lightning").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import lightning (make peers-env installs it): %v\n%s", ownPython, err, out)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "examples", "own-loop", "train_lightning_combined.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, mode, lightningMode, samples string
		val                                bool // a validation loader, which Lightning's sanity check iterates first (#1)
	}{
		{"dict", "dict", "max_size_cycle", "192", false},
		{"dict with a validation loader", "dict", "max_size_cycle", "192", true},
		{"min_size", "min_size", "min_size", "192", false},
		{"max_size", "max_size", "max_size", "192", false},
		{"sequential", "sequential", "sequential", "96", false}, // 6 batches and 2 a pass: both loaders' passes before the switch
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "combined.txt")
			args := []string{"analyze", "--num-caches", "3", "--return-caches-after", "12", "--steps-after", "10", "--out", out,
				"--", ownPython, script, "--mode", tc.mode, "--epochs", "40", "--samples", tc.samples, "--getitem-ms", "1"}
			first, second := 1, 2
			if tc.val {
				args = append(args, "--val")
				first, second = 2, 3
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr)
			ownLeft(t, script)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
			}
			via := "iterated by CombinedLoader (lightning, mode " + tc.lightningMode + ")"
			want := []string{
				fmt.Sprintf("loader #%d DataLoader(Synthetic, batch_size=16, num_workers=0) at train_lightning_combined.py:", first),
				fmt.Sprintf("%s: the training loop's: cached and timed, with #%d cached from the same step", via, second),
				fmt.Sprintf("loader #%d DataLoader(Synthetic, batch_size=16, num_workers=0) at train_lightning_combined.py:", second),
				fmt.Sprintf("%s: the training loop's, beside #%d: cached from the same step", via, first),
				"headspace:", "verdict: ", "__getitem__"}
			if tc.val {
				want = append(want, "loader #1 DataLoader(Synthetic, batch_size=16, num_workers=0) at train_lightning_combined.py:", ": iterated as it is: its steps trained nothing")
			}
			for _, w := range want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, stdout.String())
				}
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{"BenchmarkOwnLoopAnalyze/script=train_lightning_combined.py/phase=loader", "BenchmarkOwnLoopAnalyze/script=train_lightning_combined.py/phase=cached"} {
				if !strings.Contains(string(b), w) {
					t.Errorf("result file lacks %q:\n%s", w, b)
				}
			}
			analyzeFromIsRun(t, out, stdout.String())
		})
	}
}
