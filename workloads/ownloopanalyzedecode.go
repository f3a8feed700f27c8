package workloads

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/headspace-bench/headspace/harness/node"
	"github.com/headspace-bench/headspace/harness/ownloop"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// ownAnalyzeFile is what the report of analyze -- COMMAND reads from its
// file's lines: the command, its settings and the run's start, the
// loaders' names and whether the run ended early.
type ownAnalyzeFile struct {
	cmd   ownloop.Command
	s     ownloop.Settings
	total int
	start ownloop.Start
	cfg   []resultfile.Config
	early bool
}

// decodeOwnLoopAnalyze reads the analysis back: each rank's (or the one
// process's) from its records, ownloop.Rebuild, the node's answer from
// its record, the names from the file's lines. Records of two scripts,
// or without the file's lines, do not decode.
func decodeOwnLoopAnalyze(recs []Record) (OwnLoopAnalyzeOutcome, error) {
	var o OwnLoopAnalyzeOutcome
	f, err := ownAnalyzeLines(recs[0])
	if err != nil {
		return o, err
	}
	o.Config, o.Device = f.cfg, configValue(f.cfg, "device")
	script := recs[0].Keys["script"]
	f.cmd.Script = script
	var byRank [][]Record
	var nodeRec *Record
	for i, rec := range recs {
		if rec.Keys["script"] != script {
			return o, fmt.Errorf("%s: script %q, the records before %q", at(rec.Result), rec.Keys["script"], script)
		}
		if err := finiteOrRunQueue(rec); err != nil {
			return o, err
		}
		if rec.Benchmark == "OwnLoopAnalyzeNode" {
			nodeRec = &recs[i]
			continue
		}
		r := 0
		if _, ok := rec.Keys["rank"]; ok {
			if r, err = rec.count("rank", false); err != nil {
				return o, err
			}
		}
		if r > len(byRank) {
			return o, fmt.Errorf("%s: rank %d: want the ranks in order", at(rec.Result), r)
		}
		if r == len(byRank) {
			byRank = append(byRank, nil)
		}
		byRank[r] = append(byRank[r], rec)
	}
	if nodeRec != nil && nodeRec != &recs[len(recs)-1] {
		return o, fmt.Errorf("%s: a node's ranks' records end with the node's, and only theirs", at(recs[len(recs)-1].Result))
	}
	return o, o.rebuild(f, byRank, nodeRec)
}

// finiteOrRunQueue refuses a record with a value that is NaN, infinite
// or negative, but for the headspace (negative where the cached steps
// were slower) and the workers' time on the run queue (-1 where it could
// not be read).
func finiteOrRunQueue(rec Record) error {
	for _, v := range rec.Values {
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) || v.Value < 0 && v.Unit != "headspace-%" && !(v.Unit == "worker-runqueue-ns" && v.Value == -1) {
			return fmt.Errorf("%s: %v %s: want a figure 0 or more, finite", at(rec.Result), v.Value, v.Unit)
		}
	}
	return nil
}

// ownAnalyzeLines reads the file's lines that first carries.
func ownAnalyzeLines(first Record) (ownAnalyzeFile, error) {
	cfg := fileSettings(first.Result)
	f := ownAnalyzeFile{cfg: cfg, early: configValue(cfg, "ended-early") == "true"}
	line := configValue(cfg, "command")
	if line == "" {
		return f, fmt.Errorf("%s: no command line: records read without their file's lines, or not a file of analyze -- COMMAND", at(first.Result))
	}
	f.cmd = ownloop.Command{Line: line, Launcher: configValue(cfg, "launcher")}
	f.start = ownloop.Start{Python: configValue(cfg, "python"), Executable: configValue(cfg, "executable"), Torch: configValue(cfg, "torch"),
		Torchvision: configValue(cfg, "torchvision"), CUDA: configValue(cfg, "device") == "cuda"}
	n := map[string]int{}
	for _, key := range []string{"num-caches", "return-caches-after", "steps-after", "total-steps"} {
		v, err := strconv.Atoi(configValue(cfg, key))
		if err != nil || v < 1 {
			return f, fmt.Errorf("%s: %s %q: want a positive count", filePart(first.Result), key, configValue(cfg, key))
		}
		n[key] = v
	}
	f.s = ownloop.Settings{Mode: "analyze", NumCaches: n["num-caches"], ReturnCachesAfter: n["return-caches-after"], StepsAfter: n["steps-after"]}
	f.total = n["total-steps"]
	return f, nil
}

// loaderText is loader n's name as its file's line gives it, without
// what the line says of its role.
func (f ownAnalyzeFile) loaderText(n int) string {
	v := configValue(f.cfg, "loader-"+strconv.Itoa(n))
	for _, role := range []string{" (training)", " (feeds every step beside the training loader)", " (its steps trained nothing: not the training loop)"} {
		if s, ok := strings.CutSuffix(v, role); ok {
			return s
		}
	}
	return v
}

