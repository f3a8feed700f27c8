#!/usr/bin/python3
"""PyTorch's training step of the Net at matched math, in Go benchmark format.

The step of peers/torch/ladder.py's level device (its Net, CrossEntropyLoss,
SGD(lr=0.001, momentum=0.9), one batch on the device), timed with TF32
explicitly off and explicitly on, so that headspace's `cuda check` at fp32
and at tf32 each has a peer at the same math (issue 57):

  off  torch.backends.cudnn.allow_tf32 = False and
       torch.backends.cuda.matmul.allow_tf32 = False: fp32 throughout;
  on   both True: cuDNN's convolutions and cuBLAS's GEMMs may run on TF32
       tensor cores (cuDNN's default in PyTorch is on, which is what the
       ladder's level device measured).

torch.backends.cudnn.benchmark is --cudnn-benchmark (default true: the
algorithm search once per shape, as headspace's cuDNN path does); both it
and the modes are read back from torch after being set and printed as
configuration lines and in each line's name, so a file says what ran.

Each of --count runs (the modes interleaved run by run, so a drift of the
card's clock falls on both alike) builds the Net anew from --seed, runs
--warmup untimed steps (the algorithm search falls in them) and times
--steps steps from a device synchronisation to another. Each run prints
one line benchstat reads, e.g.

  BenchmarkTorchNetStep/batch=256/side=256/tf32=off-16 10 61400000 ns/op

(iterations: the timed steps; ns/op the mean step; -N the CPU count, as
Go prints GOMAXPROCS), after "key: value" configuration lines; --count 5
or more gives benchstat an interval. Errors go to stderr with exit 1
(exit 2 for bad arguments).

--device cpu runs the same code on the CPU (where the TF32 switches change
nothing): for the tests, never a GPU figure (the lines say torch-device:
cpu). --check prints the configuration lines and exits.

Usage:

  netstep.py [--device cuda|cpu] [--batch 256] [--side 256] [--steps 10]
             [--warmup 2] [--count 5] [--tf32 off,on] [--cudnn-benchmark true]
             [--seed 1] [--check]
"""

import argparse
import os
import platform
import sys
import time

import torch
import torch.nn as nn

import ladder  # the Net and train_step of the document's script (ladder.py)

MODES = ("off", "on")


def modes(s):
    out = [m.strip() for m in s.split(",") if m.strip()]
    for m in out:
        if m not in MODES:
            raise argparse.ArgumentTypeError(f"unknown mode {m!r} (want off, on)")
    if not out:
        raise argparse.ArgumentTypeError("no mode")
    return out


def boolean(s):
    if s in ("true", "1"):
        return True
    if s in ("false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{s!r}: want true or false")


def set_tf32(on):
    """Sets both TF32 switches and returns them as torch reads them back."""
    torch.backends.cudnn.allow_tf32 = on
    torch.backends.cuda.matmul.allow_tf32 = on
    return torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(device, depth, batch, side, warmup, steps, seed):
    """One run: a fresh Net from seed, warmup untimed steps, then steps
    timed; returns the seconds and the last loss."""
    torch.manual_seed(seed)
    model = ladder.Net(depth=depth, num_classes=ladder.num_classes).to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    inputs = (torch.rand(batch, 3, side, side, device=device) * 2 - 1)
    labels = torch.randint(0, ladder.num_classes, (batch,), device=device)
    loss = None
    for _ in range(warmup):
        loss = ladder.train_step(model, criterion, optimizer, inputs, labels)
    sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = ladder.train_step(model, criterion, optimizer, inputs, labels)
    sync(device)
    elapsed = time.perf_counter() - t0
    return elapsed, float(loss.item())


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="where the Net trains (cpu: for tests, never a GPU figure)")
    p.add_argument("--batch", type=int, default=256, help="samples per batch")
    p.add_argument("--side", type=int, default=256, help="the samples' side, a power of two: the Net has log2(side) pooling stages")
    p.add_argument("--steps", type=int, default=10, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per run first (cuDNN's algorithm search falls in them)")
    p.add_argument("--count", type=int, default=5, help="runs per mode (5 or more for benchstat's interval)")
    p.add_argument("--tf32", type=modes, default=list(MODES), help="comma-separated modes: off (fp32), on (TF32 allowed)")
    p.add_argument("--cudnn-benchmark", type=boolean, default=True, help="torch.backends.cudnn.benchmark: true or false")
    p.add_argument("--seed", type=int, default=1, help="seed of the Net and the batch")
    p.add_argument("--check", action="store_true", help="print the configuration lines and exit")
    a = p.parse_args(argv)
    side = a.side
    if side <= 1 or side & (side - 1):
        p.error(f"--side {side} must be a power of two, at least 2")
    for name in ("batch", "steps", "count"):
        if getattr(a, name) <= 0:
            p.error(f"--{name} {getattr(a, name)} must be positive")
    if a.warmup < 1:
        p.error(f"--warmup {a.warmup}: want at least 1 (the first step builds cuDNN's plans)")
    if a.device == "cuda" and not a.check and not torch.cuda.is_available():
        print("netstep.py: --device cuda: torch sees no CUDA device (use --device cpu for a test)", file=sys.stderr)
        return 1
    device = torch.device("cuda:0" if a.device == "cuda" else "cpu")
    depth = side.bit_length() - 1
    torch.backends.cudnn.benchmark = a.cudnn_benchmark

    cfg = []
    if os.environ.get("HEADSPACE_COMMIT"):
        cfg.append(("commit", os.environ["HEADSPACE_COMMIT"]))
    cfg += [
        ("python", platform.python_version()),
        ("torch", torch.__version__),
        ("torch-device", a.device),
        ("batch", str(a.batch)),
        ("side", str(side)),
        ("net-depth", str(depth)),
        ("warmup-steps", str(a.warmup)),
        ("cudnn-benchmark", str(torch.backends.cudnn.benchmark).lower()),
        ("torch-threads", str(torch.get_num_threads())),
    ]
    if a.device == "cuda" and torch.cuda.is_available():
        cfg.append(("gpu", torch.cuda.get_device_name(device)))
        cfg.append(("cudnn", str(torch.backends.cudnn.version())))
    for k, v in cfg:
        print(f"{k}: {v}")
    sys.stdout.flush()
    if a.check:
        return 0
    procs = os.cpu_count() or 1
    suffix = f"-{procs}" if procs != 1 else ""
    for _ in range(a.count):
        for mode in a.tf32:
            conv, matmul = set_tf32(mode == "on")
            if conv != (mode == "on") or matmul != (mode == "on"):
                print(f"netstep.py: tf32 {mode}: torch reads back cudnn.allow_tf32={conv}, matmul.allow_tf32={matmul}", file=sys.stderr)
                return 1
            elapsed, loss = run(device, depth, a.batch, side, a.warmup, a.steps, a.seed)
            if loss != loss or loss in (float("inf"), float("-inf")):
                print(f"netstep.py: tf32 {mode}: the loss is {loss}", file=sys.stderr)
                return 1
            print(f"BenchmarkTorchNetStep/batch={a.batch}/side={side}/tf32={mode}{suffix} {a.steps} "
                  f"{round(elapsed / a.steps * 1e9)} ns/op")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
