package resultfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// maxErrors is how many syntax errors a read reports before summarizing.
const maxErrors = 10

// Read reads the results file at path, which must be a regular file (a
// pipe or device is refused unopened; a line longer than 64 KiB ends the
// read, so /dev/zero and the like cannot grow memory). Syntax errors (benchfmt's
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
	f, err := atomicfile.OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return read(f, path)
}

// read reads the Go benchmark format from r; name is used in errors.
func read(r io.Reader, name string) ([]*benchfmt.Result, benchfmt.UnitMetadataMap, error) {
	var out []*benchfmt.Result
	meta, err := scan(r, name, func(res *benchfmt.Result) error {
		out = append(out, res.Clone())
		return nil
	})
	return out, meta, err
}

// Scan reads the results file at path one result at a time, as Read
// would return them (tidied values, names without "Benchmark"), calling
// f with each; the result is valid only during the call (Clone it to keep
// it), so memory does not grow with the file. It returns the file's unit
// metadata, and the same errors as Read, or f's first error.
func Scan(path string, f func(*benchfmt.Result) error) (benchfmt.UnitMetadataMap, error) {
	file, err := atomicfile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return scan(file, path, f)
}

func scan(r io.Reader, name string, f func(*benchfmt.Result) error) (benchfmt.UnitMetadataMap, error) {
	rd := benchfmt.NewReader(r, name)
	var errs []error
	nerr := 0
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			for i, v := range rec.Values {
				rec.Values[i] = TidyValue(v)
			}
			if err := f(rec); err != nil {
				return nil, err
			}
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
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("%s: a line is longer than the benchmark format's reader takes (64 KiB): not a results file", name)
		}
		errs = append(errs, err)
	}
	return rd.Units(), errors.Join(errs...)
}

// Value returns r's value in unit, whichever way r holds it: as written
// (OrigUnit, "ns/op"), untidied, or tidied by benchfmt.Reader ("sec/op"),
// converted to unit. This is how every reader of results asks for a
// value: benchfmt.Result.Value compares the tidied unit only, so it
// finds no "ns/op" in a result benchfmt.Reader has read (it holds sec/op).
func Value(r *benchfmt.Result, unit string) (float64, bool) {
	factor, tidied := benchunit.Tidy(1, unit)
	for _, v := range r.Values {
		switch {
		case v.OrigUnit != "" && v.OrigUnit == unit:
			return v.OrigValue, true
		case v.Unit == unit:
			return v.Value, true
		case v.Unit == tidied:
			return v.Value / factor, true
		}
	}
	return 0, false
}

// Parse reads results from r as Read does from a file named name (for
// its errors): the writer's round-trip test reads what it wrote through
// it.
func Parse(r io.Reader, name string) ([]*benchfmt.Result, benchfmt.UnitMetadataMap, error) {
	return read(r, name)
}

// WithSettings are copies of recs carrying settings as a result file's
// configuration lines, as a file read back holds them: the records of a
// run written nowhere, decoded as a file's would be.
func WithSettings(recs []*benchfmt.Result, settings []Config) []*benchfmt.Result {
	cfg := make([]benchfmt.Config, len(settings))
	for i, c := range settings {
		cfg[i] = benchfmt.Config{Key: c.Key, Value: []byte(c.Value), File: true}
	}
	out := make([]*benchfmt.Result, len(recs))
	for i, r := range recs {
		c := r.Clone()
		c.Config = append(append([]benchfmt.Config(nil), cfg...), c.Config...)
		out[i] = c
	}
	return out
}
