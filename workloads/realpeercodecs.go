package workloads

import (
	"fmt"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/spdlcache"
)

// RealPeerOutcome is a `headspace peer --peers` comparison as its
// results file holds it: the file's configuration lines (every peer's
// versions and settings, each missing run's reason), the runs in the
// order they ran (their Round 0; realpeer.ReportOf sets it) and the
// limit's runs.
type RealPeerOutcome struct {
	Config []resultfile.Config
	Runs   []realpeer.Measurement
	Limits []realpeer.LimitRun
}

// RealPeerCodec is the real peers' records codec:
// BenchmarkRealPeer/peer=<name>/workers=<n> a run (realpeer.MeasurementOf
// checks its figures, as a script's line's), BenchmarkRealPeerLimit/workers=<n>
// the limit's (realpeer.LimitOf); realpeer.Layout declares the names. Decode reads the configuration lines from the first
// run's record. A missing run is a configuration line, no record.
var RealPeerCodec = Codec[RealPeerOutcome]{
	Experiment: realpeer.Layout.Owner,
	Keys:       realpeer.Layout.Keys,
	encode: func(o RealPeerOutcome) []*benchfmt.Result {
		return append(realpeer.Records(o.Runs), realpeer.LimitRecords(o.Limits)...)
	},
	decode: func(recs []Record) (RealPeerOutcome, error) {
		var o RealPeerOutcome
		for _, rec := range recs {
			if rec.Benchmark == realpeer.LimitBenchmark {
				workers, err := rec.count("workers", true)
				if err != nil {
					return o, err
				}
				l, err := realpeer.LimitOf(workers, rec.Result)
				if err != nil {
					return o, atLine(rec.Result, err)
				}
				o.Limits = append(o.Limits, l)
				continue
			}
			m, err := realpeer.MeasurementOf(rec.name(), rec.Result)
			if err != nil {
				return o, atLine(rec.Result, err)
			}
			if o.Config == nil {
				o.Config = fileSettings(rec.Result)
			}
			o.Runs = append(o.Runs, m)
		}
		return o, nil
	},
}

// SPDLCacheOutcome is a `headspace peer --spdl-cache` comparison as its
// results file holds it: the file's configuration lines and the runs, in
// the order they ran, each in its round (spdlcache.Rounds), the missing
// runs after them.
type SPDLCacheOutcome struct {
	Config []resultfile.Config
	Runs   []spdlcache.Run
}

// SPDLCacheCodec is the SPDL CacheDataLoader side-by-side's records codec:
// BenchmarkRealPeerHeadspace/peer=<side>/workers=<n> a run
// (spdlcache.RunOf checks its figures). Decode reads the configuration
// lines from the first record, and the missing runs from them.
var SPDLCacheCodec = Codec[SPDLCacheOutcome]{
	Experiment: spdlcache.Benchmark,
	Keys:       map[string][]string{spdlcache.Benchmark: {"peer", "workers"}},
	encode:     func(o SPDLCacheOutcome) []*benchfmt.Result { return spdlcache.Records(o.Runs) },
	decode: func(recs []Record) (SPDLCacheOutcome, error) {
		runs, err := decodeEach(recs, func(rec Record) (spdlcache.Run, error) {
			workers, err := rec.count("workers", false)
			if err != nil {
				return spdlcache.Run{}, err
			}
			r, err := spdlcache.RunOf(rec.Keys["peer"], workers, rec.Result)
			if err != nil {
				err = atLine(rec.Result, err)
			}
			return r, err
		})
		if err != nil {
			return SPDLCacheOutcome{}, err
		}
		config := fileSettings(recs[0].Result)
		return SPDLCacheOutcome{Config: config, Runs: spdlcache.Rounds(config, runs)}, nil
	},
}

// atLine is err, which names r, prefixed with r's file and line where r
// was read from a file (nil where err is).
func atLine(r *benchfmt.Result, err error) error {
	if err == nil {
		return nil
	}
	if file, line := r.Pos(); file != "" {
		return fmt.Errorf("%s:%d: %w", file, line, err)
	}
	return err
}

// ReadRealPeerReport is the report of the `peer --peers` result file at
// path, its records decoded through RealPeerCodec (what `peer --from`
// prints; internal/figures checks docs against it).
func ReadRealPeerReport(path string) (realpeer.Report, error) {
	recs, err := resultfile.Read(path)
	if err != nil {
		return realpeer.Report{}, err
	}
	o, err := RealPeerCodec.Decode(recs)
	if err != nil {
		return realpeer.Report{}, inFile(path, err)
	}
	return realpeer.ReportOf(path, o.Config, o.Runs, o.Limits)
}

// ReadSPDLCacheReport is the report of the `peer --spdl-cache` result
// file at path, its records decoded through SPDLCacheCodec.
func ReadSPDLCacheReport(path string) (spdlcache.Report, error) {
	recs, err := resultfile.Read(path)
	if err != nil {
		return spdlcache.Report{}, err
	}
	o, err := SPDLCacheCodec.Decode(recs)
	if err != nil {
		return spdlcache.Report{}, inFile(path, err)
	}
	return spdlcache.NewReport(o.Config, o.Runs), nil
}
