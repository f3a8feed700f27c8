// Package gpugoals reads the figures a lent GPU is asked for (issue 45)
// from the result files one call of ci/gpu-suite.sh leaves in its
// folder, and sets each beside its goal and its public anchor, so the
// suite's summary says at once, part by part as the files appear,
// which goals a card met. A figure whose file is not there (yet) is
// "not measured", never guessed.
//
// The figures:
//
//   - nvJPEG's batched decode (cuda decode) against torchvision's batched
//     GPU decode of the same files in the same call (issue 57;
//     peers/torch/decode.py), on two sets: 1024² natural JPEGs and
//     ImageNet-sized ones (500×375), in images/s and megapixels/s, the
//     1024² set beside libjpeg-turbo on the host's cores where measured;
//     torchvision's fused decode + random resized crop + normalise on the
//     GPU is printed beside DALI's published figure, a reference only;
//   - the naive pipeline's level none with the transforms on the device,
//     as a share of level device (the batch cached on the GPU) at 4
//     workers;
//   - the Net's step (cuda check) against PyTorch's on the same card at
//     matched math (issue 57; peers/torch/netstep.py): our fp32 beside
//     PyTorch's with allow_tf32 off, our tf32 beside it with allow_tf32
//     on, each with and without CUDA Graphs; and our TF32 step against
//     our fp32 (TF32 must be the faster). Where cuda check timed the Net
//     on cuDNN (its /backend=cudnn rows: the libraries PyTorch's step
//     runs on) the goals read those rows and name the kernels' figure
//     beside them; a file without them (cuDNN did not load, or a run
//     before it) is read on the kernels, as before. PyTorch's ladder
//     (level device) ran with cuDNN's TF32 on, PyTorch's default, so it
//     is no peer of our fp32 and no goal reads it for the step;
//   - the document's 003 ladder, ours beside PyTorch's, level by level.
//
// The anchors from the H100 run of 2026-11-22 (level none's share of
// level device, the Net's step against PyTorch's) are read from its
// committed files, which package results/gpu embeds, never typed in.
//
// The suite's file names are this package's (Files); a test holds
// ci/gpu-suite.sh to them.
package gpugoals

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/harness/resultfile"
	"github.com/headspace-bench/headspace/internal/summary"
	"github.com/headspace-bench/headspace/results/gpu"
)

// The result files of ci/gpu-suite.sh that hold the goals' figures.
const (
	FileCheck        = "cuda-check.txt"
	FileDecodeNvjpeg = "cuda-decode-natural.txt"
	FileDecodeTurbo  = "cuda-decode-turbojpeg.txt"
	// FileDecodeImagenet is nvJPEG on the ImageNet-sized set.
	FileDecodeImagenet = "cuda-decode-imagenet.txt"
	// FileTorchDecode is torchvision's decode of both sets (set=natural,
	// set=imagenet) and its fused pipeline.
	FileTorchDecode  = "torch-decode.txt"
	FileDeviceNone   = "ladder-transforms=device.txt"
	FileLadderLevels = "ladder-levels.txt"
	FileTorchLadder  = "torch-ladder.txt"
	FileTorchNetStep = "torch-netstep.txt"
)

// Files are every file Goals reads, in the order the suite's one call
// (ci/gpu-suite.sh all) writes them: the goals' figures first.
var Files = []string{FileCheck, FileTorchNetStep, FileDecodeNvjpeg, FileDecodeTurbo, FileDecodeImagenet, FileTorchDecode, FileDeviceNone, FileTorchLadder, FileLadderLevels}

// The goals and anchors, as issue 45 states them.
const (
	// NvjpegGoal is the least nvJPEG's batched decode rate may be against
	// torchvision's batched GPU decode of the same files.
	NvjpegGoal = 1.0
	// DALIHopper is DALI's published Hopper QA threshold, images/s, for
	// a fused decode + random crop + resize to 224² on ~1-megapixel
	// photos with 70 CPU threads: a reference for torchvision's fused
	// pipeline, not a same-run peer.
	DALIHopper = 19000.0
	// DeviceNoneGoal is the share of level device that level none with
	// device transforms must reach at 4 workers.
	DeviceNoneGoal = 0.9
	// NetStepGoal is the most the Net's step may take against
	// PyTorch's on the same card at the same math.
	NetStepGoal = 1.0
	// TF32Goal is the most our TF32 step may take against our fp32
	// step: below 1, TF32 must be faster.
	TF32Goal = 1.0
)

