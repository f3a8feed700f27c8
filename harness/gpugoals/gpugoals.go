// Package gpugoals sets the figures a lent GPU is asked for (issue 45),
// from the result files one call of ci/gpu-suite.sh leaves in its
// folder, each beside its goal and its public anchor, so the
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
// ci/gpu-suite.sh to them. The files are read through their experiments'
// codecs (package workloads: CUDACheckCodec, CUDADecodeCodec, LadderCodec
// and the PyTorch scripts' codecs), which pass this package the typed
// records of a Folder: it reads no benchmark name.
package gpugoals

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

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

// Folder is what one call of the suite left in its folder, each file
// decoded through its codec: a file not there (yet) leaves its field
// empty.
type Folder struct {
	// Steps are cuda check's timed Net steps (FileCheck).
	Steps []NetStep
	// Natural, Imagenet and Turbo are cuda decode's nvJPEG on the 1024²
	// set and the ImageNet-sized set, and libjpeg-turbo's on the host
	// (FileDecodeNvjpeg, FileDecodeImagenet, FileDecodeTurbo).
	Natural, Imagenet, Turbo Decode
	// TorchDecode is torchvision's decode and fused pipeline
	// (FileTorchDecode).
	TorchDecode []TorchDecode
	// DeviceNone is the ladder with device transforms (FileDeviceNone),
	// Levels the 003 ladder (FileLadderLevels).
	DeviceNone, Levels []LadderRun
	// TorchLadder is PyTorch's ladder (FileTorchLadder).
	TorchLadder []TorchLadderRun
	// TorchNetStep is PyTorch's Net step at matched math
	// (FileTorchNetStep).
	TorchNetStep []TorchNetStep
}

// NetStep is one timed Net step of cuda check: its backend (BackendKernels
// or BackendCudnn), precision (fp32 or tf32), whether replayed from CUDA
// Graphs, and its time in seconds.
type NetStep struct {
	Backend, Precision string
	Graphs             bool
	Seconds            float64
}

// Decode is one decoder's batches of cuda decode: each timed batch's
// images/s and the files' size.
type Decode struct {
	Rates         []float64
	Width, Height int
}

// TorchDecode is one line of peers/torch/decode.py: a batch of
// torchvision's decode (Pipeline false) or of its fused pipeline, on a
// set, with the file's torch-device, cpu-threads and pipeline-crop
// where the line stands; MPs is NaN on a pipeline's line. Single is
// set where torchvision decoded a file a call (api=single).
type TorchDecode struct {
	Set                   string
	Pipeline, Single      bool
	Device, Threads, Crop string
	ImagesPerSec, MPs     float64
}

// LadderRun is one run of a ladder point and its steps/s.
type LadderRun struct {
	Level, Transforms, Placement string
	Workers                      int
	Pinned                       bool
	StepsPerSec                  float64
}

// TorchLadderRun is one run of peers/torch/ladder.py at a level: its
// steps/s and seconds a step.
type TorchLadderRun struct {
	Level                 string
	StepsPerSec, SecPerOp float64
}

// TorchNetStep is one run of peers/torch/netstep.py: the file's
// torch-device where the line stands, allow_tf32 (on or off) and the
// seconds a step.
type TorchNetStep struct {
	Device, TF32 string
	Seconds      float64
}

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

// Goals sets the figures of f beside their goals and the anchors read
// from h100, the H100 run's files (package results/gpu) decoded: its
// ladder (Levels), cuda check (Steps) and PyTorch's ladder (TorchLadder).
// A figure whose file f lacks is not measured; h100 without its anchors
// is an error.
func Goals(f, h100 Folder) (Report, error) {
	var rep Report
	anchors, err := h100Anchors(h100)
	if err != nil {
		return rep, err
	}
	rep.Goals = append(rep.Goals, decodeGoals(f)...)
	rep.Goals = append(rep.Goals, deviceNoneGoal(f, anchors))
	rep.Notes = pipelineNotes(f)
	rep.Goals = append(rep.Goals, netStepGoals(f, anchors)...)
	// The 003 ladder, ours (fast transforms) beside PyTorch's.
	for _, level := range []string{"device", "host", "sample", "raw", "none"} {
		ours := ladderMedian(f.Levels, func(r LadderRun) bool { return r.Level == level && r.Transforms == "fast" })
		th := torchLadderMedian(f.TorchLadder, level, func(r TorchLadderRun) float64 { return r.StepsPerSec })
		if !math.IsNaN(ours) || !math.IsNaN(th) {
			rep.Ladder = append(rep.Ladder, LadderRow{Level: level, Ours: ours, Torch: th})
		}
	}
	return rep, nil
}

// decodeSets are the two sets both decoders read in the suite's call:
// the name torchvision's lines carry, what it is, our file and its
// decode.
var decodeSets = []struct {
	set, what, file string
	ours            func(Folder) Decode
}{
	{"natural", "1024² natural JPEGs", FileDecodeNvjpeg, func(f Folder) Decode { return f.Natural }},
	{"imagenet", "ImageNet-sized natural JPEGs", FileDecodeImagenet, func(f Folder) Decode { return f.Imagenet }},
}

