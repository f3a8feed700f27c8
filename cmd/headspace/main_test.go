package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/preflight"
	"github.com/headspace-bench/headspace/harness/procloader"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/reproduce"
	"github.com/headspace-bench/headspace/workloads"
)

func TestMain(m *testing.M) {
	// headspace node's ranks are this test binary (node.SelfRank).
	node.ServeIfSelfRank()
	workloads.RankOptions = func() (procloader.Options, error) {
		exe, args, env := node.SelfRank()
		return procloader.Options{Exe: exe, Args: args, Env: env}, nil
	}
	// The runs the tests start wait for no quiet machine and repeat no
	// disturbed point: the test machines are shared and never quiet.
	os.Setenv(preflight.EnvQuietWait, "0")
	os.Setenv(preflight.EnvReruns, "0")
	goleak.VerifyTestMain(m)
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

// tinyLadder is a ladder small enough for -race.
var tinyLadder = []string{"--raw-size", "48", "--crop", "16", "--batch", "4", "--step", "2ms", "--steps", "2", "--count", "1"}

func TestBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ladder", "--workers", "0"}, "--workers: 0 must be positive"},
		{[]string{"ladder", "--data", "s3://bucket/prefix", "--chunk-size", "9223372036854775807"}, "--chunk-size 9223372036854775807: want 4096 to 268435456"},
		{[]string{"ladder", "--workers", "-3"}, "--workers: -3 must be positive"},
		{[]string{"ladder", "--workers", "two"}, "not a whole number"},
		{[]string{"ladder", "--batch", "0"}, "--batch 0: want 1 to 65536"},
		{[]string{"ladder", "--batch", "-1"}, "--batch -1: want 1 to 65536"},
		{[]string{"ladder", "--raw-size", "0"}, "must be positive"},
		{[]string{"ladder", "--raw-size", "big"}, "is not N or WxH"},
		{[]string{"ladder", "--levels", "none,gpu"}, `unknown level "gpu"`},
		{[]string{"ladder", "--raw-size", "128", "--crop", "256"}, "crop 256 is larger than the 128x128 raw image"},
		{[]string{"ladder", "--transforms", "slow"}, `unknown "slow"`},
		{[]string{"ladder", "--steps", "0"}, "--steps 0"},
		{[]string{"ladder", "--count", "0"}, "--count 0"},
		{[]string{"ladder", "--shard", "3/3"}, "--shard"},
		{[]string{"ladder", "--device", "tpu"}, `--device "tpu"`},
		{[]string{"ladder", "--placement", "gpu"}, `--placement: unknown "gpu" (want host, device)`},
		{[]string{"ladder", "--placement", "device", "--convert-gbps", "0"}, "--convert-gbps 0: want 0.001 to 1000000 GB/s"},
		{[]string{"ladder", "--pinned-gbps", "1e-300"}, "--pinned-gbps 1e-300: want"},
		{[]string{"ladder", "--pinned", "yes"}, `--pinned: unknown "yes" (want true, false)`},
		{[]string{"ladder", "--fresh"}, "--fresh needs --out"},
		{[]string{"ladder", "--nope"}, "flag provided but not defined"},
		{[]string{"ladder", "extra"}, `unexpected argument "extra"`},
		{[]string{"analyze", "--num-caches", "0"}, "--num-caches 0: want 1 to 10000000"},
		// Huge values are refused before anything is allocated.
		{[]string{"ladder", "--raw-size", "2147483648"}, "raw width 2147483648 is over the limit of 32768"},
		{[]string{"ladder", "--steps", "4611686018427387904"}, "--steps 4611686018427387904: want 1 to 10000000"},
		{[]string{"ladder", "--batch", "2147483648"}, "--batch 2147483648: want 1 to 65536"},
		{[]string{"ladder", "--batch", "9000000000000000000"}, "--batch 9000000000000000000: want 1 to 65536"},
		{[]string{"ladder", "--prefetch", "2147483648"}, "--prefetch 2147483648: want 1 to 1024"},
		{[]string{"ladder", "--raw-size", "30000", "--batch", "65536"}, "of memory and this machine has"},
		{[]string{"analyze", "--steps-after", "4611686018427387904"}, "--steps-after 4611686018427387904: want 1 to"},
		{[]string{"analyze", "--return-caches-after", "4611686018427387904"}, "--return-caches-after 4611686018427387904: want 1 to"},
		{[]string{"analyze", "--num-caches", "1099511627776"}, "--num-caches 1099511627776: want 1 to"},
		{[]string{"analyze", "--stats-every", "-1s"}, "--stats-every -1s: want 0s to 24h0m0s"},
		{[]string{"loaders", "--prefetch", "1099511627776"}, "--prefetch 1099511627776: want 1 to 1024"},
		{[]string{"loaders", "--batches", "4611686018427387904"}, "--batches 4611686018427387904: want 2 to 10000000"},
		{[]string{"sim", "--load-dist", ""}, "--load-dist is empty"},
		{[]string{"sim", "--duration", "10m", "--gif", "x.gif"}, "raise --gif-tick to 101ms or more"},
		{[]string{"reproduce", "--docs", "004,004"}, `--docs names "004" twice`},
		{[]string{"reproduce", "--quick", "false"}, "a boolean flag takes its value after =, as in --quick=false"},
		{[]string{"help", "frob"}, `unknown command "frob"`},
		{[]string{"analyze", "--workers", "0"}, "--workers 0"},
		{[]string{"sim", "--loaders", "0"}, "loaders"},
		{[]string{"sim", "--load-dist", "uniform"}, "uniform"},
		{[]string{"compare", "only-one.txt"}, "want two files"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: stderr %q, want one line containing %q", tc.args, stderr, tc.want)
		}
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI("help")
	if code != 0 || !strings.Contains(out, "ladder") || !strings.Contains(out, "analyze") || !strings.Contains(out, "compare") {
		t.Errorf("help: exit %d, output %q", code, out)
	}
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	for _, cmd := range names {
		code, out, _ := runCLI(cmd, "-h")
		if code != 0 || strings.Count(out, "Usage: headspace "+cmd) != 1 {
			t.Errorf("%s -h: exit %d, want the usage once, output %q", cmd, code, out)
		}
	}
	if code, _, _ := runCLI(); code != 2 {
		t.Errorf("no arguments: exit %d, want 2", code)
	}
}

