#!/usr/bin/env bash
# ci/gpu-suite.sh — everything a GPU machine has to measure, for a machine
# with an NVIDIA driver, 16 cores, no Go and no network: run it from the
# folder `make gpu-bundle` makes (headspace, ci/, peers/torch/).
#
#   ci/gpu-suite.sh [--emulated] [--quick] [--archive FILE] [ladder|loaders|device|decode|all] OUTDIR
#
#   ladder   headspace cuda check (kernels, copies, the Net's step at fp32
#            and tf32, each with and without CUDA Graphs, 10 steps each,
#            on the kernels and on cuDNN where it loads: issue 57);
#            PyTorch's step of the Net with allow_tf32 off and on, 5 runs
#            each (peers/torch/netstep.py: the peer at matched math,
#            issue 57); the caching ladder on --device cuda (all
#            five levels at 4 workers, naive and fast; workers 1,4,8,16 at
#            level none; placement host/device × pinned true/false at levels
#            host and none); the document's PyTorch ladder on the same GPU
#   loaders  headspace loaders (goroutines against processes, workers 1…32)
#            and headspace peer (against PyTorch's DataLoader, workers 1…16)
#   device   the GPU doing the loading too (issue 25): the caching ladder at
#            --transforms device (mask, dilation, crop, ConvertColor and
#            Scale as CUDA kernels), with the host's crops and with whole raw
#            images (--device-crop), every level at 4 workers; workers
#            1,4,8,16 at level none, fast (uint8 placement) beside device;
#            nvJPEG's batched decode (headspace cuda decode) of 256 noise
#            JPEGs at 1024² (headspace dataset write); levels device and
#            host with the step replayed from CUDA Graphs (--cuda-graphs;
#            `cuda check` in the ladder part times the Net's step with and
#            without them); the same two levels with the convolutions on
#            TF32 tensor cores (--precision tf32), with and without CUDA
#            Graphs (`cuda check` times fp32 and tf32 side by side); the
#            same two levels with the Net on cuDNN (--backend cudnn),
#            fp32 and tf32. On
#            --emulated it writes the JPEGs and checks
#            that the GPU-only flags are refused (exit 2, one line each)
#   decode   JPEG decoding inside the loader (issue 36): 256 natural JPEGs
#            at 1024² and 256 at 500×375 (ImageNet-sized); nvJPEG's
#            batched decode of each set (cuda decode) and, beside it in
#            the same call, torchvision's batched GPU decode of the same
#            files and its fused decode + random resized crop to 224² +
#            normalise (peers/torch/decode.py, issue 57); the ladder on them with --decoder nvjpeg --transforms
#            device (levels none, encoded, raw, device at 4 workers: the
#            files go to the GPU, no pixel on the host) and, beside it, with
#            --decoder turbojpeg and the fast host transform at 16 workers
#            (libjpeg-turbo on the host's cores). On --emulated it writes
#            the JPEGs and checks that --decoder nvjpeg is refused
#   all      the one call for a lent GPU (issue 45), in 8 minutes (a 480 s
#            budget: a lent machine has 15 minutes of device time, its
#            start included): the goals' figures first (cuda check;
#            PyTorch's Net step at matched math; nvJPEG's decode of
#            natural JPEGs at 1024² and 500×375 beside torchvision's GPU
#            decode and libjpeg-turbo's;
#            level none with device transforms; PyTorch's ladder and
#            ours), then the figures no card has measured yet (nvJPEG and
#            libjpeg-turbo in the loader, CUDA Graphs and TF32 in the
#            ladder, the device transforms' worker sweep); run it again to
#            resume. Estimated from the H100 run of 2026-11-22 at about 4
#            minutes for the goals, 7 in all; measured on an H200 on
#            2026-11-27 at 276 s in all, the commands' own times
#            (results/gpu/nvidia-h200-3fcbbc1/, docs/gpu.md); issue 57's
#            PyTorch step at matched math, torchvision's decode and the
#            500×375 set are estimated at about a minute more; its Net on
#            cuDNN (in cuda check, the goals' part, and two ladder runs
#            after the goals) is not estimated from any run: no card has
#            run it yet
#
# Every command's output goes to OUTDIR (result files in Go benchmark
# format, logs), and OUTDIR/summary.txt says what ran, how long, its exit
# status and its table. After every command OUTDIR/goals.txt is written
# anew (headspace cuda goals: each figure issue 45 asks for beside its goal
# and anchor, "not measured" until its file is there), and the summary
# ends with it. Each invocation stops starting commands after
# SUITE_BUDGET seconds (default 540, under the 10 minutes one command may run
# on a lent machine) and kills the one running then; the result files are
# resumed, so the same invocation run again finishes the rest.
#
# --archive FILE also writes FILE, a gzipped tar of OUTDIR's files (result
# files, logs, summary, goals; not the JPEG folder), anew after every
# command, atomically: for a machine that gives back a few files, not a
# folder of forty (the H200 run of 2026-11-27 lost its first call's files
# so: docs/gpu.md).
#
# A bundle carries the host's libturbojpeg.so.0 in lib/ (make gpu-bundle
# copies it from Debian's libturbojpeg0, which make test-deps installs):
# a GPU machine may lack the package, and the suite puts lib/ on
# LD_LIBRARY_PATH so --decoder turbojpeg runs there.
#
# --emulated runs on the emulated device (no GPU: no cuda check, the torch
# ladder on the CPU); --quick runs every command at tiny sizes. `make test`
# runs `--emulated --quick all` (from ci/smoke.sh), so the script is
# checked on every change.
#
# Environment: HEADSPACE (the binary; default headspace at the top of a
# bundle, bin/headspace in a source tree), PYTHON (default python3),
# SUITE_BUDGET, LADDER_STEPS (measured steps per ladder run, default 10),
# LADDER_COUNT (runs per ladder point, default 3: medians of 3 keep the
# ladder part inside one 10-minute command at the document's sizes with a
# 280 ms step). A bundle's COMMIT file (written by `make gpu-bundle`) is
# recorded as the result files' commit (HEADSPACE_COMMIT), since the
# bundle's folder is no git checkout of that commit.
set -uo pipefail

