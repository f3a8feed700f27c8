//go:build linux

package ownloop_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/ownloop"
)

// combinedScript copies testdata/combined.py (two DataLoaders combined
// by an iterator of the script's own, as Lightning's CombinedLoader
// combines them) into a directory of the test's own.
func combinedScript(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/combined.py")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "combined.py")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCombinedLoaders: two DataLoaders iterated together by an object
// that holds them in .iterables (Lightning's CombinedLoader's way) are
// measured together: the first is the training loop's, the other is
// named as measured beside it, and both switch to their kept batches at
// the same step — the script checks each combined batch (the same batch
// of both passes, the shorter cycled; in sequential mode, each batch its
// own loader's) and fails on one that is not. In the modes that take a
// batch of each a step, each step from the loaders waits for both
// loaders' batches: at least their __getitem__ sleeps (4 samples of 2 ms
// and 4 of 10 ms with no workers: 48 ms), and both loaders' batches are
// in the stages. whatif's model, of one loader, refuses it.
func TestCombinedLoaders(t *testing.T) {
	needTorch(t)
	const a, b = 2 * time.Millisecond, 10 * time.Millisecond
	for _, tc := range []struct {
		mode, via string
		workers   int
	}{
		{"max_size_cycle", "MaxSizeCycle (combined.py)", 0},
		{"min_size", "MaxSizeCycle (combined.py)", 0},
		{"max_size_cycle", "MaxSizeCycle (combined.py)", 2},
		{"sequential", "Sequential (combined.py)", 0},
	} {
		script := combinedScript(t)
		cmd := command(t, script, "--mode", tc.mode, "--workers", strconv.Itoa(tc.workers), "--a-ms", msArg(a), "--b-ms", msArg(b), "--samples", "48")
		var out bytes.Buffer
		run, err := ownloop.Exec(context.Background(), cmd, settings(12, 10), &out, nil)
		noneLeft(t, script)
		name := tc.mode + "/workers=" + strconv.Itoa(tc.workers)
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, out.String())
			continue
		}
		ld, ok := run.Target()
		members := run.Members()
		if !ok || ld.Index != 1 || ld.Via != tc.via || len(members) != 1 || members[0].Index != 2 || members[0].Via != tc.via {
			t.Errorf("%s: training loader %+v, members %+v; want #1 with #2 beside it, both iterated by %s", name, ld, members, tc.via)
		}
		phases := map[string]int{}
		for _, st := range run.Steps {
			phases[st.Phase]++
			if tc.mode != "sequential" && st.Phase == "loader" && st.Index > 0 && st.Wait < 4*(a+b) && tc.workers == 0 {
				t.Errorf("%s: step %+v waited less than both loaders' sleeps (%v)", name, st, 4*(a+b))
			}
		}
		if phases["cached"] == 0 || phases["loader"] == 0 || len(run.Steps) < 21 {
			t.Errorf("%s: steps by phase %v, want 22 steps, from the loaders then cached", name, phases)
		}
		by := map[int]int{}
		for _, bt := range run.Batches {
			by[bt.Loader]++
		}
		if by[1] == 0 || by[2] == 0 {
			t.Errorf("%s: batches timed by loader %v, want both loaders'", name, by)
		}
		rep, err := ownloop.Analyze(cmd, settings(12, 10), run, 1)
		if err != nil {
			t.Errorf("%s: Analyze: %v", name, err)
			continue
		}
		if _, err := ownloop.NewWhatIf(rep); err == nil || !strings.Contains(err.Error(), "a batch of 2 loaders a step (a CombinedLoader)") {
			t.Errorf("%s: NewWhatIf: %v, want it refused: the model is of one loader", name, err)
		}
		var text bytes.Buffer
		rep.WriteText(&text)
		for _, w := range []string{"the training loop's: cached and timed, with #2 cached from the same step", "the training loop's, beside #1: cached from the same step"} {
			if !strings.Contains(text.String(), w) {
				t.Errorf("%s: report lacks %q:\n%s", name, w, text.String())
			}
		}
	}
}
