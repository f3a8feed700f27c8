// Package workloads is the home of every experiment headspace runs, one
// file each, named for what it is:
//
//   - ladder.go: the caching ladder of "A Caching Strategy for Identifying
//     Bottlenecks on the Data Input Pipeline" (document 003);
//   - ondisk.go: the ladder over data on disk, the document's raw-data
//     remedies (document 003, step e);
//   - caching.go: document 003's whole experiment, composed of the ladder
//     in four steps, the what-if model's profiles and step (e) on disk
//     (its report, but for the yardstick);
//   - headspace.go: SPDL's headspace analysis (documents 000, 001);
//   - loaders.go: goroutine against process workers, SPDL's thread-based
//     loading (document 002);
//   - sim.go: the loader simulation of "Visualizing data loaders"
//     (document 004);
//   - whatif.go: the what-if model's profile and its check;
//   - peer.go: the document's PyTorch pipeline beside ours;
//   - peerremote.go: `headspace peer --remote`, our loader beside the
//     boto3 peer on data in a bucket;
//   - realpeer.go: `headspace peer --peers`, our loader beside the real
//     loaders of the pinned peers env, same job, same images;
//   - spdlcache.go: `headspace peer --spdl-cache`, SPDL's CacheDataLoader
//     headspace beside headspace analyze's on one training script;
//   - ownloopladder.go: `headspace ladder -- COMMAND`, the caching
//     ladder on a user's own training script;
//   - whatifnode.go: `headspace whatif --accelerators`, the node model's
//     prediction from one rank alone, and its check;
//   - peerladder.go: the yardstick, the document's whole training script
//     beside our ladder at every level on the same emulated device
//     (document 003; `headspace peer --ladder`, and 003's report);
//   - cudacheck.go: `headspace cuda check`, the GPU's kernels against
//     their reference, its copy speeds and the Net's step;
//   - cudadecode.go: `headspace cuda decode`, nvJPEG's batched decode into
//     GPU memory.
//
// Each implements Experiment (experiment.go), the one narrow interface,
// after golang.org/x/benchmarks/sweet's common.Harness: its name and
// document, the settings its result file records, and Run, which
// returns benchmark-format records (golang.org/x/perf/benchfmt). Each file
// also holds the document's own numbers, and its two sizes, Default<Name>
// (the document's) and Quick<Name> (every code path in seconds). Each is
// registered once, in Registry (registry.go): its sizes, as data.
// Experiments, At, Sized and Lookup, the benchmark loop, package
// reproduce's reports and the commands' experiments all derive from that
// one list. The headspace commands,
// `headspace reproduce` (package reproduce) and the Go benchmark loop beside
// this file (BenchmarkExperiments, `go test -bench . ./workloads`; -short
// runs every experiment at its Quick size) all run the experiments through it, so every output
// path writes the same records. docs/extending.md says which files a new
// experiment touches.
//
// An experiment that is a command of its own owns its flags and its
// report: Flags, Prepare, Report and the other methods of its contract
// with the command layer (Commanded, Setup: command.go), in its file or
// in <name>report.go beside it (ladderreport.go also holds pipelineFlags,
// the flags every command that builds a pipeline shares), each numeric
// flag's bound declared beside it. The command itself, its constructor
// and usage text, is the command layer's (package command, above this
// one: CommandOf, the one parse → run → write → report path and --from);
// every experiment's command is made there, the own loop's modes
// (analyze, ladder and whatif -- COMMAND) handed to it by their
// TakeCommand as a Handoff.
//
// A command is thin on top: it parses its flags into an experiment's
// struct, runs it with an Env whose Result writes each record to the
// result file as it is made (and Done resumes one), and prints. The
// file's configuration is the machine's lines and the experiment's
// Settings, plus what is known only once it has run (the GPU's lines, a
// calibration), from the experiment's typed outcome. What it prints beyond the records' figures (an analysis's
// plot and stage statistics, a simulation's animation, the what-if
// model's profile) comes from a Typed experiment's Measure, its outcome
// as a value of its own type (every experiment is Typed: typed.go;
// one whose run is long passes it so far to its MeasureEach's typed
// callback, as it is made). So no command calls an engine's loop, and
// the records a command writes are the benchmark's. A caller
// that runs an experiment in parts says so in the specification, not by
// renaming records: Caching (003) runs each of its steps as a Ladder
// whose Under ("Ladder/step=a") puts its points' records under the step,
// and OnDisk runs each point of a case as a Ladder under
// "LadderOnDisk/<case>"; Ladder.PointName is the one naming rule.
//
// OwnLoopLadder, OwnLoopWhatIf and Tune run a training script
// (`-- COMMAND`): their sizes run the scripts of harness/ownloop/testdata
// with Debian's python3-torch (`make test-deps`), as Peer's run the
// document's PyTorch pipeline, so that BenchmarkExperiments runs their
// whole path; their documents are "", so `headspace reproduce` does not
// run them.
//
// CUDACheck and CUDADecode are registered as needing a GPU and so are
// not in Experiments: they need a real GPU, and the benchmark list must pass on
// a machine without one without faking a figure. `headspace cuda check`,
// `headspace cuda decode` and ci/gpu-suite.sh run them; their tests run
// their whole paths on package cuda's fake driver (and fake libnvjpeg),
// checking what Run makes, never a figure. RealPeer and SPDLCache are
// registered as needing the real peers' pinned PyPI environment (make
// peers-env) and so are not in Experiments either: `headspace peer
// --peers` and `--spdl-cache` and the peersenv-tagged tests run them.
package workloads
