package figures

import (
	"slices"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
)

// The result files of docs/tune.md's worked example (issue 56).
const (
	tuneRun1 = "results/tune-imagefolder-5d62c85.txt"
	tuneRun2 = "results/tune-imagefolder-598bba3.txt"
	tuneRun3 = "results/tune-imagefolder-517e1ce.txt"
)

// tuneHeadspace is the profile's headspace in path, in percent.
func tuneHeadspace(path string) figure {
	return func(t *testing.T) float64 {
		b, c := run(path, tuneProfile(), "steps/s", 0)(t), run(path, tuneProfile(), "cached-steps/s", 0)(t)
		return 100 * (1/b - 1/c) * b
	}
}

// tuneNeedCores is the cores the model's step and its batch need at its
// bound (ownloop.WhatIf.NeedCores), from the profile in path.
func tuneNeedCores(path string) figure {
	return func(t *testing.T) float64 {
		p := func(unit string) float64 { return run(path, tuneProfile(), unit, 0)(t) }
		return (p("batch-cpu-ns") + p("main-cpu-ns/step")) / p("step-ns")
	}
}

// tunePredicted is the model's steps/s at its pick on its cores
// (ownloop.WhatIf.StepsPerSec), from the profile in path.
func tunePredicted(path string) figure {
	return func(t *testing.T) float64 {
		p := func(unit string) float64 { return run(path, tuneProfile(), unit, 0)(t) }
		rate := 1e9 / p("step-ns")
		rate = min(rate, p("pick-workers")*1e9/p("batch-ns/worker"))
		return min(rate, p("cores")*1e9/(p("batch-cpu-ns")+p("main-cpu-ns/step")))
	}
}

// tuneName is a record of the example's tune at stage for a setting
// ("workers=3/prefetch=2/pin=false/persistent=true/start=default").
func tuneName(stage, setting string) string {
	return "Tune/script=train_imagefolder.py/stage=" + stage + "/" + setting
}

// tuneProfile is the example's profile record in path.
func tuneProfile() string {
	return tuneName("profile", "workers=0/prefetch=0/pin=false/persistent=false/start=default/bound=dataset+.loader+(reading+and+decoding)")
}

// tuneW is the setting of w workers at prefetch pf, persistent or not.
func tuneW(w, pf string, persistent bool) string {
	p := "false"
	if persistent {
		p = "true"
	}
	return "workers=" + w + "/prefetch=" + pf + "/pin=false/persistent=" + p + "/start=default"
}

const tuneOwn = "workers=0/prefetch=0/pin=false/persistent=false/start=default"

// ciLo and ciHi are the bounds of the 95% interval of the median of
// name's runs in path (internal/summary, as tune prints them).
func ciLo(path, name, unit string) figure {
	return func(t *testing.T) float64 { return summary.Of(load(t, path).runs(t, name, unit)).Lo }
}

func ciHi(path, name, unit string) figure {
	return func(t *testing.T) float64 { return summary.Of(load(t, path).runs(t, name, unit)).Hi }
}

// count is how many runs of name path holds.
func count(path, name, unit string) figure {
	return func(t *testing.T) float64 { return float64(len(load(t, path).runs(t, name, unit))) }
}

// tuneRuns are every search and check run's steps/s in path.
func tuneRuns(t *testing.T, path string) []float64 {
	var xs []float64
	for _, r := range load(t, path).rs {
		name := string(r.Name)
		if v, ok := resultfile.Value(r, "steps/s"); ok && (strings.Contains(name, "/stage=search/") || strings.Contains(name, "/stage=check/")) {
			xs = append(xs, v)
		}
	}
	return xs
}

