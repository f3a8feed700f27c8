// Package merge joins the result files of one sharded sweep (each written
// by a run with --shard i/n, on one machine of a cluster) into the one
// result file a single-process run of the sweep would have written.
//
// A sharded run records, beside its machine and settings, the sweep it
// is a shard of: the configuration lines that name its points (for the
// ladder, sweep-levels, sweep-workers, … and shards; see
// workloads.LadderShardSettings). Merge reads them back through a
// Planner, which enumerates the sweep's points and the shard of each the
// same way the sweep selected them, so it knows the full set without
// being told. It then refuses, naming what is wrong:
//
//   - shards whose configuration differs in any key (the machine: cpu,
//     cores, device, …; the setup: steps, batch, …; the commit: one sweep
//     is one build), naming the keys and the files; the lines that
//     describe a shard's session rather than its setup
//     (resultfile.SessionKeys: machine-busy, date, elapsed) may differ;
//   - duplicate points: a point measured in two files, or more runs of a
//     point than the sweep makes, or one file given twice;
//   - results that are no point of the sweep;
//   - missing points, listed with their shard, and points short of runs
//     (a shard killed before it finished), unless partial is set: the
//     merged result then carries a "partial:" configuration line that
//     lists them.
//
// The merged configuration is the shards' own without the keys that
// describe the sharding, and with each shard's session lines kept: a
// session line all shards share is kept as it is, one they differ in
// becomes one line naming each shard's value ("machine-busy: shard-0.txt:
// cpu pressure 59% after waiting 30s; shard-2.txt: …"), except the date,
// which is the earliest shard's (when the sweep began). so a merged file and a single-process run of
// the same sweep have the same points and the same settings, and the
// gate, benchstat and the history treat them alike. Writing is the
// caller's (driver.Run: atomic, under the output policy).
package merge

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/gate"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Plan is what a sharded sweep makes: every point, the shard that runs
// it, and the runs of each.
type Plan struct {
	// Points are the sweep's point names in the order the sweep runs
	// them, as benchmark names without the "Benchmark" prefix and the
	// GOMAXPROCS suffix ("Ladder/level=raw/workers=4/…").
	Points []string
	// Shard[i] is the shard (0-based) that runs Points[i].
	Shard []int
	// Shards is the number of shards.
	Shards int
	// Count is the runs of each point.
	Count int
	// Keys are the configuration keys that describe the sharding; the
	// merged result drops them.
	Keys []string
}

// Planner reads the plan of a sharded sweep from a shard file's
// configuration (key to value), or says why it cannot.
type Planner func(config map[string]string) (Plan, error)

// Shard is one shard file as read (resultfile.Read).
type Shard struct {
	Path    string
	Results []*benchfmt.Result
}

// Merged is the joined result, ready for driver.Run.
type Merged struct {
	Config  []resultfile.Config
	Results []*benchfmt.Result
	// Points is the number of points in the sweep; Incomplete lists
	// those missing or short of runs (only with partial).
	Points     int
	Incomplete []string
}

// PartialKey is the configuration key of a partial merge's list of the
// points it lacks.
const PartialKey = "partial"

// maxListed is how many points an error or the partial line names before
// it says how many more there are (a configuration line stays well under
// the benchmark format's 64 KiB).
const maxListed = 100

