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
package figures
