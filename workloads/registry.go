package workloads

import (
	"fmt"
	"strings"

	"github.com/headspace-bench/headspace/harness/peer"
)

// Registered is one experiment of the Registry: its two sizes, as data
// (the functions that make them, so that no caller shares a slice of
// another's), and whether it needs a real GPU.
type Registered struct {
	// Default makes the experiment at the document's sizes.
	Default func() Experiment
	// Quick makes it at the size that runs every code path in seconds,
	// with no comparable numbers.
	Quick func() Experiment
	// GPU says it needs a real GPU: it is not in Experiments, so that
	// `go test -bench ./workloads` and `headspace reproduce` pass on
	// every machine (package doc).
	GPU bool
	// PeersEnv says it needs the pinned PyPI environment of the real
	// peers (make peers-env, ci/peers-env.sh): it is not in Experiments
	// either, for the same reason; the peersenv-tagged tests run it.
	PeersEnv bool
}

// Experiment is the registered experiment at its document's sizes: its
// name and document are the entry's.
func (r Registered) Experiment() Experiment { return r.Default() }

// At is the experiment at size z.
func (r Registered) At(z Size) Experiment {
	if z == Quick {
		return r.Quick()
	}
	return r.Default()
}

// Sizes registers an experiment by the functions that make its Default
// and Quick sizes: one line of the Registry.
func Sizes[E Experiment](def, quick func() E) Registered {
	return Registered{Default: func() Experiment { return def() }, Quick: func() Experiment { return quick() }}
}

// Registry is every experiment headspace runs, each registered once with
// its sizes, in the order `headspace reproduce` runs the documents'
// reports. Everything else is derived from it: Experiments, At and
// Sized, Lookup, the one benchmark loop (BenchmarkExperiments), the
// reports of package reproduce and Commands. Adding an experiment with
// its command is its file in this package and one line here, and its
// report a file in package reproduce (docs/extending.md).
var Registry = []Registered{
	Sizes(DefaultHeadspace, QuickHeadspace),
	Sizes(DefaultLoaders, QuickLoaders),
	Sizes(DefaultLadder, QuickLadder),
	Sizes(DefaultCaching, QuickCaching),
	Sizes(DefaultOnDisk, QuickOnDisk),
	Sizes(DefaultSim, QuickSim),
	Sizes(DefaultWhatIf, QuickWhatIf),
	Sizes(func() Peer { return DefaultPeer(PeerPython, PeerScript) }, func() Peer { return QuickPeer(PeerPython, PeerScript) }),
	Sizes(func() PeerLadder { return DefaultPeerLadder(PeerPython, peer.LadderScript) }, func() PeerLadder { return QuickPeerLadder(PeerPython, peer.LadderScript) }),
	Sizes(DefaultPeerRemote, QuickPeerRemote),
	Sizes(DefaultRemote, QuickRemote),
	Sizes(DefaultNode, QuickNode),
	Sizes(DefaultNodeWhatIf, QuickNodeWhatIf),
	Sizes(DefaultTune, QuickTune),
	Sizes(DefaultOwnLoopLadder, QuickOwnLoopLadder),
	peersEnv(Sizes(DefaultRealPeer, QuickRealPeer)),
	peersEnv(Sizes(DefaultSPDLCache, QuickSPDLCache)),
	Sizes(DefaultOwnLoopWhatIf, QuickOwnLoopWhatIf),
	Sizes(DefaultOwnLoopAnalyze, QuickOwnLoopAnalyze),
	gpu(Sizes(DefaultCUDACheck, QuickCUDACheck)),
	gpu(Sizes(DefaultCUDADecode, QuickCUDADecode)),
}

// gpu marks r as needing a real GPU.
func gpu(r Registered) Registered {
	r.GPU = true
	return r
}

// peersEnv marks r as needing the real peers' PyPI environment.
func peersEnv(r Registered) Registered {
	r.PeersEnv = true
	return r
}

// Portable says r runs on any machine: it needs no GPU and no PyPI
// environment.
func (r Registered) Portable() bool { return !r.GPU && !r.PeersEnv }

// Experiments lists every registered experiment that runs on any machine
// (the Registry without those that need a GPU or the peers env), at its
// document's sizes.
var Experiments = portable()

// portable is the Registry's experiments that run on any machine.
func portable() []Experiment {
	var es []Experiment
	for _, r := range Registry {
		if r.Portable() {
			es = append(es, r.Experiment())
		}
	}
	return es
}

// Find returns the registration of the experiment named name ("Ladder";
// any case).
func Find(name string) (Registered, error) {
	var names []string
	for _, r := range Registry {
		n := r.Experiment().Name()
		if strings.EqualFold(n, name) {
			return r, nil
		}
		names = append(names, n)
	}
	return Registered{}, fmt.Errorf("unknown experiment %q (want one of %s)", name, strings.Join(names, ", "))
}

// Lookup returns the experiment named name ("Ladder"; any case) at its
// document's sizes.
func Lookup(name string) (Experiment, error) {
	r, err := Find(name)
	if err != nil {
		return nil, err
	}
	return r.Experiment(), nil
}

// At is experiment e (any value of its type) at size z, from its
// registration. It panics on an experiment that is not registered: a
// programming error that TestExperiments would show.
func At(e Experiment, z Size) Experiment {
	r, err := Find(e.Name())
	if err != nil {
		panic(err)
	}
	return r.At(z)
}

// Sized is the registered experiment of type E at size z:
// Sized[Ladder](Quick) is QuickLadder().
func Sized[E Experiment](z Size) E {
	var e E
	return At(e, z).(E)
}