// tuneWall is the sum of every run's wall-ns in path, in seconds.
func tuneWall(path string) figure {
	return func(t *testing.T) float64 {
		s := 0.0
		seen := map[string]bool{}
		for _, r := range load(t, path).rs {
			name := string(r.Name)
			if seen[name] || !(strings.Contains(name, "/stage=search/") || strings.Contains(name, "/stage=check/")) {
				continue
			}
			seen[name] = true
			for _, v := range load(t, path).runs(t, name, "wall-ns") {
				s += v / 1e9
			}
		}
		return s
	}
}

// recovered is the share of the profile's headspace the check's after
// recovers over its before, in percent.
func recovered(path, own, best string) figure {
	return func(t *testing.T) float64 {
		b := summary.Median(load(t, path).runs(t, tuneName("check", own), "steps/s"))
		a := summary.Median(load(t, path).runs(t, tuneName("check", best), "steps/s"))
		c := load(t, path).runs(t, tuneProfile(), "cached-steps/s")[0]
		return 100 * (1/b - 1/a) / (1/b - 1/c)
	}
}

// tuneCases are docs/tune.md's figures.
var tuneCases = func() []figureCase {
	w3p := tuneW("3", "2", true)
	s1 := func(setting string) string { return tuneName("search", setting) }
	return append([]figureCase{
		{"docs/tune.md", "The profile read %s steps/s with the loader and %s on cached batches, and the model picked %s workers.", []shown{
			p2(run(tuneRun1, tuneProfile(), "steps/s", 0)), p2(run(tuneRun1, tuneProfile(), "cached-steps/s", 0)), p0(run(tuneRun1, tuneProfile(), "pick-workers", 0))}},
		{"docs/tune.md", "| `num_workers=2` (the model's pick) | %s | %s |", []shown{p0(count(tuneRun1, s1(tuneW("2", "2", false)), "steps/s")), p2(med(tuneRun1, s1(tuneW("2", "2", false)), "steps/s"))}},
		{"docs/tune.md", "| `num_workers=1` | %s | %s |", []shown{p0(count(tuneRun1, s1(tuneW("1", "2", false)), "steps/s")), p2(med(tuneRun1, s1(tuneW("1", "2", false)), "steps/s"))}},
		{"docs/tune.md", "| `num_workers=3` | %s | %s (%s – %s) |", []shown{p0(count(tuneRun1, s1(tuneW("3", "2", false)), "steps/s")), p2(med(tuneRun1, s1(tuneW("3", "2", false)), "steps/s")),
			p2(ciLo(tuneRun1, s1(tuneW("3", "2", false)), "steps/s")), p2(ciHi(tuneRun1, s1(tuneW("3", "2", false)), "steps/s"))}},
		{"docs/tune.md", "| `num_workers=0` (the script's own) | %s | %s |", []shown{p0(count(tuneRun1, s1(tuneOwn), "steps/s")), p2(med(tuneRun1, s1(tuneOwn), "steps/s"))}},
		{"docs/tune.md", "| `num_workers=4` | %s | %s |", []shown{p0(count(tuneRun1, s1(tuneW("4", "2", false)), "steps/s")), p2(med(tuneRun1, s1(tuneW("4", "2", false)), "steps/s"))}},
		{"docs/tune.md", "| `num_workers=3, persistent_workers=True` | %s | %s (%s – %s) |", []shown{p0(count(tuneRun1, s1(w3p), "steps/s")), p2(med(tuneRun1, s1(w3p), "steps/s")),
			p2(ciLo(tuneRun1, s1(w3p), "steps/s")), p2(ciHi(tuneRun1, s1(w3p), "steps/s"))}},
		{"docs/tune.md", "| `num_workers=3, prefetch_factor=4` | %s | %s |", []shown{p0(count(tuneRun1, s1(tuneW("3", "4", false)), "steps/s")), p2(med(tuneRun1, s1(tuneW("3", "4", false)), "steps/s"))}},
		{"docs/tune.md", "| `num_workers=3, prefetch_factor=4, persistent_workers=True` | %s | %s |", []shown{p0(count(tuneRun1, s1(tuneW("3", "4", true)), "steps/s")), p2(med(tuneRun1, s1(tuneW("3", "4", true)), "steps/s"))}},
		{"docs/tune.md", "The final check, %s pairs: the script's own %s steps/s (95%% CI %s – %s), three persistent workers %s (%s – %s), %s×", []shown{
			p0(count(tuneRun1, tuneName("check", tuneOwn), "steps/s")),
			p2(med(tuneRun1, tuneName("check", tuneOwn), "steps/s")), p2(ciLo(tuneRun1, tuneName("check", tuneOwn), "steps/s")), p2(ciHi(tuneRun1, tuneName("check", tuneOwn), "steps/s")),
			p2(med(tuneRun1, tuneName("check", w3p), "steps/s")), p2(ciLo(tuneRun1, tuneName("check", w3p), "steps/s")), p2(ciHi(tuneRun1, tuneName("check", w3p), "steps/s")),
			p2(div(med(tuneRun1, tuneName("check", w3p), "steps/s"), med(tuneRun1, tuneName("check", tuneOwn), "steps/s")))}},
		{"docs/tune.md", "recovers %s of the headspace (the step time cached batches save) the two intervals overlap", []shown{pct(recovered(tuneRun1, tuneOwn, w3p))}},
		{"docs/tune.md", "Its %s runs took %s s of the budget's %s by their own clocks", []shown{p0(run(tuneRun1, tuneName("best", w3p), "runs", 0)), p0(tuneWall(tuneRun1)), p0(configNum(tuneRun1, "budget"))}},
		{"docs/tune.md", "This time the profile found less headspace: %s steps/s with the loader, %s on cached batches, %s%%; the model picked %s worker.", []shown{
			p2(run(tuneRun2, tuneProfile(), "steps/s", 0)), p2(run(tuneRun2, tuneProfile(), "cached-steps/s", 0)), p1(tuneHeadspace(tuneRun2)),
			{"%.0f", run(tuneRun2, tuneProfile(), "pick-workers", 0)}}},
		{"docs/tune.md", "measured %s steps/s in the final check against the script's own %s: the tune said", []shown{
			p2(med(tuneRun2, tuneName("check", tuneW("1", "4", false)), "steps/s")), p2(med(tuneRun2, tuneName("check", tuneOwn), "steps/s"))}},
		{"docs/tune.md", "profile (the script as it is, num_workers=0): %s steps/s with the loader, %s on cached batches: headspace %s%%", []shown{
			p2(run(tuneRun3, tuneProfile(), "steps/s", 0)), p2(run(tuneRun3, tuneProfile(), "cached-steps/s", 0)), p1(tuneHeadspace(tuneRun3))}},
		{"docs/tune.md", "the what-if model's pick: %s workers (predicted %s steps/s on %s cores)", []shown{
			p0(run(tuneRun3, tuneProfile(), "pick-workers", 0)), p2(tunePredicted(tuneRun3)), p0(run(tuneRun3, tuneProfile(), "cores", 0))}},
		{"docs/tune.md", "num_workers=1, prefetch_factor=2, persistent_workers=True measured %s steps/s in the final check against the script's own %s: not faster", []shown{
			p2(med(tuneRun3, tuneName("check", tuneW("1", "2", true)), "steps/s")), p2(med(tuneRun3, tuneName("check", tuneOwn), "steps/s"))}},
		{"docs/tune.md", "final check: the script's own %s (95%% CI %s – %s, n=%s) steps/s, num_workers=1, prefetch_factor=2, persistent_workers=True %s (95%% CI %s – %s, n=%s)", []shown{
			p2(med(tuneRun3, tuneName("check", tuneOwn), "steps/s")), p2(ciLo(tuneRun3, tuneName("check", tuneOwn), "steps/s")), p2(ciHi(tuneRun3, tuneName("check", tuneOwn), "steps/s")),
			p0(count(tuneRun3, tuneName("check", tuneOwn), "steps/s")),
			p2(med(tuneRun3, tuneName("check", tuneW("1", "2", true)), "steps/s")), p2(ciLo(tuneRun3, tuneName("check", tuneW("1", "2", true)), "steps/s")),
			p2(ciHi(tuneRun3, tuneName("check", tuneW("1", "2", true)), "steps/s")), p0(count(tuneRun3, tuneName("check", tuneW("1", "2", true)), "steps/s"))}},
		{"docs/tune.md", "its slowest stage is dataset .loader (reading and decoding), %s ms a batch; the cores are spent: the step and its batch need %s cores at the model's bound, this machine has %s", []shown{
			p1(scale(run(tuneRun3, tuneProfile(), "stage-ns/batch", 0), 1e-6)), p1(tuneNeedCores(tuneRun3)), p0(run(tuneRun3, tuneProfile(), "cores", 0))}},
		{"docs/tune.md", "the model needs %s cores for the step and its batch at the model's bound", []shown{p1(tuneNeedCores(tuneRun3))}},
		{"docs/tune.md", "The machine's load swung the runs from %s to %s steps/s (one run of one worker with a prefetch of 4 read %s", []shown{
			p0(func(t *testing.T) float64 { return slices.Min(tuneRuns(t, tuneRun2)) }), p0(func(t *testing.T) float64 { return slices.Max(tuneRuns(t, tuneRun2)) }),
			p2(func(t *testing.T) float64 {
				return slices.Max(load(t, tuneRun2).runs(t, tuneName("search", tuneW("1", "4", false)), "steps/s"))
			})}},
		{"docs/tune.md", "Its %s runs took %s s by their own clocks.", []shown{p0(run(tuneRun2, tuneName("best", tuneW("1", "4", false)), "runs", 0)), p0(tuneWall(tuneRun2))}},
	}, tuneRanksCases()...)
}()

