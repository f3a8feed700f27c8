// Package peer sets headspace's loader beside the document's own PyTorch
// pipeline, run by PyTorch, on the same machine in the same run.
//
// # The peer
//
// peers/torch/dataloader.py is the toy pipeline of "A Caching Strategy for
// Identifying Bottlenecks on the Data Input Pipeline" as the document
// writes it: FakeDataset (np.random.randint raw image, Image.fromarray),
// T.PILToTensor, T.RandomCrop, RandomMask (ratio 0.25, scipy convolve2d
// 4-neighbour dilation), ConvertColor (3×3 matmul) and Scale, loaded by
// torch.utils.data.DataLoader with num_workers worker processes (pin_memory
// off: there is no GPU to copy to). It takes the settings from its argv
// (Settings.Args) and prints "key: value" configuration lines (Python,
// torch, torchvision, numpy, scipy and Pillow versions, …) and one Go
// benchmark-format line per worker count:
//
//	BenchmarkPeer/impl=torch/workers=2 6 1.38e+10 ttfb-ns 73.4 samples/s 34.7 cpu-s
//
// Parse reads that output with golang.org/x/perf/benchfmt, each line's
// name by Layout and its figures by MeasurementOf, the layout and the
// decoder package workloads' PeerCodec is built from, so that a live
// line and a results file's record decode alike; Peer.Run starts
// the script as a child process (in its own process group, killed as a
// group when the context is cancelled, so no DataLoader worker outlives
// it) and parses what it printed; its failures are *RunError values that
// name the script and the worker count and carry the script's stderr.
// Peer.Check runs the script with --check, which imports everything and
// prints the configuration lines: a missing interpreter or module is
// reported as ErrNotInstalled.
//
// # Same definitions on both sides
//
// Both sides are measured as harness/loadbench measures a loader, with the
// same units:
//
//   - ttfb-ns, time to first batch: ours from the start of the loader's
//     construction (loader.New starts its goroutines) to the first
//     batch; torch's from creating the DataLoader's iterator (which starts
//     its worker processes; building the DataLoader object before it is
//     bookkeeping) to the first batch;
//   - samples/s, post-initialisation throughput: the samples of batches
//     2..Batches over the time from the first batch to the last;
//   - cpu-s, CPU seconds of every process involved.
//
// Both load exactly Settings.Batches batches and then end, both drop every
// batch as soon as it arrives (no training step), both request two batches
// ahead per worker (DataLoader's prefetch_factor, ladder's Prefetch).
// "Workers" means DataLoader's num_workers on the torch side and the
// number of goroutines per stage (load, transform, collate) on ours, at
// level none with the naive and the fast transforms.
//
// # Alternation
//
// Sweep measures, for each worker count and each of Config.Count rounds,
// every implementation once, back to back, the order rotated from one
// round to the next, so that all implementations see the same state of a
// shared machine. Summarize takes the median of each (workers,
// implementation) point and its ratio to torch; Targets are the project's
// goals (fast ≥ 10× torch's samples/s, naive ≥ 2×), judged per worker
// count by Row.Met.
//
// # The ladder beside the document's script
//
// LadderSweep sets training loops side by side instead of loaders:
// peers/torch/ladder.py (LadderScript), the document's whole script at
// each caching level with --device emulated, and our ladder.Run, on the
// same emulated device (LadderSettings.Device: its step and bandwidths
// are passed to the script as arguments, so headspace is their one
// source), alternating level by level as Sweep alternates worker counts.
// ParseLadder reads the script's BenchmarkTorchLadder lines; RunLadder
// checks they are the levels, workers, steps and step asked for;
// SummarizeLadder divides every level by the same implementation's device
// level. Calibrate runs the script's --calibrate: the document's
// DataLoader at levels raw and none on this machine against the
// document's 1.72 and 0.89 steps/s × 256, and the 290 ms step scaled by
// that ratio. docs/yardstick.md describes it.
//
// # Output
//
// WriteMarkdown writes the report (machine, command, settings, table with
// ratios and targets, figures); Plots draws samples/s and time to first
// batch against workers, one line per implementation, as PNG and SVG;
// FileConfig and each run's Benchmark record give a run's result file
// content, which package driver writes (atomically, in benchmark
// format); workloads' codecs read a file's records back, and
// RemoteReportOf its report from them.
package peer