// Merge joins shards into one result (see the package comment for what
// it refuses). The error is one line naming the files, keys and points.
func Merge(shards []Shard, plan Planner, partial bool) (*Merged, error) {
	if len(shards) == 0 {
		return nil, errors.New("no shard files")
	}
	seenPath := map[string]bool{}
	for _, s := range shards {
		p := filepath.Clean(s.Path)
		if seenPath[p] {
			return nil, fmt.Errorf("duplicate shard: %s is given twice", s.Path)
		}
		seenPath[p] = true
		if len(s.Results) == 0 {
			return nil, fmt.Errorf("%s holds no benchmark results: not a shard file", s.Path)
		}
	}

	// One machine, one setup, one build: every result's configuration
	// equals the first's.
	ref := configOf(shards[0].Results[0])
	if err := sameConfig(shards, ref); err != nil {
		return nil, err
	}
	values := map[string]string{}
	for _, c := range ref {
		values[c.Key] = c.Value
	}
	p, err := plan(values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shards[0].Path, err)
	}

	byPoint, err := byPointOf(shards, p)
	if err != nil {
		return nil, err
	}
	incomplete, err := incompleteOf(byPoint, p, partial)
	if err != nil {
		return nil, err
	}
	m := &Merged{Points: len(p.Points), Incomplete: incomplete}
	for _, c := range ref {
		if !slices.Contains(p.Keys, c.Key) && !resultfile.IsSessionKey(c.Key) {
			m.Config = append(m.Config, c)
		}
	}
	m.Config = append(m.Config, sessionLines(shards)...)
	if len(incomplete) > 0 {
		m.Config = append(m.Config, resultfile.Config{Key: PartialKey,
			Value: fmt.Sprintf("%d of %d points missing or short of runs: %s", len(incomplete), len(p.Points), list(incomplete))})
	}
	for _, rs := range byPoint {
		m.Results = append(m.Results, rs...)
	}
	return m, nil
}

// byPointOf places every result at its point of the sweep: each point in
// one file, with at most Count runs.
func byPointOf(shards []Shard, p Plan) ([][]*benchfmt.Result, error) {
	index := make(map[string]int, len(p.Points))
	for i, name := range p.Points {
		index[name] = i
	}
	byPoint := make([][]*benchfmt.Result, len(p.Points))
	fileOf := make([]string, len(p.Points))
	var dups []string
	for _, s := range shards {
		for _, r := range s.Results {
			name := pointName(r.Name)
			i, ok := index[name]
			if !ok {
				return nil, fmt.Errorf("%s holds %s, which is no point of the sweep its configuration names", s.Path, name)
			}
			switch {
			case fileOf[i] != "" && fileOf[i] != s.Path:
				dups = appendOnce(dups, fmt.Sprintf("%s in %s and %s", name, fileOf[i], s.Path))
			case len(byPoint[i]) == p.Count:
				dups = appendOnce(dups, fmt.Sprintf("%s has more than the sweep's %d runs in %s", name, p.Count, s.Path))
			}
			fileOf[i] = s.Path
			byPoint[i] = append(byPoint[i], r)
		}
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("duplicate points: %s", list(dups))
	}

	return byPoint, nil
}

// incompleteOf lists the points missing or short of runs (refused unless
// partial).
func incompleteOf(byPoint [][]*benchfmt.Result, p Plan, partial bool) ([]string, error) {
	var incomplete, described []string
	for i, rs := range byPoint {
		switch {
		case len(rs) == 0:
			incomplete = append(incomplete, p.Points[i])
			described = append(described, fmt.Sprintf("%s (shard %d/%d)", p.Points[i], p.Shard[i], p.Shards))
		case len(rs) < p.Count:
			s := fmt.Sprintf("%s (%d of %d runs)", p.Points[i], len(rs), p.Count)
			incomplete = append(incomplete, s)
			described = append(described, fmt.Sprintf("%s (%d of %d runs, shard %d/%d)", p.Points[i], len(rs), p.Count, p.Shard[i], p.Shards))
		}
	}
	if len(incomplete) > 0 && !partial {
		return nil, fmt.Errorf("%d of %d points missing or short of runs (rerun their shards, which resume their files, or merge with --partial): %s",
			len(incomplete), len(p.Points), list(described))
	}

	return incomplete, nil
}

// configOf is a result's file configuration, in order.
func configOf(r *benchfmt.Result) []resultfile.Config {
	var out []resultfile.Config
	for _, c := range r.Config {
		if c.File {
			out = append(out, resultfile.Config{Key: c.Key, Value: string(c.Value)})
		}
	}
	return out
}

