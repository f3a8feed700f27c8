package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestNodeFromRefusesImpossibleValues: node --from and whatif --from
// decode a file through its codec, which refuses what no run writes (an
// AU above 1, ±Inf, NaN, a negative figure, a line lost, cut short or
// repeated, a count that is not one, rank records alone) in one line
// that names the file and the line, exit 2 (issue 52); the old readers
// took each and printed an answer.
func TestNodeFromRefusesImpossibleValues(t *testing.T) {
	root := filepath.Join("..", "..", "results")
	// value sets the figure before unit on line i to v.
	value := func(unit, v string) func([]string, int) []string {
		return func(l []string, i int) []string {
			l[i] = regexp.MustCompile(`[^ ]+ `+regexp.QuoteMeta(unit)+`( |$)`).ReplaceAllString(l[i], v+" "+unit+"$1")
			return l
		}
	}
	del := func(l []string, i int) []string { return slices.Delete(l, i, i+1) }
	dup := func(l []string, i int) []string { return slices.Insert(l, i+1, l[i]) }
	cut := func(l []string, i int) []string {
		l[i] = l[i][:strings.Index(l[i], " steps/s")+len(" steps/s")]
		return l
	}
	abc := func(l []string, i int) []string {
		l[i] = strings.Replace(l[i], "accelerators=1", "accelerators=abc", 1)
		return l
	}
	ranksOnly := func(l []string, _ int) []string {
		return slices.DeleteFunc(l, func(s string) bool { return strings.HasPrefix(s, "BenchmarkNode/") && !strings.Contains(s, "/rank=") })
	}
	// lastLost drops the file's last record (and the empty line after
	// it), leaving i at the line before.
	lastLost := func(l []string, _ int) []string { return l[:len(l)-2] }
	const nodeRec = "BenchmarkNode/accelerators=1/level=none-2 " // the first node record of level none
	const rankRec = "BenchmarkNode/accelerators=1/level=host/rank=0-2 "
	const profRec = "BenchmarkNodeWhatIfProfile/accelerators=1/level=none-2 "
	const predRec = "BenchmarkNodeWhatIf/accelerators=2-2 "
	for _, tc := range []struct {
		name, file, at string // at: the line changed
		edit           func([]string, int) []string
		line           int // the line named, relative to at's (1-based: at's is 0)
		want           string
	}{
		{"au 1.7", "node-bca00af.txt", nodeRec, value("au", "1.7"), 0, "au 1.7: an AU (compute time / total time) is at most 1"},
		{"+Inf", "node-bca00af.txt", nodeRec, value("samples/s", "+Inf"), 0, "samples/s +Inf: want a finite figure"},
		{"-Inf", "node-bca00af.txt", nodeRec, value("cpu-cores", "-Inf"), 0, "cpu-cores -Inf: want a finite figure"},
		{"NaN", "node-bca00af.txt", nodeRec, value("au-min", "NaN"), 0, "au-min NaN: want a finite figure"},
		{"negative", "node-bca00af.txt", rankRec, value("input-wait-ns/op", "-5"), 0, "input-wait-ns/op -5: want a finite figure, 0 or more"},
		{"the node's line lost", "node-bca00af.txt", nodeRec, del, 0, "a record of another run after 1 rank records of 1 accelerators and no node record"},
		{"the last line lost", "node-bca00af.txt", "", lastLost, -1, "rank records with no node record after them: the file is cut short"},
		{"the node's line cut short", "node-bca00af.txt", nodeRec, cut, 0, "no value in samples/s"},
		{"the node's line twice", "node-bca00af.txt", nodeRec, dup, 1, "the node's record after 0 rank records, want 1"},
		{"a rank's line twice", "node-bca00af.txt", rankRec, dup, 1, "a record of another run after 1 rank records"},
		{"accelerators=abc", "node-bca00af.txt", nodeRec, abc, 0, `accelerators "abc": want a positive count`},
		{"rank records only", "node-bca00af.txt", rankRec, ranksOnly, 1, "a record of another run after 1 rank records"},
		{"a profile's au 1.7", "node-whatif-bca00af.txt", profRec, value("au", "1.7"), 0, "au 1.7: an AU (compute time / total time) is at most 1"},
		{"predicted-au 1.7", "node-whatif-bca00af.txt", predRec, value("predicted-au", "1.7"), 0, "predicted-au 1.7: want an AU in [0, 1]"},
		{"measured-au NaN", "node-whatif-bca00af.txt", predRec, value("measured-au", "NaN"), 0, "measured-au NaN: want an AU in (0, 1]"},
		{"au-error-% -1", "node-whatif-bca00af.txt", predRec, value("au-error-%", "-1"), 0, "au-error-% -1: want a finite error"},
		{"a prediction twice", "node-whatif-bca00af.txt", predRec, dup, 1, "a second prediction of 2 accelerators"},
		{"a what-if's check NaN", "whatif-d98ca25.txt", "BenchmarkWhatIf/check/", value("steps/s", "NaN"), 0, "steps/s NaN: want a finite figure"},
		{"a what-if's profile negative", "whatif-d98ca25.txt", "BenchmarkWhatIf/profile/", value("load-cpu-ns/sample", "-5"), 0, "load-cpu-ns/sample -5: want a finite figure, 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\n")
			i := slices.IndexFunc(lines, func(s string) bool { return strings.HasPrefix(s, tc.at) })
			if tc.at == "" {
				i = len(lines) - 2 // the last record
			}
			if i < 0 {
				t.Fatalf("no line %q in %s", tc.at, tc.file)
			}
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(path, []byte(strings.Join(tc.edit(lines, i), "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := "node"
			if strings.Contains(tc.file, "whatif") {
				cmd = "whatif"
			}
			code, stdout, stderr := runCLI(cmd, "--from", path)
			where := fmt.Sprintf("%s:%d: ", path, i+1+tc.line)
			if code != 2 || !strings.Contains(stderr, where) || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("%s --from: exit %d, stderr %q; want 2 and one line naming %q and saying %q\nstdout:\n%s", cmd, code, stderr, where, tc.want, stdout)
			}
		})
	}
}

