package cli

import (
	"fmt"
	"io"

	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// Output is one file a command's flag names, with what it is for.
type Output struct {
	Path string
	Kind atomicfile.Kind
}

// The kinds of the files commands write beside results (the output
// policy is harness/atomicfile's: a file is replaced only by one of its
// own kind that headspace wrote).
var (
	StatsKind  = atomicfile.JSON("stage statistics", "headspace-stats/1")
	TraceKind  = atomicfile.JSON("Chrome trace", "headspace-trace/1")
	FigureKind = atomicfile.Figure
)

// CheckOutputs checks, before anything is measured, every Output the
// flags name (atomicfile.CheckKind: the directory exists and takes files,
// the path is no directory, and an existing file is one headspace wrote
// for the same purpose). Empty paths are skipped. The first problem is
// refused (exit 2) in one line naming the path.
func CheckOutputs(outs ...Output) error {
	for _, o := range outs {
		if o.Path == "" {
			continue
		}
		if err := atomicfile.CheckKind(o.Path, o.Kind); err != nil {
			return err
		}
	}
	return nil
}

// Figure is a Figure Output; Prefixed(prefix, suffix) with a prefix flag.
func Figure(path string) Output { return Output{path, FigureKind} }

// Prefixed is prefix+suffix, or "" without a prefix.
func Prefixed(prefix, suffix string) string {
	if prefix == "" {
		return ""
	}
	return prefix + suffix
}

// KeptNote says, when a results file was written beside path
// (driver.Run kept a complete or larger file there), where.
func KeptNote(w io.Writer, path, wrote string) {
	if wrote != path {
		fmt.Fprintf(w, "kept %s, a complete or larger run's results; this run's are beside it (--force replaces a larger run)\n", path)
	}
}