// tuneRanks is docs/tune.md's worked example of a node's 2 ranks.
const tuneRanks = "results/tune-ranks-d2c5995.txt"

// ranksName is a record of the ranks' example at stage for a setting.
func ranksName(stage, setting string) string {
	return "Tune/script=train_ddp.py/stage=" + stage + "/" + setting + "/ranks=2"
}

// tuneRanksCases are the figures of docs/tune.md's example of a node's
// ranks: the profile (the slowest rank's), the model's pick on a rank's
// cores, one candidate's spread, and the final check.
func tuneRanksCases() []figureCase {
	profile := "Tune/script=train_ddp.py/stage=profile/" + tuneOwn + "/ranks=2/bound=dataset+.loader+(reading+and+decoding)"
	p := func(unit string) figure { return run(tuneRanks, profile, unit, 0) }
	predicted := func(t *testing.T) float64 {
		v := func(unit string) float64 { return p(unit)(t) }
		rate := min(1e9/v("step-ns"), v("pick-workers")*1e9/v("batch-ns/worker"))
		return min(rate, v("cores")*1e9/(v("batch-cpu-ns")+v("main-cpu-ns/step")))
	}
	headspace := func(t *testing.T) float64 {
		b, c := p("steps/s")(t), p("cached-steps/s")(t)
		return 100 * (1/b - 1/c) * b
	}
	w2 := ranksName("search", tuneW("2", "2", false))
	best := ranksName("check", tuneW("2", "4", true))
	own := ranksName("check", tuneOwn)
	return []figureCase{
		{"docs/tune.md", "each rank's loader num_workers=0; the slowest rank's, which the others wait for): %s steps/s with the loader, %s on cached batches: headspace %s%%", []shown{
			p2(p("steps/s")), p2(p("cached-steps/s")), p1(headspace)}},
		{"docs/tune.md", "the what-if model's pick: %s workers a rank (predicted %s steps/s on a rank's %s cores: the machine's shared by 2 ranks)", []shown{
			p0(p("pick-workers")), p2(predicted), p0(p("cores"))}},
		{"docs/tune.md", "two workers read %s steps/s over %s runs, its 95%% interval %s – %s.", []shown{
			p2(med(tuneRanks, w2, "steps/s")), p0(count(tuneRanks, w2, "steps/s")), p2(ciLo(tuneRanks, w2, "steps/s")), p2(ciHi(tuneRanks, w2, "steps/s"))}},
		{"docs/tune.md", "persistent_workers=True measured %s steps/s in the final check against the script's own %s: not faster", []shown{
			p2(med(tuneRanks, best, "steps/s")), p2(med(tuneRanks, own, "steps/s"))}},
	}
}

