#!/usr/bin/python3
"""The PyTorch peer: the document's input pipeline, measured as headspace measures its own.

This is the toy pipeline of "A Caching Strategy for Identifying Bottlenecks on
the Data Input Pipeline" (document 003), as written there: a
FakeDataset that draws a random raw image with np.random.randint and wraps it
with Image.fromarray, then T.PILToTensor, T.RandomCrop, RandomMask (ratio 0.25,
4-neighbour dilation with scipy's convolve2d), ConvertColor (a 3x3 matmul) and
Scale (written once, in document.py), loaded by torch.utils.data.DataLoader
with num_workers worker processes.
No model runs: every batch is dropped as soon as it arrives, as harness/loadbench
drops ours.

For each worker count it measures, with the definitions of harness/loadbench
(Measure, Measurement.Benchmark):

  ttfb-ns    time to first batch: from creating the DataLoader's iterator
             (which starts the worker processes) to the first batch in hand;
  samples/s  post-init throughput: the samples of batches 2..batches over the
             time from the first batch to the last;
  cpu-s      user+system CPU seconds of this process and its worker processes
             over the run, worker shutdown included.

Each run's dataset holds exactly batches*batch samples, so the iterator ends
after the last batch, as our loader ends after its batches (the document's
dataset holds 10000).

It prints "key: value" configuration lines and one Go benchmark-format line per
worker count, e.g.

  BenchmarkPeer/impl=torch/workers=2 6 13761234567 ttfb-ns 73.40 samples/s 34.690 cpu-s

which golang.org/x/perf/benchfmt reads (harness/peer parses it). Errors go to
stderr with a non-zero exit status.

Usage:

  dataloader.py [--raw-size 1024] [--crop 256] [--batch 256] [--batches 6]
                [--workers 1,2] [--seed 1] [--check] [--data DIR]

--data DIR reads the dataset that `headspace dataset write` wrote to DIR
(ondisk.py: PIL decodes PNG and JPEG, as a torchvision pipeline would) instead
of drawing random images; the raw size is the dataset's (--raw-size must match
or be left out), and index i reads sample i % count.

--check prints the configuration lines only (it shows the imports work).
"""

import argparse
import platform
import random
import resource
import sys
import time

import numpy as np
import PIL
import scipy
import torch
import torchvision
from torchvision.datasets.vision import VisionDataset

import document  # the document's transforms and raw images (document.py)

# Set from the command line before any dataset is built.
input_img_size = (1024, 1024)  # (height, width) of the raw image
img_size = 256  # side of the random crop

# DataLoader's default number of batches each worker loads ahead; our loader's
# Prefetch (ladder.DefaultConfig) is the same 2.
PREFETCH_FACTOR = 2


class FakeDataset(VisionDataset):
    def __init__(self, transform, size):
        super().__init__(root=None, transform=transform)
        self.size = size

    def __getitem__(self, index):
        img, target = document.draw(input_img_size[0], input_img_size[1])
        # Apply transformations
        img = self.transform(img)
        return img, target

    def __len__(self):
        return self.size


class SizedOnDisk(torch.utils.data.Dataset):
    """The on-disk dataset, cycled to size samples like FakeDataset's size."""

    def __init__(self, root, transform, size, index=None, raw_size=None):
        from ondisk import OnDiskDataset

        self.ds = OnDiskDataset(root, transform=transform, index=index, raw_size=raw_size)
        self.size = size

    def __getitem__(self, index):
        return self.ds[index]

    def __len__(self):
        return self.size


