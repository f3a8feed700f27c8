#!/bin/sh
# A stand-in for peers/torch/ladder.py in tests, run as "sh fakeladder.sh
# ARGS": it takes the same flags and prints fixture lines, one result per
# level: 3 steps/s at device and host, 2 at sample, 1.5 at raw, 1 at none;
# with --calibrate the calibration lines of a machine at half the
# document's speed.
levels=device,host,sample,raw,none steps=2 workers=4 batch=256 step=290ms check= calibrate=
while [ $# -gt 0 ]; do
	case $1 in
	--levels) levels=$2; shift 2 ;;
	--steps) steps=$2; shift 2 ;;
	--workers) workers=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--step) step=$2; shift 2 ;;
	--check) check=1; shift ;;
	--calibrate) calibrate=1; shift ;;
	--*) shift 2 ;;
	*) echo "fakeladder.sh: unexpected argument $1" >&2; exit 2 ;;
	esac
done
echo "python: 3.0.0-fake"
echo "torch: 0.0.0-fake"
echo "torch-device: emulated"
echo "raw-size: 64x64"
[ -n "$check" ] && exit 0
if [ -n "$calibrate" ]; then
	echo "calibration-settings: raw 1024x1024, crop 256, batch 256, 4 workers, 6 batches a level, no step"
	echo "calibration-raw-samples/s: 220.2"
	echo "calibration-raw-document-samples/s: 440.3"
	echo "calibration-none-samples/s: 113.9"
	echo "calibration-none-document-samples/s: 227.8"
	echo "calibration-ratio: 0.5000"
	echo "calibrated-step: 580ms"
	echo "emulated-step: 580ms"
	exit 0
fi
echo "emulated-step: $step"
n=$((steps - 1))
for l in $(echo "$levels" | tr , ' '); do
	case $l in
	device | host) s=3 ;;
	sample) s=2 ;;
	raw) s=1.5 ;;
	none) s=1 ;;
	esac
	echo "BenchmarkTorchLadder/level=$l/workers=$workers-2 $n 1 ns/op $s steps/s $(awk "BEGIN { print $s * $batch }") samples/s"
done
