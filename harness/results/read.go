package results

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/perf/benchfmt"
)

// maxErrors is how many syntax errors a read reports before summarizing.
const maxErrors = 10

// Read reads the results file at path. Syntax errors (benchfmt's
// non-fatal *benchfmt.SyntaxError, one per bad line) make Read fail with
// an error naming the file and line of each, "path:line: message"; the
// results that did parse are returned with it. Read's results follow
// benchfmt's conventions: names lack the "Benchmark" prefix and values
// are tidied (ns/op is held as sec/op, with OrigValue and OrigUnit
// recording what the file says). Unlike benchfmt.Reader, Read tidies
// zero values too, so "0 ns/op" is 0 sec/op like its neighbours.
func Read(path string) ([]*benchfmt.Result, error) {
	rs, _, err := ReadUnits(path)
	return rs, err
}

// ReadUnits is Read that also returns the file's unit metadata (its
// "Unit <unit> key=value" lines), which tells the gate which way each
// unit is better: pass it in GateOptions.Units.
func ReadUnits(path string) ([]*benchfmt.Result, benchfmt.UnitMetadataMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return read(f, path)
}

// read reads the Go benchmark format from r; name is used in errors.
func read(r io.Reader, name string) ([]*benchfmt.Result, benchfmt.UnitMetadataMap, error) {
	rd := benchfmt.NewReader(r, name)
	var out []*benchfmt.Result
	var errs []error
	nerr := 0
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			c := rec.Clone()
			for i, v := range c.Values {
				c.Values[i] = tidyValue(v)
			}
			out = append(out, c)
		case *benchfmt.SyntaxError:
			if nerr++; nerr <= maxErrors {
				errs = append(errs, rec)
			}
		}
	}
	if nerr > maxErrors {
		errs = append(errs, fmt.Errorf("%s: %d more syntax errors", name, nerr-maxErrors))
	}
	if err := rd.Err(); err != nil {
		errs = append(errs, err)
	}
	return out, rd.Units(), errors.Join(errs...)
}
