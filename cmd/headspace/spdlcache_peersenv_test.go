//go:build peersenv && linux

package main

import (
	"bufio"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/spdlcache"
	"github.com/headspace-bench/headspace/workloads"
)

// TestPeersSPDLCache: peer --spdl-cache on the example script, one round
// on tiny images: exit 0, one run of each side with both step times and
// a headspace that is finite and in [0, 1] (no timing threshold: only
// that the estimates exist and are shares), spdl's version in the file,
// and --from rebuilds the report byte for byte. A script whose
// --spdl-cache run crashes has that run recorded missing with the
// crash's last line, and ours kept.
func TestPeersSPDLCache(t *testing.T) {
	py := peersPython(t)
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	t.Setenv("HEADSPACE_QUIET_WAIT", "1s")
	chdirRepo(t)
	dir := t.TempDir()
	small := []string{"--python", py, "--workers", "2", "--count", "1", "--raw-size", "64", "--crop", "32", "--batch", "4", "--batches", "8", "--steps-after", "8"}
	res, rep, rep2 := filepath.Join(dir, "r.txt"), filepath.Join(dir, "r.md"), filepath.Join(dir, "r2.md")
	code, out, stderr := runCLI(append([]string{"peer", "--spdl-cache", "--out", res, "--report", rep}, small...)...)
	if code != 0 {
		t.Fatalf("peer --spdl-cache: exit %d\n%s\n%s", code, out, stderr)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"script-spdl: 0.8.0", "script-torch: 2.", "num-caches: 8", "return-caches-after: 8", "steps-after: 8",
		"script-command: examples/own-loop/train_cachedataloader.py --data DATA --workers 2 --batch 4 --crop 32 --epochs 1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
	config, runs, err := readSPDLCache(res)
	if err != nil {
		t.Fatal(err)
	}
	sides := map[string]int{}
	for _, r := range runs {
		sides[r.Side]++
		s := r.Share()
		if r.Missing != "" || r.Steps != 16 || r.Before <= 0 || r.After <= 0 || math.IsNaN(s) || s < 0 || s > 1 {
			t.Errorf("run %+v (headspace %g): want 16 steps, both step times and a headspace in [0, 1]", r, s)
		}
	}
	if sides[spdlcache.Ours] != 1 || sides[spdlcache.SPDL] != 1 {
		t.Errorf("runs by side %v, want one of each", sides)
	}
	rp := spdlcache.NewReport(config, runs)
	for _, s := range rp.Sides {
		if m := s.Share.Median; math.IsNaN(m) || m < 0 || m > 1 {
			t.Errorf("%s's estimate %g, want a share in [0, 1]", s.Name, m)
		}
	}
	if code, out, stderr := runCLI("peer", "--from", res, "--report", rep2); code != 0 {
		t.Fatalf("peer --from: exit %d\n%s\n%s", code, out, stderr)
	}
	a, _ := os.ReadFile(rep)
	c, _ := os.ReadFile(rep2)
	if len(a) == 0 || string(a) != string(c) {
		t.Errorf("--from's report differs from the run's:\n%s\n---\n%s", a, c)
	}

	// A script that crashes with --spdl-cache and runs the example
	// otherwise.
	crash := filepath.Join(dir, "crash.py")
	abs, _ := filepath.Abs(spdlcache.DefaultScript)
	if err := os.WriteFile(crash, []byte("import runpy, sys\n"+
		"if '--spdl-cache' in sys.argv:\n    raise RuntimeError('crashed on purpose')\n"+
		"sys.argv[0] = "+quote(abs)+"\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res2 := filepath.Join(dir, "crash.txt")
	code, out, stderr = runCLI(append([]string{"peer", "--spdl-cache", "--script", crash, "--out", res2}, small...)...)
	if code != 0 {
		t.Fatalf("peer --spdl-cache --script crash.py: exit %d\n%s\n%s", code, out, stderr)
	}
	b, _ = os.ReadFile(res2)
	for _, want := range []string{"\nmissing-spdl-cache-r1: the script with --spdl-cache: exit status 1: RuntimeError: crashed on purpose", "\nBenchmarkRealPeerHeadspace/peer=ours/workers=2 16 "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
}

// TestPeersSPDLCacheInterrupt: SIGINT while SPDL's side runs ends
// headspace with exit 130, none of the script's processes (its DataLoader
// workers) left, and an --out marked partial that holds ours' first run.
func TestPeersSPDLCacheInterrupt(t *testing.T) {
	py := peersPython(t)
	bin := buildHeadspace(t)
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	t.Setenv("HEADSPACE_QUIET_WAIT", "1s")
	chdirRepo(t)
	res := filepath.Join(t.TempDir(), "r.txt")
	cmd := exec.Command(bin, "peer", "--spdl-cache", "--python", py, "--workers", "2", "--count", "20",
		"--raw-size", "128", "--crop", "64", "--batch", "8", "--batches", "200", "--steps-after", "200", "--out", res)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Round 1 runs ours first; the next run is SPDL's side.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "BenchmarkRealPeerHeadspace/peer=ours/") {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	pids := waitForChildren(t, cmd.Process.Pid)
	code, took := interrupt(t, cmd, "peer --spdl-cache")
	t.Logf("exit %d %v after SIGINT; the script's processes were %v", code, took, pids)
	if code != 130 {
		t.Errorf("exit %d after SIGINT, want 130", code)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			t.Errorf("process %d still runs after headspace exited", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	_, runs, err := readSPDLCache(res)
	if err != nil {
		t.Fatalf("the interrupted run's --out does not read back: %v", err)
	}
	if b, _ := os.ReadFile(res); !strings.Contains(string(b), "\npartial: true\n") {
		t.Errorf("the interrupted run's --out is not marked partial:\n%s", b)
	}
	if len(runs) != 1 || runs[0].Side != spdlcache.Ours {
		t.Errorf("--out holds %+v, want ours' first run", runs)
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// readSPDLCache is a --spdl-cache results file's configuration lines and
// runs, its records decoded through workloads.SPDLCacheCodec, as peer
// --from reads them.
func readSPDLCache(path string) ([]resultfile.Config, []spdlcache.Run, error) {
	recs, err := resultfile.Read(path)
	if err != nil {
		return nil, nil, err
	}
	o, err := workloads.SPDLCacheCodec.Decode(recs)
	return o.Config, o.Runs, err
}
