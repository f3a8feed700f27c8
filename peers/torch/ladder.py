#!/usr/bin/python3
"""The document's training script at each level of its caching ladder, in Go benchmark format.

This is the training script of "A Caching Strategy for Identifying Bottlenecks
on the Data Input Pipeline" (document 003): its FakeDataset,
transforms (RandomCrop, RandomMask, ConvertColor, Scale) and DataLoader
(batch 256, 4 workers, pin_memory), its Net, CrossEntropyLoss,
SGD(lr=0.001, momentum=0.9) and train_step, run at each caching level exactly
as the document's code blocks change the script:

  device  one batch from the loader, copied to the device once; every step
          trains on it ("Step 1: Cache a Batch on the Device");
  host    one batch from the loader kept on the host; every step copies it to
          the device with non_blocking=True ("Step 2");
  sample  the dataset caches its first processed sample and returns it for
          every index ("Step 3a"); the loader still collates and the step copies;
  raw     the dataset caches its first raw image and label and transforms it
          for every index ("Step 3b");
  none    the full pipeline: a new random image per sample (the baseline).

What a level keeps is not spelled here: the levels and their cuts come
from headspace's one table (`headspace levels --json`, package level),
which headspace passes in $HEADSPACE_LEVELS when it runs this script;
run alone, the script asks the headspace on PATH. A level keeps the
output of the last stage before its cut: load's (a raw image: raw),
transform's (a processed sample: sample), batch's (a batch on the host:
host) or upload's (a batch on the device: device); the levels of the
document's pipeline are those that need no dataset on disk.

With --device emulated the training step is headspace's emulated accelerator
(device.Emulated) instead of the Net: the document's whole script
runs, but train_step is a wait of --step (the document's device-cached
1/3.45 s, 290ms, by default), and each host-to-device copy waits the batch's
bytes over --pinned-gbps (pin_memory=True, as the document) on the host, as
headspace's Upload does. As there, a step starts when the one before it has
finished and the host runs at most one step ahead, so loading overlaps the
step. headspace passes its own bandwidths as arguments (`headspace peer
--ladder`, `headspace reproduce`); the defaults here are the same figures
(device.DefaultEmulated), and a test keeps them so. No Net is built and the
DataLoader pins nothing (there is no GPU to pin for).

--step calibrated first measures this machine's loader throughput for the
document's code at the document's own settings (1024x1024 raw images, crop
256, batch 256, 4 workers) at levels raw and none, without a step (timing
the batches after the first wave, one a worker, which arrive together), and
compares it with the document's 1.72 and 0.89 steps/s x 256 samples: the
ratio is the geometric mean of the two. The step is then 290ms divided by
that ratio, so the emulated device stands to this CPU as the A10G stood to
the document's 4 vCPUs. The calibration's figures are printed as
configuration lines (calibration-*). --calibrate prints them and exits.

The seed's text of the model's code block is empty ("undefined"); the Net here
is the one headspace's cuda/netref documents: Conv2d(3, 30, 3, padding='same')
and ReLU, then depth times [Conv2d(30, 30, 3, padding='same'), ReLU,
MaxPool2d(2)], then Conv2d(30, 10, 3, padding='same') and flatten. The crop must
be 2^depth, so the last convolution sees 1x1 and the logits are the 10 classes;
the document's crop of 256 gives its eight stages.

Timing: the first step of a level is a warm-up (the loader starts its workers,
CUDA initialises); the next steps are timed from after the warm-up to after the
last, synchronising the device at both ends (the document averages per-step
wall times, which on a busy GPU queue amounts to the same). For each level it
prints one line that golang.org/x/perf/benchfmt and benchstat read:

  BenchmarkTorchLadder/level=raw/workers=4-16 10 581395348 ns/op 1.720 steps/s 440.3 samples/s

(iterations: the timed steps; the -N suffix is the CPU count, as Go prints
GOMAXPROCS), after "key: value" configuration lines. harness/peer's Parse reads
only dataloader.py's BenchmarkPeer lines, not these. Errors go to stderr with a
non-zero exit status.

Usage:

  ladder.py [--device cuda|cpu|emulated] [--levels device,host,sample,raw,none]
            [--raw-size 1024] [--crop 256] [--batch 256] [--steps 11]
            [--workers 4] [--seed 1] [--check]
            [--step 290ms|calibrated] [--pinned-gbps 24] [--pageable-gbps 12]
            [--calibrate] [--calibration-batches 12]
"""

import argparse
import json
import os
import subprocess
import platform
import random
import sys
import time

import math
import re

import numpy as np
import torch
import torch.nn as nn
from torchvision.datasets.vision import VisionDataset

