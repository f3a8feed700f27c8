// Package level is the one table of the caching ladder: the pipeline as
// one ordered list of stages, and each level as a cut in it. A level runs
// every stage from its cut on; everything before the cut is replaced by
// its cached output, made once before timing.
//
// The loader (which stages it skips, which cache it makes), the ladder
// (what it keeps, which stage times a record carries), its attribution,
// the what-if model (what costs nothing at a level), the on-disk workload,
// the reports and the PyTorch peer (through `headspace levels --json`)
// all read this table. Adding a level is a row of table, plus the code of
// its cache where the stage before its cut has none yet (docs/extending.md).
// The default sweeps and the committed reports run and list an explicit
// list of levels (Document, Default), not the table: a new level joins
// them only where it is added to those lists or asked for.
package level

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Stage is one stage of the input pipeline and the training loop, by the
// name the loader's pipeline (package pipeline) records it under.
type Stage string

// The pipeline's stages. Load makes a raw sample from nothing (the
// synthetic fill); with a dataset on disk, fetch reads a sample's bytes
// and decode makes the raw sample of them; with one in a bucket, the
// network read comes first. Then the transforms, batching (collate fills
// a batch's slots, batch emits it), the copy to the device and the step.
const (
	Load      Stage = "load"
	Network   Stage = "network" // no stage of the loader's own: fetch reads over the network where it runs
	Fetch     Stage = "fetch"
	Decode    Stage = "decode"
	Transform Stage = "transform"
	Collate   Stage = "collate"
	Batch     Stage = "batch"
	Upload    Stage = "upload"
	Step      Stage = "step"
)

// Source is where the samples come from. A level needs one (Level.Needs),
// and runs on it or any later one: a level of data on disk runs on data in
// a bucket too.
type Source int

// The sources, in that order.
const (
	Synthetic Source = iota // the synthetic fill, in memory: every level's
	Disk                    // a dataset on local disk (--data DIR)
	Bucket                  // a dataset in a bucket (--data s3://…)
)

var sourceNames = [...]string{Synthetic: "synthetic", Disk: "disk", Bucket: "bucket"}

func (s Source) String() string {
	if s < 0 || int(s) >= len(sourceNames) {
		return fmt.Sprintf("Source(%d)", int(s))
	}
	return sourceNames[s]
}

// FetchStage is the ladder's name of Fetch: what encoded adds over raw
// data loading's decode, DS-Analyzer's fetch stall (decoding is its prep).
const FetchStage = "fetching"

// NetworkStage is the ladder's name of Network: what none adds over local
// with data in a bucket (the first epoch's cost, or every epoch's when the
// local cache is smaller than the data).
const NetworkStage = "network fetching"

// stage is one row of the pipeline.
type stage struct {
	name     Stage
	from, to Source // the sources whose pipeline has the stage
	ladder   string // the ladder's name for it (Attributed)
	timed    bool   // a ladder record carries its time per sample (SampleStages)
}

// pipeline is the one ordered list of stages. Load and Network are never
// in the same source's pipeline; each source's is the stages it has, in
// this order (Stages).
var pipeline = [...]stage{
	{Load, Synthetic, Synthetic, "raw data loading", true},
	{Network, Bucket, Bucket, NetworkStage, false},
	{Fetch, Disk, Bucket, FetchStage, true},
	{Decode, Disk, Bucket, "decoding", true},
	{Transform, Synthetic, Bucket, "transforms", true},
	{Collate, Synthetic, Bucket, "batching (collate)", false},
	{Batch, Synthetic, Bucket, "batching (collate)", false},
	{Upload, Synthetic, Bucket, "host-to-device transfer", false},
	{Step, Synthetic, Bucket, "model step", false},
}

// at is the position of s in the pipeline, or -1.
func at(s Stage) int {
	for i, r := range pipeline {
		if r.name == s {
			return i
		}
	}
	return -1
}

// Stages is the pipeline of src: the stages it has, in order.
func Stages(src Source) []Stage {
	var out []Stage
	for _, r := range pipeline {
		if r.from <= src && src <= r.to {
			out = append(out, r.name)
		}
	}
	return out
}

// SampleStages are the per-sample stages before batching that a ladder
// record carries the time of (<stage>-ns/sample) where its level runs them.
var SampleStages = sampleStages()

func sampleStages() []Stage {
	var out []Stage
	for _, r := range pipeline {
		if r.timed {
			out = append(out, r.name)
		}
	}
	return out
}

// Level is a rung of the caching ladder: a cut in the pipeline. Every
// stage before it costs nothing: its output is cached.
type Level int

// The levels, from the full pipeline to the model alone: the document's
// five (none, raw, sample, host, device); encoded, between none and raw,
// for a dataset on disk or in a bucket; and local, between none and
// encoded, for a dataset in a bucket.
const (
	None    Level = iota // the full pipeline: raw data, transforms, batching, upload, step
	Local                // the bucket's objects copied to local disk first: fetch from disk, decode, … (data in a bucket only)
	Encoded              // one sample's file bytes reused: decode, transforms, batching, upload, step (data on disk only)
	Raw                  // one raw sample reused: transforms, batching, upload, step
	Sample               // one processed sample reused: batching, upload, step
	Host                 // one collated batch on the host: upload, step
	Device               // one batch on the device: step only
)