// TestLadderWritesAndResumes runs a tiny sweep into a file, checks it
// holds every level with steps/s and its Unit lines, then reruns it with a
// higher count and checks only the missing runs were added.
func TestLadderWritesAndResumes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ladder.txt")
	args := append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--count", "1", "--out", out}, tinyLadder...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"level", "steps/s", "vs device", "device", "none"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	rs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string]bool{}
	for _, r := range rs {
		for _, l := range []string{"none", "raw", "sample", "host", "device"} {
			if strings.Contains(string(r.Name), "level="+l+"/") {
				levels[l] = true
			}
		}
		if _, ok := r.Value("steps/s"); !ok {
			t.Errorf("%s has no steps/s", r.Name)
		}
	}
	if len(levels) != 5 || len(rs) != 5 {
		t.Errorf("levels %v in %d results, want all 5 once", levels, len(rs))
	}
	b, _ := os.ReadFile(out)
	for _, want := range []string{"Unit steps/s better=higher", "Unit upload-B/op better=lower", "device: emulated", "commit: "} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("file lacks %q", want)
		}
	}
	args = append(args, "--count", "2") // one more run of each point (the last --count wins)
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	rs, _ = resultfile.Read(out)
	if len(rs) != 10 {
		t.Errorf("after resuming to count 2: %d results, want 10", len(rs))
	}
}