import document  # the document's transforms and raw images (document.py)

# The stage whose output each level keeps in the document's pipeline
# (synthetic data), from headspace's level table (level_table); the levels,
# device first, as they run by default.
KEPT = {}
LEVELS = []

# The stages whose output this script can keep (None: nothing, level none).
CACHES = (None, "load", "transform", "batch", "upload")

num_classes = document.NUM_CLASSES

# The document's figures the calibration compares with: its device-cached
# step (1/3.45 s, rounded as workloads.DocumentStep), its loader-bound
# steps/s at levels raw and none (workloads.LadderDocument), its batch,
# workers, raw image and crop.
DOCUMENT_STEP = 0.290
DOCUMENT_STEPS_PER_SEC = {"raw": 1.72, "none": 0.89}
DOCUMENT_BATCH, DOCUMENT_WORKERS, DOCUMENT_RAW, DOCUMENT_CROP = 256, 4, 1024, 256

# headspace's emulated device's assumed host-to-device bandwidths
# (device.DefaultEmulated), GB/s; headspace passes its own.
PINNED_GBPS, PAGEABLE_GBPS = 24.0, 12.0

# Set from the command line before any dataset is built.
input_img_size = (1024, 1024)  # (height, width) of the raw image
img_size = 256  # side of the random crop


class Net(nn.Module):
    def __init__(self, depth=8, num_classes=10):
        super().__init__()
        self.conv_in = nn.Conv2d(3, 30, 3, padding="same")
        hidden = []
        for i in range(depth):
            hidden.append(nn.Conv2d(30, 30, 3, padding="same"))
            hidden.append(nn.ReLU())
            hidden.append(nn.MaxPool2d(2))
        self.hidden = nn.Sequential(*hidden)
        self.conv_out = nn.Conv2d(30, num_classes, 3, padding="same")

    def forward(self, x):
        x = torch.nn.functional.relu(self.conv_in(x))
        x = self.hidden(x)
        x = self.conv_out(x)
        x = torch.flatten(x, 1)
        return x


