package peer_test

import (
	"bytes"
	"context"
	"github.com/headspace-bench/headspace/harness/level"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// tinyLadder is a ladder a test runs in a moment: 64×64 raw images, crop
// 32, batches of 8, 2 measured steps of 5 ms.
func tinyLadder() peer.LadderSettings {
	dev := device.DefaultEmulated()
	dev.Step = 5 * time.Millisecond
	return peer.LadderSettings{Width: 64, Height: 64, Crop: 32, Batch: 8, Workers: 2, Steps: 2, Seed: 1, Device: dev}
}

func TestLadderArgs(t *testing.T) {
	dev := device.DefaultEmulated()
	dev.Step = 290 * time.Millisecond
	got := strings.Join(peer.DefaultLadderSettings(dev, 4).LadderArgs([]level.Level{level.Raw, level.None}), " ")
	want := "--device emulated --step 290ms --pinned-gbps 24 --pageable-gbps 12 --levels raw,none " +
		"--raw-size 1024x1024 --crop 256 --batch 256 --steps 9 --workers 4 --seed 1"
	if got != want {
		t.Errorf("LadderArgs = %q, want %q", got, want)
	}
}

func TestParseLadder(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		batch    int
		want     []peer.LadderMeasurement // nil: an error containing errText
		errText  string
	}{
		{name: "ok", batch: 8, in: "torch: 2.6\nBenchmarkTorchLadder/level=device/workers=2-16 7 1 ns/op 3.448 steps/s 27.6 samples/s\n" +
			"BenchmarkTorchLadder/level=none/workers=2 7 1 ns/op 0.5 steps/s 4.0 samples/s\n",
			want: []peer.LadderMeasurement{
				{Impl: peer.Torch, Level: level.Device, Workers: 2, Steps: 7, Batch: 8, StepsPerSec: 3.448},
				{Impl: peer.Torch, Level: level.None, Workers: 2, Steps: 7, Batch: 8, StepsPerSec: 0.5}}},
		{name: "no results", in: "torch: 2.6\n", errText: "no BenchmarkTorchLadder lines"},
		{name: "other benchmark", in: "BenchmarkPeer/impl=torch/workers=2 3 1 ttfb-ns 1 samples/s\n", errText: "BenchmarkPeer/impl=torch/workers=2: not a record of ladder.py (its benchmarks: TorchLadder)"},
		{name: "unknown level", in: "BenchmarkTorchLadder/level=disk/workers=2 3 1 steps/s\n", errText: "disk"},
		{name: "no level", in: "BenchmarkTorchLadder/workers=2 3 1 steps/s\n", errText: "without its key level"},
		{name: "no workers", in: "BenchmarkTorchLadder/level=raw 3 1 steps/s\n", errText: "without its key workers"},
		{name: "extra part", in: "BenchmarkTorchLadder/level=raw/workers=2/x=1 3 1 steps/s\n", errText: "with a part of its name more (/x=1)"},
		{name: "no steps/s", in: "BenchmarkTorchLadder/level=raw/workers=2 3 1 ns/op\n", errText: "no value in steps/s"},
		{name: "zero steps/s", in: "BenchmarkTorchLadder/level=raw/workers=2 3 0 steps/s\n", errText: "must be positive"},
		{name: "NaN", in: "BenchmarkTorchLadder/level=raw/workers=2 3 NaN steps/s\n", errText: "finite"},
		{name: "samples disagree", batch: 256, in: "BenchmarkTorchLadder/level=raw/workers=2 3 1 steps/s 100 samples/s\n", errText: "is not 1 steps/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := peer.ParseLadder(strings.NewReader(tc.in), "ladder.py", tc.batch)
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want one containing %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Results) != len(tc.want) {
				t.Fatalf("%d results, want %d", len(o.Results), len(tc.want))
			}
			for i, w := range tc.want {
				if o.Results[i] != w {
					t.Errorf("result %d = %+v, want %+v", i, o.Results[i], w)
				}
			}
			if o.Get("torch") != "2.6" {
				t.Errorf("configuration %v: want torch 2.6", o.Config)
			}
		})
	}
}

func FuzzParseLadder(f *testing.F) {
	f.Add([]byte("torch: 2\nBenchmarkTorchLadder/level=raw/workers=2-4 3 1 ns/op 1.5 steps/s 384 samples/s\n"))
	f.Add([]byte("BenchmarkTorchLadder/level=x/workers=-1 0 NaN steps/s\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := peer.ParseLadder(bytes.NewReader(b), "fuzz", 256)
		if err != nil {
			return
		}
		for _, m := range o.Results {
			if !(m.StepsPerSec > 0) || math.IsInf(m.StepsPerSec, 0) || m.Impl != peer.Torch || m.Workers < 0 {
				t.Errorf("accepted %+v", m)
			}
			if _, err := level.Parse(m.Level.String()); err != nil {
				t.Errorf("accepted level %d", m.Level)
			}
		}
	})
}

