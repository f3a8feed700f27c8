package figures

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Files of docs/own-loop.md.
const (
	ownLoopAnalyze = "results/own-loop-imagefolder.txt"
	ownLoopLadder  = "results/own-loop-imagefolder-ladder.txt"
	ownLoopWhatIf  = "results/own-loop-imagefolder-whatif.txt"
	hookOverhead   = "results/hook-overhead.txt"
)

// ownLevel is a level's name in the own loop's ladder file.
func ownLevel(level string) string {
	return "OwnLoopLadder/level=" + level + "/script=train_imagefolder.py/workers=2"
}

// ownStepAdded is the step time a level adds to the one above, in ms.
func ownStepAdded(level, above string) figure {
	return func(t *testing.T) float64 {
		return 1e3 * (1/med(ownLoopLadder, ownLevel(level), "steps/s")(t) - 1/med(ownLoopLadder, ownLevel(above), "steps/s")(t))
	}
}

// ownLadderRow is a row of docs/own-loop.md's ladder table.
func ownLadderRow(level, above, what, stage string) figureCase {
	steps := med(ownLoopLadder, ownLevel(level), "steps/s")
	figs := []shown{p2(steps), p2(div(steps, med(ownLoopLadder, ownLevel("host"), "steps/s")))}
	text := fmt.Sprintf("| `%s` | %s | %%s | %%s× | | |", level, what)
	if above != "" {
		figs = append(figs, p1(ownStepAdded(level, above)))
		text = fmt.Sprintf("| `%s` | %s | %%s | %%s× | +%%s ms | %s |", level, what, stage)
	}
	return figureCase{"docs/own-loop.md", text, figs}
}

// round5Cases are the figures of the pages issue 52 added to the scan:
// docs/own-loop.md, docs/node.md and docs/gpu.md.
var round5Cases = []figureCase{
	// docs/own-loop.md: the ladder of the worked example.
	ownLadderRow("host", "", "the first collated batch fed every step", ""),
	ownLadderRow("sample", "host", "`__getitem__` returns one cached processed sample", "batching (collate)"),
	ownLadderRow("raw", "sample", "`.loader` returns one cached loaded image; the transform runs", "transforms"),
	ownLadderRow("none", "raw", "the script as it is", "raw data loading"),
	// docs/own-loop.md: the hook's overhead.
	{"docs/own-loop.md", "the timed cache iterator adds %s–%s µs a batch", []shown{
		p1(scale(minRun(hookOverhead, "HookOverhead", "hook-ns/batch"), 1e-3)), p1(scale(maxRun(hookOverhead, "HookOverhead", "hook-ns/batch"), 1e-3))}},
	{"docs/own-loop.md", "adds %s–%s ms to a batch of 32 trivial samples: %s–%s µs a sample.", []shown{
		p2(scale(minRun(hookOverhead, "HookOverhead", "worker-ns/batch"), 1e-6)), p2(scale(maxRun(hookOverhead, "HookOverhead", "worker-ns/batch"), 1e-6)),
		p0(scale(minRun(hookOverhead, "HookOverhead", "worker-ns/batch"), 1e-3/32)), p0(scale(maxRun(hookOverhead, "HookOverhead", "worker-ns/batch"), 1e-3/32))}},
	{"docs/own-loop.md", "A sample of the example above takes %s ms of CPU (`getitem-cpu-ns/sample` in results/own-loop-imagefolder.txt): the hook adds %s–%s%% to it", []shown{
		p1(scale(med(ownLoopAnalyze, "OwnLoopAnalyzeStage/script=train_imagefolder.py/stage=getitem", "getitem-cpu-ns/sample"), 1e-6)),
		p1(scale(div(minRun(hookOverhead, "HookOverhead", "worker-ns/batch"), med(ownLoopAnalyze, "OwnLoopAnalyzeStage/script=train_imagefolder.py/stage=getitem", "getitem-cpu-ns/sample")), 100.0/32)),
		p1(scale(div(maxRun(hookOverhead, "HookOverhead", "worker-ns/batch"), med(ownLoopAnalyze, "OwnLoopAnalyzeStage/script=train_imagefolder.py/stage=getitem", "getitem-cpu-ns/sample")), 100.0/32))}},
}