def level_table():
    """headspace's level table (`headspace levels --json`): from
    $HEADSPACE_LEVELS, which headspace sets when it runs this script, or
    from the headspace on PATH."""
    text = os.environ.get("HEADSPACE_LEVELS")
    if not text:
        try:
            text = subprocess.run(["headspace", "levels", "--json"], check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            raise SystemExit(f"ladder.py: the level table: set HEADSPACE_LEVELS to the output of "
                             f"`headspace levels --json`, or put headspace on PATH ({e})")
    bad = "ladder.py: the level table (HEADSPACE_LEVELS, or `headspace levels --json`) is not headspace's: "
    try:
        table = json.loads(text)
    except ValueError as e:
        raise SystemExit(bad + f"not JSON ({e}): {text[:40]!r}")
    rows = table.get("levels") if isinstance(table, dict) else None
    if not isinstance(rows, list) or not rows:
        raise SystemExit(bad + "no list of levels in it")
    for i, row in enumerate(rows):
        if not (isinstance(row, dict) and isinstance(row.get("name"), str) and isinstance(row.get("needs"), str)
                and isinstance(row.get("kept"), dict)):
            raise SystemExit(bad + f"level {i + 1} lacks a name, needs or kept")
    return table


def load_levels():
    """Sets KEPT and LEVELS from the table: the levels that need no dataset
    on disk, and the stage each keeps of the synthetic pipeline (None: none)."""
    KEPT.clear()
    LEVELS.clear()
    for row in reversed(level_table()["levels"]):
        if row["needs"] == "synthetic":
            KEPT[row["name"]] = row["kept"].get("synthetic")
            LEVELS.append(row["name"])


def check_kept(levels):
    """Refuses, by name, a level to run whose kept stage this script has no
    cache of (CACHES); a level of the table that is not run needs none."""
    for level in levels:
        if KEPT[level] not in CACHES:
            raise SystemExit(f"ladder.py: level {level} keeps the output of stage {KEPT[level]}: this script has no cache of it")


class FakeDataset(VisionDataset):
    """The document's dataset; cache is the stage whose output it keeps:
    None (level none), "transform" (a processed sample: Step 3a) or "load"
    (a raw image and label: Step 3b)."""

    def __init__(self, transform, size, cache=None):
        super().__init__(root=None, transform=transform)
        self.size = size
        self.level = cache
        self.cache = None

    def draw(self):
        return document.draw(input_img_size[0], input_img_size[1])

    def __getitem__(self, index):
        if self.level == "transform":
            if self.cache is None:
                img, target = self.draw()
                # Apply tranformations
                img = self.transform(img)
                self.cache = img, target
            return self.cache
        if self.level == "load":
            if self.cache is None:
                self.cache = self.draw()
            # Apply tranformations
            img = self.transform(self.cache[0])
            return img, self.cache[1]
        img, target = self.draw()
        img = self.transform(img)
        return img, target

    def __len__(self):
        return self.size


def make_transform():
    return document.make_transform(img_size)


def train_step(model, criterion, optimizer, inputs, labels):
    outputs = model(inputs)
    loss = criterion(outputs, labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss


class EmulatedDevice:
    """headspace's emulated accelerator (device.Emulated), in Python.

    upload waits the batch's bytes over the bandwidth, on the host (the copy
    is not made: the tensors stay where they are); step waits until the step
    before it has finished, then launches this one, which takes step_time;
    sync waits until the last step has finished. Waits sleep, so the host's
    cores stay free for the DataLoader's workers, as beside a real GPU."""

    type = "emulated"

    def __init__(self, step_time, bandwidth):
        self.step_time = step_time
        self.bandwidth = bandwidth  # bytes per second
        self.busy_until = 0.0

    @staticmethod
    def wait_until(deadline):
        d = deadline - time.perf_counter()
        if d > 0:
            time.sleep(d)

    def upload(self, *tensors):
        n = sum(t.element_size() * t.nelement() for t in tensors)
        self.wait_until(time.perf_counter() + n / self.bandwidth)
        return tensors

    def step(self):
        start = max(time.perf_counter(), self.busy_until)
        self.wait_until(start)
        self.busy_until = start + self.step_time

    def sync(self):
        self.wait_until(self.busy_until)


def sync(device):
    if isinstance(device, EmulatedDevice):
        device.sync()
    elif device.type == "cuda":
        torch.cuda.synchronize(device)


def run_level(level, device, depth, batch, steps, workers):
    """Steps of the document's loop at one level: (timed steps, seconds, loss).
    On the emulated device the loss is 0: no model runs."""
    emulated = isinstance(device, EmulatedDevice)
    if emulated:
        def to_device(data):
            return device.upload(data[0], data[1])

        def step(inputs, labels):
            device.step()
            return 0.0
    else:
        model = Net(depth=depth, num_classes=num_classes).to(device)
        criterion = nn.CrossEntropyLoss().to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
        model.train()

        def to_device(data):
            inputs = data[0].to(device=device, non_blocking=True)
            labels = data[1].to(device=device, non_blocking=True)
            return inputs, labels

        def step(inputs, labels):
            return train_step(model, criterion, optimizer, inputs, labels)

    kept = KEPT[level]
    cache = kept if kept in ("load", "transform") else None
    train_set = FakeDataset(transform=make_transform(), size=steps * batch, cache=cache)
    train_loader = torch.utils.data.DataLoader(
        train_set,
        batch_size=batch,
        num_workers=workers,
        pin_memory=device.type == "cuda",
    )

    def batches():
        if kept in ("batch", "upload"):
            data = next(iter(train_loader))
            if kept == "upload":
                inputs, labels = to_device(data)
                while True:
                    yield inputs, labels
            while True:
                yield to_device(data)
        for data in train_loader:
            # copy data to device
            yield to_device(data)

    it = batches()
    inputs, labels = next(it)
    loss = step(inputs, labels)  # warm-up
    sync(device)
    t0 = time.perf_counter()
    for _ in range(1, steps):
        inputs, labels = next(it)
        loss = step(inputs, labels)
    sync(device)
    elapsed = time.perf_counter() - t0
    it.close()
    return steps - 1, elapsed, float(loss)


def loader_throughput(level, batch, batches, workers):
    """Samples/s of the document's DataLoader alone at level raw or none, in
    its steady state: each worker makes whole batches and all start at once,
    so the first `workers` batches arrive together; the rate is the batches
    after that first wave over the time from its last batch to the last."""
    train_set = FakeDataset(transform=make_transform(), size=batches * batch, cache=KEPT[level])
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=batch, num_workers=workers)
    it = iter(train_loader)
    for _ in range(workers):
        next(it)
    first = time.perf_counter()
    for _ in range(workers, batches):
        next(it)
    last = time.perf_counter()
    del it
    return (batches - workers) * batch / (last - first)


def calibrate(batches, seed):
    """This machine against the document's host for the document's code:
    [(key, value)] configuration lines and the ratio (geometric mean of raw
    and none). It runs at the document's sizes, whatever the run's are."""
    global input_img_size, img_size
    saved = input_img_size, img_size
    input_img_size, img_size = (DOCUMENT_RAW, DOCUMENT_RAW), DOCUMENT_CROP
    lines, ratios = [], []
    try:
        for level in ("raw", "none"):
            torch.manual_seed(seed)
            np.random.seed(seed % 2**32)
            random.seed(seed)
            sps = loader_throughput(level, DOCUMENT_BATCH, batches, DOCUMENT_WORKERS)
            doc = DOCUMENT_STEPS_PER_SEC[level] * DOCUMENT_BATCH
            ratios.append(sps / doc)
            lines += [
                (f"calibration-{level}-samples/s", f"{sps:.1f}"),
                (f"calibration-{level}-document-samples/s", f"{doc:.1f}"),
            ]
    finally:
        input_img_size, img_size = saved
    ratio = math.sqrt(ratios[0] * ratios[1])
    lines = [
        ("calibration-settings", f"raw {DOCUMENT_RAW}x{DOCUMENT_RAW}, crop {DOCUMENT_CROP}, batch {DOCUMENT_BATCH}, "
         f"{DOCUMENT_WORKERS} workers, {batches} batches a level, no step"),
        ("calibration-timing", f"batches {DOCUMENT_WORKERS + 1}..{batches}: after the first wave of {DOCUMENT_WORKERS} workers' batches"),
    ] + lines + [("calibration-ratio", f"{ratio:.4f}")]
    return lines, ratio


_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s)$")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def step_time(s):
    """--step: a Go duration such as 290ms, 1.5s, 566.4ms, or "calibrated"."""
    if s == "calibrated":
        return s
    m = _DURATION.match(s)
    if not m:
        raise argparse.ArgumentTypeError(f"{s!r} is not a duration such as 290ms or 1.5s, or calibrated")
    v = float(m.group(1)) * _UNITS[m.group(2)]
    if not (0 <= v <= 60):
        raise argparse.ArgumentTypeError(f"{s}: want 0 to 60s")
    return v