// TestCommittedNodeFiguresRebuild: docs/node.md's figures are what node
// --from and whatif --from draw from their committed result files, so a
// change to how the files are read changes no figure.
func TestCommittedNodeFiguresRebuild(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, tc := range []struct{ cmd, results, plot string }{
		{"node", "results/node-bca00af.txt", "docs/node.png"},
		{"node", "results/node-peer-346df48.txt", "docs/node-peer.png"},
		{"whatif", "results/node-whatif-bca00af.txt", "docs/node-whatif.png"},
	} {
		t.Run(tc.plot, func(t *testing.T) {
			got := filepath.Join(t.TempDir(), filepath.Base(tc.plot))
			if code, _, stderr := runCLI(tc.cmd, "--from", filepath.Join(root, tc.results), "--plot", got); code != 0 {
				t.Fatalf("%s --from %s: exit %d, stderr %q", tc.cmd, tc.results, code, stderr)
			}
			a, errA := os.ReadFile(got)
			b, errB := os.ReadFile(filepath.Join(root, tc.plot))
			if errA != nil || errB != nil {
				t.Fatalf("%v, %v", errA, errB)
			}
			if string(a) != string(b) {
				t.Errorf("%s differs from its rebuild from %s", tc.plot, tc.results)
			}
		})
	}
}

// TestNodeRefusesUpFront: what a node (or a node what-if) cannot run is
// refused in one line, exit 2, before anything is measured or written:
// a step of 0 (the sweep ran and wrote AU 0; whatif failed after
// profiling), --accelerators "" (whatif ran the plain what-if) or a
// count twice, a --verify node whose threads do not fit the cores
// (only the memory was checked), a --plot that is not .png or .svg
// (refused after the sweep); --workers is bounded the same way in both
// (issue 52).
func TestNodeRefusesUpFront(t *testing.T) {
	tiny := []string{"--raw-size", "48", "--crop", "16", "--batch", "4", "--step", "2ms", "--steps", "2", "--warmup", "1", "--count", "1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "--accelerators", "1", "--levels", "none", "--step", "0"}, "--step 0s: a node's emulated device needs a positive step"},
		{[]string{"whatif", "--step", "0"}, "--step 0s: the emulated device needs a positive step"},
		{[]string{"whatif", "--accelerators", "1", "--step", "0"}, "--step 0s: a node's emulated device needs a positive step"},
		{[]string{"whatif", "--accelerators", ""}, `--accelerators "": want comma-separated accelerator counts`},
		{[]string{"whatif", "--accelerators", "1,1"}, "--accelerators 1,1: 1 twice"},
		{[]string{"node", "--accelerators", "1,2,1", "--levels", "none"}, "--accelerators 1,2,1: 1 twice"},
		{[]string{"whatif", "--accelerators", "1024", "--verify", "--workers", "64", "--raw-size", "4096", "--batch", "256"}, "threads on"},
		{[]string{"node", "--accelerators", "1", "--levels", "none", "--plot", "AU.jpg"}, `--plot "AU.jpg": want a .png or .svg file`},
		{[]string{"node", "--workers", "0"}, "--workers 0: want 1 to"},
		{[]string{"whatif", "--workers", "0"}, "--workers 0: want 1 to"},
	} {
		dir := t.TempDir()
		out := filepath.Join(dir, "r.txt")
		args := append(append(slices.Clone(tc.args[:1]), tiny...), tc.args[1:]...)
		args = append(args, "--out", out)
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line saying %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: %s written", tc.args, out)
		}
	}
}

// TestNodeResumeMeasuresAPartialPointAgain: a point kept partial
// (--partial) is no finished run: the sweep resumed measures it again;
// it used to count the partial record as done (issue 52).
func TestNodeResumeMeasuresAPartialPointAgain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "node.txt")
	args := append([]string{"node", "--accelerators", "1", "--levels", "none", "--out", out}, tinyNode...)
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The run made partial: its rank's and node's records become a
	// partial run's record alone, as --partial keeps a failed run.
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "BenchmarkNode/") && strings.Contains(l, "/rank="):
		case strings.HasPrefix(l, "BenchmarkNode/"):
			name, _, _ := strings.Cut(l, " ")
			kept = append(kept, name+" 2 3 steps/s 12 samples/s 1 partial")
		default:
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(out, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	recs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, r := range recs {
		if _, ok := resultfile.Value(r, "au-min"); ok {
			full++
		}
	}
	if len(recs) != 3 || full != 1 {
		t.Errorf("resumed after a partial point: %d records, %d finished runs; want the partial one, then the rank's and the node's of a run measured again", len(recs), full)
	}
}
