package workloads

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// WhatIfReport is everything `headspace whatif --report` writes, as a
// result file of the run holds it (whatif.Report).
type WhatIfReport = whatif.Report

// The configuration lines WhatIfReportSettings writes and ReadWhatIf
// needs, besides the experiment's own settings (transforms).
const (
	keyCommand = "command"
	keyProfile = "whatif-profile" // the profile as one line of JSON (whatif.Profile.Line)
)

// grids are the lines of the two grids, in the order they are written.
var grids = []struct {
	key string
	get func(r *WhatIfReport) *whatif.Grid
}{
	{"whatif-table", func(r *WhatIfReport) *whatif.Grid { return &r.Grid }},
	{"whatif-verify", func(r *WhatIfReport) *whatif.Grid { return &r.Verify }},
}

// WhatIfReportSettings are the configuration lines that, beside the
// experiment's Settings, let ReadWhatIf rebuild the report from the
// result file: the command as the report states it, the profile (the
// median of the profiling records, calibrated at 1 core, or the one
// --stats read), and the grids ("cores=1,2 workers=1,2,4 steps=0.5,2").
func WhatIfReportSettings(r WhatIfReport) ([]resultfile.Config, error) {
	line, err := r.Profile.Line()
	if err != nil {
		return nil, err
	}
	out := []resultfile.Config{{Key: keyCommand, Value: r.Command}, {Key: keyProfile, Value: line}}
	for _, g := range grids {
		if v := formatGrid(*g.get(&r)); v != "" {
			out = append(out, resultfile.Config{Key: g.key, Value: v})
		}
	}
	return out, nil
}

// formatGrid writes a grid as "cores=1,2 workers=1,2 steps=0.5,2"; "" for
// an empty one.
func formatGrid(g whatif.Grid) string {
	if len(g.Cores) == 0 || len(g.Workers) == 0 || len(g.StepScales) == 0 {
		return ""
	}
	return "cores=" + joinInts(g.Cores) + " workers=" + joinInts(g.Workers) + " steps=" + joined(g.StepScales, formatFloat)
}

// parseGrid reads what formatGrid wrote.
func parseGrid(s string) (whatif.Grid, error) {
	var g whatif.Grid
	parts := strings.Fields(s)
	if len(parts) != 3 {
		return g, fmt.Errorf("%q is not cores=… workers=… steps=…", s)
	}
	for i, key := range []string{"cores", "workers", "steps"} {
		list, ok := strings.CutPrefix(parts[i], key+"=")
		if !ok {
			return g, fmt.Errorf("%q: want %s= at %q", s, key, parts[i])
		}
		for _, f := range strings.Split(list, ",") {
			if key == "steps" {
				m, err := strconv.ParseFloat(f, 64)
				if err != nil || !(m > 0) {
					return g, fmt.Errorf("%q: step multiplier %q", s, f)
				}
				g.StepScales = append(g.StepScales, m)
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				return g, fmt.Errorf("%q: %s %q", s, key, f)
			}
			if key == "cores" {
				g.Cores = append(g.Cores, n)
			} else {
				g.Workers = append(g.Workers, n)
			}
		}
	}
	return g, nil
}