// TestLadderSweepAlternates runs the fake script beside our ladder at two
// levels, two rounds: every implementation once per level and round, the
// order turned by one from group to group, each on its own device level.
func TestLadderSweepAlternates(t *testing.T) {
	c := peer.LadderConfig{
		Peer:     peer.Peer{Python: sh(t), Script: "testdata/fakeladder.sh"},
		Settings: tinyLadder(),
		Levels:   []level.Level{level.None, level.Device},
		Count:    2,
	}
	var seen []string
	res, err := peer.LadderSweep(context.Background(), c, func(m peer.LadderMeasurement, sofar peer.LadderResult) error {
		seen = append(seen, m.BenchName())
		if len(sofar.Measurements) != len(seen) {
			t.Errorf("run %d: %d so far", len(seen), len(sofar.Measurements))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"impl=torch/level=device", "impl=naive/level=device", "impl=fast/level=device",
		"impl=naive/level=none", "impl=fast/level=none", "impl=torch/level=none",
		"impl=fast/level=device", "impl=torch/level=device", "impl=naive/level=device",
		"impl=torch/level=none", "impl=naive/level=none", "impl=fast/level=none",
	}
	if len(res.Measurements) != len(want) || len(seen) != len(want) {
		t.Fatalf("%d measurements, %d callbacks, want %d", len(res.Measurements), len(seen), len(want))
	}
	for i, w := range want {
		m := res.Measurements[i]
		if got := m.BenchName(); got != "BenchmarkPeerLadder/"+w+"/workers=2" || seen[i] != got {
			t.Errorf("run %d: %s, want BenchmarkPeerLadder/%s/workers=2", i, got, w)
		}
		if m.Steps != 2 || !(m.StepsPerSec > 0) {
			t.Errorf("run %d: %+v: want 2 steps and a throughput", i, m)
		}
	}
	rows := peer.SummarizeLadder(res.Measurements)
	if len(rows) != 2 || rows[0].Level != level.Device || rows[1].Level != level.None {
		t.Fatalf("rows %+v: want device, then none", rows)
	}
	if got := rows[1].Ratio[peer.Torch]; got != 1.0/3 {
		t.Errorf("torch none ÷ device = %v, want the fake script's 1/3", got)
	}
	// Our ladder's ratio is measured, so only its presence is checked
	// here: how close it comes to 1 is a timing, and timings belong in
	// benchmarks (on a busy machine it was seen outside 0.5–1.5).
	if got := rows[1].Ratio[peer.Fast]; !(got > 0) || math.IsInf(got, 0) {
		t.Errorf("fast none ÷ device = %v, want a positive finite ratio", got)
	}
	var table bytes.Buffer
	if err := peer.WriteLadderTable(&table, rows); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"torch ÷ device", "naive ÷ device", "fast ÷ device", "0.33", "3.000"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
	path := filepath.Join(t.TempDir(), "ladder.txt")
	write(t, path)(file(c.Settings.Config(), res.PeerConfig, res.Measurements))
	rs, err := resultfile.Read(path)
	if err != nil || len(rs) != len(want) {
		t.Fatalf("read back %d results, %v; want %d", len(rs), err, len(want))
	}
	cfg := map[string]string{}
	for _, kv := range rs[0].Config {
		cfg[kv.Key] = string(kv.Value)
	}
	if cfg["torch"] != "0.0.0-fake" || cfg["emulated-step"] != "5ms" || cfg["raw-size"] != "64x64" {
		t.Errorf("configuration %v: want the script's torch, our step and our raw size", cfg)
	}
}

func TestLadderSweepRefuses(t *testing.T) {
	good := peer.LadderConfig{Peer: peer.Peer{Python: sh(t), Script: "testdata/fakeladder.sh"}, Settings: tinyLadder()}
	for _, tc := range []struct {
		name  string
		edit  func(*peer.LadderConfig)
		error string
	}{
		{"encoded", func(c *peer.LadderConfig) { c.Levels = []level.Level{level.Encoded} }, "dataset on disk"},
		{"local", func(c *peer.LadderConfig) { c.Levels = []level.Level{level.Local} }, "level local needs a dataset on disk; the document's ladder has none"},
		{"impl", func(c *peer.LadderConfig) { c.Impls = []string{"jax"} }, "unknown implementation"},
		{"steps", func(c *peer.LadderConfig) { c.Settings.Steps = 0 }, "measured step"},
		{"workers", func(c *peer.LadderConfig) { c.Settings.Workers = 0 }, "workers"},
		{"step", func(c *peer.LadderConfig) { c.Settings.Device.Step = -1 }, "negative"},
		{"crop", func(c *peer.LadderConfig) { c.Settings.Crop = 128 }, "crop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			_, err := peer.LadderSweep(context.Background(), c, nil)
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("err = %v, want one containing %q", err, tc.error)
			}
		})
	}
}