// TestLadderUint8 runs a tiny sweep with --placement device and checks every
// level's result is named …/placement=device, and carries the upload bytes
// per step, a quarter of the float32 values' bytes (4 samples of 3×16×16)
// plus the int32 labels; the device level uploads nothing while measured.
func TestLadderUint8(t *testing.T) {
	out := filepath.Join(t.TempDir(), "uint8.txt")
	args := append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--placement", "device", "--out", out}, tinyLadder...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "transforms=fast workers=1 placement=device pinned=true") {
		t.Errorf("output does not say the placement:\n%s", stdout)
	}
	rs, err := resultfile.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 5 {
		t.Fatalf("%d results, want 5", len(rs))
	}
	const want = 4*3*16*16 + 4*4
	for _, r := range rs {
		if !strings.Contains(string(r.Name), "/placement=device/") {
			t.Errorf("%s is not named placement=device", r.Name)
		}
		v, ok := r.Value("upload-B/op")
		if strings.Contains(string(r.Name), "level=device/") {
			if ok {
				t.Errorf("%s: upload-B/op %v at level device", r.Name, v)
			}
		} else if !ok || v != want {
			t.Errorf("%s: upload-B/op %v (%v), want %d", r.Name, v, ok, want)
		}
	}
	if b, _ := os.ReadFile(out); !bytes.Contains(b, []byte("emulated-convert-gbps: 1000")) {
		t.Errorf("file does not record the conversion assumption:\n%s", b)
	}
}

func TestSimReproducesTheDocument(t *testing.T) {
	gif := filepath.Join(t.TempDir(), "a.gif")
	code, out, stderr := runCLI("sim", "--loaders", "7", "--load", "2s", "--step", "100ms", "--duration", "30s", "--gif", gif)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "batches completed: 98 ") || !strings.Contains(out, "halts every 7 batches") {
		t.Errorf("sim output:\n%s", out)
	}
	if fi, err := os.Stat(gif); err != nil || fi.Size() == 0 {
		t.Errorf("no GIF written: %v", err)
	}
}

func TestCompareExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// One machine's files: compare refuses a file without cpu: and cores:.
	lines := func(v ...string) string {
		s := "Unit steps/s better=higher\ncpu: Test CPU\ncores: 2\n"
		for _, x := range v {
			s += "BenchmarkLadder/level=none 1 " + x + " steps/s\n"
		}
		return s
	}
	old := write("old.txt", lines("10", "10.1", "9.9", "10", "10.2", "9.8"))
	same := write("same.txt", lines("10", "10.1", "9.9", "10.05", "10.1", "9.95"))
	slow := write("slow.txt", lines("5", "5.1", "4.9", "5", "5.2", "4.8"))
	bad := write("bad.txt", "BenchmarkX 1 2\n")
	if code, _, _ := runCLI("compare", old, same); code != 0 {
		t.Errorf("noise: exit %d, want 0", code)
	}
	code, out, _ := runCLI("compare", old, slow)
	if code != 1 || !strings.Contains(out, "BenchmarkLadder/level=none") {
		t.Errorf("regression: exit %d, want 1 naming the benchmark:\n%s", code, out)
	}
	// The same slowdown on runs that stayed disturbed: not a regression, a rerun.
	disturbed := write("disturbed.txt", strings.Replace(lines("5", "5.1", "4.9", "5", "5.2", "4.8"), "4.9 steps/s", "4.9 steps/s 1 disturbed", 1))
	if code, out, stderr := runCLI("compare", old, disturbed); code != 3 || !strings.Contains(out, "RERUN") || !strings.Contains(stderr, "rerun on a quiet machine") {
		t.Errorf("disturbed: exit %d, want 3 asking for a rerun:\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("compare", old, bad); code != 2 || !strings.Contains(stderr, "bad.txt:1") {
		t.Errorf("syntax error: exit %d, stderr %q; want 2 with file:line", code, stderr)
	}

	// No evidence, no verdict: each exits 2 with one line.
	machine := func(cpu, body string) string {
		return "device: emulated\ncpu: " + cpu + "\ncores: 2\n\n" + strings.NewReplacer("cpu: Test CPU\n", "", "cores: 2\n", "").Replace(body)
	}
	two := func(v ...string) string {
		s := lines(v...)
		for _, x := range v {
			s += "BenchmarkLadder/level=raw 1 " + x + " steps/s\n"
		}
		return s
	}
	// Issue 32, item 15: steps/s, the ladder's headline, NaN everywhere in
	// NEW while its ns/op is finite.
	withNS := func(steps ...string) string {
		s := "Unit steps/s better=higher\ncpu: Test CPU\ncores: 2\n"
		for i, x := range steps {
			s += fmt.Sprintf("BenchmarkLadder/level=none 1 %d ns/op %s steps/s\n", 100000000+i*1000, x)
		}
		return s
	}
	finite := write("finite.txt", withNS("10", "10.1", "9.9", "10", "10.2", "9.8"))
	if code, _, stderr := runCLI("compare", finite, finite); code != 0 {
		t.Errorf("a file against itself: exit %d, %s", code, stderr)
	}
	xeon := write("xeon.txt", machine("Intel Xeon", two("10", "10.1", "9.9", "10", "10.2", "9.8")))
	epyc := write("epyc.txt", machine("AMD EPYC", two("5", "5.1", "4.9", "5", "5.2", "4.8")))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"empty new", []string{old, write("empty.txt", "")}, "empty.txt holds no benchmark results"},
		{"/dev/null", []string{old, os.DevNull}, "not a regular file"},
		{"a byte-order mark", []string{old, write("bom.txt", "\xef\xbb\xbf")}, "bom.txt holds no benchmark results"},
		{"random bytes", []string{old, write("random.bin", "\x00\x01\x02\xff\xfe garbage\n")}, "random.bin holds no benchmark results"},
		{"config lines only", []string{old, write("config.txt", "cpu: X\ndevice: emulated\n")}, "config.txt holds no benchmark results"},
		{"nothing in common", []string{old, write("other.txt", "cpu: Test CPU\ncores: 2\nBenchmarkOther 1 5 steps/s\n")}, "no metric could be compared"},
		{"no cpu line", []string{old, write("nocpu.txt", strings.Replace(lines("5", "5.1", "4.9", "5", "5.2", "4.8"), "cpu: Test CPU\n", "", 1))}, "new records no cpu: line"},
		{"no cores line", []string{write("nocores.txt", strings.Replace(lines("5", "5.1", "4.9", "5", "5.2", "4.8"), "cores: 2\n", "", 1)), old}, "old records no cores: line"},
		{"a Unit line against the table", []string{old, write("liar.txt", strings.Replace(lines("5", "5.1", "4.9", "5", "5.2", "4.8"), "better=higher", "better=lower", 1))}, "liar.txt: its Unit line declares steps/s better=lower"},
		{"half the benchmarks", []string{xeon, write("half.txt", machine("Intel Xeon", lines("10", "10.1", "9.9", "10", "10.2", "9.8")))}, "holds 1 of the 2 benchmarks"},
		{"another machine", []string{xeon, epyc}, `come from different machines (cpu "Intel Xeon" ≠ "AMD EPYC")`},
		{"headline NaN everywhere", []string{finite, write("nan.txt", withNS("NaN", "NaN", "NaN", "NaN", "NaN", "NaN"))},
			"nan.txt: BenchmarkLadder/level=none steps/s, the benchmark's headline metric, is missing or not finite in 6 of its results there"},
		{"threshold Inf", []string{"--threshold", "Inf", old, same}, "--threshold +Inf: want 0 to 1"},
		{"threshold 1", []string{"--threshold", "1", old, same}, "--threshold 1"},
		{"coverage 2", []string{"--min-coverage", "2", old, same}, "--min-coverage 2"},
	} {
		code, out, stderr := runCLI(append([]string{"compare"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and one line with %q", tc.name, code, out, stderr, tc.want)
		}
	}
	// Allowed across machines, the report says so first; each regression
	// has its own line.
	code, out, _ = runCLI("compare", "--cross-machine", xeon, epyc)
	if code != 1 || !strings.HasPrefix(out, "CROSS-MACHINE comparison") ||
		!strings.Contains(out, "FAIL: 2 regressions in 2 compared metrics:\n  BenchmarkLadder/level=none steps/s -50.00%\n  BenchmarkLadder/level=raw steps/s -50.00%\n") {
		t.Errorf("--cross-machine: exit %d:\n%s", code, out)
	}
	if code, out, _ := runCLI("baseline", xeon); code != 0 || out != filepath.FromSlash("results/baseline/emulated-intel-xeon-2c.txt")+"\n" {
		t.Errorf("baseline: exit %d, %q", code, out)
	}
}

// Issue 32, item 16: a ladder file is resumed only by the build that made
// it. Two builds are simulated with $HEADSPACE_COMMIT (a dirty tree
// edited between the interrupt and the resume gets another
// -dirty-<hash>); the second is refused with exit 2 naming both, and the
// file keeps the first's results alone. The build before the fix resumed
// it.
func TestLadderResumeRefusesAnotherBuild(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ladder.txt")
	args := append([]string{"ladder", "--levels", "device", "--workers", "1", "--transforms", "fast", "--out", out}, tinyLadder...)
	t.Setenv("HEADSPACE_COMMIT", "1a2b3c4-dirty-0a1b2c3d")
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HEADSPACE_COMMIT", "1a2b3c4-dirty-99999999")
	code, _, stderr := runCLI(append(args, "--count", "2")...)
	if want := `holds results of another build (commit "1a2b3c4-dirty-0a1b2c3d" in file, now "1a2b3c4-dirty-99999999")`; code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("resume by another build: exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	if after, _ := os.ReadFile(out); !bytes.Equal(after, before) {
		t.Errorf("the refused resume changed the file:\n%s", after)
	}
	t.Setenv("HEADSPACE_COMMIT", "1a2b3c4-dirty-0a1b2c3d")
	if code, _, stderr := runCLI(append(args, "--count", "2")...); code != 0 {
		t.Errorf("resume by the same build: exit %d: %s", code, stderr)
	}
}

// TestLadderInterrupted cancels a sweep as SIGINT does: it stops within a
// second, exits 130, prints the table of the runs that finished, and the
// file keeps them.
func TestLadderInterrupted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "int.txt")
	args := append([]string{"ladder", "--workers", "1", "--transforms", "fast", "--levels", "device,none", "--out", out}, tinyLadder...)
	args = append(args, "--count", "1000")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int)
	go func() { done <- run(ctx, args, &stdout, &stderr) }()
	// Wait for the first finished run in the file, then interrupt.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if rs, err := resultfile.Read(out); err == nil && len(rs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("no run finished in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweep did not stop within 5 s of the interrupt")
	}
	if code != 130 {
		t.Errorf("exit %d, want 130; stderr %q", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "level") || !strings.Contains(stdout.String(), "device") {
		t.Errorf("no partial table:\n%s", stdout.String())
	}
	if want := "headspace ladder: interrupted: the table shows the runs finished before it\n"; !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("stderr %q does not end with %q", stderr.String(), want)
	}
	rs, err := resultfile.Read(out)
	if err != nil || len(rs) == 0 {
		t.Errorf("the file lost its runs: %d, %v", len(rs), err)
	}
}

