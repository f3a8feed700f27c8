package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePeer is a stand-in for peers/torch/dataloader.py, run by /bin/sh: it
// takes the same flags and prints a result per worker count.
const fakePeer = `#!/bin/sh
workers=1 batches=2
while [ $# -gt 0 ]; do
	case $1 in
	--workers) workers=$2; shift 2 ;;
	--batches) batches=$2; shift 2 ;;
	--check) echo "torch: 0.0.0-fake"; exit 0 ;;
	--*) shift 2 ;;
	*) exit 2 ;;
	esac
done
echo "python: 3.0.0-fake"
echo "torch: 0.0.0-fake"
for w in $(echo "$workers" | tr , ' '); do
	echo "BenchmarkPeer/impl=torch/workers=$w $batches ${w}00000000 ttfb-ns 0.5 samples/s 1.5 cpu-s"
done
`

// tinyPeer is a comparison small enough for -race.
var tinyPeer = []string{"--raw-size", "32x24", "--crop", "8", "--batch", "4", "--batches", "3", "--count", "1"}

func writeFakePeer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-peer.sh")
	if err := os.WriteFile(path, []byte(fakePeer), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPeerBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"peer", "--workers", "0"}, "--workers: 0 must be positive"},
		{[]string{"peer", "--impls", "jax"}, `--impls: unknown "jax"`},
		{[]string{"peer", "--count", "0"}, "--count 0: want 1 to 100000"},
		{[]string{"peer", "--batches", "1"}, "--batches 1"},
		{[]string{"peer", "--batch", "0"}, "--batch 0: want 1 to 65536"},
		{[]string{"peer", "--crop", "7"}, "crop 7 must be even"},
		{[]string{"peer", "--crop", "2048"}, "larger than the 1024x1024"},
		{[]string{"peer", "--raw-size", "big"}, "is not N or WxH"},
		{[]string{"peer", "--seed", "-1"}, "invalid value"},
		{[]string{"peer", "extra"}, `unexpected argument "extra"`},
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

func TestPeerWithoutTorchSaysHowToInstallIt(t *testing.T) {
	noModule := filepath.Join(t.TempDir(), "no-torch.sh")
	if err := os.WriteFile(noModule, []byte("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"peer", "--python", "/nonexistent/python3"},
		{"peer", "--python", "/bin/sh", "--script", noModule},
	} {
		code, _, stderr := runCLI(args...)
		if code != 1 || !strings.Contains(stderr, "run `make peer`, which installs python3-torch") ||
			strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q: want 1 and one line saying to run make peer", args, code, stderr)
		}
	}
	code, _, stderr := runCLI("peer", "--python", "/bin/sh", "--script", "nonexistent.py")
	if code != 1 || !strings.Contains(stderr, "peer script nonexistent.py does not exist") {
		t.Errorf("missing script: exit %d, stderr %q", code, stderr)
	}
}

