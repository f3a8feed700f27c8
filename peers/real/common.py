"""What every real peer shares: its arguments, the files, the transform's
constants, the timing and the line it prints (`headspace peer --peers`).

Every peer does the same job as headspace's loader in the comparison: read
the first batch × batches JPEGs of an ImageFolder (classes sorted, files
sorted in each, as torchvision's ImageFolder lists them), decode each to
RGB, take a random crop × crop window, convert RGB to YCbCr with the
document's matrix and offset (COLOR_MATRIX, COLOR_OFFSET: headspace's
transforms.ColorMatrix and ColorOffset), divide by 255 and lay the crop
out channel-major as float32, and deliver batches of batch samples, a
float32 batch × 3 × crop × crop array. The order of samples within the run
is left to the peer (each lets its pipeline deliver out of order, as its
documentation recommends for throughput).

A run prints "key: value" configuration lines (its package versions and
settings) and one Go benchmark line:

  BenchmarkRealPeer/peer=spdl/workers=2 8 412345678 ttfb-ns 310.5 samples/s 3.125 cpu-s

  ttfb-ns    from the start of building the loader to its first batch
  samples/s  the samples of batches 2..batches over the time from the
             first batch to the last
  cpu-s      user+system CPU of the process and all its descendants (those
             waited for, by getrusage; those still running, by /proc) over
             the same span, from start to the end of the loader

The harness measures peak RSS itself (the process group's summed VmRSS).
--check imports everything and prints the configuration lines only.
"""

import argparse
import os
import resource
import sys
import time

# RGB -> YCbCr, the document's ConvertColor (datasets/transforms: ColorMatrix,
# ColorOffset), then / SCALE_DIVISOR (Scale).
COLOR_MATRIX = (
    (0.299, 0.587, 0.114),
    (-0.16874, -0.33126, 0.5),
    (0.5, -0.41869, -0.08131),
)
COLOR_OFFSET = (0.0, 128.0, 128.0)
SCALE_DIVISOR = 255.0

IMAGE_EXTS = (".jpg", ".jpeg", ".JPG", ".JPEG")


def parse_args(argv, name):
    p = argparse.ArgumentParser(prog=name, description=__doc__.splitlines()[0])
    p.add_argument("--data", help="ImageFolder root")
    p.add_argument("--crop", type=int, default=224)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", action="store_true", help="import everything, print the configuration lines, exit")
    a = p.parse_args(argv)
    if not a.check:
        if not a.data:
            p.error("--data is required")
        if a.batches < 2 or a.batch < 1 or a.workers < 1 or a.crop < 1:
            p.error("want --batches >= 2 and positive --batch, --workers, --crop")
    return a


def image_folder(root, n):
    """The first n (path, label) pairs of the ImageFolder at root, cycling
    when it holds fewer."""
    classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
    items = []
    for label, c in enumerate(classes):
        for f in sorted(os.listdir(os.path.join(root, c))):
            if f.endswith(IMAGE_EXTS):
                items.append((os.path.join(root, c, f), label))
    if not items:
        raise SystemExit(f"{root}: no JPEGs in class folders")
    return [items[i % len(items)] for i in range(n)]


def crop_origin(seed, i, height, width, crop):
    """The crop's top and left for sample i: a function of (seed, i) alone,
    so threads and processes draw the same windows."""
    import random
    r = random.Random(seed * 1_000_003 + i)
    return r.randrange(height - crop + 1), r.randrange(width - crop + 1)


def _descendants(pid):
    """The pids of pid's live descendants, from /proc (Linux)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tids:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_cpu(pid):
    """utime+stime of pid in seconds, from /proc/pid/stat; 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def cpu_seconds():
    """CPU of this process, its waited-for children and its live
    descendants (worker processes not yet joined count too)."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = sum(_proc_cpu(p) for p in _descendants(os.getpid()))
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime + live


def print_config(peer, versions, settings):
    print(f"python: {sys.version.split()[0]}")
    for k, v in versions.items():
        print(f"{peer}-{k}: {v}")
    for k, v in settings.items():
        print(f"{peer}-{k}: {v}")
    sys.stdout.flush()


def check_batch(batch, n, crop):
    """The batch is n × 3 × crop × crop float32, or the run is wrong."""
    shape = tuple(int(d) for d in batch.shape)
    dtype = str(batch.dtype)
    if shape != (n, 3, crop, crop) or "float32" not in dtype:
        raise SystemExit(f"batch is {shape} {dtype}, want ({n}, 3, {crop}, {crop}) float32")


# STATS_ENV, set (by the tests that check every peer does the same job),
# makes a run print the first batch's mean of each channel.
STATS_ENV = "HEADSPACE_PEER_STATS"


def print_stats(peer, batch):
    import numpy as np
    x = np.asarray(batch.numpy() if hasattr(batch, "numpy") else batch, dtype=np.float64)
    means = x.mean(axis=(0, 2, 3))
    print(f"{peer}-first-batch-mean: " + ",".join(f"{m:.6f}" for m in means))


def run(peer, a, versions, settings, start_loader):
    """Times one run: start_loader() builds the loader and returns (an
    iterator of batches, a function that shuts it down); prints the lines."""
    print_config(peer, versions, settings)
    if a.check:
        return
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    it, close = start_loader()
    b = next(it)
    first = time.perf_counter()
    check_batch(b, a.batch, a.crop)
    if os.environ.get(STATS_ENV):
        print_stats(peer, b)
    del b
    for _ in range(1, a.batches):
        b = next(it)
        del b
    last = time.perf_counter()
    close()
    cpu = cpu_seconds() - cpu0
    sps = (a.batches - 1) * a.batch / (last - first) if last > first else 0.0
    print(f"BenchmarkRealPeer/peer={peer}/workers={a.workers} {a.batches} "
          f"{round((first - start) * 1e9)} ttfb-ns {sps:.2f} samples/s {cpu:.3f} cpu-s")
    sys.stdout.flush()
