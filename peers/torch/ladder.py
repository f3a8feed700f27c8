#!/usr/bin/python3
"""The document's training script at each level of its caching ladder, in Go benchmark format.

This is the training script of "A Caching Strategy for Identifying Bottlenecks
on the Data Input Pipeline" (/work/shared/seeds/003_*.txt): its FakeDataset,
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
GOMAXPROCS), after "key: value" configuration lines. harness/engines/peer's Parse reads
only dataloader.py's BenchmarkPeer lines, not these. Errors go to stderr with a
non-zero exit status.

Usage:

  ladder.py [--device cuda|cpu] [--levels device,host,sample,raw,none]
            [--raw-size 1024] [--crop 256] [--batch 256] [--steps 11]
            [--workers 4] [--seed 1] [--check]
"""

import argparse
import os
import platform
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision.transforms as T
from PIL import Image
from scipy.signal import convolve2d
from torchvision.datasets.vision import VisionDataset

LEVELS = ["device", "host", "sample", "raw", "none"]

# The document's number of classes is not given; headspace's synthetic
# dataset (datasets.DefaultSynthetic) and the Net's last layer use 10.
num_classes = 10

# Set from the command line before any dataset is built; the document's
# classes read them as globals.
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


class FakeDataset(VisionDataset):
    """The document's dataset; cache is None (level none), "sample" (Step 3a)
    or "raw" (Step 3b)."""

    def __init__(self, transform, size, cache=None):
        super().__init__(root=None, transform=transform)
        self.size = size
        self.level = cache
        self.cache = None

    def draw(self):
        # create a random 1024x1024 image
        img = Image.fromarray(
            np.random.randint(
                low=0,
                high=256,
                size=(input_img_size[0], input_img_size[1], 3),
                dtype=np.uint8,
            )
        )
        # create a random label
        target = np.random.randint(low=0, high=num_classes, dtype=np.uint8).item()
        return img, target

    def __getitem__(self, index):
        if self.level == "sample":
            if self.cache is None:
                img, target = self.draw()
                # Apply tranformations
                img = self.transform(img)
                self.cache = img, target
            return self.cache
        if self.level == "raw":
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


class RandomMask(torch.nn.Module):
    def __init__(self, ratio=0.25):
        super().__init__()
        self.ratio = ratio

    def dilate_mask(self, mask):
        # perform 4 neighbor dilation on mask
        dilated = convolve2d(
            mask, [[0, 1, 0], [1, 1, 1], [0, 1, 0]], mode="same"
        ).astype(bool)
        return dilated

    def forward(self, img):
        mask = np.random.uniform(size=(img_size, img_size)) < self.ratio
        dilated_mask = torch.unsqueeze(torch.tensor(self.dilate_mask(mask)), 0)
        dilated_mask = dilated_mask.expand(3, -1, -1)
        img[dilated_mask] = 0.0
        return img


class ConvertColor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.A = torch.tensor(
            [
                [0.299, 0.587, 0.114],
                [-0.16874, -0.33126, 0.5],
                [0.5, -0.41869, -0.08131],
            ]
        )
        self.b = torch.tensor([0.0, 128.0, 128.0])

    def forward(self, img):
        img = img.to(dtype=torch.get_default_dtype())
        img = torch.matmul(self.A, img.view([3, -1])).view(img.shape)
        img = img + self.b[:, None, None]
        return img


class Scale(object):
    def __call__(self, img):
        return img.to(dtype=torch.get_default_dtype()).div(255)


def make_transform():
    return T.Compose(
        [T.PILToTensor(), T.RandomCrop(img_size), RandomMask(), ConvertColor(), Scale()]
    )


