package ladder

import (
	"fmt"
	"strings"
)

// Level is a rung of the caching ladder: the point of the input pipeline
// after which data is cached, so everything before it costs nothing.
type Level int

// The five levels of the document, from the full pipeline to the model
// alone, and encoded, between none and raw, for a dataset on disk.
const (
	None    Level = iota // the full pipeline: raw data, transforms, batching, upload, step
	Encoded              // one sample's file bytes reused: decode, transforms, batching, upload, step (data on disk only)
	Raw                  // one raw sample reused: transforms, batching, upload, step
	Sample               // one processed sample reused: batching, upload, step
	Host                 // one collated batch on the host: upload, step
	Device               // one batch on the device: step only
)

// Levels is the document's five levels, from the full pipeline up to the
// device cache: every level that runs on any dataset.
var Levels = []Level{None, Raw, Sample, Host, Device}

// OnDiskLevels is every level of a dataset on disk: Levels and Encoded.
var OnDiskLevels = []Level{None, Encoded, Raw, Sample, Host, Device}

var levelNames = [...]string{"none", "encoded", "raw", "sample", "host", "device"}

func (l Level) String() string {
	if l < 0 || int(l) >= len(levelNames) {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return levelNames[l]
}

// Stage is what a level adds over the level above it: the part of the
// pipeline that a drop in throughput between the two is attributed to.
// None's is raw data loading, fetch and decode together; with the encoded
// level measured, what none adds over it is FetchStage (Drop.Stages).
func (l Level) Stage() string {
	switch l {
	case None:
		return "raw data loading"
	case Encoded:
		return "decoding"
	case Raw:
		return "transforms"
	case Sample:
		return "batching (collate)"
	case Host:
		return "host-to-device transfer"
	case Device:
		return "model step"
	}
	return "?"
}

// FetchStage is what level none adds over level encoded: reading the
// sample's bytes from storage (DS-Analyzer's fetch stall; decoding is its
// prep).
const FetchStage = "fetching"

// ParseLevel parses one level name.
func ParseLevel(s string) (Level, error) {
	for i, n := range levelNames {
		if s == n {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("unknown level %q (want one of %s)", s, strings.Join(levelNames[:], ", "))
}

// ParseLevels parses a comma-separated list of level names.
func ParseLevels(s string) ([]Level, error) {
	var out []Level
	seen := map[Level]bool{}
	for _, f := range strings.Split(s, ",") {
		l, err := ParseLevel(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if !seen[l] {
			out = append(out, l)
			seen[l] = true
		}
	}
	return out, nil
}
