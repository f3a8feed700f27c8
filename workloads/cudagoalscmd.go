package workloads

import (
	"io"

	"github.com/headspace-bench/headspace/internal/cli"
)

const cudaGoalsUsage = `
headspace cuda goals DIR: the figures a lent GPU is asked for (issue 45),
read from the result files one call of ci/gpu-suite.sh leaves in DIR, each
beside its goal and its public anchor: nvJPEG's batched decode (beside
libjpeg-turbo on the host), level none with device transforms against
level device, the Net's step against PyTorch's (fp32 and tf32, with and
without CUDA Graphs), and the document's 003 ladder beside PyTorch's. A
figure whose file is not there yet is "not measured"; a file that is
there but unreadable is exit 2. Nothing runs on the GPU.`

func runCUDAGoals(args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("cuda goals", cudaGoalsUsage, stdout)
	if err := cli.ParseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cli.Usagef("want one folder: headspace cuda goals DIR")
	}
	rep, err := CUDAGoals(fs.Arg(0))
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return rep.WriteText(stdout)
}
