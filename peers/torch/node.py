#!/usr/bin/python3
"""A node of emulated accelerators the PyTorch DDP way: headspace node's peer.

N ranks started by torch.multiprocessing.spawn, one per accelerator, each
joining a gloo process group on 127.0.0.1 (Debian's torchrun fails on its
Python 3.11 in the elastic agent; spawn with gloo works). Each rank runs the
document's pipeline (document.py: its FakeDataset draw, RandomCrop,
RandomMask, ConvertColor and Scale) through its own DataLoader with
--workers workers, and the same emulated accelerator as ladder.py and
headspace's device.Emulated: the upload waits the batch's bytes over
--pinned-gbps, the step waits --step, a step starts when the one before it
has finished. Before each step is launched, every rank calls
dist.all_reduce on a one-element tensor: the step starts on all ranks once
the slowest has its batch, as headspace node's barrier makes it.

Level none is the pipeline; level host keeps the rank's first batch and
steps on it (the bound). Each rank draws its own samples (the seed plus
its rank).

Each rank prints one JSON line on stdout when it has finished its
measured steps (after --warmup):

  {"rank": 0, "accelerators": 4, "level": "none", "steps": 60, "batch": 8,
   "wall_s": 2.41, "compute_s": 2.40, "input_wait_s": 0.01, "barrier_s": 0.002}

AU, MLPerf Storage's accelerator utilisation, is compute_s / wall_s. Errors
go to stderr with a non-zero exit status.

Usage:

  node.py --accelerators N [--level none|host] [--raw-size 256] [--crop 128]
          [--batch 8] [--workers 1] [--step 40ms] [--steps 60] [--warmup 1]
          [--seed 1] [--pinned-gbps 24]
"""

import argparse
import functools
import json
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import document  # noqa: E402


class FakeDataset(torch.utils.data.Dataset):
    """The document's FakeDataset: a new random image and label per index,
    transformed."""

    def __init__(self, raw, crop, size):
        self.raw = raw
        self.transform = document.make_transform(crop)
        self.size = size

    def __getitem__(self, index):
        img, target = document.draw(self.raw[1], self.raw[0])
        return self.transform(img), target

    def __len__(self):
        return self.size


def duration(s):
    """A Go duration of ms or s: "40ms", "1.5s"."""
    for unit, scale in (("ms", 1e-3), ("s", 1.0)):
        if s.endswith(unit):
            try:
                v = float(s[: -len(unit)]) * scale
            except ValueError:
                break
            if 0 < v <= 60:
                return v
    raise argparse.ArgumentTypeError(f"{s!r}: want a duration such as 40ms or 1.5s, up to 60s")


def positive(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a whole number")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{v} must be positive")
    return v


def seed_worker(seed, worker_id):
    """Each worker of each rank its own draws."""
    np.random.seed(seed * 1000 + worker_id)


def wait_until(deadline):
    d = deadline - time.perf_counter()
    if d > 0:
        time.sleep(d)


def rank_main(rank, args, port):
    n = args.accelerators
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    seed = args.seed + rank
    np.random.seed(seed)
    torch.manual_seed(seed)

    total = args.warmup + args.steps
    ds = FakeDataset(args.raw_size, args.crop, total * args.batch)
    # The workers fork, DataLoader's default on Linux (spawn's children
    # would default to spawning theirs, each importing torch again).
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, num_workers=args.workers,
                                         worker_init_fn=functools.partial(seed_worker, seed),
                                         multiprocessing_context="fork")
    it = iter(loader)
    kept = next(it) if args.level == "host" else None
    bandwidth = args.pinned_gbps * 1e9
    flag = torch.zeros(1)
    busy_until = 0.0
    input_wait = barrier = 0.0
    t0 = None
    for i in range(total):
        if i == args.warmup:
            wait_until(busy_until)  # as headspace's loop syncs the device
            t0 = time.perf_counter()
            input_wait = barrier = 0.0
        t = time.perf_counter()
        inputs, labels = kept if kept is not None else next(it)
        input_wait += time.perf_counter() - t
        # The upload: the batch's bytes over the pinned bandwidth.
        nbytes = inputs.element_size() * inputs.nelement() + labels.element_size() * labels.nelement()
        wait_until(time.perf_counter() + nbytes / bandwidth)
        # The all-reduce: every rank has its batch before the step starts.
        t = time.perf_counter()
        dist.all_reduce(flag)
        barrier += time.perf_counter() - t
        # The step starts when the one before it has finished.
        start = max(time.perf_counter(), busy_until)
        wait_until(start)
        busy_until = start + args.step
    wait_until(busy_until)
    wall = time.perf_counter() - t0
    line = json.dumps({
        "rank": rank, "accelerators": n, "level": args.level, "steps": args.steps, "batch": args.batch,
        "wall_s": wall, "compute_s": args.steps * args.step, "input_wait_s": input_wait, "barrier_s": barrier,
    })
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--accelerators", type=positive, required=True, help="ranks, one per emulated accelerator")
    p.add_argument("--level", choices=["none", "host"], default="none")
    p.add_argument("--raw-size", type=document.size, default=(256, 256), help="raw image size, N or WxH")
    p.add_argument("--crop", type=positive, default=128)
    p.add_argument("--batch", type=positive, default=8)
    p.add_argument("--workers", type=positive, default=1, help="DataLoader workers per rank")
    p.add_argument("--step", type=duration, default=0.040, help="emulated step, e.g. 40ms")
    p.add_argument("--steps", type=positive, default=60, help="measured steps")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pinned-gbps", type=float, default=24.0)
    args = p.parse_args(argv)
    if args.warmup < 0:
        p.error("--warmup must not be negative")
    if args.crop > min(args.raw_size):
        p.error(f"--crop {args.crop} is larger than the {args.raw_size[0]}x{args.raw_size[1]} raw image")
    torch.set_num_threads(1)
    mp.spawn(rank_main, args=(args, free_port()), nprocs=args.accelerators, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
