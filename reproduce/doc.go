// Package reproduce runs the experiment of every document the project
// reproduces, saves its measurements, and writes one Markdown report per
// document from them: the document's numbers beside ours, as ratios, with
// figures, readable on GitHub without running anything. `headspace
// reproduce` and `make reproduce` drive it.
//
//	paths, err := reproduce.Run(ctx, []string{"003"}, reproduce.Options{Out: "notebooks"})
//	paths, err = reproduce.Run(ctx, nil, reproduce.Options{Out: "notebooks", From: "notebooks/results"})
//
// # One file per document
//
// Each document has a file with its report: a report(Doc{…}) call, in
// the file's init, names the document, the registered experiment it is
// of (workloads.Registry, whose order is the reports'), how it measures
// and how it renders; Docs, IDs and Lookup are derived from those calls,
// so no other list names a report:
//
//   - doc000.go, SPDL's "Headspace Analysis" (seeds 000 and 001):
//     workloads.Headspace (analysis.Run) with the document 003's toy
//     pipeline, once with naive and once with fast transforms; the step time before and after the
//     cache, the headspace in ms and %, the hours saved over 200,000 steps
//     (the document's 30 ms ↔ 1.7 h), the verdict, the stage statistics and
//     the step-time plot, beside the document's 200 ms, 30 ms, 13% and 1.7 h.
//   - doc002.go, SPDL's thread-based loading (seed 002):
//     workloads.Loaders for goroutine and process workers at 1…32 workers,
//     repeated, so each point is a median; the time to first batch, the
//     throughput, peak RSS and CPU beside loadbench.Documented; the training
//     loop (train.Run) fed by each loader for the "2× training" claim;
//     loadbench.Plots for the two figures. It starts worker processes, so
//     Options.Worker must name the headspace binary.
//   - doc003.go, the caching ladder (seed 003), workloads.Caching: the
//     ladder in four steps (workloads.CachingSteps): (a) every
//     level with naive transforms at 1024×1024; (b) the transform fix, fast
//     transforms, every level; (c) the raw image shrunk to 256×256,
//     levels device and none; (d) the uint8 transfer (loader.Config.Transfer "uint8",
//     the conversion run on the device) against float32, with the bytes per
//     upload from the device's counters and from the batch's shape. Every
//     level is reported as a ratio to the level device, ours and the
//     document's, because absolute steps/s on an A10G and on this machine's
//     emulated device do not compare. A timeline of one naive run at level
//     none shows the workers and the starved model.
//   - doc004.go, "Visualizing data loaders" (seed 004): workloads.Sim for the
//     post's three runs (2 s, 700 ms, 350 ms loads; 7 loaders; 100 ms steps;
//     30 s), each with constant and with varying load times over 20 seeds;
//     the three animations (GIF) and their timelines, beside the post's 98,
//     275 and 295 batches.
//
// # Measuring, saving, rendering
//
// A document's measure function runs its experiment through the
// workloads.Experiment interface (003's is the composite
// workloads.Caching: a workloads.Ladder per step, its records named under
// the step, "Ladder/step=a", the what-if profiles and workloads.OnDisk
// for step (e); the yardstick, the document's own code, is the report's,
// doc003torch.go) and returns benchmark-format records and the settings
// they were measured with. Run writes them through driver.Run to
// <Out>/results/<id>-<name>.txt: configuration lines first (the
// document, the machine, the device, the command, quick, the elapsed
// time: headerConfig; then every setting) and one line per run. The
// render function reads that file back and builds the report and its
// figures from it alone, so a run and a rebuild (Options.From) cannot
// differ: a rebuild writes byte for byte what the run wrote (the PNG, SVG
// and GIF encoders are deterministic; TestRunQuickEveryDocument compares
// every file). A saved file that is missing, unreadable, another
// document's or lacking a setting is a *FileError that names it.
//
// Some figures and tables need more than numbers. 003 saves, beside the
// result file as they are made, the timeline of one run
// (003-timeline-none.json, a timeline.Timeline) and the what-if model's
// profiles of steps (a) and (b) (003-model.json, whatif.Profile by
// transform implementation). The 004 animations and timelines come from
// the simulation, a function of its configuration: seed 1 of each run is
// simulated again from the file's settings, and its batch count must be
// the file's.
//
// Rendering turns the file into a result struct of plain values
// (Result000, Result002, Result003, Result004; medians and their 95%
// confidence intervals by internal/summary, means and standard deviations
// by montanaflynn/stats) whose WriteMarkdown writes the report. Its golden
// tests render each report from a quick run's result file in
// testdata/results, as --from does, into testdata/<id>-<name>.golden (go
// test -update rewrites them; the variants no such file holds render from
// fixed values), and every sentence that states a finding is computed
// from the values rather than written in advance.
//
// Every report opens with a Header: the document, the command line, the
// machine, the device, the run time and a link to the result file; and
// ends with where ours differs from the document, and why.
//
// # Files
//
// Reports go to <Out>/<id>-<name>.md (000-headspace.md, 002-loaders.md,
// 003-caching-ladder.md, 004-sim.md), figures to
// <Out>/figures/<id>-*.png|svg|gif and saved measurements to
// <Out>/results/<id>-<name>.txt, linked relative to the report, so the
// directory can be moved or browsed on GitHub as it is. A rebuild into
// another directory copies the saved files there too. Every file is
// written atomically (internal/atomicfile, directly or through the
// plotting packages and harness/resultfile), so an interrupted run leaves
// whole files.
//
// # Failure
//
// Run takes the documents in order and saves each result file and writes
// each report as soon as its experiment is done. The first failure stops the run with an error that
// names the document; the reports written before it stay.
//
// # Sizes and time
//
// The sizes are each experiment's own (workloads.Experiment's At): the
// Default follows the documents (1024×1024 images, batches of 256, the
// document's 290 ms step, workloads.DocumentStep) with enough runs for
// medians; Options.Quick takes every experiment's Quick size, so that
// every code path runs in seconds; CI runs it. A document defines no
// sizes of its own. Each document's run time is recorded in its result
// file (elapsed) and printed in its report, so no duration is stated here.
//
// Progress goes to Options.Progress: a bar (internal/progress) on a
// terminal, one line per finished unit of work elsewhere.
package reproduce