func TestPeerWritesTableResultsReportAndPlots(t *testing.T) {
	script := writeFakePeer(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "results", "peer.txt")
	report := filepath.Join(dir, "notebooks", "peer.md")
	prefix := filepath.Join(dir, "notebooks", "figures", "peer")
	args := append([]string{"peer", "--python", "/bin/sh", "--script", script, "--workers", "1,2",
		"--out", out, "--report", report, "--plot", prefix}, tinyPeer...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"samples/s ÷ torch", "naive", "fast", "torch", "≥ 10×", "results: " + out, "report: " + report} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// One progress line per run: 2 worker counts × 3 implementations.
	if n := strings.Count(stderr, "BenchmarkPeer/"); n != 6 {
		t.Errorf("stderr has %d progress lines, want 6:\n%s", n, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"torch: 0.0.0-fake", "rounds: 1", "raw-size: 32x24", "Unit samples/s better=higher",
		"BenchmarkPeer/impl=naive/workers=1 ", "BenchmarkPeer/impl=fast/workers=2 ", "BenchmarkPeer/impl=torch/workers=2 3 2e+08 ttfb-ns 0.5 samples/s 1.5 cpu-s"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("results lack %q:\n%s", want, data)
		}
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| PyTorch | torch 0.0.0-fake,", "headspace peer --python /bin/sh", "| 2 | torch | 0.5 | 0.200 | 1.50 |",
		"](figures/peer-throughput.png)", "](figures/peer-ttfb.png)", "fast", "**met**"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, name := range []string{"throughput", "ttfb"} {
		for _, ext := range []string{".png", ".svg"} {
			if st, err := os.Stat(prefix + "-" + name + ext); err != nil || st.Size() == 0 {
				t.Errorf("plot %s%s: %v", name, ext, err)
			}
		}
	}
}

func TestPeerOursOnlyNeedsNoTorch(t *testing.T) {
	args := append([]string{"peer", "--python", "/nonexistent/python3", "--impls", "fast", "--workers", "2"}, tinyPeer...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 || !strings.Contains(stdout, "fast") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// peer --from rebuilds from the results file of a run the report, the
// table and the plots that run wrote, byte for byte.
func TestPeerFromRebuildsTheRunsReport(t *testing.T) {
	script := writeFakePeer(t)
	dir, again := t.TempDir(), t.TempDir()
	out := filepath.Join(dir, "results", "peer.txt")
	report := filepath.Join(dir, "notebooks", "peer.md")
	prefix := filepath.Join(dir, "notebooks", "figures", "peer")
	args := append([]string{"peer", "--python", "/bin/sh", "--script", script, "--workers", "1,2",
		"--out", out, "--report", report, "--plot", prefix}, tinyPeer...)
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	report2 := filepath.Join(again, "notebooks", "peer.md")
	prefix2 := filepath.Join(again, "notebooks", "figures", "peer")
	code, stdout2, stderr := runCLI("peer", "--from", out, "--report", report2, "--plot", prefix2)
	if code != 0 {
		t.Fatalf("--from: exit %d, stderr %q", code, stderr)
	}
	table := func(s string) string { // the table, without the lines naming files
		s, _, _ = strings.Cut(s, "results: ")
		s, _, _ = strings.Cut(s, "plot: ")
		return strings.TrimSpace(s)
	}
	if table(stdout2) != table(stdout) {
		t.Errorf("--from prints\n%s\nthe run printed\n%s", table(stdout2), table(stdout))
	}
	same := func(a, b string) {
		t.Helper()
		x, errA := os.ReadFile(a)
		y, errB := os.ReadFile(b)
		if errA != nil || errB != nil {
			t.Fatalf("%v, %v", errA, errB)
		}
		if string(x) != string(y) {
			t.Errorf("%s differs from the run's %s:\n%s\n---\n%s", b, a, x, y)
		}
	}
	same(report, report2)
	for _, name := range []string{"-throughput.png", "-throughput.svg", "-ttfb.png", "-ttfb.svg"} {
		same(prefix+name, prefix2+name)
	}
}

func TestPeerFromBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.txt") // a file from before peer --out recorded distro and command
	if err := os.WriteFile(old, []byte("cpu: x\ncores: 2\ngo: go1\ncommit: abc\nraw-size: 8x8\ncrop: 4\nbatch: 2\nbatches: 2\nseed: 1\nrounds: 1\n\n"+
		"BenchmarkPeer/impl=torch/workers=1 2 1e+08 ttfb-ns 0.5 samples/s 1.5 cpu-s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"peer", "--from", old, "--workers", "1"}, "--from rebuilds from a saved file; --workers only apply to a run that measures"},
		{[]string{"peer", "--from", filepath.Join(dir, "none.txt")}, "no such file"},
		{[]string{"peer", "--from", old}, "no distro, command line"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// The committed peer reports are what peer --from writes from their
// committed result files: edit the renderer or the file, never the report.
func TestCommittedPeerReportsRebuild(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, tc := range []struct{ results, report, plot string }{
		{"results/peer-emulated.txt", "notebooks/peer.md", "notebooks/figures/peer"},
		{"results/peer-ondisk-jpeg-emulated.txt", "notebooks/peer-ondisk-jpeg.md", ""},
		{"results/peer-remote-cross-region.txt", "notebooks/peer-remote.md", ""},
		{"results/peers-emulated.txt", "notebooks/peers.md", "notebooks/figures/peers"},
		{"results/peers-bucket-emulated.txt", "notebooks/peers-bucket.md", ""},
	} {
		out := t.TempDir()
		report := filepath.Join(out, tc.report)
		args := []string{"peer", "--from", filepath.Join(root, tc.results), "--report", report}
		if tc.plot != "" {
			args = append(args, "--plot", filepath.Join(out, tc.plot))
		}
		if code, _, stderr := runCLI(args...); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		files := []string{tc.report}
		suffixes := []string{"-throughput.png", "-throughput.svg", "-ttfb.png", "-ttfb.svg"}
		if strings.HasPrefix(tc.results, "results/peers-") {
			suffixes = []string{".png", ".svg"} // --peers: one plot, BASE.png and BASE.svg
		}
		if tc.plot != "" {
			for _, s := range suffixes {
				files = append(files, tc.plot+s)
			}
		}
		for _, f := range files {
			got, err := os.ReadFile(filepath.Join(out, f))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from its rebuild from %s (regenerate: headspace peer --from %s --report %s%s)",
					f, tc.results, tc.results, tc.report, map[bool]string{true: " --plot " + tc.plot}[tc.plot != ""])
			}
		}
	}
}