// Goal is one figure beside its goal.
type Goal struct {
	// Name says what is measured.
	Name string
	// Figure is the measured value as printed, "" when not measured (or
	// what was measured of it where its peer is missing).
	Figure string
	// Target is the goal as printed.
	Target string
	// Met is set when the figure meets the goal; Measured when there
	// is a figure.
	Met, Measured bool
	// Anchor is what public figure or earlier run it stands beside.
	Anchor string
	// From names the files it was read from.
	From string
}

// Report is what Goals found in a folder.
type Report struct {
	Goals []Goal
	// Ladder is the 003 ladder's steps/s by level, ours and PyTorch's
	// (NaN where not measured), in the table's level order.
	Ladder []LadderRow
	// Notes are figures printed beside the goals that are no goal's:
	// torchvision's fused pipeline against DALI's published figure.
	Notes []string
}

// LadderRow is one level of the 003 ladder on the card.
type LadderRow struct {
	Level       string
	Ours, Torch float64
}

// Goals reads dir's result files. A file that is there but unreadable
// is an error naming it; one that is not there leaves its goal
// unmeasured.
func Goals(dir string) (Report, error) {
	var rep Report
	files, err := readFiles(dir)
	if err != nil {
		return rep, err
	}
	anchors, err := h100Anchors()
	if err != nil {
		return rep, err
	}
	rep.Goals = append(rep.Goals, decodeGoals(files)...)
	rep.Goals = append(rep.Goals, deviceNoneGoal(files, anchors))
	rep.Notes = pipelineNotes(files)
	rep.Goals = append(rep.Goals, netStepGoals(files, anchors)...)
	// The 003 ladder, ours (fast transforms) beside PyTorch's.
	for _, level := range []string{"device", "host", "sample", "raw", "none"} {
		ours := median(files[FileLadderLevels], "level="+level+"/", "steps/s", "transforms=fast")
		th := median(files[FileTorchLadder], "level="+level+"/", "steps/s")
		if !math.IsNaN(ours) || !math.IsNaN(th) {
			rep.Ladder = append(rep.Ladder, LadderRow{Level: level, Ours: ours, Torch: th})
		}
	}
	return rep, nil
}

// readFiles reads each of Files in dir (nil for one that is not there).
func readFiles(dir string) (map[string][]*benchfmt.Result, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a folder of the GPU suite's result files", dir)
	}
	files := map[string][]*benchfmt.Result{}
	for _, f := range Files {
		rs, err := resultfile.Read(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
		}
		files[f] = rs
	}
	return files, nil
}

// decodeSets are the two sets both decoders read in the suite's call:
// the name torchvision's lines carry, what it is, and our file.
var decodeSets = []struct{ set, what, file string }{
	{"natural", "1024² natural JPEGs", FileDecodeNvjpeg},
	{"imagenet", "ImageNet-sized natural JPEGs", FileDecodeImagenet},
}

// decodeGoals are nvJPEG's batched decode rate against torchvision's GPU
// decode of the same files, a goal a set (the 1024² set's figure beside
// libjpeg-turbo's too).
func decodeGoals(files map[string][]*benchfmt.Result) []Goal {
	torch := onDevice(files[FileTorchDecode], "cuda")
	var goals []Goal
	for _, ds := range decodeSets {
		nv := median(files[ds.file], "", "images/s")
		tv := median(torch, "TorchDecode/set="+ds.set+"/", "images/s")
		g := Goal{Name: "nvJPEG batched decode, " + ds.what, Target: fmt.Sprintf("≥ %.1f× torchvision's GPU decode", NvjpegGoal),
			Anchor: "torchvision.io.decode_jpeg(list, device=\"cuda\") on the same files, same call",
			From:   ds.file + ", " + FileTorchDecode}
		mp := megapixels(files[ds.file])
		if !math.IsNaN(nv) && !math.IsNaN(tv) && tv > 0 {
			g.Measured, g.Met = true, nv/tv >= NvjpegGoal
			g.Figure = fmt.Sprintf("%.2f× (%.0f images/s, %.0f MP/s, against %.0f images/s, %.0f MP/s)",
				nv/tv, nv, nv*mp, tv, median(torch, "TorchDecode/set="+ds.set+"/", "MP/s"))
			if strings.Contains(fmt.Sprint(names(torch)), "/api=single") {
				g.Figure += "; torchvision before 0.19 decoded a file a call (api=single), not batched"
			}
		}
		if turbo := median(files[FileDecodeTurbo], "", "images/s"); ds.file == FileDecodeNvjpeg && !math.IsNaN(turbo) && !math.IsNaN(nv) {
			if g.Figure == "" {
				g.Figure = fmt.Sprintf("%.0f images/s", nv)
			}
			g.Figure += fmt.Sprintf(" (libjpeg-turbo on the host: %.0f, %.2f×)", turbo, nv/turbo)
			g.From += ", " + FileDecodeTurbo
		}
		goals = append(goals, g)
	}
	return goals
}