func init() {
	settings = append(settings, []setting{
		// docs/own-loop.md
		{"docs/own-loop.md", "with 2 workers each taking 67 ms a batch and a 5 ms step, the gaps between batches alternate 53 ms and 14 ms, and the median of single steps can land on either — at 14 ms", "a worked example's settings and their arithmetic (TestBurstyLoop's loop)"},
		{"docs/own-loop.md", "(under 5% not input-bound, 5–20% moderately, over 20% highly)", "the verdict's thresholds"},
		{"docs/own-loop.md", "(95% CI 320.7 ms – 413.8 ms, n=30)", "the interval analyze computes from the file's 30 rounds (phase=loader)"},
		{"docs/own-loop.md", "(95% CI 113.2 ms – 137.1 ms, n=22)", "the interval analyze computes from the file's 22 rounds (phase=cached)"},
		{"docs/own-loop.md", "headspace: 241.3 ms per step", "arithmetic: 362.4 − 121.2 ms, the file's step-ns and cached-step-ns"},
		{"docs/own-loop.md", "over 200000 steps: 20.14 h → 6.73 h, 13.40 h saved", "arithmetic: 200000 × the file's step-ns and cached-step-ns"},
		{"docs/own-loop.md", "(14.5% of step time; …)", "arithmetic: the file's input-wait-ns over wall-ns"},
		{"docs/own-loop.md", "waited for its batches only 14.5% of the time", "arithmetic: the file's input-wait-ns over wall-ns"},
		{"docs/own-loop.md", "decoding) 54.1 ms, dataset .transform 65.7 ms", "arithmetic: the file's load- and transform-cpu-ns/sample × the batch of 32"},
		{"docs/own-loop.md", "against the target of 50 µs and 1% of a 10 ms step", "the target"},
		{"docs/own-loop.md", "(2 minutes by default)", "a flag's default"},
	}...)
	settingFigures = append(settingFigures, settingFigure{"docs/own-loop.md", "95%", "a confidence level"})
	settingFigures = append(settingFigures, settingFigure{"docs/own-loop.md", "5 minutes", "--stall-timeout's default"})
	unitQuotes = append(unitQuotes, []quote{
		// docs/own-loop.md: analyze's report of its file.
		{"docs/own-loop.md", "step time before caching: 362.4 ms", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "step time after caching: 121.2 ms", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "66.6% of the step time", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "input wait 3.187s of 22.049s", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "its steps took 362.4 ms beside the loader against 121.2 ms on cached batches: the loader's 2 workers (2.24 s of CPU, 11.62 s on the run queue)", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "collate 7.1 ms), dataset .transform", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "__getitem__ 23.2 ms a sample (.loader 10.9 ms, .transform 12.2 ms); collate 47.9 ms a batch", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "of which CPU: __getitem__ 3.8 ms a sample (.loader 1.7 ms, .transform 2.1 ms); collate 7.1 ms a batch", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "workers: 2, CPU time 2.24 s in all, 11.62 s on the run queue", []string{ownLoopAnalyze}},
		{"docs/own-loop.md", "the loop's wait for a batch: 53.1 ms a step", []string{ownLoopAnalyze}},
		// docs/own-loop.md: the what-if's report, the lines its file holds.
		{"docs/own-loop.md", "the model's bound: 65.7 ms a step", []string{ownLoopWhatIf}},
		{"docs/own-loop.md", "a worker makes a batch in 229.3 ms", []string{ownLoopWhatIf}},
		{"docs/own-loop.md", "104.9 ms of it on the CPU", []string{ownLoopWhatIf}},
		{"docs/own-loop.md", "the loop's own CPU: 67.5 ms a step", []string{ownLoopWhatIf}},
		{"docs/own-loop.md", "predicted 8.72 steps/s", []string{ownLoopWhatIf}},
		{"docs/own-loop.md", "2.6 cores; with 4 workers on these 2 cores: 11.60 steps/s", []string{ownLoopWhatIf}},
		{"docs/own-loop.md", "2 workers: measured 7.58 steps/s, predicted 8.72", []string{ownLoopWhatIf}},
		{"docs/own-loop.md", "4 workers: measured 9.11 steps/s, predicted 11.60", []string{ownLoopWhatIf}},
	}...)
	quotes = append(quotes, []quote{
		{"docs/own-loop.md", "at a load average of 6.7–7.0 as its", []string{hookOverhead}},
		{"docs/own-loop.md", "which cost 0.9–1.7 µs each on this virtual machine", []string{hookOverhead}},
	}...)
}

// tsvCount is how many rows of a committed table keep accepts.
func tsvCount(path string, keep func(row map[string]string) bool) figure {
	return func(t *testing.T) float64 {
		n := 0
		for _, row := range tsv(t, path) {
			if keep(row) {
				n++
			}
		}
		return float64(n)
	}
}

// sessionsWith keeps the paired sessions of a slowdown ("aa", "0.10"),
// and of those with failed set, the ones whose gate failed (exit 1).
func sessionsWith(slowdown string, failed bool) func(map[string]string) bool {
	return func(row map[string]string) bool {
		return row["slowdown"] == slowdown && (!failed || row["paired_exit"] == "1")
	}
}