// TestCommandsRunTheRegistry checks the commands against the registry:
// every registered experiment is run by one command, or by the report of
// its document (reproduce: 003's step (e), LadderOnDisk, has no command);
// and register refuses a command of an unregistered experiment, or a
// name twice.
func TestCommandsRunTheRegistry(t *testing.T) {
	by := map[string][]string{}
	for _, c := range commands {
		for _, e := range c.Runs {
			by[e] = append(by[e], c.Name)
		}
	}
	reported := map[string]bool{}
	for _, d := range reproduce.Docs {
		reported[d.ID] = true
	}
	for _, r := range workloads.Registry {
		e := r.Experiment()
		switch cs := by[e.Name()]; {
		case len(cs) > 1:
			t.Errorf("%s is run by the commands %v: want one", e.Name(), cs)
		case len(cs) == 0 && !reported[e.Document()]:
			t.Errorf("%s is run by no command and is of no reported document", e.Name())
		}
	}
	if want := []string{"peer"}; fmt.Sprint(by["PeerLadder"]) != fmt.Sprint(want) {
		t.Errorf("PeerLadder is run by %v, want %v", by["PeerLadder"], want)
	}
	for _, tc := range []struct {
		name string
		c    cli.Command
		want string
	}{
		{"unregistered", cli.Command{Name: "nope", Runs: []string{"Unregistered"}}, "not in workloads.Registry"},
		{"twice", cli.Command{Name: "ladder"}, "registered twice"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("%s: panic %v, want %q", tc.name, r, tc.want)
				}
			}()
			register(tc.c)
		}()
		delete(commands, "nope")
	}
}
