package main

import (
	"fmt"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"io"
)

// output is one file a command's flag names, with what it is for.
type output struct {
	path string
	kind atomicfile.Kind
}

// The kinds of the files commands write beside results (the output
// policy is harness/atomicfile's: a file is replaced only by one of its
// own kind that headspace wrote).
var (
	statsKind  = atomicfile.JSON("stage statistics", "headspace-stats/1")
	traceKind  = atomicfile.JSON("Chrome trace", "headspace-trace/1")
	figureKind = atomicfile.Figure
)

// checkOutputs checks, before anything is measured, every output the
// flags name (atomicfile.CheckKind: the directory exists and takes files,
// the path is no directory, and an existing file is one headspace wrote
// for the same purpose). Empty paths are skipped. The first problem is
// refused (exit 2) in one line naming the path.
func checkOutputs(outs ...output) error {
	for _, o := range outs {
		if o.path == "" {
			continue
		}
		if err := atomicfile.CheckKind(o.path, o.kind); err != nil {
			return err
		}
	}
	return nil
}

// figure is a figure output; prefixed(prefix, suffix) with a prefix flag.
func figure(path string) output { return output{path, figureKind} }

// prefixed is prefix+suffix, or "" without a prefix.
func prefixed(prefix, suffix string) string {
	if prefix == "" {
		return ""
	}
	return prefix + suffix
}

// keptNote says, when a results file was written beside path
// (driver.Write kept a complete or larger file there), where.
func keptNote(w io.Writer, path, wrote string) {
	if wrote != path {
		fmt.Fprintf(w, "kept %s, a complete or larger run's results; this run's are beside it (--force replaces a larger run)\n", path)
	}
}