// ownRank is a rank's figures beside its analysis: its AU, its loader's
// pace and its switch step.
type ownRank struct {
	au      float64
	pace    time.Duration
	switch_ int
}

// rebuild is o from the ranks' records (one process's: one) and the
// node's.
func (o *OwnLoopAnalyzeOutcome) rebuild(f ownAnalyzeFile, byRank [][]Record, nodeRec *Record) error {
	var reps []ownloop.Report
	var extra []ownRank
	var runs []*ownloop.Run
	for _, recs := range byRank {
		rep, x, err := rebuildOwnRank(f, recs)
		if err != nil {
			return err
		}
		reps, extra, runs = append(reps, rep), append(extra, x), append(runs, rep.Run)
	}
	if nodeRec == nil {
		if len(reps) != 1 {
			return fmt.Errorf("%s: %d processes' records without a node's", at(byRank[0][0].Result), len(reps))
		}
		o.Report = reps[0]
		return nil
	}
	nr := &ownloop.NodeReport{Command: f.cmd, Settings: f.s, Run: &ownloop.Run{Start: f.start, Ranks: runs, Done: !f.early}, Ranks: reps}
	for _, x := range extra {
		nr.AU, nr.Pace, nr.Switch = append(nr.AU, x.au), append(nr.Pace, x.pace), append(nr.Switch, x.switch_)
	}
	if err := decodeOwnAnalyzeNode(*nodeRec, nr); err != nil {
		return err
	}
	o.Node, o.Report = nr, nr.Ranks[nr.Slowest]
	return nil
}

// rebuildOwnRank is the analysis of one process (a rank), from its
// records: its loaders, steps, estimates and stages.
func rebuildOwnRank(f ownAnalyzeFile, recs []Record) (ownloop.Report, ownRank, error) {
	run := &ownloop.Run{Start: f.start, Done: !f.early}
	var m ownloop.Measured
	var x ownRank
	for _, rec := range recs {
		var err error
		switch rec.Benchmark {
		case "OwnLoopAnalyzeLoader":
			err = decodeOwnLoader(f, rec, run, &m)
		case "OwnLoopAnalyze":
			err = decodeOwnStep(rec, run)
		case "OwnLoopAnalyzeInput":
			err = decodeOwnInput(rec, run, &m, &x)
		case "OwnLoopAnalyzeStage":
			err = decodeOwnStage(rec, &m.Stages)
		}
		if err != nil {
			return ownloop.Report{}, x, err
		}
	}
	if ld, ok := run.Target(); ok && m.Stages.Batches == 0 {
		m.Stages.Workers = ld.Workers
	}
	rep, err := ownloop.Rebuild(f.cmd, f.s, run, f.total, m)
	if err != nil {
		return rep, x, fmt.Errorf("%s: %v", at(recs[0].Result), err)
	}
	return rep, x, nil
}

// decodeOwnLoader reads a loader into run, and into m where it fed every
// step beside the training loader.
func decodeOwnLoader(f ownAnalyzeFile, rec Record, run *ownloop.Run, m *ownloop.Measured) error {
	n, err := rec.count("loader", true)
	if err != nil {
		return err
	}
	v, err := rec.valuesIn("batch-size", "workers", "group", "training")
	if err != nil {
		return err
	}
	l := ownloop.Loader{Index: n, BatchSize: int(v[0]), Workers: int(v[1]), Group: int(v[2]), Target: v[3] == 1, Text: f.loaderText(n)}
	run.Loaders = append(run.Loaders, l)
	if w, ok := resultfile.Value(rec.Result, "beside-wait-ns"); ok {
		m.Beside = append(m.Beside, ownloop.BesideLoader{Loader: l, Wait: time.Duration(math.Round(w))})
	}
	return nil
}

// decodeOwnStep reads the next step into run: its time, its waits and
// its phase (fill is the first step from the loader, switch the first on
// cached batches).
func decodeOwnStep(rec Record, run *ownloop.Run) error {
	v, err := rec.valuesIn("ns/op", "wait-ns")
	if err != nil {
		return err
	}
	other, _ := resultfile.Value(rec.Result, "other-wait-ns")
	phase := rec.Keys["phase"]
	switch phase {
	case "fill":
		phase = "loader"
	case "switch":
		phase = "cached"
	case "loader", "cached", "epoch":
	default:
		return fmt.Errorf("%s: phase %q: want fill, loader, switch, cached or epoch", at(rec.Result), phase)
	}
	run.Steps = append(run.Steps, ownloop.Step{Index: len(run.Steps), Time: time.Duration(math.Round(v[0])), Wait: time.Duration(math.Round(v[1])),
		Phase: phase, OtherWait: time.Duration(math.Round(other))})
	return nil
}

