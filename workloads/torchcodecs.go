package workloads

import (
	"fmt"
	"math"

	"golang.org/x/perf/benchfmt"
)

// The records PyTorch's scripts under peers/torch write (netstep.py,
// decode.py, ladder.py), which the GPU suite keeps as its result files
// and `headspace cuda goals` reads back: each codec's decode reads a
// line's name by its keys (Codec) and keeps the line (its figures), with
// the torch-device configuration line it stands under. No Go code
// measures them: their encode is the lines read back, as the scripts
// wrote them.

// TorchNetStepRun is one line of peers/torch/netstep.py: PyTorch's Net
// step, BenchmarkTorchNetStep/batch=…/side=…/tf32=on|off, in ns/op.
type TorchNetStepRun struct {
	Batch, Side int
	// TF32 is allow_tf32: "on" or "off".
	TF32 string
	// Device is the file's torch-device where the line stands (cuda or
	// cpu).
	Device string
	// Seconds is the step's time.
	Seconds float64
	Record  *benchfmt.Result
}

// TorchNetStepCodec is netstep.py's records codec: a line a run.
var TorchNetStepCodec = Codec[[]TorchNetStepRun]{
	Experiment: "TorchNetStep",
	Keys:       map[string][]string{"TorchNetStep": {"batch", "side", "tf32"}},
	Procs:      true,
	encode: func(rs []TorchNetStepRun) []*benchfmt.Result {
		return recordsOf(rs, func(r TorchNetStepRun) *benchfmt.Result { return r.Record })
	},
	decode: func(recs []Record) ([]TorchNetStepRun, error) {
		return decodeEach(recs, func(rec Record) (TorchNetStepRun, error) {
			r := TorchNetStepRun{TF32: rec.Keys["tf32"], Device: rec.GetConfig("torch-device"), Record: rec.Result}
			var err error
			if r.Batch, err = rec.count("batch", true); err != nil {
				return r, err
			}
			if r.Side, err = rec.count("side", true); err != nil {
				return r, err
			}
			if r.TF32 != "on" && r.TF32 != "off" {
				return r, fmt.Errorf("%s: tf32 %q: want on or off", at(rec.Result), r.TF32)
			}
			r.Seconds, err = rec.Value("sec/op")
			return r, err
		})
	},
}

// TorchLadderRun is one line of peers/torch/ladder.py: PyTorch's run of
// the document's 003 ladder at a level,
// BenchmarkTorchLadder/level=…/workers=…, in ns/op and steps/s.
type TorchLadderRun struct {
	Level   string
	Workers int
	// Seconds is a step's time, StepsPerSec the steps a second.
	Seconds, StepsPerSec float64
	Record               *benchfmt.Result
}

// TorchLadderCodec is ladder.py's records codec: a line a run.
var TorchLadderCodec = Codec[[]TorchLadderRun]{
	Experiment: "TorchLadder",
	Keys:       map[string][]string{"TorchLadder": {"level", "workers"}},
	Procs:      true,
	encode: func(rs []TorchLadderRun) []*benchfmt.Result {
		return recordsOf(rs, func(r TorchLadderRun) *benchfmt.Result { return r.Record })
	},
	decode: func(recs []Record) ([]TorchLadderRun, error) {
		return decodeEach(recs, func(rec Record) (TorchLadderRun, error) {
			r := TorchLadderRun{Level: rec.Keys["level"], Record: rec.Result}
			var err error
			if r.Workers, err = rec.count("workers", false); err != nil {
				return r, err
			}
			v, err := rec.valuesIn("sec/op", "steps/s")
			if err != nil {
				return r, err
			}
			r.Seconds, r.StepsPerSec = v[0], v[1]
			return r, nil
		})
	},
}

// TorchDecodeRun is one line of peers/torch/decode.py: a timed batch of
// torchvision's decode of a set on the device,
// BenchmarkTorchDecode/set=…/batch=…/size=WxH, in images/s and MP/s, or
// of its fused decode + random resized crop + normalise,
// BenchmarkTorchDecodePipeline/set=…/batch=…/crop=…/threads=…, in
// images/s; either with /api=single where torchvision decoded a file a
// call (before 0.19).
type TorchDecodeRun struct {
	Pipeline bool
	Set      string
	Batch    int
	// Single is api=single.
	Single bool
	// Device, CPUThreads and Crop are the file's torch-device,
	// cpu-threads and pipeline-crop where the line stands.
	Device, CPUThreads, Crop string
	// ImagesPerSec is the batch's rate, MPs its megapixels a second (NaN
	// on a pipeline's line).
	ImagesPerSec, MPs float64
	Record            *benchfmt.Result
}

// TorchDecodeCodec is decode.py's records codec: a line a timed batch.
var TorchDecodeCodec = Codec[[]TorchDecodeRun]{
	Experiment: "TorchDecode",
	Keys: map[string][]string{
		"TorchDecode":         {"set", "batch", "size", "api"},
		"TorchDecodePipeline": {"set", "batch", "crop", "threads", "api"},
	},
	Optional: map[string][]string{"TorchDecode": {"api"}, "TorchDecodePipeline": {"api"}},
	Procs:    true,
	encode: func(rs []TorchDecodeRun) []*benchfmt.Result {
		return recordsOf(rs, func(r TorchDecodeRun) *benchfmt.Result { return r.Record })
	},
	decode: func(recs []Record) ([]TorchDecodeRun, error) {
		return decodeEach(recs, func(rec Record) (TorchDecodeRun, error) {
			r := TorchDecodeRun{Pipeline: rec.Benchmark == "TorchDecodePipeline", Set: rec.Keys["set"], MPs: math.NaN(),
				Device: rec.GetConfig("torch-device"), CPUThreads: rec.GetConfig("cpu-threads"), Crop: rec.GetConfig("pipeline-crop"), Record: rec.Result}
			var err error
			if r.Batch, err = rec.count("batch", true); err != nil {
				return r, err
			}
			switch api := rec.Keys["api"]; api {
			case "":
			case "single":
				r.Single = true
			default:
				return r, fmt.Errorf("%s: api %q: want single, or no api= for batched", at(rec.Result), api)
			}
			if r.ImagesPerSec, err = rec.Value("images/s"); err != nil {
				return r, err
			}
			if !r.Pipeline {
				r.MPs, err = rec.Value("MP/s")
			}
			return r, err
		})
	},
}
