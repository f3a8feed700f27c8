package workloads

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/harness/blocks/procloader"
	"github.com/headspace-bench/headspace/harness/engines/peer"
)

// TestMain serves as a process-mode loader worker when started as one
// (BenchmarkLoaders starts this test binary as its workers), and checks
// for leaked goroutines otherwise.
func TestMain(m *testing.M) {
	procloader.ServeIfSelfWorker()
	goleak.VerifyTestMain(m)
}

// size is the size the benchmarks run: Quick with -short.
func size() Size {
	if testing.Short() {
		return Quick
	}
	return Default
}

// benchEnv is the environment of the benchmarks: the emulated device at
// the document's step (QuickStep with -short), this test binary as the
// process workers, a temporary directory for data on disk.
func benchEnv(b *testing.B) Env {
	dev := DocumentDevice()
	if testing.Short() {
		dev.Step = QuickStep
	}
	return Env{Device: Emulated(dev), Worker: procloader.SelfWorker(), Dir: b.TempDir()}
}

// benchExperiment runs e once per iteration through the Experiment
// interface and reports every record it made as a sub-benchmark named as
// the record (without "Benchmark<Name>/" and the GOMAXPROCS suffix), so
// `go test -bench` prints what the result files hold.
func benchExperiment(b *testing.B, e Experiment, env Env) {
	b.Helper()
	var all [][]*benchResult
	for range b.N {
		recs, err := e.Run(context.Background(), env)
		if err != nil {
			b.Fatal(err)
		}
		if len(recs) == 0 {
			b.Fatal("no records")
		}
		var rs []*benchResult
		for _, r := range recs {
			rs = append(rs, &benchResult{name: subName(e, string(r.Name)), r: r})
		}
		all = append(all, rs)
	}
	b.StopTimer()
	for _, rs := range all {
		for _, r := range rs {
			b.Run(r.name, func(b *testing.B) { reportRecord(b, r.r) })
		}
	}
}

// subName is a record's name as a sub-benchmark of Benchmark<e.Name()>.
func subName(e Experiment, name string) string {
	name = strings.TrimPrefix(name, "Benchmark")
	name = strings.TrimPrefix(name, e.Name()+"/")
	if i := strings.LastIndexByte(name, '-'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	return name
}

// BenchmarkHeadspace runs the headspace analysis (document 000) once per
// iteration, with each transform implementation, and reports every
// step's time by phase and each stage's statistics.
func BenchmarkHeadspace(b *testing.B) {
	benchExperiment(b, Headspace{}.At(size()), benchEnv(b))
}

// BenchmarkLoaders measures goroutine and process workers at each worker
// count, then trains fed by each, with the metrics `headspace loaders`
// writes (ttfb-ns, samples/s, peak-rss-B, cpu-s; steps/s).
func BenchmarkLoaders(b *testing.B) {
	benchExperiment(b, Loaders{}.At(size()), benchEnv(b))
}

// BenchmarkSim simulates the post's three loaders with constant and
// varying loads over its seeds, reporting batches trained in the
// simulated time, the model's idle share and the mean queue.
func BenchmarkSim(b *testing.B) {
	benchExperiment(b, Sim{}.At(size()), benchEnv(b))
}

// BenchmarkWhatIf profiles the pipeline and checks the what-if model's
// predictions (package whatif), reporting the profile's costs and each
// checked point's measured and predicted steps/s.
func BenchmarkWhatIf(b *testing.B) {
	w := WhatIf{}.At(size()).(WhatIf)
	env := benchEnv(b)
	dev := DocumentDevice()
	dev.Step = w.Step
	env.Device = Emulated(dev)
	benchExperiment(b, w, env)
}

// BenchmarkPeer runs the document's PyTorch pipeline beside ours; the
// torch side needs /usr/bin/python3 with torch, torchvision, scipy and PIL
// (`make peer` installs them), and ours runs without.
func BenchmarkPeer(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", filepath.FromSlash(PeerScript))
	p := DefaultPeer(PeerPython, script)
	if testing.Short() {
		p = QuickPeer(PeerPython, script)
	}
	p.Config.Impls = []string{peer.Naive, peer.Fast}
	if _, err := exec.LookPath(p.Config.Peer.Python); err == nil && p.Config.Peer.Check(context.Background()) == nil {
		p.Config.Impls = peer.Impls
	} else {
		b.Logf("torch is not importable by %s: measuring ours alone (make peer installs it)", p.Config.Peer.Python)
	}
	benchExperiment(b, p, benchEnv(b))
}

// BenchmarkPeerLadder runs the document's training script beside our
// ladder at every level on the emulated device, alternating; the script
// needs /usr/bin/python3 with torch, torchvision, scipy and PIL (`make
// peer` installs them), and ours runs without.
func BenchmarkPeerLadder(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", filepath.FromSlash(peer.LadderScript))
	p := DefaultPeerLadder(PeerPython, script)
	if testing.Short() {
		p = QuickPeerLadder(PeerPython, script)
	}
	p.Config.Impls = []string{peer.Naive, peer.Fast}
	if _, err := exec.LookPath(p.Config.Peer.Python); err == nil && p.Config.Peer.Check(context.Background()) == nil {
		p.Config.Impls = peer.LadderImpls
	} else {
		b.Logf("torch is not importable by %s: measuring ours alone (make peer installs it)", p.Config.Peer.Python)
	}
	benchExperiment(b, p, benchEnv(b))
}

// TestExperiments checks the registry: every experiment named once, its
// sizes valid and of its own type, its settings keys spelled once.
func TestExperiments(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Experiments {
		if e.Name() == "" || seen[e.Name()] {
			t.Errorf("experiment %T: name %q empty or repeated", e, e.Name())
		}
		seen[e.Name()] = true
		for _, z := range []Size{Default, Quick} {
			x := e.At(z)
			if x.Name() != e.Name() || x.Document() != e.Document() {
				t.Errorf("%s at %d is %s (%s)", e.Name(), z, x.Name(), x.Document())
			}
			keys := map[string]bool{}
			for _, c := range x.Settings() {
				if keys[c.Key] {
					t.Errorf("%s: setting %s twice", e.Name(), c.Key)
				}
				keys[c.Key] = true
			}
			if v, ok := x.(interface{ Validate() error }); ok {
				if err := v.Validate(); err != nil {
					t.Errorf("%s at %d: %v", e.Name(), z, err)
				}
			}
		}
		if got, err := Lookup(strings.ToLower(e.Name())); err != nil || got.Name() != e.Name() {
			t.Errorf("Lookup(%q) = %v, %v", e.Name(), got, err)
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "Ladder") {
		t.Errorf("Lookup(nope): %v", err)
	}
}
