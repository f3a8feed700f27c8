package workloads

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/level"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
	"github.com/headspace-bench/headspace/internal/summary"
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
// result file: the command as the report states it, the profile, and the
// grids ("cores=1,2 workers=1,2,4 steps=0.5,2"). Nothing measured is
// left out of the file: the profile is the median of its profiling runs
// (recorded as records too), calibrated at 1 core, or the one --stats read.
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
	steps := make([]string, len(g.StepScales))
	for i, m := range g.StepScales {
		steps[i] = strconv.FormatFloat(m, 'g', -1, 64)
	}
	ints := func(ns []int) string {
		s := make([]string, len(ns))
		for i, n := range ns {
			s[i] = strconv.Itoa(n)
		}
		return strings.Join(s, ",")
	}
	return "cores=" + ints(g.Cores) + " workers=" + ints(g.Workers) + " steps=" + strings.Join(steps, ",")
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
// the configuration lines (WhatIfReportSettings), every checked point's
// runs and the other processes' cores from the WhatIf/check records in
// the order the run checked them, and the ladder's medians from the
// Ladder records. Each check's recorded prediction must be the profile's,
// so a profile line that is not the run's is an error. Nothing is
// measured and nothing is taken from this machine. Errors name the file;
// a file from before the lines were recorded says so.
func ReadWhatIf(path string) (WhatIfReport, error) {
	var r WhatIfReport
	rs, err := resultfile.Read(path)
	if err != nil {
		return r, err
	}
	if len(rs) == 0 {
		return r, fmt.Errorf("%s: no results", path)
	}
	if strings.Contains(string(rs[0].Name), "/script=") {
		// whatif -- COMMAND's file: its model and checks are the script's,
		// which --from does not rebuild yet.
		return r, fmt.Errorf("%s: the what-if of a user's own command (whatif -- COMMAND --out), whose report --from does not rebuild: run the command again", path)
	}
	get := func(key string) string { return rs[0].GetConfig(key) }
	legacy := get(keyProfile) == "" && get(keyCommand) == "" && get(grids[0].key) == "" && hasProfileRecords(rs)
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
		if r.Profile, err = legacyProfile(rs, get); err != nil {
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
	checks := map[string]int{} // name → index in r.Checks
	ladderRuns := map[level.Level][]float64{}
	for _, res := range rs {
		name := withoutProcs(string(res.Name))
		steps, ok := resultfile.Value(res, "steps/s")
		if !ok {
			return r, fmt.Errorf("%s: %s has no steps/s", path, name)
		}
		switch {
		case strings.HasPrefix(name, "WhatIf/check/"):
			i, seen := checks[name]
			if !seen {
				s, err := parseCheckName(name)
				if err != nil {
					return r, fmt.Errorf("%s: %w", path, err)
				}
				pr := r.Profile.Predict(s)
				if v, ok := resultfile.Value(res, "predicted-steps/s"); !ok || math.Abs(v-pr.StepsPerSec) > 1e-9*math.Max(1, pr.StepsPerSec) {
					if legacy {
						return r, fmt.Errorf("%s: %s predicted %v steps/s, the profile rebuilt from the file's WhatIf/profile records predicts %v: the records do not give the run's profile", path, name, v, pr.StepsPerSec)
					}
					return r, fmt.Errorf("%s: %s predicted %v steps/s, the file's profile predicts %v: the profile line is not the run's", path, name, v, pr.StepsPerSec)
				}
				i = len(r.Checks)
				checks[name] = i
				r.Checks = append(r.Checks, whatif.Check{Predicted: pr})
			}
			ck := &r.Checks[i]
			ck.Runs = append(ck.Runs, steps)
			if v, ok := resultfile.Value(res, "other-cores"); ok {
				ck.Neighbours = append(ck.Neighbours, v)
			}
		case strings.HasPrefix(name, "Ladder/level="):
			lv, _, _ := strings.Cut(strings.TrimPrefix(name, "Ladder/level="), "/")
			l, err := level.Parse(lv)
			if err != nil {
				return r, fmt.Errorf("%s: %s: %w", path, name, err)
			}
			ladderRuns[l] = append(ladderRuns[l], steps)
		}
	}
	if len(ladderRuns) > 0 {
		r.Ladder = WhatIfLadder{}
		for l, vs := range ladderRuns {
			r.Ladder[l] = summary.Median(vs)
		}
	}
	return r, nil
}

// A file written before `whatif --out` recorded the command, the profile
// and the table's grid (results/whatif-3797d48.txt, the GPU machine's
// results/gpu/nvidia-h100-80gb-hbm3-15709d7-whatif.txt) still holds the
// profiling runs as WhatIf/profile records, each with the model's inputs
// (profileRecord). ReadWhatIf rebuilds the profile from them as
// WhatIf.Profile made it, and the report says what the file lacks.
const (
	// LegacyWhatIfCommand stands for the command in a report rebuilt
	// from such a file.
	LegacyWhatIfCommand = "headspace whatif … (the command line is not recorded in this file, which predates command: lines)"
	// LegacyWhatIfTable is the table's grid of such a file: whatif's
	// defaults (--cores, --at-workers, --at-steps), which it does not
	// record.
	LegacyWhatIfTable = "cores=1,2,4,8,16 workers=1,2,4,8,16 steps=0.5,1,2"
)

// hasProfileRecords says whether the file holds WhatIf/profile records.
func hasProfileRecords(rs []*benchfmt.Result) bool {
	for _, r := range rs {
		if strings.HasPrefix(string(r.Name), "WhatIf/profile/") {
			return true
		}
	}
	return false
}

// legacyProfile rebuilds the profile of a file without a whatif-profile
// line from its WhatIf/profile records, as WhatIf.Profile made it: the
// median of the runs at the profile's cores (the most cores among the
// records), calibrated by the median of those at 1 core where both were
// run. What the records do not hold is taken as FromRun sets it: every
// stage's workers the loader's but the batch stage's one, the load
// stage's wait the file's load-latency, the CPU from thread clocks on
// Linux (where profileOnce measures them), the other load 0; the machine's
// CPUs are the cores: line, else the profile's cores, and the other
// processes' cores are unknown. ReadWhatIf then checks every recorded
// prediction against the rebuilt profile's, so a profile that is not the
// run's is refused.
func legacyProfile(rs []*benchfmt.Result, get func(string) string) (whatif.Profile, error) {
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
	for _, res := range rs {
		name := withoutProcs(string(res.Name))
		if !strings.HasPrefix(name, "WhatIf/profile/") {
			continue
		}
		var cores, workers int
		if n, err := fmt.Sscanf(name, "WhatIf/profile/cores=%d/workers=%d", &cores, &workers); err != nil || n != 2 || cores <= 0 || workers <= 0 {
			return whatif.Profile{}, fmt.Errorf("%q is not a profiling run's name", name)
		}
		p := whatif.Profile{Batch: batch, Workers: workers, Cores: cores, CPUSource: source, Neighbours: -1}
		value := func(unit string) float64 { v, _ := resultfile.Value(res, unit); return v }
		p.Measured, p.Used = value("steps/s"), value("cores-used")
		p.Step, p.Upload = time.Duration(value("step-ns")), time.Duration(value("upload-ns/op"))
		for _, v := range res.Values {
			unit := v.OrigUnit // as profileRecord wrote it, before benchfmt tidied it
			if unit == "" {
				unit = v.Unit
			}
			switch stage, ok := strings.CutSuffix(unit, "-cpu-ns/sample"); {
			case ok && stage == "host":
				p.Host = time.Duration(value(unit))
			case ok:
				s := whatif.Stage{Name: stage, CPU: time.Duration(value(unit)), Workers: workers, Scales: stage != "batch"}
				if !s.Scales {
					s.Workers = 1
				}
				if stage == "load" || stage == "fetch" {
					s.Wait = latency
				}
				p.Stages = append(p.Stages, s)
			}
		}
		byCores[cores] = append(byCores[cores], p)
		most = max(most, cores)
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

// withoutProcs is a benchmark name without its GOMAXPROCS suffix ("-2").
func withoutProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 && i < len(name)-1 && strings.Trim(name[i+1:], "0123456789") == "" {
		return name[:i]
	}
	return name
}

// parseCheckName reads the scenario CheckName wrote.
func parseCheckName(name string) (whatif.Scenario, error) {
	var s whatif.Scenario
	if n, err := fmt.Sscanf(name, "WhatIf/check/cores=%d/workers=%d/step=x%g", &s.Cores, &s.Workers, &s.StepScale); err != nil || n != 3 || CheckName(s) != name {
		return s, fmt.Errorf("%q is not a checked point's name", name)
	}
	return s, nil
}
