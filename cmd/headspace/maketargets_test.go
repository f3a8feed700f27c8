package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/datasets/transforms"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/workloads"
)

// makefile is the repository's Makefile as the test reads it: each
// variable's default and each target's recipe.
type makefile struct {
	vars    map[string]string
	recipes map[string]string
}

func readMakefile(t *testing.T) makefile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	mk := makefile{vars: map[string]string{}, recipes: map[string]string{}}
	varLine := regexp.MustCompile(`^([A-Z_]+)\s*(\?=|:=|=)\s*(.*)$`)
	target := regexp.MustCompile(`^([a-z][a-z-]*):`)
	cur := ""
	for _, line := range strings.Split(string(b), "\n") {
		if m := varLine.FindStringSubmatch(line); m != nil {
			mk.vars[m[1]] = strings.TrimSpace(m[3])
			cur = ""
			continue
		}
		if m := target.FindStringSubmatch(line); m != nil {
			cur = m[1]
			mk.recipes[cur] = ""
			continue
		}
		if cur != "" && strings.HasPrefix(line, "\t") {
			mk.recipes[cur] += strings.TrimSpace(line) + "\n"
		}
	}
	return mk
}

// flagValue is the value of --name in a flag string ("" if absent; the
// last one where given twice, as the flag package takes it).
func flagValue(flags, name string) string {
	f := strings.Fields(flags)
	v := ""
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--"+name {
			v = f[i+1]
		}
	}
	return v
}