// row is one level of the table.
type row struct {
	name   string
	cut    Stage  // the first stage that still runs
	needs  Source // the least source it runs on
	caches string // what is cached, in words
}

// table is the one table of levels, in the order of their cuts.
var table = []row{
	None:    {"none", Load, Synthetic, "nothing"},
	Local:   {"local", Fetch, Bucket, "the bucket's objects, copied to local disk"},
	Encoded: {"encoded", Decode, Disk, "one sample's file bytes"},
	Raw:     {"raw", Transform, Synthetic, "one raw sample"},
	Sample:  {"sample", Collate, Synthetic, "one processed sample"},
	Host:    {"host", Upload, Synthetic, "one collated batch on the host"},
	Device:  {"device", Step, Synthetic, "one batch on the device"},
}

// Document is the document's five levels, from the full pipeline up to
// the device cache: the ladder's default sweep of synthetic data, and the
// levels of every committed report of it. It is a list of its own, not
// read off the table: a level added to the table joins no default sweep
// and no committed report unless it is added here or asked for by name
// (--levels). For is every level the table has for a source.
var Document = []Level{None, Raw, Sample, Host, Device}

// defaults is the ladder's default sweep of each source, an explicit
// list as Document is: a dataset on disk adds Encoded, one in a bucket
// Local too.
var defaults = [...][]Level{
	Synthetic: Document,
	Disk:      {None, Encoded, Raw, Sample, Host, Device},
	Bucket:    {None, Local, Encoded, Raw, Sample, Host, Device},
}

// Default is the levels the ladder runs by default with data from src, in
// the order of the table (a copy): Document for synthetic data, with
// Encoded for a dataset on disk, and Local too for one in a bucket. A
// level added to the table joins none of them unless added here.
func Default(src Source) []Level {
	if src < 0 || int(src) >= len(defaults) {
		return nil
	}
	return slices.Clone(defaults[src])
}

// For is every level that runs on src, in the order of the table.
func For(src Source) []Level {
	var out []Level
	for l, r := range table {
		if r.needs <= src {
			out = append(out, Level(l))
		}
	}
	return out
}

// Descending is a copy of ls from the top of the ladder down, device
// first: the order the ladder runs levels and the reports list them.
func Descending(ls []Level) []Level {
	out := slices.Clone(ls)
	slices.SortFunc(out, func(a, b Level) int { return int(b) - int(a) })
	return out
}

// Valid reports whether l is a level of the table.
func (l Level) Valid() bool { return l >= 0 && int(l) < len(table) }