usage() { echo "usage: ci/gpu-suite.sh [--emulated] [--quick] [--archive FILE] [ladder|loaders|device|decode|all] OUTDIR" >&2; exit 2; }
emulated=0 quick=0 part= archive=
while [ $# -gt 0 ]; do
  case "$1" in
    --archive) [ $# -ge 2 ] && [ -n "$2" ] || usage; archive=$2; shift ;;
    --emulated) emulated=1 ;;
    --quick) quick=1 ;;
    ladder|loaders|device|decode|all) [ -z "$part" ] || usage; part=$1 ;;
    -*) usage ;;
    *) break ;;
  esac
  shift
done
[ $# -eq 1 ] && [ -n "$part" ] || usage
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
if [ -n "$archive" ]; then
  mkdir -p "$(dirname "$archive")" || exit 2
  archive=$(cd "$(dirname "$archive")" && pwd)/$(basename "$archive")
  case "$archive" in "$out"/*) echo "ci/gpu-suite.sh: --archive $archive is inside OUTDIR $out" >&2; exit 2 ;; esac
fi
cd "$root"
# A bundle's own libraries (lib/libturbojpeg.so.0) before the machine's.
[ -d "$root/lib" ] && export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
hs=${HEADSPACE:-}
if [ -z "$hs" ]; then
  # a bundle holds the binary at its top; a source tree has it in bin/
  if [ -f "$root/go.mod" ]; then hs=$root/bin/headspace; else hs=$root/headspace; fi
fi
[ -x "$hs" ] || { echo "ci/gpu-suite.sh: no headspace binary at $hs (make gpu-bundle, or make build)" >&2; exit 2; }
# peers/torch/ladder.py takes its levels from headspace's table.
HEADSPACE_LEVELS=$("$hs" levels --json) || { echo "ci/gpu-suite.sh: $hs levels --json failed" >&2; exit 2; }
export HEADSPACE_LEVELS
python=${PYTHON:-python3}
budget=${SUITE_BUDGET:-540}
# The one call must fit the 15 minutes of device time a lent GPU has,
# the machine's start included: 8 minutes.
[ "$part" = all ] && budget=${SUITE_BUDGET:-480}
steps=${LADDER_STEPS:-10}
count=${LADDER_COUNT:-3}
if [ -z "${HEADSPACE_COMMIT:-}" ] && [ -f "$root/COMMIT" ]; then
  HEADSPACE_COMMIT=$(cat "$root/COMMIT")
  export HEADSPACE_COMMIT
fi
deadline=$((SECONDS + budget))
summary=$out/summary.txt
failed=0

dev=cuda torchdev=cuda
[ $emulated = 1 ] && dev=emulated torchdev=cpu
# Sizes: the document's (raw 1024, crop 256, batch 256), or tiny.
ladder_size=(--steps "$steps" --count "$count")
# The loaders alone, once (headspace loaders' defaults are document 002's:
# three repeats and the training comparison).
loaders_size=(--repeats 1 --train-runs 0)
peer_size=(--count 1)
torch_size=()
netstep_size=(--count 5)
[ $emulated = 1 ] && netstep_size=(--batch 4 --side 16 --steps 2 --count 1)
levels_workers=4 scale_workers=1,4,8,16 loader_workers=1,2,4,8,16,32 peer_workers=1,2,4,8,16
if [ $quick = 1 ]; then
  ladder_size=(--raw-size 48 --crop 16 --batch 4 --step 2ms --steps 2 --count 1)
  loaders_size=(--raw-size 32 --crop 16 --batch 2 --batches 3 --repeats 1 --train-runs 0)
  peer_size=(--raw-size 32x32 --crop 16 --batch 2 --batches 3 --count 1 --impls naive,fast)
  torch_size=(--raw-size 48 --crop 16 --batch 4 --steps 2)
  levels_workers=2 scale_workers=1,2 loader_workers=1,2 peer_workers=1,2
fi

{
  echo "headspace GPU suite: $part on $dev$([ $quick = 1 ] && echo ', quick sizes'), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "binary: $hs"
  echo "machine: $(nproc 2>/dev/null || echo '?') cores, $(uname -sm)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  echo
} >"$summary"

# step NAME LOG CMD...: runs CMD with the time left, stdout and stderr to
# OUTDIR/LOG, and records it in the summary.
step() {
  local name=$1 log=$out/$2 left t0 rc
  shift 2
  left=$((deadline - SECONDS))
  if [ $left -le 5 ]; then
    echo "== $name: NOT RUN, the ${budget}s budget is spent; run the same invocation again to resume" >>"$summary"
    failed=1
    return
  fi
  t0=$SECONDS
  timeout --kill-after=10 "$left" "$@" >"$log" 2>"$log.err"
  rc=$?
  {
    printf '== %s: exit %d in %ds (%s)\n' "$name" "$rc" $((SECONDS - t0)) "$(basename "$log")"
    echo "   \$ $*"
    if [ $rc = 124 ] || [ $rc = 137 ]; then
      echo "   TIMED OUT with the budget; its result file keeps what finished: run the same invocation again to resume"
    elif [ $rc != 0 ]; then
      tail -n 5 "$log.err" | sed 's/^/   stderr: /'
    fi
    sed 's/^/   /' "$log"
    echo
  } >>"$summary"
  [ $rc = 0 ] || failed=1
  # The goals so far, as soon as each command ends.
  "$hs" cuda goals "$out" >"$out/goals.txt" 2>&1
  pack
}

# pack: OUTDIR's files (no folders) into --archive's FILE, atomically.
pack() {
  [ -n "$archive" ] || return 0
  (cd "$out" && find . -maxdepth 1 -type f | sed 's|^\./||' | LC_ALL=C sort | tar czf "$archive.tmp" -T -) &&
    mv -f "$archive.tmp" "$archive"
}

# skip NAME REASON: a command this machine cannot run, said in the summary.
skip() { printf '== %s: not run: %s\n\n' "$1" "$2" >>"$summary"; }

# Each measurement is one function, run by the parts below; `all` runs
# them in its own order (the goals' figures first).

# dnn_libs: cuDNN and cuBLAS from the NVIDIA wheels of $python's
# environment (the ones its torch loads: nvidia/cudnn/lib,
# nvidia/cublas/lib or CUDA 13's nvidia/cu13/lib), for cuda check's Net on
# cuDNN, unless HEADSPACE_CUDNN and HEADSPACE_CUBLAS name them already;
# where there are none, headspace searches the usual places itself and
# says in its result file why the Net stayed on the kernels.
dnn_libs() {
  local found
  found=$("$python" - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
for name, subs in (("cudnn", ("cudnn",)), ("cublas", ("cublas", "cu13"))):
    hits = [f for p in nvidia.__path__ for s in subs for f in sorted(glob.glob(os.path.join(p, s, "lib", "lib%s.so.[0-9]*" % name)))]
    if hits:
        print("%s=%s" % (name, hits[0]))
PY
)
  local line
  while IFS= read -r line; do
    case "$line" in
      cudnn=*) [ -n "${HEADSPACE_CUDNN:-}" ] || export HEADSPACE_CUDNN=${line#cudnn=} ;;
      cublas=*) [ -n "${HEADSPACE_CUBLAS:-}" ] || export HEADSPACE_CUBLAS=${line#cublas=} ;;
    esac
  done <<<"$found"
}

s_check() {
  if [ $emulated = 1 ]; then
    skip "cuda check" "the emulated device has no GPU"
  else
    dnn_libs
    step "cuda check (the Net's step at fp32 and tf32, with and without CUDA Graphs, on the kernels and on cuDNN)" cuda-check.log \
      "$hs" cuda check --precision fp32,tf32 --steps 10 --out "$out/cuda-check.txt"
  fi
}

# s_torch_netstep: PyTorch's step of the Net at matched math (issue 57),
# allow_tf32 off and on, 5 runs each, beside cuda check's fp32 and tf32.
# On --emulated it runs tiny on the CPU: the script is checked, and
# headspace cuda goals reads no CPU line as a GPU's figure.
s_torch_netstep() {
  if [ ! -f peers/torch/netstep.py ]; then
    skip "torch netstep" "peers/torch/netstep.py is not in this tree"
    [ $emulated = 1 ] || failed=1
  elif ! "$python" -c 'import torch' 2>/dev/null; then
    skip "torch netstep" "$python cannot import torch"
    [ $emulated = 1 ] || failed=1
  else
    # Its result file is its stdout, the step's log.
    step "torch netstep on $torchdev: the Net's step with allow_tf32 off and on" torch-netstep.txt \
      "$python" peers/torch/netstep.py --device "$torchdev" "${netstep_size[@]}"
  fi
}

s_ladder_levels() {
  step "ladder: every level at $levels_workers workers" ladder-levels.log \
    "$hs" ladder --device "$dev" --levels none,raw,sample,host,device --workers "$levels_workers" \
    --transforms naive,fast "${ladder_size[@]}" --out "$out/ladder-levels.txt"
}

s_ladder_workers() {
  step "ladder: workers $scale_workers at level none" ladder-workers.log \
    "$hs" ladder --device "$dev" --levels none --workers "$scale_workers" --transforms naive,fast \
    "${ladder_size[@]}" --out "$out/ladder-workers.txt"
}

s_ladder_placement() {
  for pinned in true false; do
    for p in host device; do
      step "ladder: placement $p, pinned $pinned, levels host and none" "ladder-placement=$p-pinned=$pinned.log" \
        "$hs" ladder --device "$dev" --levels host,none --workers "$levels_workers" --transforms fast \
        --pinned="$pinned" --placement "$p" "${ladder_size[@]}" --out "$out/ladder-placement=$p-pinned=$pinned.txt"
    done
  done
}

s_torch_ladder() {
  if [ ! -f peers/torch/ladder.py ]; then
    skip "torch ladder" "peers/torch/ladder.py is not in this tree"
    [ $emulated = 1 ] || failed=1
  elif ! "$python" -c 'import torch' 2>/dev/null; then
    skip "torch ladder" "$python cannot import torch"
    [ $emulated = 1 ] || failed=1
  else
    # Its result file is its stdout, the step's log.
    step "torch ladder on $torchdev" torch-ladder.txt "$python" peers/torch/ladder.py --device "$torchdev" "${torch_size[@]}"
  fi
}

s_loaders() {
  step "loaders: goroutines against processes, workers $loader_workers" loaders.log \
    "$hs" loaders --mode goroutine,process --workers "$loader_workers" "${loaders_size[@]}" --out "$out/loaders.txt"
}

s_peer() {
  step "peer: against PyTorch's DataLoader, workers $peer_workers" peer.log \
    "$hs" peer --python "$python" --workers "$peer_workers" "${peer_size[@]}" --out "$out/peer.txt"
}

# refused NAME WANT CMD...: CMD must exit 2 with one line containing WANT
# (what the emulated device says of a GPU-only path).
refused() {
  local name=$1 want=$2 rc err
  shift 2
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc = 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && printf '%s' "$err" | grep -qF -- "$want"; then
    printf '== %s: refused as it must be (exit 2): %s\n   $ %s\n\n' "$name" "$err" "$*" >>"$summary"
  else
    printf '== %s: exit %d, want exit 2 and one line with %s: %s\n   $ %s\n\n' "$name" "$rc" "$want" "$err" "$*" >>"$summary"
    failed=1
  fi
}

jpeg_noise_size=1024 jpeg_noise_n=256 nat_size=1024 nat_n=256 nat_crop=256 nat_batch=256 hostw=16 in_size=500x375
[ $quick = 1 ] && jpeg_noise_size=32 jpeg_noise_n=4 nat_size=48 nat_n=8 nat_crop=16 nat_batch=4 hostw=2 in_size=50x37
natural=$out/jpegs-natural
# ImageNet-sized natural photos (issue 57: its images are ~500×375).
imagenet=$out/jpegs-imagenet
nat_ladder=(--data "$natural" --crop "$nat_crop" --batch "$nat_batch" --steps "$steps" --count "$count")
[ $quick = 1 ] && nat_ladder=(--data "$natural" --crop "$nat_crop" --batch "$nat_batch" --step 2ms --steps 2 --count 1)

s_jpegs_noise() {
  rm -rf "$out/jpegs-noise"
  step "dataset: $jpeg_noise_n noise JPEGs at ${jpeg_noise_size}²" jpegs-noise.log \
    "$hs" dataset write --format jpeg --layout files --n "$jpeg_noise_n" --raw-size "$jpeg_noise_size" --out "$out/jpegs-noise"
}

s_device_refusals() {
  refused "cuda decode: an unknown decoder" "--decoder: unknown" \
    "$hs" cuda decode --decoder gpu --jpegs "$out/jpegs-noise"
  refused "ladder: transforms device on the emulated device" "it needs --device cuda" \
    "$hs" ladder --device emulated --transforms device --placement device "${ladder_size[@]}"
  refused "ladder: --device-crop without transforms device" "--device-crop needs --transforms device" \
    "$hs" ladder --device emulated --device-crop "${ladder_size[@]}"
  refused "ladder: --cuda-graphs on the emulated device" "--cuda-graphs needs --device cuda" \
    "$hs" ladder --device emulated --cuda-graphs "${ladder_size[@]}"
  refused "ladder: --precision tf32 on the emulated device" "--precision tf32 needs --device cuda" \
    "$hs" ladder --device emulated --precision tf32 "${ladder_size[@]}"
  refused "ladder: --backend cudnn on the emulated device" "--backend cudnn needs --device cuda" \
    "$hs" ladder --device emulated --backend cudnn "${ladder_size[@]}"
}

s_ladder_device_transforms() {
  [ $emulated = 1 ] && return
  step "ladder: transforms device (host crops), every level at $levels_workers workers" ladder-transforms=device.log \
    "$hs" ladder --device cuda --levels none,raw,sample,host,device --workers "$levels_workers" \
    --transforms device --placement device "${ladder_size[@]}" --out "$out/ladder-transforms=device.txt"
}

s_device_crop() {
  step "ladder: transforms device, --device-crop (whole raw images), every level at $levels_workers workers" ladder-transforms=device-crop.log \
    "$hs" ladder --device cuda --levels none,raw,sample,host,device --workers "$levels_workers" \
    --transforms device --device-crop --placement device "${ladder_size[@]}" --out "$out/ladder-transforms=device-crop.txt"
}

s_device_workers() {
  step "ladder: workers $scale_workers at level none, fast beside device" ladder-device-workers.log \
    "$hs" ladder --device cuda --levels none --workers "$scale_workers" --transforms fast,device \
    --placement device "${ladder_size[@]}" --out "$out/ladder-device-workers.txt"
}

# s_ladder_step_variants: the step replayed from CUDA Graphs, on TF32
# tensor cores, and both, at levels device and host; then the step on
# cuDNN (issue 57), fp32 and tf32, at the same levels.
s_ladder_step_variants() {
  step "ladder: CUDA Graphs, levels device and host at $levels_workers workers" ladder-graphs.log \
    "$hs" ladder --device cuda --cuda-graphs --levels device,host --workers "$levels_workers" --transforms fast \
    "${ladder_size[@]}" --out "$out/ladder-graphs.txt"
  step "ladder: TF32 tensor cores, levels device and host at $levels_workers workers" ladder-tf32.log \
    "$hs" ladder --device cuda --precision tf32 --levels device,host --workers "$levels_workers" --transforms fast \
    "${ladder_size[@]}" --out "$out/ladder-tf32.txt"
  step "ladder: TF32 tensor cores and CUDA Graphs, levels device and host at $levels_workers workers" ladder-tf32-graphs.log \
    "$hs" ladder --device cuda --precision tf32 --cuda-graphs --levels device,host --workers "$levels_workers" --transforms fast \
    "${ladder_size[@]}" --out "$out/ladder-tf32-graphs.txt"
  dnn_libs
  for precision in fp32 tf32; do
    step "ladder: the Net on cuDNN, $precision, levels device and host at $levels_workers workers" "ladder-cudnn-$precision.log" \
      "$hs" ladder --device cuda --backend cudnn --precision "$precision" --levels device,host --workers "$levels_workers" --transforms fast \
      "${ladder_size[@]}" --out "$out/ladder-cudnn-$precision.txt"
  done
}

s_decode_noise() {
  step "cuda decode: nvJPEG, batch 256 of noise JPEGs at ${jpeg_noise_size}²" cuda-decode-noise.log \
    "$hs" cuda decode --decoder nvjpeg --jpegs "$out/jpegs-noise" --batch 256 --out "$out/cuda-decode-noise.txt"
}

s_jpegs_natural() {
  # Written once: a second invocation resumes with the same files.
  if [ ! -f "$natural/manifest.json" ]; then
    rm -rf "$natural"
    step "dataset: $nat_n natural JPEGs at ${nat_size}²" jpegs-natural.log \
      "$hs" dataset write --format jpeg --layout files --content natural --n "$nat_n" --raw-size "$nat_size" --out "$natural"
  fi
}

s_decode_natural() {
  if [ $emulated = 1 ]; then
    refused "ladder: --decoder nvjpeg on the emulated device" "it needs --device cuda" \
      "$hs" ladder --device emulated --decoder nvjpeg --transforms device --placement device "${nat_ladder[@]}"
    return
  fi
  step "cuda decode: nvJPEG, batch $nat_batch of natural JPEGs at ${nat_size}²" cuda-decode-natural.log \
    "$hs" cuda decode --decoder nvjpeg --jpegs "$natural" --batch "$nat_batch" --out "$out/cuda-decode-natural.txt"
}

s_jpegs_imagenet() {
  if [ ! -f "$imagenet/manifest.json" ]; then
    rm -rf "$imagenet"
    step "dataset: $nat_n natural JPEGs at $in_size (ImageNet-sized)" jpegs-imagenet.log \
      "$hs" dataset write --format jpeg --layout files --content natural --n "$nat_n" --raw-size "$in_size" --out "$imagenet"
  fi
}

s_decode_imagenet() {
  [ $emulated = 1 ] && return
  step "cuda decode: nvJPEG, batch $nat_batch of natural JPEGs at $in_size" cuda-decode-imagenet.log \
    "$hs" cuda decode --decoder nvjpeg --jpegs "$imagenet" --batch "$nat_batch" --out "$out/cuda-decode-imagenet.txt"
}

# s_torch_decode: torchvision's batched GPU decode of the same two sets
# (peers/torch/decode.py), beside nvJPEG's, and its fused decode + random
# resized crop to 224² + normalise on the GPU at the host's cores as CPU
# threads. On --emulated it runs tiny on the CPU: the script is checked,
# and headspace cuda goals reads no CPU line as a GPU's figure.
s_torch_decode() {
  local size=(--batch "$nat_batch" --pipeline --threads "$(nproc)")
  [ $emulated = 1 ] && size=(--batch "$nat_batch" --batches 2 --pipeline --crop 16 --threads 1)
  if [ ! -f peers/torch/decode.py ]; then
    skip "torch decode" "peers/torch/decode.py is not in this tree"
    [ $emulated = 1 ] || failed=1
  elif ! "$python" -c 'import torch, torchvision' 2>/dev/null; then
    skip "torch decode" "$python cannot import torch and torchvision"
    [ $emulated = 1 ] || failed=1
  else
    # Its result file is its stdout, the step's log.
    step "torch decode on $torchdev: torchvision's batched decode of both sets, and its fused pipeline" torch-decode.txt \
      "$python" peers/torch/decode.py --device "$torchdev" --set natural="$natural" --set imagenet="$imagenet" "${size[@]}"
  fi
}

s_decode_turbo() {
  step "cuda decode: libjpeg-turbo on the host's $(nproc) cores, batch $nat_batch of natural JPEGs at ${nat_size}² (beside nvJPEG)" cuda-decode-turbojpeg.log \
    "$hs" cuda decode --decoder turbojpeg --threads "$(nproc)" --jpegs "$natural" --batch "$nat_batch" --out "$out/cuda-decode-turbojpeg.txt"
}

s_ladder_nvjpeg() {
  [ $emulated = 1 ] && return
  step "ladder: nvJPEG in the loader, transforms device, $levels_workers workers" ladder-nvjpeg.log \
    "$hs" ladder --device cuda --decoder nvjpeg --transforms device --placement device --levels none,encoded,raw,device \
    --workers "$levels_workers" "${nat_ladder[@]}" --out "$out/ladder-nvjpeg.txt"
}

s_ladder_turbojpeg() {
  step "ladder: libjpeg-turbo and the fast transform on the host, $hostw workers" ladder-turbojpeg.log \
    "$hs" ladder --device "$dev" --decoder turbojpeg --transforms fast --levels none,encoded,raw,device \
    --workers "$hostw" "${nat_ladder[@]}" --out "$out/ladder-turbojpeg.txt"
}

run_ladder() { s_check; s_torch_netstep; s_ladder_levels; s_ladder_workers; s_ladder_placement; s_torch_ladder; }
run_loaders() { s_loaders; s_peer; }
run_device() {
  s_jpegs_noise
  if [ $emulated = 1 ]; then s_device_refusals; return; fi
  s_ladder_device_transforms; s_device_crop; s_device_workers; s_ladder_step_variants; s_decode_noise
}
run_decode() { s_jpegs_natural; s_jpegs_imagenet; s_decode_natural; s_decode_imagenet; s_torch_decode; s_decode_turbo; s_ladder_nvjpeg; s_ladder_turbojpeg; }
# The one call (issue 45): the figures of the goals first (the Net's
# step; nvJPEG's rate beside libjpeg-turbo's; level none with device
# transforms; PyTorch's ladder and ours), then the figures no card has
# measured yet (nvJPEG and libjpeg-turbo inside the loader, Graphs and
# TF32 in the ladder, the device transforms' worker sweep), while the
# budget lasts; a second call resumes. The worker and placement sweeps,
# the host loaders and the peer were measured on the H100 on 2026-11-22
# (results/gpu/): the parts ladder and loaders run them again.
run_all() {
  s_check; s_torch_netstep; s_jpegs_natural; s_jpegs_imagenet; s_decode_natural; s_decode_imagenet; s_torch_decode; s_decode_turbo; s_ladder_device_transforms; s_torch_ladder; s_ladder_levels
  s_ladder_nvjpeg; s_ladder_turbojpeg
  if [ $emulated = 1 ]; then
    s_jpegs_noise; s_device_refusals
  else
    s_ladder_step_variants; s_device_workers
  fi
}

case "$part" in
  ladder) run_ladder ;;
  loaders) run_loaders ;;
  device) run_device ;;
  decode) run_decode ;;
  all) run_all ;;
esac
"$hs" cuda goals "$out" >"$out/goals.txt" 2>&1
{ echo "== goals (headspace cuda goals; OUT/goals.txt, rewritten after every command)"; sed 's/^/   /' "$out/goals.txt"; echo; } >>"$summary"
if [ $failed = 0 ]; then
  echo "ci/gpu-suite.sh: $part done; $summary" >&2
  echo "result: every command ran and passed" >>"$summary"
else
  echo "ci/gpu-suite.sh: $part: some commands failed or did not run; see $summary" >&2
  echo "result: FAILED (see above)" >>"$summary"
fi
pack
exit $failed