// tuneGoals is BenchmarkTuneGoals' run (docs/tune.md's goals).
const tuneGoals = "results/tune-goals-257e5ec.txt"

// tuneGoalCases are docs/tune.md's figures of the goals' benchmark.
var tuneGoalCases = []figureCase{
	{"docs/tune.md", "best-ratio %s (the goal: 0.9 or more), search-runs-ratio %s (1/3 or less), runs-ratio %s, budget-use %s (1.1 or less), the grid's best %s steps/s", []shown{
		p2(med(tuneGoals, "TuneGoals", "best-ratio")), p2(med(tuneGoals, "TuneGoals", "search-runs-ratio")), p2(med(tuneGoals, "TuneGoals", "runs-ratio")),
		p2(med(tuneGoals, "TuneGoals", "budget-use")), p2(med(tuneGoals, "TuneGoals", "grid-best-steps/s"))}},
}

// The result files of docs/tune.md's our own pipeline: the goals'
// benchmark and the worked examples.
const (
	tuneOursGoals  = "results/tune-goals-ours-8933c3e.txt"
	tuneOursRemote = "results/tune-ours-remote-a98e6c0.txt"
	tuneOursLadder = "results/tune-ours-ladder-a98e6c0.txt"
)

// oursName is a record of a tune of our pipeline at stage for a
// setting ("workers=1/prefetch=1/fetch=2").
func oursName(pipeline, stage, setting string) string {
	return "Tune/pipeline=" + pipeline + "/level=none/stage=" + stage + "/" + setting
}