func (l Level) String() string {
	if !l.Valid() {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return table[l].name
}

// Caches is what l keeps instead of computing it, in words.
func (l Level) Caches() string {
	if !l.Valid() {
		return "?"
	}
	return table[l].caches
}

// Cut is the first stage l runs: every stage before it is replaced by its
// cached output.
func (l Level) Cut() Stage {
	if !l.Valid() {
		return ""
	}
	return table[l].cut
}

// Needs is the least source l runs on: Synthetic for any, Disk for a
// dataset on disk or in a bucket, Bucket for one in a bucket.
func (l Level) Needs() Source {
	if !l.Valid() {
		return Synthetic
	}
	return table[l].needs
}

// OnDisk reports whether l needs a dataset on disk (or in a bucket).
func (l Level) OnDisk() bool { return l.Valid() && l.Needs() >= Disk }

// Remote reports whether l needs a dataset in a bucket.
func (l Level) Remote() bool { return l.Valid() && l.Needs() == Bucket }

// Runs reports whether l still runs stage s: whether s comes at or after
// l's cut. A stage not in the pipeline (the loader's own bookkeeping,
// such as "index") runs wherever a loader does.
func (l Level) Runs(s Stage) bool {
	if !l.Valid() {
		return false
	}
	i := at(s)
	if i < 0 {
		return l.Loader()
	}
	return i >= at(l.Cut())
}

// Loader reports whether l runs a loader: whether batching still runs.
// Above it, one batch made by the full pipeline is kept.
func (l Level) Loader() bool { return l.Valid() && at(Collate) >= at(l.Cut()) }

// Kept is the stage whose output l keeps with data from src: the last
// stage of src's pipeline before l's cut. Its cache is made once, before
// timing (the loader's for the stages before batching, the ladder's for a
// batch). ok is false where l keeps nothing (none), or does not run on src.
func (l Level) Kept(src Source) (s Stage, ok bool) {
	if !l.Valid() || src < l.Needs() {
		return "", false
	}
	for _, st := range Stages(src) {
		if l.Runs(st) {
			break
		}
		s, ok = st, true
	}
	return s, ok
}

// StageIn is what l adds over the next level above it in ls, the levels
// a sweep or a report holds (Between): the attribution of a drop from
// that level to l. Where none of ls is above l it is l's Stage. Reading
// it off the list, not the table, a report of given levels says the same
// whatever levels the table gains.
func (l Level) StageIn(ls []Level) string {
	var above Level = -1
	for _, a := range ls {
		if a > l && (above < 0 || a < above) {
			above = a
		}
	}
	if above < 0 {
		return l.Stage()
	}
	return Between(l, above)
}

// Stage is what l adds over the next level above it that runs on what l
// runs on: the part of the pipeline a drop in throughput between the two
// is attributed to (Between). None's is raw data loading, fetch and
// decode together: from none, the next level of any source is raw.
func (l Level) Stage() string {
	if !l.Valid() {
		return "?"
	}
	for above := l + 1; above.Valid(); above++ {
		if above.Needs() <= l.Needs() {
			return Between(l, above)
		}
	}
	return between(at(l.Cut()), len(pipeline), l.Needs())
}

// Between names the stages that lo runs and above does not, by their
// ladder names (Attributed), e.g. "transforms" or "raw data loading +
// transforms" when a level between them was not measured. The stages are
// those of the pipeline of the most either needs: from none to raw it is
// the synthetic pipeline's, so raw data loading stands for fetch and
// decode too; none against encoded is FetchStage, none against local
// NetworkStage.
func Between(lo, above Level) string {
	if !lo.Valid() || !above.Valid() {
		return "?"
	}
	return between(at(lo.Cut()), at(above.Cut()), max(lo.Needs(), above.Needs()))
}

// between is the ladder names of src's stages at positions [from, to),
// each once.
func between(from, to int, src Source) string {
	var names []string
	for _, r := range pipeline[from:to] {
		if r.from <= src && src <= r.to && !slices.Contains(names, r.ladder) {
			names = append(names, r.ladder)
		}
	}
	return strings.Join(names, " + ")
}

// Attributed is the ladder's name for the pipeline stage s ("load" is
// "raw data loading", "fetch" FetchStage). A stage the pipeline does not
// name keeps its own name.
func Attributed(s Stage) string {
	if i := at(s); i >= 0 {
		return pipeline[i].ladder
	}
	return string(s)
}

// Parse parses one level name.
func Parse(s string) (Level, error) {
	for l, r := range table {
		if s == r.name {
			return Level(l), nil
		}
	}
	names := make([]string, len(table))
	for l, r := range table {
		names[l] = r.name
	}
	return 0, fmt.Errorf("unknown level %q (want one of %s)", s, strings.Join(names, ", "))
}

// ParseList parses a comma-separated list of level names, each once.
func ParseList(s string) ([]Level, error) {
	var out []Level
	for _, f := range strings.Split(s, ",") {
		l, err := Parse(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// Table is the table as `headspace levels --json` prints it, for the
// reports and the peer scripts, which take the levels from it rather than
// from copies.
type Table struct {
	Pipeline []StageRow `json:"pipeline"` // in order
	Levels   []LevelRow `json:"levels"`   // in the order of their cuts
}

// StageRow is one stage of Table.
type StageRow struct {
	Name       Stage    `json:"name"`
	Sources    []string `json:"sources"`    // the sources whose pipeline has it
	Attributed string   `json:"attributed"` // the ladder's name for it
}

// LevelRow is one level of Table.
type LevelRow struct {
	Name   string           `json:"name"`
	Caches string           `json:"caches"`
	Cut    Stage            `json:"cut"`   // the first stage it runs
	Runs   []Stage          `json:"runs"`  // every stage from the cut on
	Needs  string           `json:"needs"` // the least source it runs on
	Kept   map[string]Stage `json:"kept"`  // per source it runs on, the stage whose output it keeps (Level.Kept)
	Stage  string           `json:"stage"` // what it adds over the level above it (Level.Stage)
}

// Describe is the table, for `headspace levels`.
func Describe() Table {
	var t Table
	for _, r := range pipeline {
		sr := StageRow{Name: r.name, Attributed: r.ladder}
		for s := r.from; s <= r.to; s++ {
			sr.Sources = append(sr.Sources, s.String())
		}
		t.Pipeline = append(t.Pipeline, sr)
	}
	for i := range table {
		l := Level(i)
		lr := LevelRow{Name: l.String(), Caches: l.Caches(), Cut: l.Cut(), Needs: l.Needs().String(), Kept: map[string]Stage{}, Stage: l.Stage()}
		for _, r := range pipeline {
			if l.Runs(r.name) {
				lr.Runs = append(lr.Runs, r.name)
			}
		}
		for s := l.Needs(); s <= Bucket; s++ {
			if k, ok := l.Kept(s); ok {
				lr.Kept[s.String()] = k
			}
		}
		t.Levels = append(t.Levels, lr)
	}
	return t
}

// JSON is Describe as `headspace levels --json` prints it, indented, with
// a final newline: one place of the format the peer scripts read.
func JSON() ([]byte, error) {
	b, err := json.MarshalIndent(Describe(), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
