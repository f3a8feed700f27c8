package resultfile

// Records checked, tidied and encoded in the file layout, written
// atomically.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"

	"github.com/headspace-bench/headspace/internal/atomicfile"
)

// trimPrefix returns a benchmark name without its "Benchmark" prefix.
func trimPrefix(name string) string { return strings.TrimPrefix(name, "Benchmark") }

// normalize checks r and returns a copy with the name's "Benchmark"
// prefix dropped, config as its configuration and tidied values.
func normalize(r *benchfmt.Result, config []benchfmt.Config) (*benchfmt.Result, error) {
	if r == nil {
		return nil, errors.New("nil result")
	}
	name := trimPrefix(string(r.Name))
	switch {
	case name == "":
		return nil, fmt.Errorf("result %q: empty benchmark name", r.Name)
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return nil, fmt.Errorf("result %q: benchmark name contains a space", r.Name)
	case r.Iters < 1:
		return nil, fmt.Errorf("result %s: iterations %d, want >= 1", r.Name, r.Iters)
	case len(r.Values) == 0:
		return nil, fmt.Errorf("result %s: no values", r.Name)
	}
	c := &benchfmt.Result{
		Name:   benchfmt.Name(name),
		Iters:  r.Iters,
		Values: make([]benchfmt.Value, 0, len(r.Values)),
		Config: make([]benchfmt.Config, len(config)),
	}
	for i, cfg := range config {
		c.Config[i] = benchfmt.Config{Key: cfg.Key, Value: bytes.Clone(cfg.Value), File: true}
	}
	for _, v := range r.Values {
		orig, origUnit := v.Value, v.Unit
		if v.OrigUnit != "" {
			orig, origUnit = v.OrigValue, v.OrigUnit
		}
		if origUnit == "" || strings.IndexFunc(origUnit, unicode.IsSpace) >= 0 {
			return nil, fmt.Errorf("result %s: unit %q must be non-empty without spaces", r.Name, origUnit)
		}
		t := TidyValue(v)
		if math.IsNaN(orig) || math.IsInf(orig, 0) || math.IsNaN(t.Value) || math.IsInf(t.Value, 0) {
			return nil, fmt.Errorf("result %s: %s value %v is not finite", r.Name, origUnit, orig)
		}
		c.Values = append(c.Values, t)
	}
	return c, nil
}

// TidyValue returns v in the form benchfmt.Reader gives values: in the
// tidied unit (sec/op for ns/op) with OrigValue and OrigUnit holding
// what was written, or as is when tidying changes nothing. Unlike the
// Reader, it tidies zero values too (the Reader leaves "0 ns/op" as
// ns/op, which would put it in a unit of its own); the gate and the
// writer compare and write tidy values.
func TidyValue(v benchfmt.Value) benchfmt.Value {
	orig, origUnit := v.Value, v.Unit
	if v.OrigUnit != "" {
		orig, origUnit = v.OrigValue, v.OrigUnit
	}
	tv, tu := benchunit.Tidy(orig, origUnit)
	if tu == origUnit {
		return benchfmt.Value{Value: tv, Unit: tu}
	}
	return benchfmt.Value{Value: tv, Unit: tu, OrigValue: orig, OrigUnit: origUnit}
}

// encode writes the file layout: Unit lines, then results with their
// configuration blocks, as benchfmt.Writer emits them.
func encode(w io.Writer, results []*benchfmt.Result, meta benchfmt.UnitMetadataMap) error {
	bw := benchfmt.NewWriter(w)
	seen := map[string]bool{}
	wrote := false
	for _, r := range results {
		for _, v := range r.Values {
			if seen[v.Unit] {
				continue
			}
			seen[v.Unit] = true
			orig := v.Unit
			if v.OrigUnit != "" {
				orig = v.OrigUnit
			}
			for _, m := range unitLines(v.Unit, orig, meta) {
				if err := bw.Write(m); err != nil {
					return err
				}
				wrote = true
			}
		}
	}
	if wrote {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	for _, r := range results {
		if err := bw.Write(r); err != nil {
			return err
		}
	}
	return nil
}

// unitLines returns the metadata to write for a (tidied) unit first
// written as orig: what meta (read from the file being rewritten) holds
// for it, and a better= line from Units where meta has none.
func unitLines(unit, orig string, meta benchfmt.UnitMetadataMap) []*benchfmt.UnitMetadata {
	var out []*benchfmt.UnitMetadata
	for k, m := range meta {
		if k.Unit == unit {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if meta.Get(unit, "better") == nil {
		if d, ok := tableDirection(orig); ok && d != NoDirection {
			out = append(out, &benchfmt.UnitMetadata{
				UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: unit, Key: "better"},
				OrigUnit:        orig,
				Value:           d.String(),
			})
		}
	}
	return out
}

// writeAtomic writes the file at path whole through atomicfile, so
// readers see the old or the new file whole; on error path is untouched.
func writeAtomic(path string, results []*benchfmt.Result, meta benchfmt.UnitMetadataMap) error {
	err := atomicfile.Write(path, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		if err := encode(bw, results, meta); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// BenchName is the full benchmark name `go test -bench` prints for the
// (sub-)benchmark name ("Ladder/level=raw/…") at GOMAXPROCS procs:
// "Benchmark" before it and "-procs" after it unless procs is 1, so that
// records written by the commands and by `go test` group together in
// benchstat. Every record headspace writes is named through it.
func BenchName(name string, procs int) string {
	name = "Benchmark" + name
	if procs != 1 {
		name += "-" + strconv.Itoa(procs)
	}
	return name
}