// names are rs's names.
func names(rs []*benchfmt.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Name))
	}
	return out
}

// megapixels is the megapixels of one image of rs, from the size=WxH in
// their names (cuda decode's), NaN where none says.
func megapixels(rs []*benchfmt.Result) float64 {
	for _, r := range rs {
		for _, part := range strings.Split(string(r.Name), "/") {
			var w, h int
			if n, _ := fmt.Sscanf(part, "size=%dx%d", &w, &h); n == 2 {
				return float64(w) * float64(h) / 1e6
			}
		}
	}
	return math.NaN()
}

// pipelineNotes are torchvision's fused pipeline rates on the GPU, a set
// each, beside DALI's published figure.
func pipelineNotes(files map[string][]*benchfmt.Result) []string {
	torch := onDevice(files[FileTorchDecode], "cuda")
	var notes []string
	for _, ds := range decodeSets {
		part := "TorchDecodePipeline/set=" + ds.set + "/"
		v := median(torch, part, "images/s")
		if math.IsNaN(v) {
			continue
		}
		threads, crop := "?", "?"
		for _, r := range torch {
			if strings.HasPrefix(string(r.Name), part) {
				threads, crop = r.GetConfig("cpu-threads"), r.GetConfig("pipeline-crop")
				break
			}
		}
		notes = append(notes, fmt.Sprintf("torchvision's fused decode + random resized crop to %s² + normalise on the GPU, %s: %.0f images/s at %s CPU threads (%s); DALI's published Hopper QA threshold, %.0f images/s for decode + random crop + resize to 224² on ~1-megapixel photos at 70 threads, is a reference, not a same-run peer",
			crop, ds.what, v, threads, FileTorchDecode, DALIHopper))
	}
	return notes
}

// anchors are the H100 run's figures the goals are set beside, read from
// its committed files (package results/gpu).
type anchors struct {
	// deviceNone is the naive pipeline's level none over level device
	// with host transforms, 4 workers, placement host, pinned.
	deviceNone float64
	// netStep is the Net's fp32 step over PyTorch's.
	netStep float64
}

// h100Anchors reads the anchors from the H100 run's files.
func h100Anchors() (anchors, error) {
	var a anchors
	parse := func(data []byte, name string) ([]*benchfmt.Result, error) {
		rs, _, err := resultfile.Parse(bytes.NewReader(data), name)
		return rs, err
	}
	ladder, err := parse(gpu.H100Ladder, "results/gpu/nvidia-h100-80gb-hbm3-15709d7.txt")
	if err != nil {
		return a, err
	}
	check, err := parse(gpu.H100Check, "results/gpu/nvidia-h100-80gb-hbm3-15709d7-cuda-check.txt")
	if err != nil {
		return a, err
	}
	torch, err := parse(gpu.H100Torch, "results/gpu/nvidia-h100-80gb-hbm3-15709d7-torch-ladder.txt")
	if err != nil {
		return a, err
	}
	point := []string{"workers=4/", "transforms=naive/", "placement=host/", "pinned=true"}
	a.deviceNone = median(ladder, "level=none/", "steps/s", point...) / median(ladder, "level=device/", "steps/s", point...)
	step, _ := netStep(check, backendKernels, "")
	a.netStep = step / median(torch, "level=device", "sec/op")
	if math.IsNaN(a.deviceNone) || math.IsNaN(a.netStep) {
		return a, fmt.Errorf("the H100 run's files (results/gpu) hold no anchor: level none %v of device, the Net's step %v× PyTorch's", a.deviceNone, a.netStep)
	}
	return a, nil
}

