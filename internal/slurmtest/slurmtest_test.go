//go:build linux

package slurmtest_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

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
