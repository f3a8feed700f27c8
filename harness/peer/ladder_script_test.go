package peer_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// The document's training script at each caching level
// (peers/torch/ladder.py): its syntax, and a tiny CPU run with Debian's
// torch (make test-deps installs it; without it the test fails).
const ladderScript = "../../peers/torch/ladder.py"

func TestLadderScriptCompiles(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s is not installed (make test-deps installs Debian's python3): %v", python, err)
	}
	cmd := exec.Command(python, "-m", "py_compile", ladderScript)
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("py_compile %s: %v\n%s", ladderScript, err, out)
	}
}

// TestLadderScriptRunsOnCPU trains the tiny Net (crop 16, four pools) three
// steps at every level and reads the output as benchstat would.
func TestLadderScriptRunsOnCPU(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, torchvision, scipy, PIL").Run(); err != nil {
		t.Fatalf("%s cannot import torch, torchvision, scipy and PIL (make test-deps installs them): %v", python, err)
	}
	cmd := exec.Command(python, ladderScript, "--device", "cpu", "--raw-size", "32x24", "--crop", "16",
		"--batch", "4", "--steps", "3", "--workers", "1")
	table, err := level.JSON()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir(), "OMP_NUM_THREADS=1", peer.LevelsEnv+"="+string(table))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ladder.py: %v\n%s", err, stderr.String())
	}
	rd := benchfmt.NewReader(bytes.NewReader(out), "ladder.py")
	var levels []string
	config := map[string]string{}
	for rd.Scan() {
		switch r := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("%v", r)
		case *benchfmt.Result:
			for _, c := range r.Config {
				config[c.Key] = string(c.Value)
			}
			base, parts := r.Name.Parts()
			if string(base) != "TorchLadder" || len(parts) < 2 || string(parts[1]) != "/workers=1" || r.Iters != 2 {
				t.Errorf("result %s with %d iterations, want TorchLadder/level=…/workers=1 with 2", r.Name, r.Iters)
				continue
			}
			levels = append(levels, strings.TrimPrefix(string(parts[0]), "/level="))
			for _, unit := range []string{"ns/op", "steps/s", "samples/s"} {
				v, ok := resultfile.Value(r, unit)
				if !ok || !(v > 0) || math.IsInf(v, 0) {
					t.Errorf("%s: %s = %v (present %v), want a positive number", r.Name, unit, v, ok)
				}
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	// Run alone, the script runs every level of the table that needs no
	// data, device first.
	var want []string
	for _, l := range level.Descending(level.For(level.Synthetic)) {
		want = append(want, l.String())
	}
	if got := strings.Join(levels, ","); got != strings.Join(want, ",") {
		t.Errorf("levels %q, want %s", got, strings.Join(want, ","))
	}
	if config["torch-device"] != "cpu" || config["net-depth"] != "4" || config["crop"] != "16" {
		t.Errorf("configuration %v: want torch-device cpu, net-depth 4, crop 16", config)
	}
}

// TestLadderScriptTakesTheTable: ladder.py's levels are the table's it is
// given, not a copy: a table without level sample refuses --levels sample
// and lists the rest, device first; a level whose cut keeps a stage the
// script has no cache of is refused by name where it is to run, and
// stands in the way of no other level; no table at all (and no
// headspace on PATH) is an error saying where to find one.
func TestLadderScriptTakesTheTable(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, torchvision, scipy, PIL").Run(); err != nil {
		t.Fatalf("%s cannot import torch, torchvision, scipy and PIL (make test-deps installs them): %v", python, err)
	}
	tb := level.Describe()
	without := tb
	without.Levels = nil
	var rest []string // the synthetic levels but sample, device first
	for _, l := range tb.Levels {
		if l.Name != "sample" {
			without.Levels = append(without.Levels, l)
			if l.Needs == "synthetic" {
				rest = append([]string{l.Name}, rest...)
			}
		}
	}
	odd := tb
	odd.Levels = append([]level.LevelRow{{Name: "collated", Needs: "synthetic", Kept: map[string]level.Stage{"synthetic": level.Collate}}}, tb.Levels...)
	const notOurs = "ladder.py: the level table (HEADSPACE_LEVELS, or `headspace levels --json`) is not headspace's: "
	for _, tc := range []struct {
		name  string
		table any
		raw   string // HEADSPACE_LEVELS as is, instead of table
		args  []string
		want  string
	}{
		{"without sample", without, "", []string{"--levels", "sample"}, "--levels: unknown level 'sample' (want " + strings.Join(rest, ", ") + ")"},
		{"a cut the script cannot keep", odd, "", nil, "ladder.py: level collated keeps the output of stage collate: this script has no cache of it"},
		{"no table", nil, "", nil, "ladder.py: the level table: set HEADSPACE_LEVELS"},
		// Issue 41: a raw traceback before.
		{"garbage", nil, "garbage", nil, notOurs + "not JSON (Expecting value: line 1 column 1 (char 0)): 'garbage'"},
		{"an empty object", nil, "{}", nil, notOurs + "no list of levels in it"},
		{"a list", nil, "[1, 2]", nil, notOurs + "no list of levels in it"},
		{"a level without a name", nil, `{"levels": [{"needs": "synthetic", "kept": {}}]}`, nil, notOurs + "level 1 lacks a name, needs or kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir(), "PATH="+t.TempDir())
			if tc.raw != "" {
				env = append(env, peer.LevelsEnv+"="+tc.raw)
			}
			if tc.table != nil {
				b, err := json.Marshal(tc.table)
				if err != nil {
					t.Fatal(err)
				}
				env = append(env, peer.LevelsEnv+"="+string(b))
			}
			cmd := exec.Command(python, append([]string{ladderScript, "--device", "cpu", "--raw-size", "32x24", "--crop", "16", "--batch", "4", "--steps", "2"}, tc.args...)...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("ladder.py: %v\n%s\nwant an error with %q", err, out, tc.want)
			}
			// A bad table is one line (argparse's errors, of --levels,
			// come after its usage).
			if tc.args == nil && (strings.Contains(string(out), "Traceback") || strings.Count(strings.TrimSpace(string(out)), "\n") != 0) {
				t.Errorf("ladder.py: not one line:\n%s", out)
			}
		})
	}
	b, err := json.Marshal(odd)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, ladderScript, "--device", "cpu", "--raw-size", "32x24", "--crop", "16", "--batch", "4", "--steps", "2", "--workers", "0", "--levels", "device")
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir(), "PATH="+t.TempDir(), peer.LevelsEnv+"="+string(b))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "BenchmarkTorchLadder/level=device/") {
		t.Errorf("ladder.py --levels device with level collated in the table: %v\n%s", err, out)
	}
}

// TestScriptsNameTheDocument: the Python peers name the document they
// follow by its name and number ("document 003"), never by a path on
// some machine (issue 41: "/work/shared/seeds/003_*.txt"), which is
// nowhere on a user's.
func TestScriptsNameTheDocument(t *testing.T) {
	scripts, err := filepath.Glob("../../peers/torch/*.py")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts in peers/torch (%v)", err)
	}
	machinePath := regexp.MustCompile(`(^|[\s("'=])/(work|home|root|Users|tmp|mnt|srv|opt)/[^\s)"']*`)
	for _, p := range scripts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := machinePath.FindString(line); m != "" || strings.Contains(line, "seeds/") {
				t.Errorf("%s:%d names a machine's path (%q): name the document", filepath.Base(p), i+1, strings.TrimSpace(line))
			}
		}
		if strings.Contains(string(b), "A Caching Strategy") && !strings.Contains(string(b), "(document 003)") {
			t.Errorf("%s names the document's title without its number, (document 003)", filepath.Base(p))
		}
	}
}