// decodeGoals are nvJPEG's batched decode rate against torchvision's GPU
// decode of the same files, a goal a set (the 1024² set's figure beside
// libjpeg-turbo's too).
func decodeGoals(f Folder) []Goal {
	torch := onDevice(f.TorchDecode, func(r TorchDecode) string { return r.Device })
	single := slices.ContainsFunc(torch, func(r TorchDecode) bool { return r.Single })
	var goals []Goal
	for _, ds := range decodeSets {
		ours := ds.ours(f)
		nv := summary.Median(ours.Rates)
		lines := filter(torch, func(r TorchDecode) bool { return !r.Pipeline && r.Set == ds.set })
		tv := medianOf(lines, func(r TorchDecode) float64 { return r.ImagesPerSec })
		g := Goal{Name: "nvJPEG batched decode, " + ds.what, Target: fmt.Sprintf("≥ %.1f× torchvision's GPU decode", NvjpegGoal),
			Anchor: "torchvision.io.decode_jpeg(list, device=\"cuda\") on the same files, same call",
			From:   ds.file + ", " + FileTorchDecode}
		mp := megapixels(ours)
		if !math.IsNaN(nv) && !math.IsNaN(tv) && tv > 0 {
			g.Measured, g.Met = true, nv/tv >= NvjpegGoal
			g.Figure = fmt.Sprintf("%.2f× (%.0f images/s, %.0f MP/s, against %.0f images/s, %.0f MP/s)",
				nv/tv, nv, nv*mp, tv, medianOf(lines, func(r TorchDecode) float64 { return r.MPs }))
			if single {
				g.Figure += "; torchvision before 0.19 decoded a file a call (api=single), not batched"
			}
		}
		if turbo := summary.Median(f.Turbo.Rates); ds.file == FileDecodeNvjpeg && !math.IsNaN(turbo) && !math.IsNaN(nv) {
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

// megapixels is the megapixels of one image of d, NaN where it decoded
// nothing.
func megapixels(d Decode) float64 {
	if len(d.Rates) == 0 {
		return math.NaN()
	}
	return float64(d.Width) * float64(d.Height) / 1e6
}

// pipelineNotes are torchvision's fused pipeline rates on the GPU, a set
// each, beside DALI's published figure.
func pipelineNotes(f Folder) []string {
	torch := onDevice(f.TorchDecode, func(r TorchDecode) string { return r.Device })
	var notes []string
	for _, ds := range decodeSets {
		lines := filter(torch, func(r TorchDecode) bool { return r.Pipeline && r.Set == ds.set })
		v := medianOf(lines, func(r TorchDecode) float64 { return r.ImagesPerSec })
		if math.IsNaN(v) {
			continue
		}
		threads, crop := lines[0].Threads, lines[0].Crop
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
func h100Anchors(h Folder) (anchors, error) {
	var a anchors
	point := func(level string) func(LadderRun) bool {
		return func(r LadderRun) bool {
			return r.Level == level && r.Workers == 4 && r.Transforms == "naive" && r.Placement == "host" && r.Pinned
		}
	}
	a.deviceNone = ladderMedian(h.Levels, point("none")) / ladderMedian(h.Levels, point("device"))
	step, _ := netStep(h.Steps, BackendKernels, "fp32", false)
	a.netStep = step / torchLadderMedian(h.TorchLadder, "device", func(r TorchLadderRun) float64 { return r.SecPerOp })
	if math.IsNaN(a.deviceNone) || math.IsNaN(a.netStep) {
		return a, fmt.Errorf("the H100 run's files (results/gpu) hold no anchor: level none %v of device, the Net's step %v× PyTorch's", a.deviceNone, a.netStep)
	}
	return a, nil
}

// deviceNoneGoal is level none with device transforms against level
// device.
func deviceNoneGoal(f Folder, a anchors) Goal {
	none := ladderMedian(f.DeviceNone, func(r LadderRun) bool { return r.Level == "none" })
	dev := ladderMedian(f.DeviceNone, func(r LadderRun) bool { return r.Level == "device" })
	g := Goal{Name: "naive none, transforms on the device, 4 workers", Target: fmt.Sprintf("≥ %.2f of device", DeviceNoneGoal),
		Anchor: fmt.Sprintf("%.2f of device (host transforms, %s)", a.deviceNone, gpu.H100), From: FileDeviceNone}
	if !math.IsNaN(none) && !math.IsNaN(dev) && dev > 0 {
		g.Measured, g.Met = true, none/dev >= DeviceNoneGoal
		g.Figure = fmt.Sprintf("%.2f of device (%.2f against %.2f steps/s)", none/dev, none, dev)
	}
	return g
}

// The Net's backends as cuda check's steps name them (package cuda's
// BackendKernels and BackendLibraries).
const (
	BackendKernels = "kernels"
	BackendCudnn   = "cudnn"
)

// netStepGoals are the Net's step against PyTorch's at matched math
// (our fp32 against allow_tf32 off, our tf32 against on), each with and
// without CUDA Graphs, then our TF32 step against our fp32: on cuDNN
// where the check file has its steps (the kernels' ratio beside each),
// else on the kernels. PyTorch's lines come from netstep.py on the GPU
// only (torch-device cuda).
func netStepGoals(f Folder, a anchors) []Goal {
	var goals []Goal
	torchRuns := onDevice(f.TorchNetStep, func(r TorchNetStep) string { return r.Device })
	anchor := fmt.Sprintf("%.2f× PyTorch's default step (ours fp32, its cuDNN TF32 on; %s)", a.netStep, gpu.H100)
	backend, on := BackendKernels, ""
	if slices.ContainsFunc(f.Steps, func(s NetStep) bool { return s.Backend == BackendCudnn }) {
		backend, on = BackendCudnn, " on cuDNN"
	}
	for _, v := range []struct {
		name, precision string
		graphs          bool
		torch           string
	}{
		{"fp32", "fp32", false, "off"}, {"fp32, CUDA Graphs", "fp32", true, "off"},
		{"tf32", "tf32", false, "on"}, {"tf32, CUDA Graphs", "tf32", true, "on"},
	} {
		step, n := netStep(f.Steps, backend, v.precision, v.graphs)
		matched := filter(torchRuns, func(r TorchNetStep) bool { return r.TF32 == v.torch })
		torch := medianOf(matched, func(r TorchNetStep) float64 { return r.Seconds })
		g := Goal{Name: fmt.Sprintf("the Net's step%s against PyTorch's at matched math, %s (allow_tf32 %s)", on, v.name, v.torch),
			Target: fmt.Sprintf("≤ %.1f× PyTorch's", NetStepGoal), Anchor: anchor, From: FileCheck + ", " + FileTorchNetStep}
		if !math.IsNaN(step) && !math.IsNaN(torch) && torch > 0 {
			g.Measured, g.Met = true, step/torch <= NetStepGoal
			g.Figure = fmt.Sprintf("%.2f× (%.1f ms, %d steps, against %.1f ms, %d runs)", step/torch, 1e3*step, n, 1e3*torch, len(matched))
			if k, kn := netStep(f.Steps, BackendKernels, v.precision, v.graphs); backend == BackendCudnn && !math.IsNaN(k) {
				g.Figure += fmt.Sprintf("; the kernels: %.2f× (%.1f ms, %d steps)", k/torch, 1e3*k, kn)
			}
		}
		goals = append(goals, g)
	}
	fp32, n32 := netStep(f.Steps, backend, "fp32", false)
	tf32, n := netStep(f.Steps, backend, "tf32", false)
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
func torchTF32(rs []TorchNetStep) string {
	at := func(tf32 string) float64 {
		return medianOf(filter(rs, func(r TorchNetStep) bool { return r.TF32 == tf32 }), func(r TorchNetStep) float64 { return r.Seconds })
	}
	on, off := at("on"), at("off")
	if math.IsNaN(on) || math.IsNaN(off) || off <= 0 {
		return "not measured"
	}
	return fmt.Sprintf("%.2f×", on/off)
}

// onDevice is the lines of rs whose torch-device is cuda: a file written
// on the CPU (the suite's emulated mode) is no GPU's figure.
func onDevice[T any](rs []T, device func(T) string) []T {
	return filter(rs, func(r T) bool { return device(r) == "cuda" })
}

// filter is the elements of rs keep keeps, in order.
func filter[T any](rs []T, keep func(T) bool) []T {
	var out []T
	for _, r := range rs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// medianOf is the median of value over rs, NaN values left out (NaN
// where none is left).
func medianOf[T any](rs []T, value func(T) float64) float64 {
	var vs []float64
	for _, r := range rs {
		if v := value(r); !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	return summary.Median(vs)
}

// netStep is the median of cuda check's Net step on backend at precision,
// replayed from CUDA Graphs or not, in seconds, and the number of steps
// it is the median of.
func netStep(steps []NetStep, backend, precision string, graphs bool) (float64, int) {
	at := filter(steps, func(s NetStep) bool {
		return s.Backend == backend && s.Precision == precision && s.Graphs == graphs
	})
	return medianOf(at, func(s NetStep) float64 { return s.Seconds }), len(at)
}

// ladderMedian is the median steps/s of the runs keep keeps.
func ladderMedian(rs []LadderRun, keep func(LadderRun) bool) float64 {
	return medianOf(filter(rs, keep), func(r LadderRun) float64 { return r.StepsPerSec })
}

// torchLadderMedian is the median of value over PyTorch's runs at level.
func torchLadderMedian(rs []TorchLadderRun, level string, value func(TorchLadderRun) float64) float64 {
	return medianOf(filter(rs, func(r TorchLadderRun) bool { return r.Level == level }), value)
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