def go_duration(seconds):
    """seconds as Go's time.Duration prints it, rounded to the microsecond."""
    us = round(seconds * 1e6)
    if us == 0:
        return "0s"
    if us < 1000:
        return f"{us}µs"
    if us < 1000000:
        return f"{us / 1000:g}ms"
    return f"{us / 1e6:g}s"


def gbps(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number")
    if not (0.001 <= v <= 1e6):
        raise argparse.ArgumentTypeError(f"{v}: want 0.001 to 1000000 GB/s")
    return v


def names(s):
    out = [f.strip() for f in s.split(",") if f.strip()]
    if not out:
        raise argparse.ArgumentTypeError("no levels")
    return out


def main(argv):
    global input_img_size, img_size
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu", "emulated"], default="cuda",
                   help="where the model trains: cuda, cpu, or emulated (headspace's emulated device: no model, a wait of --step)")
    p.add_argument("--levels", type=names, help="comma-separated caching levels (default: every level of headspace's table that needs no data on disk, device first)")
    p.add_argument("--raw-size", type=document.size, default=(1024, 1024), help="raw image size, N or WxH")
    p.add_argument("--crop", type=int, default=256, help="random crop side, a power of two: the Net has log2(crop) pooling stages")
    p.add_argument("--batch", type=int, default=256, help="samples per batch")
    p.add_argument("--steps", type=int, default=11, help="training steps per level, at least 2 (the first is a warm-up)")
    p.add_argument("--workers", type=int, default=4, help="DataLoader worker processes")
    p.add_argument("--seed", type=int, default=1, help="seed of torch, numpy and random")
    p.add_argument("--step", type=step_time, default=DOCUMENT_STEP,
                   help="emulated device: a step's time (a Go duration, default 290ms) or calibrated (290ms over this machine's calibration ratio)")
    p.add_argument("--pinned-gbps", type=gbps, default=PINNED_GBPS, help="emulated device: host-to-device GB/s from pinned memory (the document pins)")
    p.add_argument("--pageable-gbps", type=gbps, default=PAGEABLE_GBPS, help="emulated device: host-to-device GB/s from pageable memory (recorded; the document pins)")
    p.add_argument("--calibration-batches", type=int, default=12,
                   help=f"batches a level of the calibration, at least {DOCUMENT_WORKERS + 2} (the first {DOCUMENT_WORKERS}, one a worker, are not timed)")
    p.add_argument("--calibrate", action="store_true", help="measure the calibration, print its configuration lines and exit")
    p.add_argument("--check", action="store_true", help="print the configuration lines and exit: the imports work")
    a = p.parse_args(argv)
    (w, h), crop = a.raw_size, a.crop
    emulated = a.device == "emulated"
    if emulated:
        # No Net: any crop that fits will do.
        if crop <= 0 or crop > w or crop > h:
            p.error(f"--crop {crop} must be positive and fit the {w}x{h} raw image")
    elif crop <= 0 or crop & (crop - 1) or crop > w or crop > h:
        p.error(f"--crop {crop} must be a power of two that fits the {w}x{h} raw image")
    if a.batch <= 0:
        p.error(f"--batch {a.batch} must be positive")
    if a.steps < 2:
        p.error(f"--steps {a.steps}: want at least 2 (the first is a warm-up)")
    if a.workers < 0:
        p.error(f"--workers {a.workers} must not be negative")
    if a.calibration_batches < DOCUMENT_WORKERS + 2:
        p.error(f"--calibration-batches {a.calibration_batches}: want at least {DOCUMENT_WORKERS + 2} "
                f"(the first {DOCUMENT_WORKERS}, one a worker, arrive together and are not timed)")
    if (a.calibrate or a.step == "calibrated") and not emulated:
        p.error("--step calibrated and --calibrate need --device emulated")
    if a.device == "cuda" and not a.check and not torch.cuda.is_available():
        print("ladder.py: --device cuda: torch sees no CUDA device (use --device cpu or emulated)", file=sys.stderr)
        return 1
    input_img_size, img_size = (h, w), crop
    depth = crop.bit_length() - 1

    cfg = []
    # The commit of the headspace that ran this beside its own ladder
    # (ci/gpu-suite.sh exports a bundle's), so the file names what
    # measured it as every result file does.
    if os.environ.get("HEADSPACE_COMMIT"):
        cfg.append(("commit", os.environ["HEADSPACE_COMMIT"]))
    cfg += [
        ("python", platform.python_version()),
        ("torch", torch.__version__),
        ("torch-device", a.device),
        ("raw-size", f"{w}x{h}"),
        ("crop", str(crop)),
        ("batch", str(a.batch)),
    ]
    if not emulated:
        cfg.append(("net-depth", str(depth)))
    cfg.append(("torch-threads", str(torch.get_num_threads())))
    if a.device == "cuda":
        device = torch.device("cuda:0")
        if torch.cuda.is_available():  # not so only with --check
            cfg.append(("gpu", torch.cuda.get_device_name(device)))
    elif a.device == "cpu":
        device = torch.device("cpu")
    else:
        cfg += [
            ("emulated-pinned-gbps", f"{a.pinned_gbps:g}"),
            ("emulated-pageable-gbps", f"{a.pageable_gbps:g}"),
            ("pinned", "true"),
            ("document-step", go_duration(DOCUMENT_STEP)),
            ("document-raw-steps/s", f"{DOCUMENT_STEPS_PER_SEC['raw']:g}"),
            ("document-none-steps/s", f"{DOCUMENT_STEPS_PER_SEC['none']:g}"),
        ]
    if a.check:
        for k, v in cfg:
            print(f"{k}: {v}")
        return 0
    load_levels()
    for level in a.levels or []:
        if level not in LEVELS:
            p.error(f"--levels: unknown level {level!r} (want {', '.join(LEVELS)})")
    if not a.calibrate:
        check_kept(a.levels or LEVELS)
    step = a.step
    if emulated and (a.calibrate or step == "calibrated"):
        lines, ratio = calibrate(a.calibration_batches, a.seed)
        cfg += lines
        if step == "calibrated" or a.calibrate:
            step = DOCUMENT_STEP / ratio
            cfg.append(("calibrated-step", go_duration(step)))
    if emulated:
        cfg.append(("emulated-step", go_duration(step)))
        device = EmulatedDevice(step, a.pinned_gbps * 1e9)
    for k, v in cfg:
        print(f"{k}: {v}")
    sys.stdout.flush()
    if a.calibrate:
        return 0
    procs = os.cpu_count() or 1
    suffix = f"-{procs}" if procs != 1 else ""
    for level in a.levels or LEVELS:
        torch.manual_seed(a.seed)
        np.random.seed(a.seed % 2**32)
        random.seed(a.seed)
        n, elapsed, loss = run_level(level, device, depth, a.batch, a.steps, a.workers)
        if not np.isfinite(loss):
            print(f"ladder.py: level {level}: the loss is {loss}", file=sys.stderr)
            return 1
        print(
            f"BenchmarkTorchLadder/level={level}/workers={a.workers}{suffix} {n} "
            f"{round(elapsed / n * 1e9)} ns/op {n / elapsed:.3f} steps/s {n * a.batch / elapsed:.1f} samples/s"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