// readmeClaim is the README's text from the first mention of the
// target's command to the end of the sentence, white space collapsed.
func readmeClaim(t *testing.T, readme, start string) string {
	t.Helper()
	i := strings.Index(readme, start)
	if i < 0 {
		t.Fatalf("README.md no longer says %q: update this test with what it says", start)
	}
	s := readme[i:]
	if j := strings.Index(s, ". "); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestReadmeMakeTargets: what the README says each Make target does holds
// of the Makefile (and the script and defaults it runs): every `make X`
// the README names is a target with a check here, and each check parses
// the README's words (levels, runs, steps) and compares them with what
// the target runs. A README that drifts from the Makefile, or a sweep
// that drifts from the README, fails here.
func TestReadmeMakeTargets(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	mk := readMakefile(t)
	checks := map[string]func(t *testing.T){
		"build": func(t *testing.T) {
			c := readmeClaim(t, readme, "Build with `make build`")
			if !strings.Contains(c, "(→ `"+mk.vars["BIN"]+"`)") || !strings.Contains(mk.recipes["build"], "build -o $(BIN) ./cmd/headspace") {
				t.Errorf("README: %q; Makefile: BIN %q, recipe %q", c, mk.vars["BIN"], mk.recipes["build"])
			}
		},
		"test": func(t *testing.T) {
			c := readmeClaim(t, readme, "make test #")
			r := mk.recipes["test"]
			for claim, does := range map[string]string{
				"go vet":                "$(GO) vet ./...",
				"every package's tests": "test -race -count=1 -timeout 20m ./...",
				"the CI scripts small":  "ci/smoke.sh",
			} {
				if !strings.Contains(c, claim) || !strings.Contains(r, does) {
					t.Errorf("README claims %q of make test (%q); its recipe %q lacks %q", claim, c, r, does)
				}
			}
		},
		"bench": func(t *testing.T) {
			c := readmeClaim(t, readme, "`make bench` runs `headspace ladder` with its defaults")
			if !strings.Contains(mk.recipes["bench"], "$(BIN) ladder --device $(DEVICE) --out $(BENCH_OUT) $(strip $(BENCH_SWEEP)) $(BENCH_FLAGS)") {
				t.Errorf("make bench's recipe %q: want headspace ladder with the BENCH_* settings", mk.recipes["bench"])
			}
			for _, v := range []string{"BENCH_FLAGS", "BENCH_LEVELS", "BENCH_WORKERS", "BENCH_TRANSFORMS", "BENCH_STEPS", "BENCH_COUNT"} {
				if mk.vars[v] != "" {
					t.Errorf("%s defaults to %q: make bench would not run the ladder's defaults", v, mk.vars[v])
				}
			}
			m := regexp.MustCompile(`(\d+) runs of (\d+) steps at the document's (\d+) ms step`).FindStringSubmatch(c)
			if m == nil {
				t.Fatalf("README's make bench: %q: no 'N runs of M steps at the document's S ms step'", c)
			}
			def := workloads.DefaultLadder()
			runs, _ := strconv.Atoi(m[1])
			steps, _ := strconv.Atoi(m[2])
			ms, _ := strconv.Atoi(m[3])
			if runs != def.Count || steps != def.Train.Steps || time.Duration(ms)*time.Millisecond != workloads.DocumentDevice().Step {
				t.Errorf("README: %d runs of %d steps at %d ms; the ladder's defaults: %d runs of %d steps at %v", runs, steps, ms, def.Count, def.Train.Steps, workloads.DocumentDevice().Step)
			}
			if !strings.Contains(c, "the document's five levels") || !slices.Equal(def.Levels, level.Document) {
				t.Errorf("README: %q; the ladder's default levels %v, the document's %v", c, def.Levels, level.Document)
			}
			if !strings.Contains(c, "naive and fast transforms") || !slices.Equal(def.Transforms, []string{"naive", "fast"}) || !slices.Equal(transforms.Names, def.Transforms) {
				t.Errorf("README: %q; the ladder's default transforms %v", c, def.Transforms)
			}
			if !strings.Contains(c, "one worker per core") || !slices.Equal(def.Workers, []int{runtime.GOMAXPROCS(0)}) {
				t.Errorf("README: %q; the ladder's default workers %v", c, def.Workers)
			}
		},
		"bench-remote": func(t *testing.T) {
			c := readmeClaim(t, readme, "`make bench-remote` starts")
			sweep := mk.vars["REMOTE_SWEEP"] + " " + mk.vars["REMOTE_FLAGS"]
			if !strings.Contains(mk.recipes["bench-remote"], "ci/bench-remote.sh $(REMOTE_OUT) $(REMOTE_SWEEP) $(REMOTE_FLAGS)") {
				t.Fatalf("make bench-remote's recipe %q: want ci/bench-remote.sh with REMOTE_SWEEP, then REMOTE_FLAGS", mk.recipes["bench-remote"])
			}
			script, err := os.ReadFile(filepath.Join("..", "..", "ci", "bench-remote.sh"))
			if err != nil {
				t.Fatal(err)
			}
			for claim, does := range map[string]string{
				"S3-compatible server on 127.0.0.1": `--port "127.0.0.1:$port"`,
				"uploads a dataset":                 `dataset upload`,
				"--data s3://…":                     `ladder --data s3://headspace/ds --out "$out" "$@"`,
			} {
				if !strings.Contains(c, claim) || !strings.Contains(string(script), does) {
					t.Errorf("README claims %q of make bench-remote (%q); ci/bench-remote.sh lacks %q", claim, c, does)
				}
			}
			lv := regexp.MustCompile(`at levels (.*?), with`).FindStringSubmatch(c)
			if lv == nil {
				t.Fatalf("README's make bench-remote: %q: no 'at levels …, with'", c)
			}
			var claimed []string
			for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(lv[1], -1) {
				claimed = append(claimed, m[1])
			}
			runs := strings.Split(flagValue(sweep, "levels"), ",")
			slices.Sort(claimed)
			slices.Sort(runs)
			if !slices.Equal(claimed, runs) {
				t.Errorf("README says make bench-remote runs levels %v; REMOTE_SWEEP/REMOTE_FLAGS run %v", claimed, runs)
			}
			if !slices.Contains(runs, "local") {
				t.Errorf("make bench-remote runs levels %v: without local, the first-against-later-epoch comparison is missing", runs)
			}
			m := regexp.MustCompile(`with ([a-z]+) transforms, (\d+) runs of (\d+) steps`).FindStringSubmatch(c)
			if m == nil || m[1] != flagValue(sweep, "transforms") || m[2] != flagValue(sweep, "count") || m[3] != flagValue(sweep, "steps") {
				t.Errorf("README: %q; REMOTE_SWEEP %q", c, sweep)
			}
			if !strings.Contains(c, `REMOTE_FLAGS="--link cross-region"`) || mk.vars["REMOTE_FLAGS"] != "" {
				t.Errorf("README says REMOTE_FLAGS adds flags; its default %q is not empty, so setting it replaces something", mk.vars["REMOTE_FLAGS"])
			}
		},
		"peers": func(t *testing.T) {
			c := readmeClaim(t, readme, "Against the loaders a user would install instead")
			r := mk.recipes["peers"]
			if !strings.Contains(c, "docs/peers.md") || !strings.Contains(r, "--peers all ") || !strings.Contains(r, "--peers all-bucket ") || !strings.Contains(r, "--workers 1,2") {
				t.Errorf("README: %q; make peers' recipe %q: want the file peers and the bucket peers at workers 1,2", c, r)
			}
			if mk.vars["PEERS_OUT"] != "results/peers-emulated.txt" || mk.vars["PEERS_BUCKET_OUT"] != "results/peers-bucket-emulated.txt" {
				t.Errorf("make peers writes %q and %q, not the committed files docs/peers.md quotes", mk.vars["PEERS_OUT"], mk.vars["PEERS_BUCKET_OUT"])
			}
		},
		"peers-spdl-cache": func(t *testing.T) {
			c := readmeClaim(t, readme, "| SPDL's own headspace")
			r := mk.recipes["peers-spdl-cache"]
			if !strings.Contains(c, "`make peers-spdl-cache`") || !strings.Contains(c, "`headspace analyze`") || !strings.Contains(r, "peer --spdl-cache ") || !strings.Contains(r, "ci/peers-env.sh") {
				t.Errorf("README: %q; make peers-spdl-cache's recipe %q: want peer --spdl-cache in the peers env", c, r)
			}
			if mk.vars["PEERS_SPDL_CACHE_OUT"] != "results/peers-spdl-cache.txt" || mk.vars["PEERS_SPDL_CACHE_FLAGS"] != "" {
				t.Errorf("make peers-spdl-cache writes %q with flags %q, not the committed file at the defaults docs/peers.md quotes", mk.vars["PEERS_SPDL_CACHE_OUT"], mk.vars["PEERS_SPDL_CACHE_FLAGS"])
			}
		},
		"peers-env": func(t *testing.T) {
			c := readmeClaim(t, readme, "| the real peers:")
			if !strings.Contains(c, "`make peers-env`") || !strings.Contains(mk.recipes["peers-env"], "ci/peers-env.sh") {
				t.Errorf("README: %q; make peers-env's recipe %q: want ci/peers-env.sh, the pinned env", c, mk.recipes["peers-env"])
			}
		},
		"reproduce": func(t *testing.T) {
			c := readmeClaim(t, readme, "`make reproduce` measures")
			if !strings.Contains(mk.recipes["reproduce"], "$(BIN) reproduce --out notebooks") {
				t.Errorf("README: %q; make reproduce's recipe %q", c, mk.recipes["reproduce"])
			}
		},
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("make ([a-z][a-z-]*)").FindAllStringSubmatch(readme, -1) {
		if m[1] == "the" || m[1] == "it" {
			continue // prose ("to make the model the bound")
		}
		named[m[1]] = true
	}
	for target := range named {
		if _, ok := mk.recipes[target]; !ok {
			t.Errorf("README names make %s, which the Makefile does not have", target)
			continue
		}
		check, ok := checks[target]
		if !ok {
			t.Errorf("README names make %s: add a check of what it says of it to this test", target)
			continue
		}
		t.Run(target, check)
	}
	for target := range checks {
		if !named[target] {
			t.Errorf("this test checks make %s, which the README no longer names", target)
		}
	}
}
