package workloads

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/harness/gpugoals"
	"github.com/headspace-bench/headspace/harness/resultfile"
	gpuresults "github.com/headspace-bench/headspace/results/gpu"
)

// CUDAGoals is `headspace cuda goals DIR`'s report: the files one call of
// ci/gpu-suite.sh left in dir, each decoded through its codec
// (ReadGoalsFolder), set beside their goals and the H100 run's anchors
// (package results/gpu, decoded the same way).
func CUDAGoals(dir string) (gpugoals.Report, error) {
	f, err := ReadGoalsFolder(dir)
	if err != nil {
		return gpugoals.Report{}, err
	}
	h100, err := h100Folder()
	if err != nil {
		return gpugoals.Report{}, err
	}
	return gpugoals.Goals(f, h100)
}

// ReadGoalsFolder decodes the files of gpugoals.Files in dir: cuda
// check's (CUDACheckCodec), cuda decode's (CUDADecodeCodec), the
// ladder's (LadderCodec) and PyTorch's scripts' (TorchNetStepCodec,
// TorchDecodeCodec, TorchLadderCodec). A file not there, or with no
// record, leaves its field empty; one that is there but does not decode
// is an error naming it.
func ReadGoalsFolder(dir string) (gpugoals.Folder, error) {
	var f gpugoals.Folder
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return f, fmt.Errorf("%s: not a folder of the GPU suite's result files", dir)
	}
	for _, name := range gpugoals.Files {
		path := filepath.Join(dir, name)
		recs, err := resultfile.Read(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = decodeGoalsFile(&f, name, recs)
		}
		if err != nil {
			return f, inFile(path, err)
		}
	}
	return f, nil
}

// decodeGoalsFile decodes the records of the suite's file name into its
// field of f; a file of no record leaves it empty.
func decodeGoalsFile(f *gpugoals.Folder, name string, recs []*benchfmt.Result) error {
	if len(recs) == 0 {
		return nil
	}
	var err error
	switch name {
	case gpugoals.FileCheck:
		f.Steps, err = goalsSteps(recs)
	case gpugoals.FileDecodeNvjpeg:
		f.Natural, err = goalsDecode(recs)
	case gpugoals.FileDecodeImagenet:
		f.Imagenet, err = goalsDecode(recs)
	case gpugoals.FileDecodeTurbo:
		f.Turbo, err = goalsDecode(recs)
	case gpugoals.FileTorchDecode:
		var rs []TorchDecodeRun
		rs, err = TorchDecodeCodec.Decode(recs)
		for _, r := range rs {
			f.TorchDecode = append(f.TorchDecode, gpugoals.TorchDecode{Set: r.Set, Pipeline: r.Pipeline, Single: r.Single,
				Device: r.Device, Threads: r.CPUThreads, Crop: r.Crop, ImagesPerSec: r.ImagesPerSec, MPs: r.MPs})
		}
	case gpugoals.FileDeviceNone:
		f.DeviceNone, err = goalsLadder(recs)
	case gpugoals.FileLadderLevels:
		f.Levels, err = goalsLadder(recs)
	case gpugoals.FileTorchLadder:
		f.TorchLadder, err = goalsTorchLadder(recs)
	case gpugoals.FileTorchNetStep:
		var rs []TorchNetStepRun
		rs, err = TorchNetStepCodec.Decode(recs)
		for _, r := range rs {
			f.TorchNetStep = append(f.TorchNetStep, gpugoals.TorchNetStep{Device: r.Device, TF32: r.TF32, Seconds: r.Seconds})
		}
	default:
		panic("workloads: no codec for the GPU suite's file " + name) // gpugoals.Files are constants
	}
	return err
}

// goalsSteps are cuda check's timed Net steps (CUDACheckCodec).
func goalsSteps(recs []*benchfmt.Result) ([]gpugoals.NetStep, error) {
	o, err := CUDACheckCodec.Decode(recs)
	var out []gpugoals.NetStep
	for _, st := range o.Steps {
		backend := gpugoals.BackendKernels
		if st.Backend == cuda.BackendLibraries {
			backend = gpugoals.BackendCudnn
		}
		for _, t := range st.Times {
			out = append(out, gpugoals.NetStep{Backend: backend, Precision: st.Precision, Graphs: st.Graphs, Seconds: float64(t) / float64(time.Second)})
		}
	}
	return out, err
}

// goalsDecode is cuda decode's batches (CUDADecodeCodec).
func goalsDecode(recs []*benchfmt.Result) (gpugoals.Decode, error) {
	o, err := CUDADecodeCodec.Decode(recs)
	return gpugoals.Decode{Rates: o.Rates, Width: o.Setup.Width, Height: o.Setup.Height}, err
}

// goalsLadder is the ladder's runs and their steps/s (LadderCodec).
func goalsLadder(recs []*benchfmt.Result) ([]gpugoals.LadderRun, error) {
	o, err := LadderCodec.Decode(recs)
	if err != nil {
		return nil, err
	}
	var out []gpugoals.LadderRun
	for _, r := range o.Runs {
		v, ok := resultfile.Value(r.Record, "steps/s")
		if !ok {
			return out, fmt.Errorf("%s: no value in steps/s", at(r.Record))
		}
		out = append(out, gpugoals.LadderRun{Level: r.Point.Level.String(), Transforms: r.Point.Impl, Placement: r.Point.Placement.String(),
			Workers: r.Point.Workers, Pinned: r.Point.Pinned, StepsPerSec: v})
	}
	return out, nil
}

// goalsTorchLadder is PyTorch's ladder's runs (TorchLadderCodec).
func goalsTorchLadder(recs []*benchfmt.Result) ([]gpugoals.TorchLadderRun, error) {
	rs, err := TorchLadderCodec.Decode(recs)
	var out []gpugoals.TorchLadderRun
	for _, r := range rs {
		out = append(out, gpugoals.TorchLadderRun{Level: r.Level, StepsPerSec: r.StepsPerSec, SecPerOp: r.Seconds})
	}
	return out, err
}

// h100Folder is the H100 run's files the anchors are read from (package
// results/gpu), decoded as a suite's folder is.
func h100Folder() (gpugoals.Folder, error) {
	var f gpugoals.Folder
	for _, file := range []struct {
		data       []byte
		name, role string
	}{
		{gpuresults.H100Ladder, "results/gpu/nvidia-h100-80gb-hbm3-15709d7.txt", gpugoals.FileLadderLevels},
		{gpuresults.H100Check, "results/gpu/nvidia-h100-80gb-hbm3-15709d7-cuda-check.txt", gpugoals.FileCheck},
		{gpuresults.H100Torch, "results/gpu/nvidia-h100-80gb-hbm3-15709d7-torch-ladder.txt", gpugoals.FileTorchLadder},
	} {
		recs, _, err := resultfile.Parse(bytes.NewReader(file.data), file.name)
		if err == nil {
			err = decodeGoalsFile(&f, file.role, recs)
		}
		if err != nil {
			return f, inFile(file.name, err)
		}
	}
	return f, nil
}
