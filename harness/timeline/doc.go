// Package timeline is a neutral record of what happened over time in an
// input pipeline — which worker loaded which batch when, and when the model
// stepped on it — shared by the simulator (harness/sim) and by recorders of
// real pipeline runs.
//
// A Timeline is a list of Spans, each an interval [Start, End) on a named
// Track ("loader 3", "model"), with a Label (the stage: "load", "step"), the
// Batch it worked on (-1 if none) and a Color index (usually the loader that
// produced the batch, so one batch has the same colour on every track; -1
// for the neutral colour). Times are offsets from the start of the run. The
// package knows nothing about loaders or models: any producer that can
// express its activity as spans on tracks can use the writers below.
//
// # Outputs
//
//   - WritePNG and WriteSVG draw a static Gantt chart with gonum.org/v1/plot:
//     one row per track in display order (Tracks first, then any track that
//     only appears in Spans, in order of first appearance), the x axis in
//     seconds from 0 to End. Idle time is left blank, so a model that halts
//     waiting for data shows as gaps in its row. Files are written to a
//     temporary file in the destination directory and renamed into place, so
//     a reader never sees a partial image.
//   - WriteChromeTrace writes Chrome trace-event JSON ({"traceEvents": [...]})
//     that opens in Perfetto (ui.perfetto.dev) and chrome://tracing: one
//     complete event ("ph":"X", ts and dur in microseconds) per span, all in
//     pid 1, one tid per track (tid = display index + 1) with "M" metadata
//     events naming the process (thread_name per track, process_name for the
//     timeline) and fixing the display order (thread_sort_index).
//
// # Analysis
//
// Gaps finds the idle intervals of a track and the number of spans in the
// busy run that each gap ends; on the model track this is the "halts every
// n batches" pattern of a pipeline bottlenecked on loading.
//
// Color maps a Color index to the package's qualitative palette so that
// other renderers (the simulator's GIF animation) match the charts.
package timeline
