package reproduce

import (
	"bytes"
	"context"
	"github.com/headspace-bench/headspace/harness/level"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// fixedYardstick is the document's code measured on a machine at half the
// document's speed, with its calibration.
func fixedYardstick() *Yardstick {
	return &Yardstick{
		Runs: map[level.Level][]float64{level.Device: {3.44, 3.45}, level.Host: {3.43, 3.44}, level.Sample: {3.0, 3.1},
			level.Raw: {0.9, 0.95}, level.None: {0.5, 0.52}},
		Torch:   "2.6.0",
		Command: "/usr/bin/python3 peers/torch/ladder.py --device emulated --step 290ms",
		Ratio:   0.5, Raw: 220.2, None: 113.9, DocRaw: 440.3, DocNone: 227.8, Step: 580 * time.Millisecond,
		CalibrationCommand: "/usr/bin/python3 peers/torch/ladder.py --device emulated --calibrate --calibration-batches 6",
	}
}

// TestYardstickGolden renders the four-column table and its reading from
// fixed values: measured and calibrated, measured without a calibration,
// within 15% of the document, and not measured; compared with
// testdata/003-yardstick-<case>.golden (go test -update rewrites them).
func TestYardstickGolden(t *testing.T) {
	within := fixedYardstick()
	within.Runs = map[level.Level][]float64{level.Device: {3.45}, level.Host: {3.35}, level.Sample: {3.2}, level.Raw: {1.75}, level.None: {0.9}}
	firstWave := fixedYardstick()
	firstWave.FirstWave = true
	uncalibrated := fixedYardstick()
	uncalibrated.CalibrationNotMeasured = "a quick run does not calibrate"
	for _, tc := range []struct {
		name string
		y    *Yardstick
		want []string
	}{
		{"calibrated", fixedYardstick(), []string{"does not come within 15%", "0.50× the document's host", "580ms", "ours naive runs"}},
		{"first-wave", firstWave, []string{"overstates this machine's speed"}},
		{"uncalibrated", uncalibrated, []string{"does not come within 15%", "did not calibrate (a quick run does not calibrate)"}},
		{"within", within, []string{"comes within 15% of the document's ratios at every level"}},
		{"not-measured", &Yardstick{NotMeasured: "the PyTorch peer is not installed: /usr/bin/python3: No module named 'torch'"},
			[]string{"| not measured |", "**The document's code was not measured in this run**", "No module named 'torch'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fixed003()
			r.Yardstick = tc.y
			var b bytes.Buffer
			m := &md{w: &b}
			r.writeYardstick(m)
			if m.err != nil {
				t.Fatal(m.err)
			}
			got := b.Bytes()
			path := filepath.Join("testdata", "003-yardstick-"+tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("differs from %s (go test -update rewrites it):\n%s", path, got)
			}
			for _, s := range append(tc.want, "| level | the document (A10G) | the document's code here (emulated device) | ours, naive | ours, fast |") {
				if !strings.Contains(string(got), s) {
					t.Errorf("lacks %q:\n%s", s, got)
				}
			}
			if bytes.Contains(got, []byte("%!")) || bytes.Contains(got, []byte("NaN")) {
				t.Errorf("a formatting mistake:\n%s", got)
			}
			checkTables(t, string(got))
		})
	}
}

// runQuick003 runs document 003 at --quick sizes with peer as the
// document's code, rebuilds it from its saved files and checks the
// rebuild is byte for byte the run; it returns the report and the result
// file's configuration.
func runQuick003(t *testing.T, p peer.Peer) (report string, config map[string]string) {
	t.Helper()
	dir := t.TempDir()
	paths, err := Run(context.Background(), []string{"003"}, Options{Quick: true, Out: dir, TorchPeer: p, Command: "headspace reproduce --quick --docs 003"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	again := t.TempDir()
	if _, err := Run(context.Background(), []string{"003"}, Options{From: filepath.Join(dir, "results"), Out: again}); err != nil {
		t.Fatal(err)
	}
	run, re := files(t, dir), files(t, again)
	for name, content := range run {
		if !bytes.Equal(re[name], content) {
			t.Errorf("%s: the rebuild differs from the run", name)
		}
	}
	rs, err := resultfile.Read(filepath.Join(dir, "results", "003-caching-ladder.txt"))
	if err != nil {
		t.Fatal(err)
	}
	config = map[string]string{}
	for _, c := range rs[0].Config {
		config[c.Key] = string(c.Value)
	}
	checkTables(t, string(b))
	return string(b), config
}

// TestRunQuick003WithTorch runs the document's own code beside ours: the
// four columns are filled, the result file holds its runs, the command
// and torch's version, and a quick run says it did not calibrate.
func TestRunQuick003WithTorch(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, torchvision, scipy, PIL").Run(); err != nil {
		t.Fatalf("%s cannot import torch, torchvision, scipy and PIL (make test installs them: TEST_DEBS): %v", python, err)
	}
	t.Setenv("PYTHONPYCACHEPREFIX", t.TempDir())
	report, config := runQuick003(t, peer.Peer{Python: python, Script: "../peers/torch/ladder.py"})
	if config[keyTorchLadder] != measuredValue || config["torch-version"] == "" || !strings.Contains(config["torch-ladder-command"], "--device emulated --step 20ms") {
		t.Errorf("configuration %v: want the document's code measured, its torch and its command", config)
	}
	if !strings.HasPrefix(config[keyCalibration], notMeasured) {
		t.Errorf("calibration %q in a quick run, want not measured", config[keyCalibration])
	}
	row := regexp.MustCompile("(?m)^\\| `none` \\| 0\\.26 \\| ([0-9.]+) \\| ([0-9.]+) \\| ([0-9.]+) \\|$").FindStringSubmatch(report)
	if row == nil {
		t.Fatalf("no four-column row for none with three measured ratios:\n%s", report)
	}
	for _, s := range []string{"The yardstick", "What the Go implementation gains", "ours naive runs"} {
		if !strings.Contains(report, s) {
			t.Errorf("report lacks %q", s)
		}
	}
}

// TestRunQuick003WithoutTorch: where the document's code cannot run the
// column says "not measured", the report says why, the file records it,
// and a file written before the column existed rebuilds saying so.
func TestRunQuick003WithoutTorch(t *testing.T) {
	report, config := runQuick003(t, peer.Peer{Python: "/nonexistent/python3", Script: "../peers/torch/ladder.py"})
	if !strings.HasPrefix(config[keyTorchLadder], notMeasured) || !strings.Contains(config[keyTorchLadder], "/nonexistent/python3") {
		t.Errorf("torch-ladder %q: want not measured, naming the interpreter", config[keyTorchLadder])
	}
	for _, s := range []string{"| `none` | 0.26 | not measured |", "**The document's code was not measured in this run**", "/nonexistent/python3", "make peer"} {
		if !strings.Contains(report, s) {
			t.Errorf("report lacks %q:\n%s", s, report)
		}
	}
	if strings.Contains(report, "What the Go implementation gains") {
		t.Error("the report reads a gain from a column that was not measured")
	}
}

// TestRebuild003BeforeTheYardstick: a result file written before the
// yardstick existed (no torch-ladder line) still rebuilds, saying so.
func TestRebuild003BeforeTheYardstick(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), []string{"003"}, Options{Quick: true, Out: dir, TorchPeer: peer.Peer{Python: "/nonexistent/python3", Script: "x.py"}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "results", "003-caching-ladder.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`(?m)^(torch-ladder|calibration): .*\n`).ReplaceAll(b, nil)
	if bytes.Equal(old, b) {
		t.Fatal("the file has no torch-ladder line to remove")
	}
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	paths, err := Run(context.Background(), []string{"003"}, Options{From: filepath.Join(dir, "results"), Out: out})
	if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "written before the document's code was run beside ours") {
		t.Errorf("the rebuild does not say the column predates the file:\n%s", report)
	}
}
