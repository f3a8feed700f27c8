//go:build linux

package slurmtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/internal/slurmtest"
)

// TestStart starts the cluster and runs a step of 2 tasks on it: each
// task knows its rank (SLURM_PROCID) and the step's size, on one node.
func TestStart(t *testing.T) {
	c, err := slurmtest.Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	cmd := exec.Command("srun", "--ntasks", "2", "sh", "-c", `echo "$SLURM_PROCID $SLURM_STEP_NUM_TASKS $SLURM_STEP_NUM_NODES"`)
	cmd.Env = c.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("srun: %v\n%s", err, out)
	}
	var ranks []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[1] != "2" || f[2] != "1" {
			t.Errorf("task said %q: want its rank, 2 tasks, 1 node", l)
			continue
		}
		ranks = append(ranks, f[0])
	}
	slices.Sort(ranks)
	if !slices.Equal(ranks, []string{"0", "1"}) {
		t.Errorf("ranks %v, want 0 and 1\n%s", ranks, out)
	}
}

// TestStopLeavesNothing: a step whose task and srun were killed
// outright just before the cluster stops (as the own-loop hook ends a
// run) leaves its slurmstepd reporting to daemons that are going: Stop
// kills it.
func TestStopLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	c, err := slurmtest.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("srun", "--ntasks", "1", "sleep", "3600")
	cmd.Env = c.Env()
	if err := cmd.Start(); err != nil {
		c.Stop()
		t.Fatal(err)
	}
	// Until its slurmstepd and its task run (srun is this test's child,
	// not the cluster's: it counts too).
	for deadline := time.Now().Add(30 * time.Second); ; {
		if len(slurmtest.Leftovers(c)) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			c.Stop()
			t.Fatal("the step's task never ran")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range slurmtest.Leftovers(c) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); !strings.HasPrefix(string(comm), "slurmstepd") {
			syscall.Kill(pid, syscall.SIGKILL) // the task and srun
		}
	}
	cmd.Wait()
	c.Stop()
	if left := slurmtest.Leftovers(c); len(left) > 0 {
		t.Errorf("processes of the cluster left after Stop: %v", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