def cpu_seconds():
    """User+system CPU of this process and of its waited-for children."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def measure(workers, batch, batches, data=None, index=None, raw_size=None):
    """One run at one worker count: (ttfb seconds, samples/s, cpu seconds)."""
    if data is None:
        train_set = FakeDataset(transform=document.make_transform(img_size), size=batches * batch)
    else:
        train_set = SizedOnDisk(data, transform=document.make_transform(img_size), size=batches * batch, index=index, raw_size=raw_size)
    # pin_memory is off: the document pins (pin_memory=True) because it copies
    # each batch to a GPU; this machine has none, and our loader copies nothing
    # to a device either at level none.
    train_loader = torch.utils.data.DataLoader(
        train_set,
        batch_size=batch,
        num_workers=workers,
        pin_memory=False,
        prefetch_factor=PREFETCH_FACTOR,
    )
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    it = iter(train_loader)  # starts the worker processes
    data = next(it)
    first = time.perf_counter()
    del data
    for k in range(1, batches):
        data = next(it)
        del data
    last = time.perf_counter()
    try:
        next(it)
    except StopIteration:
        pass
    else:
        raise RuntimeError(f"workers={workers}: a batch after the last one ({batches})")
    # Shut the workers down and wait for them, so their CPU is counted.
    it._shutdown_workers()
    del it
    cpu = cpu_seconds() - cpu0
    samples = (batches - 1) * batch
    sps = samples / (last - first) if last > first else 0.0
    return first - start, sps, cpu


def main(argv):
    global input_img_size, img_size
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--raw-size", type=document.size, default=(1024, 1024), help="raw image size, N or WxH")
    p.add_argument("--crop", type=int, default=256, help="random crop side")
    p.add_argument("--batch", type=int, default=256, help="samples per batch")
    p.add_argument("--batches", type=int, default=6, help="batches per run, at least 2")
    p.add_argument("--workers", type=document.positive_ints, default=[1, 2], help="comma-separated worker counts")
    p.add_argument("--seed", type=int, default=1, help="seed of torch, numpy and random")
    p.add_argument("--check", action="store_true", help="print the configuration lines and exit: the imports work")
    p.add_argument("--data", metavar="DIR", help="read the dataset `headspace dataset write` wrote to DIR")
    p.add_argument("--index", metavar="FILE", help="with --data: DIR is an ImageFolder or WebDataset shards, read by headspace's index FILE at --raw-size")
    raw_given = any(x == "--raw-size" or x.startswith("--raw-size=") for x in argv)
    a = p.parse_args(argv)
    if a.index is not None and (a.data is None or not raw_given):
        p.error("--index needs --data and --raw-size")
    if a.data is not None and a.index is not None:
        m = {"format": "foreign", "layout": "index " + a.index}
    elif a.data is not None:
        import json, os

        try:
            with open(os.path.join(a.data, "manifest.json")) as f:
                m = json.load(f)
        except (OSError, ValueError) as e:
            p.error(f"--data {a.data}: {e}")
        if raw_given and a.raw_size != (m["width"], m["height"]):
            p.error(f"--raw-size {a.raw_size[0]}x{a.raw_size[1]}: the dataset in {a.data} is {m['width']}x{m['height']}")
        a.raw_size = (m["width"], m["height"])
    (w, h), crop = a.raw_size, a.crop
    if crop <= 0 or crop > w or crop > h:
        p.error(f"--crop {crop} must be positive and fit the {w}x{h} raw image")
    if a.batch <= 0:
        p.error(f"--batch {a.batch} must be positive")
    if a.batches < 2:
        p.error(f"--batches {a.batches}: want at least 2 (the first is the time to first batch)")
    input_img_size, img_size = (h, w), crop

    cfg = [
        ("python", platform.python_version()),
        ("torch", torch.__version__),
        ("torchvision", torchvision.__version__),
        ("numpy", np.__version__),
        ("scipy", scipy.__version__),
        ("pillow", PIL.__version__),
        ("torch-threads", str(torch.get_num_threads())),
        ("start-method", torch.multiprocessing.get_start_method()),
        ("pin-memory", "false"),
        ("prefetch-factor", str(PREFETCH_FACTOR)),
    ]
    if a.data is not None:
        q = f" quality {m['quality']}" if m.get("format") == "jpeg" else ""
        cfg += [("data", a.data), ("data-format", m["format"] + q), ("data-layout", m["layout"])]
    for k, v in cfg:
        print(f"{k}: {v}")
    sys.stdout.flush()
    if a.check:
        return 0
    for workers in a.workers:
        # DataLoader seeds every worker's torch, numpy and random from torch's
        # generator, so one seed here fixes every image, crop and mask.
        torch.manual_seed(a.seed)
        np.random.seed(a.seed % 2**32)
        random.seed(a.seed)
        ttfb, sps, cpu = measure(workers, a.batch, a.batches, a.data, a.index, a.raw_size)
        print(
            f"BenchmarkPeer/impl=torch/workers={workers} {a.batches} "
            f"{round(ttfb * 1e9)} ttfb-ns {sps:.2f} samples/s {cpu:.3f} cpu-s"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
