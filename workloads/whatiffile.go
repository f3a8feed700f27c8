package workloads

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/harness/whatif"
)

// WhatIfReport is everything `headspace whatif --report` writes, as a
// result file of the run holds it (whatif.Report).
type WhatIfReport = whatif.Report

// The configuration lines WhatIfReportSettings writes and WhatIfCodec
// reads back (decodeReport), besides the experiment's own settings
// (transforms).
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
// experiment's Settings, let WhatIfCodec rebuild the report from the
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

// reportLines are the configuration lines of the report that
// WhatIfReportSettings writes, beside transforms.
var reportLines = []string{keyCommand, keyProfile, grids[0].key}

// decodeReport is the report that the configuration lines of rec (a
// result file's first record: WhatIfReportSettings) and o, the file's
// outcome, state: nil where the file records none of its lines. Each
// check's recorded prediction must be the profile's, so a profile line
// that is not the run's is an error; so is a file with some of the
// lines and not the others. Nothing is taken from this machine.
func decodeReport(o WhatIfOutcome, rec *benchfmt.Result) (*WhatIfReport, error) {
	get := func(key string) string { return rec.GetConfig(key) }
	if !slices.ContainsFunc(reportLines, func(k string) bool { return get(k) != "" }) {
		return nil, nil // none of the report's lines
	}
	var missing []string
	for _, k := range append(slices.Clone(reportLines), "transforms") {
		if get(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no %s line (headspace whatif --out records them; the report cannot be rebuilt without them)", strings.Join(missing, ", "))
	}
	r := &WhatIfReport{Command: get(keyCommand), Impl: get("transforms"), Partial: get("partial") == "true", Ladder: o.Ladder}
	var err error
	if r.Profile, err = whatif.ParseLine(get(keyProfile)); err != nil {
		return nil, fmt.Errorf("%s: %w", keyProfile, err)
	}
	for _, g := range grids {
		if v := get(g.key); v != "" {
			if *g.get(r), err = parseGrid(v); err != nil {
				return nil, fmt.Errorf("%s: %w", g.key, err)
			}
		}
	}
	for _, ck := range o.Checks {
		s, v := ck.Predicted.Scenario, ck.Predicted.StepsPerSec
		if ck.Predicted = r.Profile.Predict(s); math.Abs(v-ck.Predicted.StepsPerSec) > 1e-9*math.Max(1, ck.Predicted.StepsPerSec) {
			return nil, fmt.Errorf("%s predicted %v steps/s, the file's profile predicts %v: the profile line is not the run's", checkName(s), v, ck.Predicted.StepsPerSec)
		}
		r.Checks = append(r.Checks, ck)
	}
	return r, nil
}