def train_step(model, criterion, optimizer, inputs, labels):
    outputs = model(inputs)
    loss = criterion(outputs, labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_level(level, device, depth, batch, steps, workers):
    """Steps of the document's loop at one level: (timed steps, seconds, loss)."""
    model = Net(depth=depth, num_classes=num_classes).to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    model.train()
    cache = level if level in ("sample", "raw") else None
    train_set = FakeDataset(transform=make_transform(), size=steps * batch, cache=cache)
    train_loader = torch.utils.data.DataLoader(
        train_set,
        batch_size=batch,
        num_workers=workers,
        pin_memory=device.type == "cuda",
    )

    def batches():
        if level in ("device", "host"):
            data = next(iter(train_loader))
            if level == "device":
                inputs = data[0].to(device=device, non_blocking=True)
                labels = data[1].to(device=device, non_blocking=True)
                while True:
                    yield inputs, labels
            while True:
                inputs = data[0].to(device=device, non_blocking=True)
                labels = data[1].to(device=device, non_blocking=True)
                yield inputs, labels
        for data in train_loader:
            # copy data to device
            inputs = data[0].to(device=device, non_blocking=True)
            labels = data[1].to(device=device, non_blocking=True)
            yield inputs, labels

    it = batches()
    inputs, labels = next(it)
    loss = train_step(model, criterion, optimizer, inputs, labels)  # warm-up
    sync(device)
    t0 = time.perf_counter()
    for step in range(1, steps):
        inputs, labels = next(it)
        loss = train_step(model, criterion, optimizer, inputs, labels)
    sync(device)
    elapsed = time.perf_counter() - t0
    it.close()
    return steps - 1, elapsed, float(loss)


def names(s, allowed):
    out = [f.strip() for f in s.split(",") if f.strip()]
    for f in out:
        if f not in allowed:
            raise argparse.ArgumentTypeError(f"unknown level {f!r} (want {', '.join(allowed)})")
    if not out:
        raise argparse.ArgumentTypeError("no levels")
    return out


def size(s):
    w, sep, h = s.lower().partition("x")
    if not sep:
        h = w
    try:
        w, h = int(w), int(h)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not N or WxH")
    if w <= 0 or h <= 0:
        raise argparse.ArgumentTypeError(f"{w}x{h} must be positive")
    return w, h


def main(argv):
    global input_img_size, img_size
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="where the model trains")
    p.add_argument("--levels", type=lambda s: names(s, LEVELS), default=LEVELS, help="comma-separated caching levels")
    p.add_argument("--raw-size", type=size, default=(1024, 1024), help="raw image size, N or WxH")
    p.add_argument("--crop", type=int, default=256, help="random crop side, a power of two: the Net has log2(crop) pooling stages")
    p.add_argument("--batch", type=int, default=256, help="samples per batch")
    p.add_argument("--steps", type=int, default=11, help="training steps per level, at least 2 (the first is a warm-up)")
    p.add_argument("--workers", type=int, default=4, help="DataLoader worker processes")
    p.add_argument("--seed", type=int, default=1, help="seed of torch, numpy and random")
    p.add_argument("--check", action="store_true", help="print the configuration lines and exit: the imports work")
    a = p.parse_args(argv)
    (w, h), crop = a.raw_size, a.crop
    if crop <= 0 or crop & (crop - 1) or crop > w or crop > h:
        p.error(f"--crop {crop} must be a power of two that fits the {w}x{h} raw image")
    if a.batch <= 0:
        p.error(f"--batch {a.batch} must be positive")
    if a.steps < 2:
        p.error(f"--steps {a.steps}: want at least 2 (the first is a warm-up)")
    if a.workers < 0:
        p.error(f"--workers {a.workers} must not be negative")
    if a.device == "cuda" and not torch.cuda.is_available():
        print("ladder.py: --device cuda: torch sees no CUDA device (use --device cpu)", file=sys.stderr)
        return 1
    input_img_size, img_size = (h, w), crop
    depth = crop.bit_length() - 1
    device = torch.device("cuda:0" if a.device == "cuda" else "cpu")

    cfg = [
        ("python", platform.python_version()),
        ("torch", torch.__version__),
        ("torch-device", a.device),
        ("raw-size", f"{w}x{h}"),
        ("crop", str(crop)),
        ("batch", str(a.batch)),
        ("net-depth", str(depth)),
        ("torch-threads", str(torch.get_num_threads())),
    ]
    if a.device == "cuda":
        cfg.append(("gpu", torch.cuda.get_device_name(device)))
    for k, v in cfg:
        print(f"{k}: {v}")
    sys.stdout.flush()
    if a.check:
        return 0
    procs = os.cpu_count() or 1
    suffix = f"-{procs}" if procs != 1 else ""
    for level in a.levels:
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
