//go:build peersenv && linux

// Tests of headspace peer --peers that run the real peers: they need the
// pinned peers env (make peers-env) and run from `make test-peers`
// (HEADSPACE_PEERS_PYTHON names its python; without it they fail).

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/workloads"
)

func peersPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv(realpeer.PythonEnv)
	if py == "" {
		t.Fatalf("%s is not set: run these tests with make test-peers (after make peers-env)", realpeer.PythonEnv)
	}
	return py
}

// chdirRepo runs the test from the repository's root, where the peers'
// scripts are (peers/real, as from a checkout).
func chdirRepo(t *testing.T) {
	t.Helper()
	wd, _ := os.Getwd()
	t.Chdir(filepath.Join(wd, "..", ".."))
}

// TestPeersEndToEnd: every peer and ours, one round at one worker on
// tiny images: exit 0, a record for each, the versions in the file, and
// --from rebuilds the report byte for byte.
func TestPeersEndToEnd(t *testing.T) {
	py := peersPython(t)
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	chdirRepo(t)
	dir := t.TempDir()
	res, rep, rep2 := filepath.Join(dir, "r.txt"), filepath.Join(dir, "r.md"), filepath.Join(dir, "r2.md")
	plot, plot2 := filepath.Join(dir, "plot"), filepath.Join(dir, "plot2")
	code, out, stderr := runCLI("peer", "--peers", "all", "--python", py, "--workers", "1", "--count", "1",
		"--raw-size", "64", "--crop", "32", "--batch", "4", "--batches", "2", "--out", res, "--report", rep, "--plot", plot)
	if code != 0 {
		t.Fatalf("peer --peers all: exit %d\n%s\n%s", code, out, stderr)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"peers: torch2,spdl,nodes-threads,nodes-procs,dali,tfdata", "torch2-torch: 2.", "spdl-spdl: 0.8.0",
		"nodes-threads-torchdata: 0.11.0", "dali-nvidia-dali: ", "tfdata-tensorflow: 2.", "peers-python: 3.11"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q", want)
		}
	}
	local, _ := realpeer.ParseNames("all")
	for _, p := range append([]realpeer.Peer{{Name: realpeer.Ours}}, local...) {
		if !strings.Contains(string(b), "\nBenchmarkRealPeer/peer="+p.Name+"/workers=1 2 ") {
			t.Errorf("result file has no run of %s:\n%s", p.Name, b)
		}
	}
	if !strings.Contains(string(b), "\nBenchmarkRealPeerLimit/workers=1 ") || !strings.Contains(string(b), "limit-bytes-per-sample: ") {
		t.Errorf("result file has no limit record or byte count:\n%s", b)
	}
	if code, out, stderr := runCLI("peer", "--from", res, "--report", rep2, "--plot", plot2); code != 0 {
		t.Fatalf("peer --from: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, f := range [][2]string{{rep, rep2}, {plot + ".png", plot2 + ".png"}, {plot + ".svg", plot2 + ".svg"}} {
		a, _ := os.ReadFile(f[0])
		c, _ := os.ReadFile(f[1])
		if len(a) == 0 || string(a) != string(c) {
			t.Errorf("--from's %s differs from the run's %s", f[1], f[0])
		}
	}
	if a, _ := os.ReadFile(rep); !strings.Contains(string(a), "**The limit.**") {
		t.Errorf("the report has no limit:\n%s", a)
	}
}