func init() {
	round5Cases = append(round5Cases, []figureCase{
		// docs/gate.md: the sessions' counts, from sessions.tsv.
		{"docs/gate.md", "**False failures: %s of %s.** The ≤ 2%% target is **not shown**: %s of %s bounds", []shown{
			p0(tsvCount(sessionsR2, sessionsWith("aa", true))), p0(tsvCount(sessionsR2, sessionsWith("aa", false))),
			p0(tsvCount(sessionsR2, sessionsWith("aa", true))), p0(tsvCount(sessionsR2, sessionsWith("aa", false)))}},
		{"docs/gate.md", "**Power at +5%%: %s of %s**, all \"not sure\"", []shown{
			p0(tsvCount(sessionsR2, sessionsWith("0.05", true))), p0(tsvCount(sessionsR2, sessionsWith("0.05", false)))}},
		// docs/history.md: the year store's steps, before and after.
		{"docs/history.md", "| %s of 9 / %s | %s of 9 / %s |", []shown{
			p0(med(yearBefore, "YearLoad", "changes")), p0(func(t *testing.T) float64 { return med(yearBefore, "YearLoad", "changes")(t) - 9 }),
			p0(med(yearAfter, "YearLoad", "found")), p0(med(yearAfter, "YearLoad", "false"))}},
	}...)
	settings = append(settings, []setting{
		{"docs/gate.md", "**Power at +10%: 5 of 6.**", "the sessions' table: s4, s9, s10 and s15 exit 1 in sessions.tsv, s3 by its replay (s3/gate-replay.txt), of the six +10% sessions"},
		{"docs/gate.md", "36 of 36 at +10% for the power", "the target"},
		{"docs/history.md", "alpha 0.01, it was 3 of 300,", "a test's input and its count at a setting since changed"},
		{"docs/history.md", "in the last 3 of 20 is never a change point", "a test's input"},
		{"docs/node.md", "at least 1 s and ten times their mean wait", "the stall rule's bounds (harness/node)"},
		{"docs/history.md", "the three steps are found, 9 of 9, with no other change point", "the benchmark's condition"},
	}...)
}

// nodeWhatIfFiles are docs/node.md's what-if files, naive and fast.
var nodeWhatIfFiles = []string{nodeWhatIfNaive, nodeWhatIfFast}

// nodeErrorAt8 is the smallest (max false) or largest AU error at 8
// accelerators over both what-if files, in percent, unsigned.
func nodeErrorAt8(max bool) figure {
	var fs []figure
	for _, f := range nodeWhatIfFiles {
		e := med(f, "NodeWhatIf/accelerators=8", "au-error-%")
		fs = append(fs, func(t *testing.T) float64 { v := e(t); return max2(v, -v) })
	}
	return extreme(max, fs...)
}