// ReadWhatIf rebuilds, from a result file `headspace whatif --out` wrote,
// what its --report stated: the command, the profile and the grids from
// the configuration lines (WhatIfReportSettings), the checks and the
// ladder's medians from its records (WhatIfCodec). Each check's recorded
// prediction must be the profile's, so a profile line that is not the
// run's is an error. Nothing is taken from this machine.
func ReadWhatIf(path string) (WhatIfReport, error) {
	var r WhatIfReport
	rs, err := resultfile.Read(path)
	if err != nil {
		return r, err
	}
	if len(rs) == 0 {
		return r, fmt.Errorf("%s: no results", path)
	}
	if positional(rs[0].Name) == "/model" {
		// whatif -- COMMAND's file: its model and checks are the script's,
		// which --from does not rebuild yet.
		return r, fmt.Errorf("%s: the what-if of a user's own command (whatif -- COMMAND --out), whose report --from does not rebuild: run the command again", path)
	}
	o, err := WhatIfCodec.Decode(rs)
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	get := func(key string) string { return rs[0].GetConfig(key) }
	legacy := get(keyProfile) == "" && get(keyCommand) == "" && get(grids[0].key) == "" && len(o.Profiling) > 0
	var missing []string
	for _, k := range []string{keyCommand, keyProfile, "transforms", grids[0].key} {
		if get(k) == "" && !(legacy && k != "transforms") {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return r, fmt.Errorf("%s: no %s line (headspace whatif --out records them; the report cannot be rebuilt without them)", path, strings.Join(missing, ", "))
	}
	r.Command, r.Impl, r.Partial = get(keyCommand), get("transforms"), get("partial") == "true"
	if legacy {
		r.Command = LegacyWhatIfCommand
		if r.Profile, err = legacyProfile(o.Profiling, get); err != nil {
			return r, fmt.Errorf("%s: %w", path, err)
		}
		if r.Grid, err = parseGrid(LegacyWhatIfTable); err != nil {
			return r, err
		}
	} else if r.Profile, err = whatif.ParseLine(get(keyProfile)); err != nil {
		return r, fmt.Errorf("%s: %s: %w", path, keyProfile, err)
	}
	for _, g := range grids {
		if v := get(g.key); v != "" {
			if *g.get(&r), err = parseGrid(v); err != nil {
				return r, fmt.Errorf("%s: %s: %w", path, g.key, err)
			}
		}
	}
	for _, ck := range o.Checks {
		s, v := ck.Predicted.Scenario, ck.Predicted.StepsPerSec
		if ck.Predicted = r.Profile.Predict(s); math.Abs(v-ck.Predicted.StepsPerSec) > 1e-9*math.Max(1, ck.Predicted.StepsPerSec) {
			if legacy {
				return r, fmt.Errorf("%s: %s predicted %v steps/s, the profile rebuilt from the file's WhatIf/profile records predicts %v: the records do not give the run's profile", path, checkName(s), v, ck.Predicted.StepsPerSec)
			}
			return r, fmt.Errorf("%s: %s predicted %v steps/s, the file's profile predicts %v: the profile line is not the run's", path, checkName(s), v, ck.Predicted.StepsPerSec)
		}
		r.Checks = append(r.Checks, ck)
	}
	r.Ladder = o.Ladder
	return r, nil
}

// A file written before `whatif --out` recorded the command, the profile
// and the table's grid (results/whatif-3797d48.txt, the GPU machine's
// results/gpu/nvidia-h100-80gb-hbm3-15709d7-whatif.txt) holds the
// profiling records, from which ReadWhatIf rebuilds the profile
// (legacyProfile); the report says what the file lacks.
const (
	// LegacyWhatIfCommand stands for the command in a report rebuilt
	// from such a file.
	LegacyWhatIfCommand = "headspace whatif … (the command line is not recorded in this file, which predates command: lines)"
	// LegacyWhatIfTable is the table's grid of such a file: whatif's
	// defaults (--cores, --at-workers, --at-steps), which it does not
	// record.
	LegacyWhatIfTable = "cores=1,2,4,8,16 workers=1,2,4,8,16 steps=0.5,1,2"
)

// legacyProfile rebuilds the profile of a file without a whatif-profile
// line from its decoded profiling runs, as WhatIf.Measure made it: the
// median of the runs at the most cores, calibrated by the median of
// those at 1 core where both were run. What the records do not hold is
// taken as FromRun sets it: every stage's workers the loader's but the
// batch stage's one, the load stage's wait the file's load-latency, the
// CPU from thread clocks on Linux; the machine's CPUs are the cores:
// line, else the profile's cores.
func legacyProfile(runs []whatif.Profile, get func(string) string) (whatif.Profile, error) {
	batch, err := strconv.Atoi(get("batch"))
	if err != nil || batch <= 0 {
		return whatif.Profile{}, fmt.Errorf("batch %q: the profile cannot be rebuilt without it", get("batch"))
	}
	latency := time.Duration(0)
	if v := get("load-latency"); v != "" {
		if latency, err = time.ParseDuration(v); err != nil {
			return whatif.Profile{}, fmt.Errorf("load-latency %q: %w", v, err)
		}
	}
	source := whatif.TaskTime
	if get("goos") == "linux" {
		source = whatif.ThreadCPU
	}
	byCores := map[int][]whatif.Profile{}
	most := 0
	for _, p := range runs {
		p.Batch, p.CPUSource, p.Neighbours = batch, source, -1
		p.Stages = slices.Clone(p.Stages)
		for i := range p.Stages {
			s := &p.Stages[i]
			s.Workers, s.Scales = p.Workers, s.Name != "batch"
			if !s.Scales {
				s.Workers = 1
			}
			if s.Name == "load" || s.Name == "fetch" {
				s.Wait = latency
			}
		}
		byCores[p.Cores] = append(byCores[p.Cores], p)
		most = max(most, p.Cores)
	}
	p, err := whatif.Median(byCores[most])
	if err != nil {
		return p, fmt.Errorf("the WhatIf/profile records at %d cores: %w", most, err)
	}
	p.CPUs = most
	if v, err := strconv.Atoi(get("cores")); err == nil && v > 0 {
		p.CPUs = v
	}
	if one := byCores[1]; most > 1 && len(one) > 0 {
		o, err := whatif.Median(one)
		if err != nil {
			return p, fmt.Errorf("the WhatIf/profile records at 1 core: %w", err)
		}
		if p, err = p.Calibrate(o); err != nil {
			return p, err
		}
	}
	return p, p.Validate()
}
