#!/bin/sh
# A stand-in for peers/torch/dataloader.py in tests, run as "sh fake.sh
# ARGS": it takes the same flags and prints fixture lines, one result per
# worker count: time to first batch workers seconds, 100×workers+0.5
# samples/s, 1.25 CPU seconds.
workers=1 batches=2 check=
while [ $# -gt 0 ]; do
	case $1 in
	--workers) workers=$2; shift 2 ;;
	--batches) batches=$2; shift 2 ;;
	--check) check=1; shift ;;
	--*) shift 2 ;;
	*) echo "fake.sh: unexpected argument $1" >&2; exit 2 ;;
	esac
done
echo "python: 3.0.0-fake"
echo "torch: 0.0.0-fake"
echo "torchvision: 0.0.1-fake"
echo "prefetch-factor: 2"
echo "batch: 999"
[ -n "$check" ] && exit 0
echo "a line that is neither configuration nor a result"
for w in $(echo "$workers" | tr , ' '); do
	echo "BenchmarkPeer/impl=torch/workers=$w $batches ${w}000000000 ttfb-ns $((w * 100)).5 samples/s 1.25 cpu-s"
done
