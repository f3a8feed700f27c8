package command

import (
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// remoteCommand is headspace remote.
func remoteCommand() cli.Command {
	return CommandOf[workloads.RemoteOutcome, workloads.Remote]("remote", "the remedies of data in a bucket: samples/s and headspace against concurrency × round trip × layout × format, and the fetch model's predictions checked", remoteUsage)
}

const remoteUsage = `
Measures the remedies of data in a bucket (issue 34, items 5 and 6): it
starts the pinned S3 server (versitygw, built by ci/versitygw.sh) on
127.0.0.1, writes and uploads raw and JPEG datasets as one object per
sample, ~4 MB and ~64 MB shards (each read member by member with ranged
GETs and whole, one GET a shard), and runs level none through an emulated
link of each round trip (0, 5, 20, 80 ms) at each concurrency (1, 4, 16,
64); level local (the objects on local disk) once per dataset, level device
once, and two checks at links off the grid. The fetch model (package
fetchmodel) is calibrated on the round-trip-0 points and predicts the rest;
the report gives where each remedy stops helping and the model's median
error. --from rebuilds the report and the plot from a result file,
measuring nothing. An interrupted run (SIGINT: exit 130) keeps what it
finished, marked partial, and never a complete --out's place.
`