func max2(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

// nodeHostAUMin is the smallest median AU of the host level over N.
func nodeHostAUMin() figure {
	var fs []figure
	for _, n := range []int{1, 2, 4, 8} {
		fs = append(fs, med(nodeFile, fmt.Sprintf("Node/accelerators=%d/level=host", n), "au"))
	}
	return extreme(false, fs...)
}

func init() {
	round5Cases = append(round5Cases, []figureCase{
		// docs/node.md
		{"docs/node.md", "The worst point of each is N = 8, where the model is off by %s–%s%%", []shown{
			p0(nodeErrorAt8(false)), p0(nodeErrorAt8(true))}},
		{"docs/node.md", "The bound (`host`) keeps AU ≥ %s at every N", []shown{p3(nodeHostAUMin())}},
		{"docs/node.md", "the naive pipeline's single rank measured %s ms a sample in `results/node-bca00af.txt` and %s ms in the profile of `results/node-whatif-bca00af.txt` (medians), and %s ms with 8 ranks in the first.", []shown{
			p2(scale(med(nodeFile, "Node/accelerators=1/level=none", "cpu-ns/sample"), 1e-6)),
			p2(scale(med(nodeWhatIfNaive, "NodeWhatIfProfile/accelerators=1/level=none", "cpu-ns/sample"), 1e-6)),
			p2(scale(med(nodeFile, "Node/accelerators=8/level=none", "cpu-ns/sample"), 1e-6))}},
		{"docs/node.md", "(the fast pipeline at N = 8 above: its ranks used %s cores, AU %s)", []shown{
			p2(med(nodeWhatIfFast, "Node/accelerators=8/level=none", "cpu-cores")), p3(med(nodeWhatIfFast, "NodeWhatIf/accelerators=8", "measured-au"))}},
		{"docs/node.md", "measured, 4 (AU %s at 4, %s at 8).", []shown{
			p3(med(nodeWhatIfNaive, "NodeWhatIf/accelerators=4", "measured-au")), p3(med(nodeWhatIfNaive, "NodeWhatIf/accelerators=8", "measured-au"))}},
	}...)
	settingFigures = append(settingFigures, []settingFigure{
		{"docs/node.md", "90%", "MLPerf Storage's AU threshold"},
		{"docs/node.md", "0.90", "--min-au's default, MLPerf's threshold"},
		{"docs/node.md", "0.85", "MLPerf's threshold for RetinaNet"},
	}...)
	settings = append(settings, []setting{
		{"docs/node.md", "`--barrier-timeout` (60 s)", "a flag's default"},
		{"docs/node.md", "| N | naive, 1 worker, 40 ms: predicted | measured | error | fast, 2 workers, 20 ms: predicted | measured | error |", "the runs' settings"},
		{"docs/node.md", "a median error of at most 10% on AU", "the goal"},
		{"docs/node.md", "so the cores run out at 3.59 accelerators", "the model's arithmetic on the profile's figures, as whatif --from prints it"},
		{"docs/node.md", "runs out first: the cores, at 4.13 accelerators", "the model's arithmetic on the node's figures, as node --from prints it (the block above)"},
		{"docs/node.md", "cost under 1% when loading is free", "arithmetic: 1 − the host level's smallest AU"},
		{"docs/node.md", "Debian's `torchrun` fails on its Python 3.11", "a version"},
		{"docs/node.md", "feeds about 300 samples/s on these two cores, ours about 1000", "the table's 286.8–305.8 and 999.0, rounded"},
		{"docs/node.md", "meets the goal of under 50 µs a step", "the goal"},
		{"docs/node.md", "either is under 0.3%", "arithmetic: the table's 118 µs against a 40 ms step"},
	}...)
	unitQuotes = append(unitQuotes, []quote{
		{"docs/node.md", "one accelerator asks 0.279 cores (1.394 ms CPU a sample × 200 samples/s), the other processes used 1.67", []string{nodeWhatIfNaive}},
		{"docs/node.md", "(0.242 cores an accelerator against 2 cores, the others using 1.69)", []string{nodeFile}},
	}...)
}

// The H200 runs' folders (docs/gpu.md) and the H100 run's files.
const (
	h200a     = "results/gpu/nvidia-h200-3fcbbc1/"
	h200b     = "results/gpu/nvidia-h200-a11143c/"
	h100Check = "results/gpu/nvidia-h100-80gb-hbm3-15709d7-cuda-check.txt"
	h100Torch = "results/gpu/nvidia-h100-80gb-hbm3-15709d7-torch-ladder.txt"
)

// in are the files of a folder.
func in(dir string, names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, dir+n)
	}
	return out
}

// summarySeconds is the sum of the commands' own times in a summary of
// ci/gpu-suite.sh ("exit 0 in 16s"), of the commands matched by keep.
func summarySeconds(path string, keep func(line string) bool) figure {
	return func(t *testing.T) float64 {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			t.Fatal(err)
		}
		sum, n := 0.0, 0
		for _, m := range summaryTimeRe.FindAllStringSubmatch(string(data), -1) {
			if keep != nil && !keep(m[0]) {
				continue
			}
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
			n++
		}
		if n == 0 {
			t.Fatalf("%s: no command's time", path)
		}
		return sum
	}
}

// summaryTimeRe is a command's line of a suite summary: its title and
// its time.
var summaryTimeRe = regexp.MustCompile(`(?m)^== (.*): exit \d+ in (\d+)s`)

// isTurbo keeps the libjpeg-turbo commands of a summary.
func isTurbo(line string) bool { return strings.Contains(line, "libjpeg-turbo") }

// nResults is how many benchmark results a file holds.
func nResults(path string) figure {
	return func(t *testing.T) float64 { return float64(len(load(t, path).rs)) }
}

// copyChange is the change of a pageable host-to-device copy's GB/s at
// size from the 3fcbbc1 run to the a11143c run, in percent.
func copyChange(size string) figure {
	name := "CUDACopy/dir=htod/pinned=false/size=" + size
	return change(med(h200b+"cuda-check.txt", name, "GB/s"), med(h200a+"cuda-check.txt", name, "GB/s"))
}

