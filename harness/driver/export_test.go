package driver

import (
	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// The streamed and whole writes Run is made of, for the package's tests
// of their rules.
var (
	Open  = open
	Write = func(out Output, settings []resultfile.Config, records []*benchfmt.Result, partial bool) (string, error) {
		return write(out, settings, records, partial, nil)
	}
)