// sessionLines are the shards' session lines (resultfile.SessionKeys), in
// that order: each key some shard sets, with the value every result of
// every shard shares, or else one part per shard that sets it, in the
// shards' order, naming the file by its base name; the date is the
// earliest.
func sessionLines(shards []Shard) []resultfile.Config {
	var out []resultfile.Config
	for _, key := range resultfile.SessionKeys {
		var parts, all []string
		everywhere := true
		for _, s := range shards {
			var vs []string
			for _, r := range s.Results {
				v, ok := fileValue(r, key)
				everywhere = everywhere && ok
				if ok && !slices.Contains(vs, v) {
					vs = append(vs, v)
				}
			}
			if len(vs) > 0 {
				parts = append(parts, filepath.Base(s.Path)+": "+strings.Join(vs, ", "))
			}
			for _, v := range vs {
				if !slices.Contains(all, v) {
					all = append(all, v)
				}
			}
		}
		switch {
		case len(all) == 0:
		case len(all) == 1 && everywhere:
			out = append(out, resultfile.Config{Key: key, Value: all[0]})
		case key == resultfile.DateKey:
			// RFC 3339 dates in UTC sort as they read.
			out = append(out, resultfile.Config{Key: key, Value: slices.Min(all)})
		default:
			out = append(out, resultfile.Config{Key: key, Value: strings.Join(parts, "; ")})
		}
	}
	return out
}

// fileValue is r's file configuration value for key, if it sets it.
func fileValue(r *benchfmt.Result, key string) (string, bool) {
	for _, c := range r.Config {
		if c.File && c.Key == key {
			return string(c.Value), true
		}
	}
	return "", false
}

// sameConfig refuses results whose configuration differs from ref's
// (shards[0]'s first result), naming each differing key once, with the
// first file that differs in it; keys that say which machine ran the
// shard are named as such.
func sameConfig(shards []Shard, ref []resultfile.Config) error {
	want := map[string]string{}
	for _, c := range ref {
		want[c.Key] = c.Value
	}
	first := shards[0].Path
	var machine, setup []string
	seen := map[string]bool{}
	note := func(key, msg string) {
		if seen[key] || resultfile.IsSessionKey(key) {
			return
		}
		seen[key] = true
		if slices.Contains(gate.MachineKeys, key) {
			machine = append(machine, msg)
		} else {
			setup = append(setup, msg)
		}
	}
	for _, s := range shards {
		for _, r := range s.Results {
			have := map[string]string{}
			for _, c := range configOf(r) {
				have[c.Key] = c.Value
				w, ok := want[c.Key]
				switch {
				case !ok:
					note(c.Key, fmt.Sprintf("%s: not in %s, %q in %s", c.Key, first, c.Value, s.Path))
				case w != c.Value:
					note(c.Key, fmt.Sprintf("%s: %q in %s, %q in %s", c.Key, w, first, c.Value, s.Path))
				}
			}
			for _, c := range ref {
				if _, ok := have[c.Key]; !ok {
					note(c.Key, fmt.Sprintf("%s: %q in %s, not in %s", c.Key, c.Value, first, s.Path))
				}
			}
		}
	}
	var parts []string
	if len(machine) > 0 {
		parts = append(parts, "the shards ran on different machines ("+strings.Join(machine, "; ")+")")
	}
	if len(setup) > 0 {
		parts = append(parts, "the shards have different setups ("+strings.Join(setup, "; ")+")")
	}
	if len(parts) > 0 {
		return fmt.Errorf("refusing to merge: %s", strings.Join(parts, ", and "))
	}
	return nil
}

// pointName is a result's name without the GOMAXPROCS suffix (results
// read back have no "Benchmark" prefix), so shards merged on another
// machine still match the plan.
func pointName(n benchfmt.Name) string {
	name, _ := resultfile.TrimProcs(n)
	return strings.TrimPrefix(name, "Benchmark")
}

// list joins items with ", ", naming at most maxListed of them.
func list(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