// TestRunLadderChecksTheScript: a script that ran on another device or
// step, or printed the wrong levels, is refused.
func TestRunLadderChecksTheScript(t *testing.T) {
	p := peer.Peer{Python: sh(t), Script: "testdata/fakeladder.sh"}
	s := tinyLadder()
	if _, err := p.RunLadder(context.Background(), s, nil); err == nil {
		t.Error("no error without levels")
	}
	o, err := p.RunLadder(context.Background(), s, []level.Level{level.Raw})
	if err != nil || len(o.Results) != 1 || o.Results[0].StepsPerSec != 1.5 {
		t.Fatalf("RunLadder = %+v, %v: want the fake's 1.5 steps/s at raw", o, err)
	}
	bad := peer.Peer{Python: sh(t), Script: "testdata/fail.sh"}
	if _, err := bad.RunLadder(context.Background(), s, []level.Level{level.Raw}); err == nil {
		t.Error("a failing script gave no error")
	}
}

func TestCalibrate(t *testing.T) {
	p := peer.Peer{Python: sh(t), Script: "testdata/fakeladder.sh"}
	c, err := p.Calibrate(context.Background(), 6)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ratio != 0.5 || c.Step != 580*time.Millisecond {
		t.Errorf("calibration %+v: want ratio 0.5, step 580ms", c)
	}
	if v := (peer.Output{Config: c.Config}).Get("calibration-raw-samples/s"); v != "220.2" {
		t.Errorf("configuration %v: want the raw samples/s", c.Config)
	}
	// A script that prints no ratio is refused.
	noRatio := filepath.Join(t.TempDir(), "noratio.sh")
	if err := os.WriteFile(noRatio, []byte("echo 'torch: 2'\necho 'calibrated-step: 1s'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (peer.Peer{Python: sh(t), Script: noRatio}).Calibrate(context.Background(), 6); err == nil || !strings.Contains(err.Error(), "calibration-ratio") {
		t.Errorf("err = %v, want one naming calibration-ratio", err)
	}
}

// TestLadderScriptRunsEmulated runs the document's script on the emulated
// device at every level, tiny, and reads it as RunLadder does: five
// levels on the given step, no model.
func TestLadderScriptRunsEmulated(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch, torchvision, scipy, PIL").Run(); err != nil {
		t.Fatalf("%s cannot import torch, torchvision, scipy and PIL (make test installs them: TEST_DEBS): %v", python, err)
	}
	t.Setenv("PYTHONPYCACHEPREFIX", t.TempDir())
	p := peer.Peer{Python: python, Script: ladderScript}
	s := tinyLadder()
	o, err := p.RunLadder(context.Background(), s, []level.Level{level.Device, level.Host, level.Sample, level.Raw, level.None})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range o.Results {
		// A step of 5 ms bounds every level at 200 steps/s.
		if !(m.StepsPerSec > 0 && m.StepsPerSec < 1000/5*1.05) {
			t.Errorf("%s: %v steps/s, want at most the 5 ms step's 200", m.BenchName(), m.StepsPerSec)
		}
	}
	if o.Get("emulated-pinned-gbps") != "24" || o.Get("net-depth") != "" {
		t.Errorf("configuration %v: want the given bandwidth and no Net", o.Config)
	}
}

// TestDocumentModuleIsShared: the document's transforms are written once,
// in peers/torch/document.py, and both peers import them.
func TestDocumentModuleIsShared(t *testing.T) {
	for _, script := range []string{"../../peers/torch/dataloader.py", ladderScript} {
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		if !strings.Contains(src, "\nimport document") {
			t.Errorf("%s does not import document.py", script)
		}
		for _, def := range []string{"class RandomMask", "class ConvertColor", "class Scale", "convolve2d("} {
			if strings.Contains(src, def) {
				t.Errorf("%s defines %q itself; it belongs in document.py", script, def)
			}
		}
	}
}