// TestPeersBucketEndToEnd: the bucket peers and ours on the same images
// in the pinned S3 server's bucket: exit 0, a run of each (litdata's
// too: its script adds allow_http to litdata's obstore client options for
// the server's plain http), ours with as many GETs in flight as the
// workers, the file rebuilt by --from.
func TestPeersBucketEndToEnd(t *testing.T) {
	py := peersPython(t)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_PROFILE", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "") // StartRemote sets them for this process; restored after
	}
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	chdirRepo(t)
	res := filepath.Join(t.TempDir(), "r.txt")
	code, out, stderr := runCLI("peer", "--peers", "all-bucket", "--python", py, "--workers", "2", "--count", "1",
		"--raw-size", "64", "--crop", "32", "--batch", "4", "--batches", "2", "--out", res)
	if code != 0 {
		t.Fatalf("peer --peers all-bucket: exit %d\n%s\n%s", code, out, stderr)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"peers: s3map,s3iter,streaming,litdata", "s3map-s3torchconnector: 1.", "streaming-streaming: 0.", "litdata-litdata: 0.", "2 GETs in flight",
		"\nBenchmarkRealPeer/peer=ours/workers=2 2 ", "\nBenchmarkRealPeer/peer=s3map/workers=2 2 ", "\nBenchmarkRealPeer/peer=s3iter/workers=2 2 ",
		"\nBenchmarkRealPeer/peer=streaming/workers=2 2 ", "\nBenchmarkRealPeer/peer=litdata/workers=2 2 "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result file lacks %q:\n%s", want, b)
		}
	}
	if code, out, stderr := runCLI("peer", "--from", res); code != 0 {
		t.Errorf("peer --from: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestPeersInterrupt: SIGINT during a peer's run ends headspace with exit
// 130, no process of any peer left, and an --out that holds the runs so
// far with every setting (it reads back with its report).
func TestPeersInterrupt(t *testing.T) {
	py := peersPython(t)
	bin := buildHeadspace(t)
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	chdirRepo(t)
	res := filepath.Join(t.TempDir(), "r.txt")
	cmd := exec.Command(bin, "peer", "--peers", "torch2,nodes-procs", "--python", py, "--workers", "2", "--count", "50",
		"--raw-size", "256", "--crop", "128", "--batch", "32", "--batches", "50", "--out", res)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for ours' first run: the next is a peer's.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "BenchmarkRealPeer/peer=ours/") {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	// Let the peer start its workers.
	peerPIDs := waitForChildren(t, cmd.Process.Pid)
	code, took := interrupt(t, cmd, "peer --peers")
	t.Logf("exit %d %v after SIGINT; the peer's processes were %v", code, took, peerPIDs)
	if code != 130 {
		t.Errorf("exit %d after SIGINT, want 130", code)
	}
	for _, pid := range peerPIDs {
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			t.Errorf("peer process %d still runs after headspace exited", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	r, err := readRealPeers(res)
	if err != nil {
		t.Fatalf("the interrupted run's --out does not read back: %v", err)
	}
	if b, _ := os.ReadFile(res); !strings.Contains(string(b), "\npartial: true\n") {
		t.Errorf("the interrupted run's --out is not marked partial:\n%s", b)
	}
	if len(r.Runs) == 0 || r.Runs[0].Peer != realpeer.Ours {
		t.Errorf("--out holds %+v, want ours' first run", r.Runs)
	}
}

// waitForChildren waits (at most 60 s) until headspace's child, the peer,
// has children of its own (its workers), and returns the pids of the
// peer and its descendants.
func waitForChildren(t *testing.T, pid int) []int {
	t.Helper()
	for range 600 {
		kids := descendants(pid)
		if len(kids) >= 2 {
			return kids
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the peer started no worker processes in 60 s")
	return nil
}

func descendants(pid int) []int {
	var out []int
	todo := []int{pid}
	for len(todo) > 0 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, task := range tasks {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + task.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				k, _ := strconv.Atoi(f)
				out = append(out, k)
				todo = append(todo, k)
			}
		}
	}
	return out
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// readRealPeers is the report of a --peers results file, its records
// decoded through workloads.RealPeerCodec, as peer --from reads it.
func readRealPeers(path string) (realpeer.Report, error) {
	recs, err := resultfile.Read(path)
	if err != nil {
		return realpeer.Report{}, err
	}
	o, err := workloads.RealPeerCodec.Decode(recs)
	if err != nil {
		return realpeer.Report{}, err
	}
	return realpeer.ReportOf(path, o.Config, o.Runs, o.Limits)
}