// deviceNoneGoal is level none with device transforms against level
// device.
func deviceNoneGoal(files map[string][]*benchfmt.Result, a anchors) Goal {
	none := median(files[FileDeviceNone], "level=none", "steps/s")
	dev := median(files[FileDeviceNone], "level=device", "steps/s")
	g := Goal{Name: "naive none, transforms on the device, 4 workers", Target: fmt.Sprintf("≥ %.2f of device", DeviceNoneGoal),
		Anchor: fmt.Sprintf("%.2f of device (host transforms, %s)", a.deviceNone, gpu.H100), From: FileDeviceNone}
	if !math.IsNaN(none) && !math.IsNaN(dev) && dev > 0 {
		g.Measured, g.Met = true, none/dev >= DeviceNoneGoal
		g.Figure = fmt.Sprintf("%.2f of device (%.2f against %.2f steps/s)", none/dev, none, dev)
	}
	return g
}

// The Net's backends as cuda check's records name them (package cuda's
// BackendKernels and BackendLibraries): the kernels' records carry no
// backend=.
const (
	backendKernels = "kernels"
	backendCudnn   = "cudnn"
)

// netStepGoals are the Net's step against PyTorch's at matched math
// (our fp32 against allow_tf32 off, our tf32 against on), each with and
// without CUDA Graphs, then our TF32 step against our fp32: on cuDNN
// where the check file has its rows (the kernels' ratio beside each),
// else on the kernels. PyTorch's lines come from netstep.py on the GPU
// only (torch-device cuda).
func netStepGoals(files map[string][]*benchfmt.Result, a anchors) []Goal {
	var goals []Goal
	torchRuns := onDevice(files[FileTorchNetStep], "cuda")
	anchor := fmt.Sprintf("%.2f× PyTorch's default step (ours fp32, its cuDNN TF32 on; %s)", a.netStep, gpu.H100)
	backend, on := backendKernels, ""
	if slices.ContainsFunc(files[FileCheck], func(r *benchfmt.Result) bool {
		return strings.Contains(string(r.Name)+"/", "/backend="+backendCudnn+"/")
	}) {
		backend, on = backendCudnn, " on cuDNN"
	}
	for _, v := range []struct{ name, part, torch string }{
		{"fp32", "", "off"}, {"fp32, CUDA Graphs", "graphs=true", "off"},
		{"tf32", "precision=tf32", "on"}, {"tf32, CUDA Graphs", "precision=tf32/graphs=true", "on"},
	} {
		step, n := netStep(files[FileCheck], backend, v.part)
		torch := median(torchRuns, "/tf32="+v.torch, "sec/op")
		tn := count(torchRuns, "/tf32="+v.torch, "sec/op")
		g := Goal{Name: fmt.Sprintf("the Net's step%s against PyTorch's at matched math, %s (allow_tf32 %s)", on, v.name, v.torch),
			Target: fmt.Sprintf("≤ %.1f× PyTorch's", NetStepGoal), Anchor: anchor, From: FileCheck + ", " + FileTorchNetStep}
		if !math.IsNaN(step) && !math.IsNaN(torch) && torch > 0 {
			g.Measured, g.Met = true, step/torch <= NetStepGoal
			g.Figure = fmt.Sprintf("%.2f× (%.1f ms, %d steps, against %.1f ms, %d runs)", step/torch, 1e3*step, n, 1e3*torch, tn)
			if k, kn := netStep(files[FileCheck], backendKernels, v.part); backend == backendCudnn && !math.IsNaN(k) {
				g.Figure += fmt.Sprintf("; the kernels: %.2f× (%.1f ms, %d steps)", k/torch, 1e3*k, kn)
			}
		}
		goals = append(goals, g)
	}
	fp32, n32 := netStep(files[FileCheck], backend, "")
	tf32, n := netStep(files[FileCheck], backend, "precision=tf32")
	g := Goal{Name: "the Net's TF32 step against its fp32 step" + on, Target: fmt.Sprintf("< %.1f× (TF32 faster)", TF32Goal),
		Anchor: "PyTorch's own tf32/fp32 on this card: " + torchTF32(torchRuns), From: FileCheck}
	if !math.IsNaN(fp32) && !math.IsNaN(tf32) && fp32 > 0 {
		g.Measured, g.Met = true, tf32/fp32 < TF32Goal
		g.Figure = fmt.Sprintf("%.2f× (%.1f ms, %d steps, against %.1f ms, %d steps)", tf32/fp32, 1e3*tf32, n, 1e3*fp32, n32)
	}
	return append(goals, g)
}