// oursProfile is a profile of our pipeline's.
func oursProfile(pipeline, setting, bound string) string {
	return oursName(pipeline, "profile", setting) + "/bound=" + bound
}

// oursHeadspace is the headspace of a profile, in percent.
func oursHeadspace(path, profile string) figure {
	return func(t *testing.T) float64 {
		b, c := run(path, profile, "steps/s", 0)(t), run(path, profile, "cached-steps/s", 0)(t)
		return 100 * (1/b - 1/c) * b
	}
}

// tuneOursGoalCases are docs/tune.md's figures of our pipeline.
var tuneOursGoalCases = func() []figureCase {
	rp := oursProfile("remote", "workers=1/prefetch=1/fetch=2", "requests+in+flight")
	lp := oursProfile("ladder", "workers=1/prefetch=1/fetch=0", "transform+workers")
	rOwn, rBest := oursName("remote", "check", "workers=1/prefetch=1/fetch=2"), oursName("remote", "check", "workers=1/prefetch=2/fetch=128")
	rSpread := oursName("remote", "search", "workers=1/prefetch=1/fetch=128")
	goal := func(pipeline, unit string) shown {
		return p2(med(tuneOursGoals, "TuneOursGoals/pipeline="+pipeline, unit))
	}
	row := func(pipeline string) []shown {
		return []shown{goal(pipeline, "best-ratio"), goal(pipeline, "search-runs-ratio"), goal(pipeline, "runs-ratio"), goal(pipeline, "budget-use"), goal(pipeline, "grid-best-steps/s")}
	}
	return []figureCase{
		{"docs/tune.md", "profile (headspace remote as given, --workers 1 --prefetch 1 --fetch-concurrency 2): %s steps/s with the loader, %s with the data on the device: headspace %s%%", []shown{
			p2(run(tuneOursRemote, rp, "steps/s", 0)), p2(run(tuneOursRemote, rp, "cached-steps/s", 0)), p1(oursHeadspace(tuneOursRemote, rp))}},
		{"docs/tune.md", "the what-if model's pick: %s worker, %s requests in flight (Little's law)", []shown{
			p0(run(tuneOursRemote, rp, "pick-workers", 0)), p0(run(tuneOursRemote, rp, "pick-fetch", 0))}},
		{"docs/tune.md", "before (your own):         %s (95%% CI %s – %s, n=%s) steps/s", []shown{
			p2(med(tuneOursRemote, rOwn, "steps/s")), p2(ciLo(tuneOursRemote, rOwn, "steps/s")), p2(ciHi(tuneOursRemote, rOwn, "steps/s")), p0(count(tuneOursRemote, rOwn, "steps/s"))}},
		{"docs/tune.md", "after:                     %s (95%% CI %s – %s, n=%s) steps/s, %s× before", []shown{
			p2(med(tuneOursRemote, rBest, "steps/s")), p2(ciLo(tuneOursRemote, rBest, "steps/s")), p2(ciHi(tuneOursRemote, rBest, "steps/s")), p0(count(tuneOursRemote, rBest, "steps/s")),
			p2(div(med(tuneOursRemote, rBest, "steps/s"), med(tuneOursRemote, rOwn, "steps/s")))}},
		{"docs/tune.md", "recovers %s of the headspace (the step time cached batches save)\n```\n\nThe worker stage", []shown{pct(func(t *testing.T) float64 {
			b, a := med(tuneOursRemote, rOwn, "steps/s")(t), med(tuneOursRemote, rBest, "steps/s")(t)
			c := run(tuneOursRemote, rp, "cached-steps/s", 0)(t)
			return 100 * (1/b - 1/a) / (1/b - 1/c)
		})}},
		{"docs/tune.md", "profile (headspace ladder as given, --workers 1 --prefetch 1): %s steps/s with the loader, %s with the data on the device: headspace %s%%", []shown{
			p2(run(tuneOursLadder, lp, "steps/s", 0)), p2(run(tuneOursLadder, lp, "cached-steps/s", 0)), p1(oursHeadspace(tuneOursLadder, lp))}},
		{"docs/tune.md", "the what-if model's pick: %s workers (its bound at the given setting: transform workers)", []shown{p0(run(tuneOursLadder, lp, "pick-workers", 0))}},
		{"docs/tune.md", "--workers 1 --prefetch 2 measured %s steps/s in the final check against your own %s: not faster", []shown{
			p2(med(tuneOursLadder, oursName("ladder", "check", "workers=1/prefetch=2/fetch=0"), "steps/s")),
			p2(med(tuneOursLadder, oursName("ladder", "check", "workers=1/prefetch=1/fetch=0"), "steps/s"))}},
		{"docs/tune.md", "| ladder | %s | %s | %s | %s | %s |", row("ladder")},
		{"docs/tune.md", "| remote | %s | %s | %s | %s | %s |", row("remote")},
		{"docs/tune.md", "which the grid measured at %s of\nits best", []shown{goal("ladder", "best-ratio")}},
		{"docs/tune.md", "measured at %s of its best (32 in flight)", []shown{goal("remote", "best-ratio")}},
		{"docs/tune.md", "one worker at a prefetch of 1 and 128 in flight read from %s to %s steps/s over its %s search runs, and the recommended setting's check runs from %s to %s. It is noise", []shown{
			p2(minRun(tuneOursRemote, rSpread, "steps/s")), p2(maxRun(tuneOursRemote, rSpread, "steps/s")), p0(count(tuneOursRemote, rSpread, "steps/s")),
			p2(minRun(tuneOursRemote, rBest, "steps/s")), p2(maxRun(tuneOursRemote, rBest, "steps/s"))}},
	}
}()
