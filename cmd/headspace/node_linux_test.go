//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// childPids are the children of process pid.
func childPids(pid int) []int {
	var out []int
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// alive says whether process pid exists (a zombie counts).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// startNode starts the built headspace node with ranks rank processes
// that run for minutes, and waits until all of them run.
func startNode(t *testing.T, bin string, ranks int, extra ...string) (*exec.Cmd, *bytes.Buffer, []int) {
	t.Helper()
	args := append([]string{"node", "--accelerators", strconv.Itoa(ranks), "--levels", "none", "--raw-size", "48", "--crop", "16",
		"--batch", "4", "--step", "50ms", "--steps", "100000", "--warmup", "1"}, extra...)
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		kids := childPids(cmd.Process.Pid)
		if len(kids) == ranks {
			time.Sleep(300 * time.Millisecond) // into their steps
			return cmd, &stderr, kids
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the ranks never all started: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits for cmd (10 s at most) and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd, what string) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return 0
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running 10 s later", what)
	}
	return -1
}

// gone fails the test if any of pids still exists.
func gone(t *testing.T, pids []int) {
	t.Helper()
	for _, p := range pids {
		if alive(p) {
			t.Errorf("rank process %d left behind", p)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// TestNodeSIGINT: SIGINT to headspace node stops every rank (and so its
// loader workers, goroutines of its process): exit 130, no rank left;
// what it prints gives no answer as if the sweep were whole, and names
// no result file where none was written (issue 52).
func TestNodeSIGINT(t *testing.T) {
	bin := buildHeadspace(t)
	out := filepath.Join(t.TempDir(), "node.txt")
	cmd, stderr, kids := startNode(t, bin, 3, "--out", out)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, "after SIGINT"); code != 130 {
		t.Errorf("exit %d, want 130: %s", code, stderr)
	}
	gone(t, kids)
	stdout := cmd.Stdout.(*bytes.Buffer).String()
	if strings.Contains(stdout, "node-max-accelerators:") || strings.Contains(stdout, "results: ") || !strings.Contains(stdout, "interrupted: ") {
		t.Errorf("an interrupted sweep with nothing finished printed an answer or a result file, or did not say it was interrupted:\n%s", stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written with nothing finished", out)
	}
}

// TestNodeRankKilled: a rank killed outright stops the others: exit 1
// naming the rank, no rank left, and that N is not recorded; with
// --partial it is recorded as partial and the run goes on.
func TestNodeRankKilled(t *testing.T) {
	bin := buildHeadspace(t)
	for _, partial := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "node.txt")
		extra := []string{"--out", out, "--barrier-timeout", "60s"}
		if partial {
			extra = append(extra, "--partial")
		}
		cmd, stderr, kids := startNode(t, bin, 3, extra...)
		if err := syscall.Kill(kids[1], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		code := waitExit(t, cmd, "after a rank was killed")
		gone(t, kids)
		recs, _ := resultfile.Read(out)
		if !partial {
			if code != 1 || !strings.Contains(stderr.String(), "rank") || !strings.Contains(stderr.String(), "killed") {
				t.Errorf("exit %d, stderr %q: want 1 naming the killed rank", code, stderr)
			}
			if len(recs) != 0 {
				t.Errorf("the failed N was recorded: %d records", len(recs))
			}
			continue
		}
		if code != 0 || len(recs) != 1 {
			t.Fatalf("--partial: exit %d, %d records: %s", code, len(recs), stderr)
		}
		if v, ok := resultfile.Value(recs[0], "partial"); !ok || v != 1 {
			t.Errorf("--partial: record %s has no partial 1", recs[0].Name)
		}
	}
}
