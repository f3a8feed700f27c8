package resultfile

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchproc"
)

// Layout declares the names of one experiment's records, a result file's
// or a script's live output's alike: the one reader of record names
// (issue 53). Package workloads' codecs read their files through it, and
// the harness packages that run a script read its lines through the
// same Layout the codec is built from, so that each name's layout is
// written down once.
type Layout struct {
	// Owner is whose records these are, for errors ("Peer").
	Owner string
	// Keys are the name keys of each benchmark Owner writes, by base name
	// without "Benchmark" ("WhatIf/profile" for a benchmark whose first
	// part is the positional /profile).
	Keys map[string][]string
	// Optional are keys of Keys that a record of the benchmark may lack.
	Optional map[string][]string
	// Procs says the names end in a GOMAXPROCS suffix ("-16", none at 1);
	// without it, a suffix is a part of the name more.
	Procs bool
}

// Name is one record's name as a Layout reads it: its benchmark (base
// name, without "Benchmark"), the values of its keys and its GOMAXPROCS
// (1 without a suffix).
type Name struct {
	Benchmark string
	Keys      map[string]string
	Procs     int
}

// Benchmarks are the layout's benchmarks, sorted.
func (l Layout) Benchmarks() []string { return slices.Sorted(maps.Keys(l.Keys)) }

// NameReader reads records' names by a Layout (Layout.Reader), its
// projections made once.
type NameReader struct {
	l          Layout
	keys       []string
	proj, rest *benchproc.Projection
	fields     map[string]*benchproc.Field
	restField  *benchproc.Field
}

// Reader is the layout's name reader.
func (l Layout) Reader() *NameReader {
	var keys []string
	for _, ks := range l.Keys {
		keys = append(keys, ks...)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	q := ".name,/gomaxprocs"
	for _, k := range keys {
		q += ",/" + k
	}
	var p benchproc.ProjectionParser
	proj, err := p.Parse(q, nil)
	if err != nil {
		panic(fmt.Sprintf("resultfile: %s's layout: keys %q: %v", l.Owner, keys, err)) // its keys are constants
	}
	// .fullname, with the keys above projected, is "*" where the name
	// has no other part.
	rest, err := p.Parse(".fullname", nil)
	if err != nil {
		panic(err)
	}
	nr := &NameReader{l: l, keys: keys, proj: proj, rest: rest, fields: map[string]*benchproc.Field{}, restField: rest.FlattenedFields()[0]}
	for _, f := range proj.FlattenedFields() {
		nr.fields[f.Name] = f
	}
	return nr
}

// Read is r's name read by the layout (Layout.Reader's Read).
func (l Layout) Read(r *benchfmt.Result) (Name, error) { return l.Reader().Read(r) }

// ErrNotOurs is Read's error for a record of a benchmark not the
// layout's (errors.Is): a reader of a file that holds others' records
// as well passes over it.
var ErrNotOurs = errors.New("not a record")

// Read is r's name: a benchmark of the layout's, each of its keys once
// (an optional one at most once), no key of another of its benchmarks and
// no part more, and a GOMAXPROCS suffix only where the layout has one.
// An error names the record (not its file and line: the caller adds
// them) and the layout's owner.
func (nr *NameReader) Read(r *benchfmt.Result) (Name, error) {
	l := nr.l
	name := FullName(r)
	k := nr.proj.Project(r)
	base, _ := strings.CutPrefix(k.Get(nr.fields[".name"]), "Benchmark")
	pos := Positional(r.Name)
	if _, ok := l.Keys[base+pos]; ok && pos != "" {
		base += pos
	} else {
		pos = ""
	}
	want, ok := l.Keys[base]
	if !ok {
		return Name{}, fmt.Errorf("%s: %w of %s (its benchmarks: %s)", name, ErrNotOurs, l.Owner, strings.Join(l.Benchmarks(), ", "))
	}
	n := Name{Benchmark: base, Keys: map[string]string{}, Procs: 1}
	if procs := k.Get(nr.fields["/gomaxprocs"]); procs != "" {
		if !l.Procs {
			return Name{}, fmt.Errorf("%s: a record of %s with a part of its name more (-%s)", name, l.Owner, procs)
		}
		p, err := strconv.Atoi(procs)
		if err != nil || p < 1 {
			return Name{}, fmt.Errorf("%s: a record of %s whose GOMAXPROCS suffix -%s is not a count", name, l.Owner, procs)
		}
		n.Procs = p
	}
	for _, key := range nr.keys {
		v := k.Get(nr.fields["/"+key])
		switch {
		case slices.Contains(want, key) && v == "" && !slices.Contains(l.Optional[base], key):
			return Name{}, fmt.Errorf("%s: a record of %s without its key %s", name, l.Owner, key)
		case !slices.Contains(want, key) && v != "":
			return Name{}, fmt.Errorf("%s: a record of %s with a key %s its %s records do not have", name, l.Owner, key, base)
		case v != "":
			n.Keys[key] = v
		}
	}
	if key, twice := repeatedKey(r.Name); twice {
		return Name{}, fmt.Errorf("%s: a record of %s with its key %s twice", name, l.Owner, key)
	}
	if more := nr.rest.Project(r).Get(nr.restField); more != "*"+pos {
		return Name{}, fmt.Errorf("%s: a record of %s with a part of its name more (%s)", name, l.Owner, strings.TrimPrefix(more, "*"+pos))
	}
	return n, nil
}

// FullName is r's name as a file or a script writes it: benchfmt.Reader
// drops the "Benchmark" a record's name begins with.
func FullName(r *benchfmt.Result) string {
	return BenchName(strings.TrimPrefix(string(r.Name), "Benchmark"), 1)
}

// Count is the whole number the name gives key, 0 or more (above 0 where
// positive); another is an error that names the key and its value.
func (n Name) Count(key string, positive bool) (int, error) {
	c, err := strconv.Atoi(n.Keys[key])
	want := "a count"
	if positive {
		want = "a positive count"
	}
	if err != nil || c < 0 || positive && c == 0 {
		return 0, fmt.Errorf("%s %q: want %s", key, n.Keys[key], want)
	}
	return c, nil
}

// TrimProcs is name without its GOMAXPROCS suffix (benchfmt.Name.Parts'
// last part where it is "-N"), and the suffix's N, "" where it has none.
func TrimProcs(name benchfmt.Name) (rest, procs string) {
	base, parts := name.Parts()
	if k := len(parts); k > 0 && len(parts[k-1]) > 0 && parts[k-1][0] == '-' {
		procs, parts = string(parts[k-1][1:]), parts[:k-1]
	}
	var b strings.Builder
	b.Write(base)
	for _, p := range parts {
		b.Write(p)
	}
	return b.String(), procs
}

// repeatedKey is the first key that name's parts (benchfmt.Name.Parts)
// give twice, which benchproc's projection would read once.
func repeatedKey(name benchfmt.Name) (string, bool) {
	_, parts := name.Parts()
	seen := map[string]bool{}
	for _, p := range parts {
		k, _, ok := strings.Cut(string(p), "=")
		if !ok || !strings.HasPrefix(k, "/") {
			continue
		}
		if seen[k] {
			return strings.TrimPrefix(k, "/"), true
		}
		seen[k] = true
	}
	return "", false
}

// Positional is name's first part where it is positional ("/profile"
// of WhatIf/profile/cores=2: benchfmt.Name.Parts), else "".
func Positional(name benchfmt.Name) string {
	if _, parts := name.Parts(); len(parts) > 0 && parts[0][0] == '/' && !bytes.ContainsRune(parts[0], '=') {
		return string(parts[0])
	}
	return ""
}
