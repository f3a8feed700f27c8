package resultwrite

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/atomicfile"
	"golang.org/x/perf/benchfmt"
)

// Records checked, tidied and encoded in the file layout, written
// atomically.

// normalize checks r and returns a copy with the name's "Benchmark"
// prefix dropped, config as its configuration and tidied values.
func normalize(r *benchfmt.Result, config []benchfmt.Config) (*benchfmt.Result, error) {
	if r == nil {
		return nil, errors.New("nil result")
	}
	name := strings.TrimPrefix(string(r.Name), "Benchmark")
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
		t := resultfile.TidyValue(v)
		if math.IsNaN(orig) || math.IsInf(orig, 0) || math.IsNaN(t.Value) || math.IsInf(t.Value, 0) {
			return nil, fmt.Errorf("result %s: %s value %v is not finite", r.Name, origUnit, orig)
		}
		c.Values = append(c.Values, t)
	}
	return c, nil
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
		if d, ok := resultfile.TableDirection(orig); ok && d != resultfile.NoDirection {
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