func init() {
	round5Cases = append(round5Cases, []figureCase{
		// docs/gpu.md: the window's times, the TF32 step, the copies.
		{"docs/gpu.md", "(`summary-timed.txt`: the commands' own times add up to %s s)", []shown{p0(summarySeconds(h200a+"summary-timed.txt", nil))}},
		{"docs/gpu.md", "the two commands ran, in %s s and %s s", []shown{
			p0(func(t *testing.T) float64 {
				return summarySeconds(h200a+"summary.txt", func(l string) bool { return isTurbo(l) && strings.Contains(l, "cuda decode") })(t)
			}),
			p0(func(t *testing.T) float64 {
				return summarySeconds(h200a+"summary.txt", func(l string) bool { return isTurbo(l) && strings.Contains(l, "ladder") })(t)
			})}},
		{"docs/gpu.md", "the two commands of the fifth add up to %s s", []shown{p0(func(t *testing.T) float64 {
			return summarySeconds(h200a+"summary-timed.txt", func(l string) bool { return !isTurbo(l) })(t) + summarySeconds(h200a+"summary.txt", isTurbo)(t)
		})}},
		{"docs/gpu.md", "our TF32 kernels are %s%% slower than our fp32 ones on this card", []shown{p0(change(
			med(h200a+"cuda-check.txt", "CUDAStep/batch=256/side=256/precision=tf32", "step-ns"), med(h200a+"cuda-check.txt", "CUDAStep/batch=256/side=256", "step-ns")))}},
		{"docs/gpu.md", "the pageable host-to-device copies moved by %s and %s at 128 and 256 MiB", []shown{signed(copyChange("128MiB")), signed(copyChange("256MiB"))}},
		{"docs/gpu.md", "so %s gigapixels/s", []shown{p1(scale(med(h200a+"cuda-decode-natural.txt", "CUDADecode/decoder=nvjpeg/batch=256/size=1024x1024", "images/s"), 1024*1024/1e9))}},
		{"docs/gpu.md", "the committed file holds the second call's %s of its 12 runs", []shown{p0(nResults(h200b + "own-loop-cuda-ladder.txt"))}},
	}...)
	settingFigures = append(settingFigures, []settingFigure{
		{"docs/gpu.md", "0.05", "the U test's level"},
		{"docs/gpu.md", "1.0×", "the goal (gpugoals.NetStepGoal)"},
		{"docs/gpu.md", "0.9", "the goal (gpugoals.DeviceNoneGoal)"},
		{"docs/gpu.md", "256 MiB", "a copy size of cuda check"},
		{"docs/gpu.md", "0.19", "the first torchvision whose decode_jpeg takes a list (decode.py's batched_api)"},
	}...)
	settings = append(settings, []setting{
		{"docs/gpu.md", "from 1 MiB to 256 MiB", "cuda check's copy sizes"},
		{"docs/gpu.md", "mask ratios 0, 0.25, 0.6 and 1", "the test's cases"},
		{"docs/gpu.md", "for about 15 minutes of device time in all", "the lending's terms"},
		{"docs/gpu.md", "PCIe 5.0 x16", "cuda check's 32.0 GT/s x16 (cuda-check.log), by its generation's name"},
		{"docs/gpu.md", "about 1.05 megapixels each", "arithmetic: 1024² pixels"},
		{"docs/gpu.md", "(3 MiB each)", "arithmetic: 1024² × 3 bytes"},
		{"docs/gpu.md", "the 184 KiB files", "arithmetic: the log's 188014 bytes a sample"},
		{"docs/gpu.md", "takes under 2 ms a step, so all but 4% of its time", "the analyze row's 1.8 ms and 95.8%, rounded"},
		{"docs/gpu.md", "imports torch 2.11", "a version"},
		{"docs/gpu.md", "about 10 s a run here", "arithmetic: 10 runs in 100 s (times.txt, the file)"},
	}...)
	quotes = append(quotes, []quote{
		{"docs/gpu.md", "| ≤ 1.0× PyTorch's at matched math; our TF32 faster than our fp32 | 1.17× PyTorch's default step (ours fp32, its cuDNN TF32; H100, 2026-11-22) |", in(h200a, "goals.txt")},
		{"docs/gpu.md", "(1.29× and 1.77× PyTorch's default step)", in(h200a, "summary.txt")},
		{"docs/gpu.md", "| ≥ 0.9 | 0.21 (host transforms, H100, 2026-11-22) |", in(h200a, "goals.txt")},
		{"docs/gpu.md", "read from the H100 run's file: 0.21 of device, where the run's `summary.txt` printed the 0.22 then typed in", in(h200a, "goals.txt", "summary.txt")},
		{"docs/gpu.md", "(143,771 MiB, driver 580.159.04, CUDA driver API 13.0,", in(h200a, "nvidia-smi.txt", "cuda-check.log")},
		{"docs/gpu.md", "2,056 images/s (1,627 to 2,456): nvJPEG is 5.25×", in(h200a, "cuda-decode-turbojpeg.log", "goals.txt")},
		{"docs/gpu.md", "10,792 images/s (median of 20 batches; 10,761 to 10,820)", in(h200a, "cuda-decode-natural.log")},
		{"docs/gpu.md", "| 0.98 (12.368 against 12.661 steps/s) | `ladder-transforms=device.txt` | ≥ 0.9: **met**; 0.21 with host transforms on the H100; 0.18 here (`ladder-levels.txt`, naive: 2.298 against 12.706) |", in(h200a, "goals.txt", "ladder-transforms=device.log", "ladder-levels.log")},
		{"docs/gpu.md", "| 79.1 ms / 79.0 ms: 1.29× PyTorch's 61.4 ms |", in(h200a, "goals.txt", "summary.txt")},
		{"docs/gpu.md", "| ≤ 1.0× PyTorch's: **not met**; 1.17× on the H100", in(h200a, "goals.txt")},
		{"docs/gpu.md", "| 108.9 ms / 109.0 ms: 1.77× |", in(h200a, "goals.txt", "summary.txt")},
		{"docs/gpu.md", "| ≤ 1.0×: **not met**; our TF32", in(h200a, "goals.txt")},
		{"docs/gpu.md", "| fast: device 12.705, host 11.590, sample 11.566, raw 11.526, none 11.423 steps/s |", in(h200a, "ladder-levels.log")},
		{"docs/gpu.md", "PyTorch's on the same card: 16.285, 15.378, 12.125, 1.769, 1.010 (`torch-ladder.txt`)", in(h200a, "torch-ladder.txt")},
		{"docs/gpu.md", "| device 12.723 / 9.202 / 9.205 steps/s |", in(h200a, "ladder-graphs.log", "ladder-tf32.log", "ladder-tf32-graphs.log")},
		{"docs/gpu.md", "| `ladder-levels.txt`, fast: 12.705 |", in(h200a, "ladder-levels.log")},
		{"docs/gpu.md", "| none 9.064, encoded 9.112, raw 5.869, device 12.673 steps/s |", in(h200a, "ladder-nvjpeg.log")},
		{"docs/gpu.md", "none 9.070, encoded 8.320, raw 11.550 (`ladder-turbojpeg.txt`;", in(h200a, "ladder-turbojpeg.log")},
		{"docs/gpu.md", "| device: 6.740, 12.371, 12.361, 12.314; fast: 5.384, 12.396, 12.391, 12.364 steps/s at 1, 4, 8, 16 |", in(h200a, "ladder-device-workers.log")},
		{"docs/gpu.md", "CUDA Graphs change nothing at a 79 ms step", in(h200a, "goals.txt", "summary.txt")},
		{"docs/gpu.md", "(5.869 against 9.112)", in(h200a, "ladder-nvjpeg.log")},
		{"docs/gpu.md", "(driver 580.159.04, CUDA 13.0, 16 cores", in(h200b, "nvidia-smi.txt")},
		{"docs/gpu.md", "with what was left of its 530 s", in(h200b, "call1.sh")},
		{"docs/gpu.md", "(its smallest p there is 0.100)", in(h200b, "benchstat-vs-3fcbbc1.txt")},
		{"docs/gpu.md", "TF32 +0.42% and +0.49%", in(h200b, "benchstat-vs-3fcbbc1.txt")},
		{"docs/gpu.md", "| step 42.4 ms beside the loader (95% CI 39.3–43.1 ms, 30 rounds), 1.8 ms on cached batches (1.7–1.8 ms, 22 rounds): the headspace is 40.6 ms a step, 95.8% of it; highly input-bound (input wait 91.5% of step time); each worker takes 83.3 ms a batch, .loader 38.8 ms and .transform 38.0 ms of it", in(h200b, "own-loop-analyze.log")},
		{"docs/gpu.md", "| predicted 24.03 steps/s at the script's 2 workers, measured 24.53 (−2%); to make the model the bound, 53 workers on 53.2 cores, 189.88 steps/s on these 16; measured at 53 workers: 253.99 (−25%) |", in(h200b, "own-loop-whatif.log")},
		{"docs/gpu.md", "| host 599.42, sample 173.53, raw 45.40, none 31.70 steps/s (medians of 3, 3, 2 and 2 runs) |", in(h200b, "own-loop-ladder2.log")},
		{"docs/gpu.md", "(16 cores over 82.7 ms of CPU a batch)", in(h200b, "own-loop-whatif.log")},
		{"docs/gpu.md", "the first call's runs (150 s, `own-loop-ladder.log`)", in(h200b, "times.txt")},
		{"docs/gpu.md", "made in 100 s (`times.txt`", in(h200b, "times.txt")},
	}...)
	unitQuotes = append(unitQuotes, []quote{
		{"docs/gpu.md", "pinned 55.3 GB/s host to device at 256 MiB, pageable 6.2", in(h200a, "cuda-check.txt")},
		{"docs/gpu.md", "(our step 79.6 ms there, `cuda check`:", []string{h100Check}},
		{"docs/gpu.md", "(79.1 and 79.6 ms, `cuda check`), PyTorch's went from 68.0 to 61.4 ms (14.703 to 16.285 steps/s at `device`)", append(in(h200a, "goals.txt", "torch-ladder.txt"), h100Check, h100Torch)},
	}...)
}

