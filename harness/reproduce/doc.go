// Package reproduce runs the experiment of every document the project
// reproduces and writes one Markdown report per document: the document's
// numbers beside ours, as ratios, with figures, readable on GitHub without
// running anything. `headspace reproduce` and `make reproduce` drive it.
//
//	paths, err := reproduce.Run(ctx, []string{"003"}, reproduce.Options{Out: "notebooks"})
//
// # One file per document
//
// Each document has a file with its experiment and its report:
//
//   - doc000.go, SPDL's "Headspace Analysis" (seeds 000 and 001):
//     analysis.Run with the document 003's toy pipeline, once with naive
//     and once with fast transforms; the step time before and after the
//     cache, the headspace in ms and %, the hours saved over 200,000 steps
//     (the document's 30 ms ↔ 1.7 h), the verdict, the stage statistics and
//     the step-time plot, beside the document's 200 ms, 30 ms, 13% and 1.7 h.
//   - doc002.go, SPDL's thread-based loading (seed 002):
//     loadbench.Measure for goroutine and process workers at 1…32 workers,
//     repeated, so each point is a median; the time to first batch, the
//     throughput, peak RSS and CPU beside loadbench.Documented; the training
//     loop (train.Run) fed by each loader for the "2× training" claim;
//     loadbench.Plots for the two figures. It starts worker processes, so
//     Options.Worker must name the headspace binary.
//   - doc003.go, the caching ladder (seed 003), in four steps: (a) every
//     level with naive transforms at 1024×1024; (b) the transform fix, fast
//     transforms, levels raw and none; (c) the raw image shrunk to 256×256,
//     level none; (d) the uint8 transfer (loader.Config.Transfer "uint8",
//     the conversion run on the device) against float32, with the bytes per
//     upload from the device's counters and from the batch's shape. Every
//     level is reported as a ratio to the level device, ours and the
//     document's, because absolute steps/s on an A10G and on this machine's
//     emulated device do not compare. A timeline of one naive run at level
//     none shows the workers and the starved model.
//   - doc004.go, "Visualizing data loaders" (seed 004): sim.Run for the
//     post's three runs (2 s, 700 ms, 350 ms loads; 7 loaders; 100 ms steps;
//     30 s), each with constant and with varying load times over 20 seeds;
//     the three animations (GIF) and their timelines, beside the post's 98,
//     275 and 295 batches.
//
// # Measuring, then rendering
//
// A document's run function measures and reduces what it measured to a
// result struct of plain values (Result000, Result002, Result003,
// Result004: medians are taken at rendering, so the runs stay visible);
// the struct's WriteMarkdown renders it. Rendering is a plain function of
// those values, so its golden tests (testdata/*.golden; go test -update
// rewrites them) run with fixed inputs, and every sentence that states a
// finding is computed from the values rather than written in advance.
//
// Every report opens with a Header: the document, the command line, the
// machine (Machine: CPU model from /proc/cpuinfo, cores, GOMAXPROCS,
// OS/arch, Go version, git commit, date), the device and the run time; and
// ends with where ours differs from the document, and why.
//
// # Files
//
// Reports go to <Out>/<id>-<name>.md (000-headspace.md, 002-loaders.md,
// 003-caching-ladder.md, 004-sim.md) and figures to
// <Out>/figures/<id>-*.png|svg|gif, linked relative to the report, so the
// directory can be moved or browsed on GitHub as it is. Every file is
// written atomically (harness/atomicfile, directly or through the plotting
// packages), so an interrupted run leaves whole files.
//
// # Failure
//
// Run takes the documents in order and writes each report as soon as its
// experiment is done. The first failure stops the run with an error that
// names the document; the reports written before it stay.
//
// # Sizes and time
//
// The defaults follow the documents (1024×1024 images, batches of 256, the
// document's 290 ms step) with enough runs for medians: 7 minutes on a
// shared 2-core machine in all (003 4.5, 002 1.5, 000 1, 004 seconds).
// Options.Quick shrinks images, batches, steps, runs and seeds so that
// every code path runs in seconds; CI runs it.
//
// Progress goes to Options.Progress: a bar (harness/progress) on a
// terminal, one line per finished unit of work elsewhere.
package reproduce
