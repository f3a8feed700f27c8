// The Net's kernels (package cuda/kernels) as the plans package cuda runs:
// the two packages keep their own plan types so that cuda/kernels stays
// pure data, buildable everywhere, and package cuda depends on nothing of
// the Net; this file converts one into the other.

package main

import (
	"github.com/headspace-bench/headspace/cuda"
	"github.com/headspace-bench/headspace/cuda/kernels"
)

func init() {
	netKernels.Modules = kernels.Modules
	netKernels.Plan = func(batch, side int, seed uint64, precision string) (cuda.Plan, error) {
		p, err := kernels.NetPlan(batch, side, seed)
		if err != nil {
			return cuda.Plan{}, err
		}
		if p, err = kernels.WithPrecision(p, precision); err != nil {
			return cuda.Plan{}, err
		}
		return cuda.Plan{Modules: netKernels.Modules, Buffers: cudaBuffers(p.Buffers), Input: p.Input, InputU8: p.InputU8,
			Labels: p.Labels, Convert: cudaLaunches(p.Convert), Step: cudaLaunches(p.Step), Loss: p.Loss}, nil
	}
	netKernels.Checks = func(seed uint64) []cuda.Check {
		var cs []cuda.Check
		// Every kernel of both precisions, whatever --precision times.
		for _, c := range append(kernels.Checks(seed), kernels.TF32Checks(seed)...) {
			outs := make([]cuda.Output, len(c.Outputs))
			for i, o := range c.Outputs {
				outs[i] = cuda.Output(o)
			}
			cs = append(cs, cuda.Check{Name: c.Name, Buffers: cudaBuffers(c.Buffers), Launches: cudaLaunches(c.Launches), Outputs: outs})
		}
		return cs
	}
}

func cudaBuffers(bs []kernels.Buffer) []cuda.Buffer {
	out := make([]cuda.Buffer, len(bs))
	for i, b := range bs {
		out[i] = cuda.Buffer(b)
	}
	return out
}

func cudaLaunches(ls []kernels.Launch) []cuda.Launch {
	out := make([]cuda.Launch, len(ls))
	for i, l := range ls {
		args := make([]cuda.Arg, len(l.Args))
		for j, a := range l.Args {
			if b, ok := a.(kernels.Buf); ok {
				a = cuda.Buf{Name: b.Name}
			}
			args[j] = a
		}
		out[i] = cuda.Launch{Module: l.Module, Kernel: l.Kernel, Grid: l.Grid, Block: l.Block, SharedBytes: l.SharedBytes, Args: args}
	}
	return out
}