// replayR5 is the table of the r2 sessions replayed by issue 52's rule
// (REPLAY=gate-replay-r5.txt ci/aa-summary.sh).
const replayR5 = "results/paired-aa-r2/summary-r5.txt"

// replayedWith counts replayR5's sessions of a slowdown ("aa", "0.10")
// whose replayed exit is exit, or all of them when exit is "".
func replayedWith(slowdown, exit string) figure {
	return func(t *testing.T) float64 {
		data, err := os.ReadFile(filepath.Join(root, replayR5))
		if err != nil {
			t.Fatal(err)
		}
		replayed := regexp.MustCompile(`\((\d)\)$`)
		n := 0
		for _, line := range strings.Split(string(data), "\n") {
			cols := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cols) != 9 || !strings.HasPrefix(cols[0], "s") || cols[1] != slowdown {
				continue
			}
			m := replayed.FindStringSubmatch(cols[7])
			if m == nil {
				t.Fatalf("%s: %q: no replayed exit in %q", replayR5, line, cols[7])
			}
			if exit == "" || m[1] == exit {
				n++
			}
		}
		return float64(n)
	}
}

// rawDisturbed is the least (most false) or most rounds of level raw left
// out as disturbed in the r5 sessions' gate reports, or with total set
// the rounds a raw row had in all.
func rawDisturbed(most, total bool) figure {
	return func(t *testing.T) float64 {
		re := regexp.MustCompile(`(\d+) \(\+(\d+) disturbed\)`)
		var out []float64
		for _, s := range []string{"s1", "s4", "s5"} {
			data, err := os.ReadFile(filepath.Join(root, "results/paired-aa-r5", s, "gate.txt"))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(data), "\n") {
				m := re.FindStringSubmatch(line)
				if m == nil || !strings.Contains(line, "level=raw/") {
					continue
				}
				kept, _ := strconv.Atoi(m[1])
				dist, _ := strconv.Atoi(m[2])
				if total {
					out = append(out, float64(kept+dist))
				} else {
					out = append(out, float64(dist))
				}
			}
		}
		if len(out) == 0 {
			t.Fatal("results/paired-aa-r5: no raw rows with disturbed rounds")
		}
		lo, hi := out[0], out[0]
		for _, v := range out {
			lo, hi = min(lo, v), max(hi, v)
		}
		if total && lo != hi {
			t.Fatalf("results/paired-aa-r5: raw rows have %v to %v rounds in all", lo, hi)
		}
		if most {
			return hi
		}
		return lo
	}
}

