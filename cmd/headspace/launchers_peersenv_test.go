//go:build peersenv && linux

// Tests of analyze on a node's ranks under accelerate launch (the pinned
// peers environment's accelerate and torch 2): run by `make
// test-ownloop-torch2` (HEADSPACE_OWNLOOP_PYTHON names its python;
// without it they fail).

package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// accelerateArgs is `accelerate launch --multi_gpu --num_processes 2`
// (the peers environment's, beside its python) of script on a free
// port: 2 ranks of torch.distributed.run, on the CPU with gloo.
func accelerateArgs(t *testing.T, script string, args ...string) []string {
	t.Helper()
	if os.Getenv(ownloop.TestPythonEnv) == "" {
		t.Fatalf("%s is not set: run these tests with make test-ownloop-torch2 (after make peers-env)", ownloop.TestPythonEnv)
	}
	if out, err := exec.Command(ownPython, "-c", "import accelerate").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import accelerate (make peers-env installs it): %v\n%s", ownPython, err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	return append([]string{filepath.Join(filepath.Dir(ownPython), "accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
		"--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", port, script}, args...)
}

// acceleratedExample copies examples/own-loop/train_accelerate.py into a
// directory of the test's own.
func acceleratedExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/own-loop/train_accelerate.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "train_accelerate.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAnalyzeRanksAccelerate runs analyze on an Accelerate loop under
// accelerate launch with 2 ranks, end to end: the node's answer, the
// loader named with DataLoaderShard, every rank's records and the
// node's in a result file.
func TestAnalyzeRanksAccelerate(t *testing.T) {
	script := acceleratedExample(t)
	out := filepath.Join(t.TempDir(), "node.txt")
	var stdout, stderr bytes.Buffer
	args := append([]string{"analyze", "--num-caches", "3", "--return-caches-after", "12", "--steps-after", "8", "--out", out, "--"},
		accelerateArgs(t, script, "--epochs", "3", "--samples", "512", "--getitem-ms", "2")...)
	code := run(context.Background(), args, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"node: 2 ranks (accelerate launch)", "every rank switched to cached batches at step 12", "iterated by DataLoaderShard (accelerate): the training loop's in each rank",
		"slowest rank: ", "verdict: ", "what it would take", "--- rank 0 ---", "--- rank 1 ---"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"launcher: accelerate launch", "ranks: 2", "torch: 2.", "BenchmarkOwnLoopAnalyze/script=train_accelerate.py/phase=loader/rank=0",
		"BenchmarkOwnLoopAnalyze/script=train_accelerate.py/phase=cached/rank=1", "BenchmarkOwnLoopAnalyzeStage/script=train_accelerate.py/stage=getitem/rank=1",
		"BenchmarkOwnLoopAnalyzeNode/script=train_accelerate.py/ranks=2"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
	analyzeFromIsRun(t, out, stdout.String())
}

// TestAnalyzeRanksAccelerateSIGINT interrupts a real headspace while
// accelerate launch's 2 ranks train: exit 130, accelerate, the ranks and
// their workers gone (ownLeft: within 2 s of the exit). How long it
// takes is logged (the interrupt helper's 10 s is liveness).
func TestAnalyzeRanksAccelerateSIGINT(t *testing.T) {
	script := acceleratedExample(t)
	bin := buildHeadspace(t)
	cmd := exec.Command(bin, append([]string{"analyze", "--return-caches-after", "100000", "--"},
		accelerateArgs(t, script, "--epochs", "100", "--getitem-ms", "5", "--step-ms", "20", "--workers", "2")...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for both ranks' workers: accelerate, 2 ranks, 4 workers.
	deadline := time.Now().Add(120 * time.Second)
	for {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(b, []byte(script)) && !bytes.Contains(b, []byte(bin)) {
				n++
			}
		}
		if n >= 7 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("accelerate, its ranks and their workers never ran: %d processes\n%s", n, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	code, took := interrupt(t, cmd, "analyze -- accelerate launch "+script)
	t.Logf("exit %d %v after SIGINT", code, took)
	if code != 130 {
		t.Errorf("exit %d after %v; want 130\n%s", code, took, stderr.String())
	}
	ownLeft(t, script)
}
