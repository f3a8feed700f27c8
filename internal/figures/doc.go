// Package figures holds no code: its test recomputes figures quoted in
// README.md and docs/ from the committed result files they name and fails
// when a page's text no longer says what its file gives, so that a number
// in the documentation cannot drift from its measurement again (issue 32).
//
// Each case is a page, a piece of its text with the figures as format
// verbs, and how each figure is computed from a result file: a median,
// the half width of its 95% interval, a ratio of medians, a single run,
// as benchstat computes them (package internal/summary, on top of
// golang.org/x/perf/benchmath). The text is matched with its whitespace
// collapsed, so a figure may be broken across lines. A second test checks
// that every committed benchmark file names the commit that measured it,
// with the files known to lack one listed and their provenance in docs.
//
// To add a case: quote the text as the page writes it, replace each figure
// by a verb, and give the computation from the file the page names.
//
// A third test scans the prose of docs/remote.md, docs/gate.md,
// docs/history.md and docs/real-data.md (issue 41) for figures: every
// decimal number and every number with a unit, outside code. Each must be
// recomputed by a case, quoted from a committed file that holds it (a
// report a test rebuilds from its result file, a paired session's
// gate.txt), a listed setting (a default, a preset, a test's input, a
// quoted source, arithmetic on the page's figures, each with why), or
// stand in a paragraph labelled as the project labels an unbacked figure:
// "no committed file". A listed quote or setting the page no longer holds
// fails the test too.
//
// Issue 52 added docs/own-loop.md, docs/node.md and docs/gpu.md to the
// scan, and with them bare counts ("4 of 15", "eight of its forty") as
// figures. On those three pages a command's report quoted in a fence with
// no language is scanned too: it is rebuilt by the command from its file
// and compared (node --from), held by another test (the GPU goals'
// blocks, TestGoalsH200), or its figures are quoted, where the file holds
// them in another unit (nanoseconds written as ms), as unit quotes.
package figures