func init() {
	round5Cases = append(round5Cases, []figureCase{
		{"docs/gate.md", "+10%%: %s of %s fail. +5%%: %s of %s fails (s11), %s are not sure (exit 3), %s pass. A/A: %s of %s fail, **%s of %s passes** (s13), %s are not", []shown{
			p0(replayedWith("0.10", "1")), p0(replayedWith("0.10", "")),
			p0(replayedWith("0.05", "1")), p0(replayedWith("0.05", "")), p0(replayedWith("0.05", "3")), p0(replayedWith("0.05", "0")),
			p0(replayedWith("aa", "1")), p0(replayedWith("aa", "")), p0(replayedWith("aa", "0")), p0(replayedWith("aa", "")), p0(replayedWith("aa", "3"))}},
		{"docs/gate.md", "with %s to %s of its %s rounds left out as disturbed", []shown{
			p0(rawDisturbed(false, false)), p0(rawDisturbed(true, false)), p0(rawDisturbed(false, true))}},
	}...)
}

// The multi-rank example of docs/own-loop.md (issue 55).
const (
	ownLoopRanks      = "results/own-loop-ranks.txt"
	ownLoopRanksBusy  = "results/own-loop-ranks-b.txt"
	ranksTruthFile    = "results/ranks-truth.txt"
	ranksCancelFile   = "results/ranks-cancel.txt"
	ranksDerivedNote  = "derived by analyze's report from results/own-loop-ranks.txt's per-step records, as printed (analyze --from refuses a file of the format before issue 53, which lacks the report's figures)"
	ranksScriptParams = "a parameter of the benchmark's script (testdata/ddp.py)"
)