// decodeOwnInput reads the estimates' record: the machine's cores, the
// loader first measured where another took its place and, for a rank,
// its AU, pace and switch step.
func decodeOwnInput(rec Record, run *ownloop.Run, m *ownloop.Measured, x *ownRank) error {
	cores, ok := resultfile.Value(rec.Result, "cores")
	if !ok {
		return fmt.Errorf("%s: no value in cores: an analysis recorded before its records held its report (issue 53), which cannot be rebuilt: run the command again", at(rec.Result))
	}
	m.Cores = int(cores)
	if from, ok := resultfile.Value(rec.Result, "retarget-from"); ok {
		run.Retarget.From = int(from)
	}
	if _, ok := rec.Keys["rank"]; !ok {
		return nil
	}
	v, err := rec.valuesIn("au", "pace-ns", "switch-step")
	if err != nil {
		return err
	}
	x.au, x.pace, x.switch_ = v[0], time.Duration(math.Round(v[1])), int(v[2])
	run.SwitchAt = x.switch_ + 1
	return nil
}

// decodeOwnStage reads a stage's record into st.
func decodeOwnStage(rec Record, st *ownloop.Stages) error {
	ns := func(x float64) time.Duration { return time.Duration(math.Round(x)) }
	var units []string
	switch rec.Keys["stage"] {
	case "getitem":
		units = []string{"getitem-ns/sample", "getitem-cpu-ns/sample"}
	case "load":
		units = []string{"load-ns/sample", "load-cpu-ns/sample"}
	case "transform":
		units = []string{"transform-ns/sample", "transform-cpu-ns/sample"}
	case "collate":
		units = []string{"collate-ns/batch", "collate-cpu-ns/batch"}
	case "workers":
		units = []string{"worker-cpu-ns", "workers", "worker-runqueue-ns", "batches", "samples", "iterable"}
	case "pin":
		units = []string{"pin-ns/batch"}
	case "wait":
		units = []string{"wait-ns/step"}
	default:
		return fmt.Errorf("%s: stage %q: not a stage of the analysis", at(rec.Result), rec.Keys["stage"])
	}
	v, err := rec.valuesIn(units...)
	if err != nil {
		return err
	}
	switch rec.Keys["stage"] {
	case "getitem":
		st.GetItem, st.GetItemCPU = ns(v[0]), ns(v[1])
	case "load":
		st.Load, st.LoadCPU, st.Split = ns(v[0]), ns(v[1]), true
	case "transform":
		st.Transform, st.TransformCPU = ns(v[0]), ns(v[1])
	case "collate":
		st.Collate, st.CollateCPU = ns(v[0]), ns(v[1])
	case "workers":
		st.WorkerCPU, st.Workers, st.WorkerRunQueue, st.Batches, st.Samples, st.Iterable = ns(v[0]), int(v[1]), ns(v[2]), int(v[3]), int(v[4]), v[5] == 1
	case "pin":
		st.Pin = ns(v[0])
	case "wait":
		st.Wait = ns(v[0])
	}
	return nil
}

// decodeOwnAnalyzeNode reads the node's answer into nr: the slowest rank,
// the spread and, where it was modelled, the node model's profile of a
// rank and the workers a rank needs.
func decodeOwnAnalyzeNode(rec Record, nr *ownloop.NodeReport) error {
	ranks, err := rec.count("ranks", true)
	if err != nil {
		return err
	}
	if ranks != len(nr.Ranks) {
		return fmt.Errorf("%s: the records of %d of its %d ranks", at(rec.Result), len(nr.Ranks), ranks)
	}
	v, err := rec.valuesIn("slowest-rank", "spread-%")
	if err != nil {
		return err
	}
	if nr.Slowest, nr.Spread = int(v[0]), v[1]; nr.Slowest >= ranks {
		return fmt.Errorf("%s: slowest rank %d of %d ranks", at(rec.Result), nr.Slowest, ranks)
	}
	if _, ok := resultfile.Value(rec.Result, "model-step-ns"); !ok {
		return nil
	}
	p, err := rec.valuesIn("model-cores", "model-batch", "model-workers", "model-step-ns", "model-au", "model-cpu-ns/sample", "rank-need-workers")
	if err != nil {
		return err
	}
	nr.HasModel, nr.NeedWorkers = true, int(p[6])
	nr.Model = node.Profile{Cores: p[0], OtherThreads: -1, Batch: int(p[1]), Workers: int(p[2]), Step: time.Duration(math.Round(p[3])), AU: p[4],
		CPUPerSample: time.Duration(math.Round(p[5]))}
	if err := nr.Model.Validate(); err != nil {
		return fmt.Errorf("%s: the node model: %v", at(rec.Result), err)
	}
	return nil
}
