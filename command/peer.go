package command

import (
	"github.com/headspace-bench/headspace/internal/cli"
	"github.com/headspace-bench/headspace/workloads"
)

// peerCommand is headspace peer: the registered experiments of its modes
// (ModesOf): the loaders' comparison (Peer), --ladder (PeerLadder),
// --remote (PeerRemote), --spdl-cache (SPDLCache) and --peers (RealPeer).
func peerCommand() cli.Command {
	return ModesOf("peer", "our loader against the document's PyTorch DataLoader pipeline, or (--peers) the real loaders of the pinned peers env, same job, same run: samples/s, TTFB, ratios; (--spdl-cache) SPDL's CacheDataLoader headspace beside analyze's on one script", peerUsage,
		ModeOf[workloads.PeerOutcome, workloads.Peer]("peer", "", "the loaders' comparison"),
		ModeOf[workloads.PeerLadderOutcome, workloads.PeerLadder]("peer", "ladder", "--ladder"),
		ModeOf[workloads.PeerRemoteOutcome, workloads.PeerRemote]("peer", "remote", "--remote"),
		ModeOf[workloads.SPDLCacheOutcome, workloads.SPDLCache]("peer", "spdl-cache", "--spdl-cache"),
		ModeOf[workloads.RealPeerOutcome, workloads.RealPeer]("peer", "peers", "--peers"))
}

const peerUsage = `
Sets our goroutine loader at level none (naive and fast transforms) beside
the document's own PyTorch pipeline (--script: FakeDataset, PILToTensor,
RandomCrop, RandomMask, ConvertColor, Scale, DataLoader with num_workers
worker processes) at the same settings, in the same run, on the same cores.
For each worker count and each of --count rounds it measures every
implementation once, back to back, the order rotated between groups, each
as harness/loadbench measures a loader: time to first batch, samples/s
after the first batch, CPU seconds. It prints the medians with our
samples/s over torch's and whether each target (fast >= 10x torch, naive
>= 2x) is met, and writes a benchmark-format file (--out), a Markdown
report (--report) and plots (--plot). torch comes from Debian's
python3-torch: run "make peer" to install it and run this.

With --data DIR both sides read the dataset on disk that headspace dataset
write made: ours with Go's decoders, the peer (--data DIR) with PIL's.

With --ladder it compares training loops instead of loaders: the document's
whole script (peers/torch/ladder.py --device emulated) and our ladder, at
every caching level, on the same emulated device (--step, and the emulated
device's bandwidths, passed to the script as arguments), alternating level
by level, and prints each level's steps/s and its ratio to that
implementation's own device level. --step calibrated first measures this
machine against the document's host for the document's code (its
DataLoader's samples/s at raw and none against the document's 1.72 and
0.89 steps/s x 256) and scales the 290ms step by that ratio; the
calibration goes into --out. See docs/yardstick.md.

--from FILE rebuilds the table, --report and --plot from a results file
that peer --out wrote, measuring nothing: the machine, the command and the
settings come from the file's configuration lines, so the report is the
one the run wrote (notebooks/peer.md from results/peer-emulated.txt).` + peerRemoteUsage + realPeersUsage + spdlCacheUsage

const peerRemoteUsage = `

With --remote it compares on data in a bucket: it starts the pinned S3
server (versitygw, ci/versitygw.sh) on 127.0.0.1 and one emulated --link in
front of it, writes batch x batches natural JPEGs of --raw-size and uploads
them once as an ImageFolder and as tar shards, then alternates our loader
(--data s3://…, fast transforms, --fetch-concurrency GETs in flight) with
the boto3 peer (peers/torch/s3.py: a map-style Dataset of one get_object
per image; an IterableDataset streaming each shard), the peer given the
link's URL as AWS_ENDPOINT_URL. It reports samples/s, our ratio to the
peer (target >= 3x) and the share of the link's ceiling each reaches;
--from rebuilds that report from its --out. Defaults with --remote:
--workers 1,4,16, --raw-size 256, --crop 128, --batch 32, --count 1.`

const realPeersUsage = `

With --peers NAMES (or all) it compares with the loaders a user would
install instead, each run by its own library from the pinned environment
"make peers-env" makes (--python: its python, by default the one
ci/peers-env.sh made under ~/.cache/headspace): torch2 (torch 2's
DataLoader, worker processes), spdl (SPDL's pipeline, threads, its own
decoding), nodes-threads and nodes-procs (torchdata.nodes), dali (DALI's
CPU pipeline), tfdata (tf.data, AUTOTUNE); "all" is these. "all-bucket" is
s3map and s3iter (s3torchconnector's map-style and iterable datasets),
streaming (Mosaic's StreamingDataset on MDS shards MDSWriter wrote) and
litdata (litdata's StreamingDataset on chunks optimize wrote; its script
adds allow_http to litdata's obstore client options for the server's plain
http), which read the same images from a bucket: the pinned S3 server (versitygw)
on 127.0.0.1, ours with as many GETs in flight as the most workers; the two
kinds run apart. It writes batch x batches natural JPEGs of --raw-size as
an ImageFolder (on disk, or uploaded), and every side does the same job on
them: decode, random crop, RGB to YCbCr, / 255, float32 CHW batches,
at --workers (processes, threads or goroutines per stage) on the same
cores; ours is the goroutine loader with libjpeg-turbo, fast transforms,
mask ratio 0. Ours and every peer alternate, round by round. A peer whose
package is missing stops the command before anything runs (exit 2); a peer
that fails mid-run has its run recorded as missing, with the reason. It
prints samples/s, CPU per sample, peak RSS, TTFB and ours / peer; --out
records every run (BenchmarkRealPeer/peer=…) and each peer's versions,
--report the Markdown (docs/peers.md), --plot BASE samples/s against
workers for ours and each peer (BASE.png, BASE.svg). Between rounds it
measures the limit at each worker count: a STREAM-like copy bandwidth on
as many goroutines (BenchmarkRealPeerLimit/workers=…) and one more run of
ours for its stage times; the share of the limit is samples/s × the bytes
a sample moves through memory in our pipeline ÷ that bandwidth. Defaults with --peers: --workers 2,
--raw-size 512, --crop 224, --batch 32, --batches 24, --count 3.`

const spdlCacheUsage = `

With --spdl-cache it sets SPDL's own headspace analysis beside headspace
analyze's, on one training script (--script, by default
examples/own-loop/train_cachedataloader.py: an ImageFolder of natural
JPEGs decoded by PIL, RandomResizedCrop(--crop), a flip, ToTensor,
Normalize, a DataLoader with --workers worker processes and batches of
--batch, a small CNN trained with SGD on one of torch's threads), run by
the peers env's python (--python). Each round runs the script once under
headspace analyze, unchanged, and once with its --spdl-cache flag, which
wraps its DataLoader in spdl.dataloader.CacheDataLoader and logs every
step's time; both switch to 10 cached batches after --batches steps from
the loader and take --steps-after steps on them; the order alternates
round by round. It prints each side's step times and headspace (the
median over --count rounds, with its 95% interval) and whether the two
agree; --out records every run (BenchmarkRealPeerHeadspace/peer=ours and
peer=spdl-cache), --report the Markdown. Defaults with --spdl-cache:
--workers 2, --batch 16, --batches 40, --steps-after 30, --raw-size 256,
--crop 160, --count 8.`
