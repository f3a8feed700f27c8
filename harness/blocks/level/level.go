// Package level is the one table of the caching ladder's levels: for each
// level, what is cached, which stages of the pipeline still run, and the
// stage a drop in throughput at it is attributed to.
//
// The loader (which stages it skips), the ladder (what it keeps, which
// stage times a record carries), its attribution, the what-if model (what
// costs nothing at a level) and the on-disk workload all read this table.
// Adding a level is a row here plus the code of the stage it caches.
package level

import (
	"fmt"
	"slices"
	"strings"
)

// Level is a rung of the caching ladder: the point of the input pipeline
// after which data is cached, so everything before it costs nothing.
type Level int

// The five levels of the document, from the full pipeline to the model
// alone; encoded, between none and raw, for a dataset on disk or in a
// bucket; and local, between none and encoded, for a dataset in a bucket.
const (
	None    Level = iota // the full pipeline: raw data, transforms, batching, upload, step
	Local                // the bucket's objects copied to local disk first: fetch from disk, decode, … (data in a bucket only)
	Encoded              // one sample's file bytes reused: decode, transforms, batching, upload, step (data on disk only)
	Raw                  // one raw sample reused: transforms, batching, upload, step
	Sample               // one processed sample reused: batching, upload, step
	Host                 // one collated batch on the host: upload, step
	Device               // one batch on the device: step only
)

// The stages of the pipeline a level may run, by the names the loader's
// pipeline gives them ("load" fills a synthetic sample; "fetch" and
// "decode" read one from disk), then the copy and the step.
const (
	Load      = "load"
	Fetch     = "fetch"
	Decode    = "decode"
	Transform = "transform"
	Collate   = "collate"
	Batch     = "batch"
	Upload    = "upload"
	Step      = "step"
)

// SampleStages are the per-sample stages before batching: the ones the
// loader's levels cache, whose per-sample times a ladder record carries.
var SampleStages = []string{Load, Fetch, Decode, Transform}

// FetchStage is what level none adds over level encoded: reading the
// sample's bytes from storage (DS-Analyzer's fetch stall; decoding is its
// prep). With data in a bucket, it is what local adds over encoded:
// reading the local copy.
const FetchStage = "fetching"

// NetworkStage is what level none adds over level local with data in a
// bucket: fetching the sample's bytes over the network instead of from
// the local copy (the first epoch's cost, or every epoch's when the local
// cache is smaller than the data).
const NetworkStage = "network fetching"

// row is one level of the table.
type row struct {
	name   string
	caches string   // what is cached, in words
	runs   []string // the stages that still run per step
	stage  string   // what the level adds over the one above it
	needs  data     // the data the level needs
}

// data is what a level needs of the dataset: any (the synthetic fill
// too), one on disk or in a bucket, or one in a bucket.
type data int

const (
	anyData data = iota
	diskData
	bucketData
)

// table is the one table of levels, in order, from the full pipeline up.
var table = [...]row{
	None:    {"none", "nothing", []string{Load, Fetch, Decode, Transform, Collate, Batch, Upload, Step}, "raw data loading", anyData},
	Local:   {"local", "the bucket's objects, copied to local disk", []string{Fetch, Decode, Transform, Collate, Batch, Upload, Step}, FetchStage, bucketData},
	Encoded: {"encoded", "one sample's file bytes", []string{Decode, Transform, Collate, Batch, Upload, Step}, "decoding", diskData},
	Raw:     {"raw", "one raw sample", []string{Transform, Collate, Batch, Upload, Step}, "transforms", anyData},
	Sample:  {"sample", "one processed sample", []string{Collate, Batch, Upload, Step}, "batching (collate)", anyData},
	Host:    {"host", "one collated batch on the host", []string{Upload, Step}, "host-to-device transfer", anyData},
	Device:  {"device", "one batch on the device", []string{Step}, "model step", anyData},
}

// Levels is the document's five levels, from the full pipeline up to the
// device cache: every level that runs on any dataset.
var Levels = levels(anyData)

// OnDiskLevels is every level of a dataset on disk: Levels and Encoded.
var OnDiskLevels = levels(diskData)

// RemoteLevels is every level of a dataset in a bucket: OnDiskLevels and
// Local.
var RemoteLevels = levels(bucketData)

func levels(have data) []Level {
	var out []Level
	for l, r := range table {
		if r.needs <= have {
			out = append(out, Level(l))
		}
	}
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

// Stage is what a level adds over the level above it: the part of the
// pipeline that a drop in throughput between the two is attributed to.
// None's is raw data loading, fetch and decode together; with the encoded
// level measured, what none adds over it is FetchStage (Between).
func (l Level) Stage() string {
	if !l.Valid() {
		return "?"
	}
	return table[l].stage
}

// OnDisk reports whether l needs a dataset on disk (or in a bucket).
func (l Level) OnDisk() bool { return l.Valid() && table[l].needs >= diskData }

// Remote reports whether l needs a dataset in a bucket.
func (l Level) Remote() bool { return l.Valid() && table[l].needs == bucketData }

// Runs reports whether l still runs the stage named stage. A stage not in
// the table (the loader's own bookkeeping, such as "index") runs wherever
// a loader does.
func (l Level) Runs(stage string) bool {
	if !l.Valid() {
		return false
	}
	for _, r := range table {
		if slices.Contains(r.runs, stage) {
			return slices.Contains(table[l].runs, stage)
		}
	}
	return l.Loader()
}

// Loader reports whether l runs a loader: whether batching still runs.
// Above it, one batch made by the full pipeline is kept.
func (l Level) Loader() bool { return l.Valid() && slices.Contains(table[l].runs, Collate) }

// Between names the stages that lo runs and above does not, e.g.
// "transforms" or "raw data loading + transforms" when a level between
// them was not measured. From none, encoded's decoding and local's fetching
// are part of raw data loading; none against encoded is FetchStage, none
// against local NetworkStage.
func Between(lo, above Level) string {
	switch {
	case lo == None && above == Local:
		return NetworkStage
	case lo == None && above == Encoded:
		return FetchStage
	}
	var names []string
	for l := lo; l < above; l++ {
		if (l == Local || l == Encoded) && lo == None {
			continue // raw data loading includes the fetch and the decode
		}
		names = append(names, l.Stage())
	}
	return strings.Join(names, " + ")
}

// Attributed is the ladder's name for the pipeline stage named stage
// ("load" is "raw data loading"): the Stage of the highest level that
// still runs it, and FetchStage for fetch, which encoded alone caches. A
// stage the table does not name keeps its own name.
func Attributed(stage string) string {
	if stage == Fetch {
		return FetchStage
	}
	for _, r := range slices.Backward(table[:]) {
		if slices.Contains(r.runs, stage) {
			return r.stage
		}
	}
	return stage
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