func init() {
	unitQuotes = append(unitQuotes, []quote{
		{"docs/own-loop.md", "0 179.9 ms 80.7 ms 55.1% 0.45 25.7 ms", []string{ownLoopRanks}},
		{"docs/own-loop.md", "1 170.6 ms 78.7 ms 53.8% 0.46 15.9 ms", []string{ownLoopRanks}},
		{"docs/own-loop.md", "spread 20%", []string{ownLoopRanks}},
		{"docs/own-loop.md", "its steps took 179.9 ms beside the loader against 80.7 ms on cached batches: the loader's 1 workers (0.36 s of CPU, 2.91 s on the run queue)", []string{ownLoopRanks}},
		{"docs/own-loop.md", "dataset .loader (reading and decoding) 8.8 ms", []string{ownLoopRanks}},
		{"docs/own-loop.md", "__getitem__ outside .loader and .transform 0.3 ms, collate 2.3 ms)", []string{ownLoopRanks}},
		{"docs/own-loop.md", "(2.3 ms CPU a sample", []string{ownLoopRanks}},
		{"docs/own-loop.md", "step on cached batches, 80.7 ms)", []string{ownLoopRanks}},
		{"docs/own-loop.md", "alone keep it at AU 0.44; 2 ranks on these 2 cores: predicted AU 0.44", []string{ownLoopRanks}},
		{"docs/own-loop.md", "3 workers a rank (now 1) and 0.825 cores (the ranks use 0.825", []string{ownLoopRanks}},
		{"docs/own-loop.md", "the cached steps at 650 ms against 582 ms with the loader", []string{ownLoopRanksBusy}},
		{"docs/own-loop.md", "7.147 points\napart on average (78.62% against 85.76%)", []string{ranksTruthFile}},
		{"docs/own-loop.md", "2 ranks under torchrun: 65 ms on average over 3 runs", []string{ranksCancelFile}},
	}...)
	settings = append(settings, []setting{
		{"docs/own-loop.md", "its loader gives a batch every 182.8 ms, the fastest rank's every 152.8 ms", ranksDerivedNote},
		{"docs/own-loop.md", "0 179.9 ms 80.7 ms 55.1% 0.45 25.7 ms 182.8 ms", ranksDerivedNote},
		{"docs/own-loop.md", "1 170.6 ms 78.7 ms 53.8% 0.46 15.9 ms 152.8 ms", ranksDerivedNote},
		{"docs/own-loop.md", "the loop waited for its batches only 14.2% of the time", ranksDerivedNote},
		{"docs/own-loop.md", "dataset .transform 9.5 ms", ranksDerivedNote},
		{"docs/own-loop.md", "a rank asks 0.458 cores", ranksDerivedNote},
		{"docs/own-loop.md", "× 198.2 samples/s", ranksDerivedNote},
		{"docs/own-loop.md", "rank 1's samples 20 ms against rank 0's 5 ms, a 4 ms step", ranksScriptParams},
		{"docs/own-loop.md", "Debian's torch 1.13 launcher\nfails on its Python 3.11", "versions"},
	}...)
	settingFigures = append(settingFigures, settingFigure{"docs/own-loop.md", "0.90", "the AU the node model asks of every rank (node.Profile's default)"})
}

// The accelerate launch and srun examples of docs/own-loop.md (issue 55).
const (
	ownLoopAccelerate = "results/own-loop-accelerate.txt"
	ownLoopSrun       = "results/own-loop-srun.txt"
	launchersDerived  = "derived by analyze's report from the file's per-step records and stages, as printed (analyze --from refuses a file of the format before issue 53, which lacks the report's figures)"
)

func init() {
	unitQuotes = append(unitQuotes, []quote{
		{"docs/own-loop.md", "0 51.6 ms 8.9 ms 82.7% 0.17", []string{ownLoopAccelerate}},
		{"docs/own-loop.md", "1 52.0 ms 9.5 ms 81.7% 0.18", []string{ownLoopAccelerate}},
		{"docs/own-loop.md", "spread 13%", []string{ownLoopAccelerate}},
		{"docs/own-loop.md", "report is 6 workers a rank", []string{ownLoopAccelerate}},
		{"docs/own-loop.md", "0 195.2 ms 58.0 ms 70.3% 0.30", []string{ownLoopSrun}},
		{"docs/own-loop.md", "1 191.9 ms 58.0 ms 69.8% 0.30", []string{ownLoopSrun}},
		{"docs/own-loop.md", "spread 6%", []string{ownLoopSrun}},
		{"docs/own-loop.md", "the model asks for 4 workers a rank and 1.05 cores", []string{ownLoopSrun}},
	}...)
	settings = append(settings, []setting{
		{"docs/own-loop.md", "0 51.6 ms 8.9 ms 82.7% 0.17 33.9 ms 50.4 ms", launchersDerived},
		{"docs/own-loop.md", "1 52.0 ms 9.5 ms 81.7% 0.18 23.6 ms 44.6 ms", launchersDerived},
		{"docs/own-loop.md", "its loader gives a batch every 50.4 ms, the fastest rank's every 44.6 ms", launchersDerived},
		{"docs/own-loop.md", "0 195.2 ms 58.0 ms 70.3% 0.30 32.6 ms 202.0 ms", launchersDerived},
		{"docs/own-loop.md", "1 191.9 ms 58.0 ms 69.8% 0.30 59.7 ms 214.0 ms", launchersDerived},
		{"docs/own-loop.md", "its loader gives a batch every 214.0 ms, the fastest rank's every 202.0 ms", launchersDerived},
		{"docs/own-loop.md", "each `__getitem__` sleeping 2 ms to stand for decoding", "the example's setting (--getitem-ms 2)"},
	}...)
}
