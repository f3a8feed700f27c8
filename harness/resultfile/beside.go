package resultfile

// What a writer refuses, and where it puts a file it does not put at
// its path.

import "github.com/headspace-bench/headspace/internal/atomicfile"

// ErrRefused marks the errors of the writer (package driver) that refuse a
// destination: a file that is not a results file, a results file of
// another setup, or one that another process is writing. Commands exit 2
// on it (a usage error), since nothing was measured yet. It is
// atomicfile.ErrRefused: one output policy for every file.
var ErrRefused = atomicfile.ErrRefused

// Beside is where a partial or smaller run's results go when a complete
// file is kept at path: "r.txt" gives "r.partial.txt" (tag "partial").
func Beside(path, tag string) string { return atomicfile.Beside(path, tag) }
