//go:build linux

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
	"github.com/headspace-bench/headspace/internal/slurmtest"
)

// ddpScript copies the ownloop tests' ddp.py into a directory of the
// test's own and fails (never skips) without Debian's torch.
func ddpScript(t *testing.T) string {
	t.Helper()
	ownScript(t) // torch is there
	b, err := os.ReadFile("../../harness/ownloop/testdata/ddp.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ddp.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// torchrunArgs is `torchrun` with 2 ranks on a free port: -r 1 -t 1 for
// Debian's torch 1.13 launcher on Python 3.11 (harness/ownloop's
// torchrun helper says why).
func torchrunArgs(t *testing.T, script string, args ...string) []string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	launcher, _ := ownloop.TestLauncher()
	return append(append(append([]string{}, launcher...), "--nproc_per_node", "2", "-r", "1", "-t", "1", "--log_dir", t.TempDir(), "--master_port", port, script), args...)
}

// TestAnalyzeRanks runs analyze on `torchrun --nproc_per_node 2`, end
// to end: the node's answer, every rank's records (rank=R) and the node's
// in a result file that compare accepts.
func TestAnalyzeRanks(t *testing.T) {
	script := ddpScript(t)
	out := filepath.Join(t.TempDir(), "node.txt")
	var stdout, stderr bytes.Buffer
	args := append([]string{"analyze", "--num-caches", "3", "--return-caches-after", "16", "--steps-after", "12", "--out", out, "--"},
		torchrunArgs(t, script, "--getitem-ms", "4", "--step-ms", "2", "--slow-rank", "1", "--slow-getitem-ms", "12")...)
	code := run(context.Background(), args, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"node: 2 ranks (" + ownLauncher() + ")", "every rank switched to cached batches at step 16", "slowest rank: ", "verdict: ", "what it would take", "--- rank 0 ---", "--- rank 1 ---"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"launcher: " + ownLauncher(), "ranks: 2", "BenchmarkOwnLoopAnalyze/script=ddp.py/phase=loader/rank=0", "BenchmarkOwnLoopAnalyze/script=ddp.py/phase=cached/rank=1",
		"BenchmarkOwnLoopAnalyzeStage/script=ddp.py/stage=getitem/rank=1", "BenchmarkOwnLoopAnalyzeNode/script=ddp.py/ranks=2", " au"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q", want)
		}
	}
	analyzeFromIsRun(t, out, stdout.String())
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"compare", out, out}, &stdout, &stderr); code != 0 {
		t.Errorf("compare of the file with itself: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestAnalyzeRanksFaults: a rank that raises shows its traceback, is
// named in the last line, exits 1 and leaves no result file; a world
// larger than the node is refused in one line, exit 2.
func TestAnalyzeRanksFaults(t *testing.T) {
	script := ddpScript(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		command []string
		code    int
		want    string
	}{
		{"raises", torchrunArgs(t, script, "--getitem-ms", "0", "--step-ms", "0", "--fail-rank", "1", "--fail-at", "3"), 1, "rank 1 failed after"},
		{"more than one node", []string{ownPython, script, "--spawn", "2", "--multi-node"}, 2, "ranks on more than one node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".txt")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"analyze", "--out", out, "--"}, tc.command...), &stdout, &stderr)
			ownLeft(t, script)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if last := lines[len(lines)-1]; code != tc.code || !strings.Contains(last, tc.want) {
				t.Errorf("exit %d, last line %q; want %d and %q\n%s", code, last, tc.code, tc.want, stderr.String())
			}
			if tc.name == "raises" && (!strings.Contains(stderr.String(), "Traceback") || !strings.Contains(stderr.String(), "rank 1's own failure at step 3")) {
				t.Errorf("rank 1's traceback is not shown:\n%s", stderr.String())
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// TestAnalyzeRanksSIGINT interrupts a real headspace while torchrun's 2
// ranks train: exit 130, the launcher, the ranks and their workers gone.
// How long it takes is logged (the interrupt helper's 10 s is liveness).
func TestAnalyzeRanksSIGINT(t *testing.T) {
	script := ddpScript(t)
	bin := buildHeadspace(t)
	cmd := exec.Command(bin, append([]string{"analyze", "--return-caches-after", "100000", "--"}, torchrunArgs(t, script, "--getitem-ms", "5", "--step-ms", "20")...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for both ranks' workers: the launcher, 2 ranks, 4 workers.
	deadline := time.Now().Add(90 * time.Second)
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
			t.Fatalf("the launcher, its ranks and their workers never ran: %d processes\n%s", n, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	code, took := interrupt(t, cmd, "analyze -- torchrun "+script)
	t.Logf("exit %d %v after SIGINT", code, took)
	if code != 130 {
		t.Errorf("exit %d after %v; want 130\n%s", code, took, stderr.String())
	}
	ownLeft(t, script)
}

// TestLadderAndWhatIfRanks: ladder and whatif take a torchrun command,
// each level's point and the model the slowest rank's, whatif with the
// node's answer.
func TestLadderAndWhatIfRanks(t *testing.T) {
	script := ddpScript(t)
	out := filepath.Join(t.TempDir(), "ladder.txt")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"ladder", "--levels", "host,none", "--steps", "4", "--count", "1", "--out", out, "--"},
		torchrunArgs(t, script, "--getitem-ms", "4", "--step-ms", "2")...), &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("ladder: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"host ", "none "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("ladder's table lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The node's settings: what started the ranks, and how many.
	for _, want := range []string{"BenchmarkOwnLoopLadder/level=none/script=ddp.py/workers=2", "launcher: " + ownLauncher(), "ranks: 2"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("ladder's file lacks %q:\n%s", want, b)
		}
	}
	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), append([]string{"whatif", "--"}, torchrunArgs(t, script, "--getitem-ms", "4", "--step-ms", "2", "--slow-rank", "1", "--slow-getitem-ms", "12")...), &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("whatif: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"node: 2 ranks (" + ownLauncher() + "); the slowest rank: ", "what it would take (the model of whatif --accelerators", "what it would take (from the measured stages)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("whatif lacks %q:\n%s", want, stdout.String())
		}
	}
}

// ownLauncher is the name of the launcher torchrunArgs runs.
func ownLauncher() string {
	_, name := ownloop.TestLauncher()
	return name
}

// TestWhatIfVerifyRanks: whatif --verify on torchrun's 2 ranks reruns
// the node as it is at the rank's own worker count and, where it
// differs, at the count the model asks, every rank's loader at that
// count (ownloop.Verify), and prints and records measured against
// predicted steps/s for each. The figures are not checked: how close
// the model comes is a benchmark's.
func TestWhatIfVerifyRanks(t *testing.T) {
	script := ddpScript(t)
	out := filepath.Join(t.TempDir(), "whatif.txt")
	var stdout, stderr bytes.Buffer
	// A 30 ms step, 1 ms samples in batches of 4, 2 workers a rank: the
	// model asks for few workers (the test's run stays short).
	code := run(context.Background(), append([]string{"whatif", "--verify", "--steps", "6", "--out", out, "--"},
		torchrunArgs(t, script, "--getitem-ms", "1", "--step-ms", "30")...), &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("whatif --verify: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"node: 2 ranks (" + ownLauncher() + "); the slowest rank: ", "verify (6 steps, the script as it is):", "  2 workers: measured "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("whatif --verify lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BenchmarkOwnLoopWhatIf/model/script=ddp.py", "BenchmarkOwnLoopWhatIf/check/script=ddp.py/workers=2", "predicted-steps/s", "launcher: " + ownLauncher(), "ranks: 2"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("whatif's file lacks %q:\n%s", want, b)
		}
	}
}

// srunArgs is `srun --ntasks 2` of python ddp.py --slurm on a free port,
// on a single-node Slurm of the test's own (stopped at its end).
func srunArgs(t *testing.T, script string, args ...string) []string {
	t.Helper()
	c, err := slurmtest.Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Setenv("SLURM_CONF", c.Conf)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	return append([]string{"srun", "--ntasks", "2", ownPython, script, "--slurm", "--port", port}, args...)
}

// TestAnalyzeRanksSrun runs analyze on srun's 2 tasks, end to end: the
// node's answer and every rank's records in a result file that names
// srun.
func TestAnalyzeRanksSrun(t *testing.T) {
	script := ddpScript(t)
	out := filepath.Join(t.TempDir(), "node.txt")
	var stdout, stderr bytes.Buffer
	args := append([]string{"analyze", "--num-caches", "3", "--return-caches-after", "12", "--steps-after", "8", "--out", out, "--"},
		srunArgs(t, script, "--getitem-ms", "4", "--step-ms", "2")...)
	code := run(context.Background(), args, &stdout, &stderr)
	ownLeft(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"node: 2 ranks (srun)", "every rank switched to cached batches at step 12", "slowest rank: ", "--- rank 1 ---"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"launcher: srun", "ranks: 2", "BenchmarkOwnLoopAnalyze/script=ddp.py/phase=cached/rank=1", "BenchmarkOwnLoopAnalyzeNode/script=ddp.py/ranks=2"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q", want)
		}
	}
}

// TestAnalyzeRanksSrunSIGINT interrupts a real headspace while srun's 2
// tasks train: exit 130, srun, the tasks (slurmstepd's children, not
// headspace's) and their workers gone (ownLeft: within 2 s of the exit).
func TestAnalyzeRanksSrunSIGINT(t *testing.T) {
	script := ddpScript(t)
	bin := buildHeadspace(t)
	cmd := exec.Command(bin, append([]string{"analyze", "--return-caches-after", "100000", "--"}, srunArgs(t, script, "--getitem-ms", "5", "--step-ms", "20")...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for both ranks' workers: srun, 2 tasks, 4 workers.
	deadline := time.Now().Add(90 * time.Second)
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
			t.Fatalf("srun, its tasks and their workers never ran: %d processes\n%s", n, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	code, took := interrupt(t, cmd, "analyze -- srun "+script)
	t.Logf("exit %d %v after SIGINT", code, took)
	if code != 130 {
		t.Errorf("exit %d after %v; want 130\n%s", code, took, stderr.String())
	}
	ownLeft(t, script)
}
