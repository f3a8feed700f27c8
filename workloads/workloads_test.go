package workloads

import (
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/headspace-bench/headspace/harness/driver"
	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/procloader"
)

// TestMain serves as a process-mode loader worker when started as one
// (BenchmarkLoaders starts this test binary as its workers), and checks
// for leaked goroutines otherwise.
func TestMain(m *testing.M) {
	procloader.ServeIfSelfWorker()
	node.ServeIfSelfRank()
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
	exe, args, env := node.SelfRank()
	return Env{Device: Emulated(dev), Worker: procloader.SelfWorker(), Rank: procloader.Options{Exe: exe, Args: args, Env: env}, Dir: b.TempDir()}
}

// benchExperiment runs e once per iteration through the Experiment
// interface, as a command does (driver.Run, keeping no file), and
// reports every record it made as a sub-benchmark named as
// the record (without "Benchmark<Name>/" and the GOMAXPROCS suffix), so
// `go test -bench` prints what the result files hold.
func benchExperiment(b *testing.B, e Experiment, env Env) {
	b.Helper()
	var all [][]*benchResult
	for range b.N {
		o, err := driver.Run(context.Background(), Job(e, env), driver.Output{})
		if err != nil {
			b.Fatal(err)
		}
		recs := o.Records
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

// BenchmarkExperiments runs every experiment of Experiments (the
// Registry's, but those that need a GPU) once per iteration through the
// Experiment interface, at its Quick size with -short and its Default
// size without, and reports every record it made as a sub-benchmark
// named as the record: BenchmarkExperiments/Ladder/level=raw/…, so
// `go test -short -bench . ./workloads` prints what the result files
// hold. A new experiment is in it once registered; only what this test
// binary must adapt is by type (benchReady).
func BenchmarkExperiments(b *testing.B) {
	for _, e := range Experiments {
		b.Run(e.Name(), func(b *testing.B) {
			b.Setenv("HEADSPACE_CACHE", b.TempDir())
			env := benchEnv(b)
			x := benchReady(b, At(e, size()), &env)
			benchExperiment(b, x, env)
		})
	}
}

// benchReady adapts experiment e to this test binary, whose working
// directory is this package's: the what-if model's check runs on a
// device at its own step, and the peers' scripts are found from the
// module's root, measuring ours alone where torch is not importable
// (`make peer` installs it); tune's and the own-loop ladder's and
// what-if's scripts too.
func benchReady(b *testing.B, e Experiment, env *Env) Experiment {
	switch x := e.(type) {
	case WhatIf:
		dev := DocumentDevice()
		dev.Step = x.Step
		env.Device = Emulated(dev)
	case Peer:
		x.Config.Peer.Script = fromRoot(x.Config.Peer.Script)
		x.Config.Impls = withTorch(b, x.Config.Peer, peer.Impls)
		return x
	case PeerLadder:
		x.Config.Peer.Script = fromRoot(x.Config.Peer.Script)
		x.Config.Impls = withTorch(b, x.Config.Peer, peer.LadderImpls)
		return x
	case PeerRemote:
		x.Script = fromRoot(x.Script)
		if impls := withTorch(b, peer.Peer{Python: x.Python, Script: x.Script}, []string{peer.Fast, peer.Torch}); !slices.Contains(impls, peer.Torch) {
			x.Impls = []string{peer.Fast}
		}
		return x
	case OwnLoopLadder:
		x.Argv = append([]string{x.Argv[0], fromRoot(x.Argv[1])}, x.Argv[2:]...)
		return x
	case OwnLoopWhatIf:
		x.Argv = append([]string{x.Argv[0], fromRoot(x.Argv[1])}, x.Argv[2:]...)
		return x
	case OwnLoopAnalyze:
		x.Argv = append([]string{x.Argv[0], fromRoot(x.Argv[1])}, x.Argv[2:]...)
		return x
	case Tune:
		x.Argv = append([]string{x.Argv[0], fromRoot(x.Argv[1])}, x.Argv[2:]...)
		return x
	}
	return e
}

// fromRoot is a path relative to the module's root, from this package.
func fromRoot(path string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", filepath.FromSlash(path))
}

// withTorch is impls where p's Python imports torch, and ours alone
// (naive and fast) where it does not.
func withTorch(b *testing.B, p peer.Peer, impls []string) []string {
	if _, err := exec.LookPath(p.Python); err == nil && p.Check(context.Background()) == nil {
		return impls
	}
	b.Logf("torch is not importable by %s: measuring ours alone (make peer installs it)", p.Python)
	return []string{peer.Naive, peer.Fast}
}

// TestExperiments checks the registry: every experiment named once, its
// sizes valid and of its own type, its settings keys spelled once;
// Experiments is the registry without the GPU's and the peers env's.
func TestExperiments(t *testing.T) {
	seen := map[string]bool{}
	var portable []string
	for _, r := range Registry {
		e := r.Experiment()
		if e.Name() == "" || seen[e.Name()] {
			t.Errorf("experiment %T: name %q empty or repeated", e, e.Name())
		}
		seen[e.Name()] = true
		if !r.GPU && !r.PeersEnv {
			portable = append(portable, e.Name())
		}
		for _, z := range []Size{Default, Quick} {
			x := r.At(z)
			if x.Name() != e.Name() || x.Document() != e.Document() || reflect.TypeOf(x) != reflect.TypeOf(e) {
				t.Errorf("%s at %d is %T %s (%s)", e.Name(), z, x, x.Name(), x.Document())
			}
			if a := At(e, z); !reflect.DeepEqual(a, x) {
				t.Errorf("At(%s, %d) = %+v, want the registry's %+v", e.Name(), z, a, x)
			}
			keys := map[string]bool{}
			for _, c := range x.Settings() {
				if keys[c.Key] {
					t.Errorf("%s: setting %s twice", e.Name(), c.Key)
				}
				keys[c.Key] = true
			}
			// A GPU experiment's sizes need the caller's input (the
			// JPEGs of CUDADecode); its own test validates them.
			if v, ok := x.(interface{ Validate() error }); ok && !r.GPU {
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
	var names []string
	for _, e := range Experiments {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, portable) {
		t.Errorf("Experiments %v, want the registry without the GPU's and the peers env's %v", names, portable)
	}
	if l := Sized[Ladder](Quick); !reflect.DeepEqual(l, QuickLadder()) {
		t.Errorf("Sized[Ladder](Quick) = %+v, want QuickLadder()", l)
	}
}