// torchTF32 is PyTorch's step with allow_tf32 on over off, as printed,
// "not measured" without both.
func torchTF32(rs []*benchfmt.Result) string {
	on, off := median(rs, "/tf32=on", "sec/op"), median(rs, "/tf32=off", "sec/op")
	if math.IsNaN(on) || math.IsNaN(off) || off <= 0 {
		return "not measured"
	}
	return fmt.Sprintf("%.2f×", on/off)
}

// onDevice is the results of rs whose torch-device is dev: a file
// written on the CPU (the suite's emulated mode) is no GPU's figure.
func onDevice(rs []*benchfmt.Result, dev string) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, r := range rs {
		if string(r.GetConfig("torch-device")) == dev {
			out = append(out, r)
		}
	}
	return out
}

// netStep is the median of cuda check's Net step on backend at the name
// part (precision and Graphs; "" for fp32 without Graphs), in seconds,
// and the number of steps it is the median of.
func netStep(rs []*benchfmt.Result, backend, part string) (float64, int) {
	var vs []float64
	for _, r := range rs {
		name := string(r.Name)
		if !strings.Contains(name, "CUDAStep/") {
			continue
		}
		_, rest, _ := strings.Cut(name, "/side=")
		// rest is "256" or "256/precision=tf32/graphs=true": the variant
		// is what follows the side.
		_, variant, _ := strings.Cut(rest, "/")
		on := backendKernels
		variant = strings.Join(slices.DeleteFunc(strings.Split(variant, "/"), func(s string) bool {
			if b, ok := strings.CutPrefix(s, "backend="); ok {
				on = b
				return true
			}
			return s == "precision=fp32"
		}), "/")
		if variant != part || on != backend {
			continue
		}
		if v, ok := resultfile.Value(r, "step-ns"); ok {
			vs = append(vs, v/1e9)
		}
	}
	return summary.Median(vs), len(vs)
}

// median is the median of unit over the results whose names hold every
// part.
func median(rs []*benchfmt.Result, part, unit string, more ...string) float64 {
	var vs []float64
	for _, r := range rs {
		name := string(r.Name) + "/"
		if !strings.Contains(name, part) {
			continue
		}
		ok := true
		for _, m := range more {
			ok = ok && strings.Contains(name, m)
		}
		if !ok {
			continue
		}
		for _, v := range r.Values {
			t := resultfile.TidyValue(v)
			if t.Unit == unit {
				vs = append(vs, t.Value)
			}
		}
	}
	return summary.Median(vs)
}

// count is the number of values of unit over the results whose names
// hold part.
func count(rs []*benchfmt.Result, part, unit string) int {
	n := 0
	for _, r := range rs {
		if !strings.Contains(string(r.Name)+"/", part) {
			continue
		}
		for _, v := range r.Values {
			if resultfile.TidyValue(v).Unit == unit {
				n++
			}
		}
	}
	return n
}

// WriteText writes the report: a line per goal (MET, NOT MET or not
// measured), then the 003 ladder beside PyTorch's.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "goal\tfigure\ttarget\tverdict\tanchor\tfile")
	met, measured := 0, 0
	for _, g := range r.Goals {
		// A goal not measured may still show what half of it was (nvJPEG's
		// rate where torchvision's is not in the folder).
		v, fig := "not measured", "-"
		if g.Figure != "" {
			fig = g.Figure
		}
		if g.Measured {
			measured++
			fig, v = g.Figure, "NOT MET"
			if g.Met {
				met++
				v = "MET"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.Name, fig, g.Target, v, g.Anchor, g.From)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\n%d of %d goals measured, %d met\n", measured, len(r.Goals), met)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	if len(r.Ladder) > 0 {
		b.WriteString("\nthe document's 003 ladder on this card, steps/s (ours: fast transforms, at the suite's workers; PyTorch's: peers/torch/ladder.py)\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "level\tours\tPyTorch's\tours/PyTorch's")
		for _, l := range r.Ladder {
			ratio := "-"
			if l.Torch > 0 && !math.IsNaN(l.Ours) {
				ratio = fmt.Sprintf("%.2f", l.Ours/l.Torch)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Level, num(l.Ours), num(l.Torch), ratio)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}
