#!/usr/bin/python3
"""torchvision's batched GPU JPEG decode, beside headspace's nvJPEG, in Go benchmark format.

The peer of `headspace cuda decode --decoder nvjpeg` (issue 57): the same
JPEG files (every *.jpg and *.jpeg of each --set's folder, read into memory
first, cycled when fewer than a batch), decoded in batches of --batch with
torchvision.io.decode_jpeg(list_of_tensors, device="cuda") (torchvision
0.19 on; an older torchvision decodes one tensor a call, and the lines then
say api=single) to RGB uint8 tensors on the GPU. Each batch is timed from
its call to a device synchronisation after it; one untimed batch runs
first (nvJPEG's handles). A line per timed batch:

  BenchmarkTorchDecode/set=imagenet/batch=256/size=500x375-16 256 9000 images/s 1687.5 MP/s

(iterations: the batch; MP/s the megapixels decoded a second, from the
files' size, which must be one per set; -N the CPU count).

--pipeline also times the fused pipeline DALI's published Hopper figure
measures (a reference only, never a same-run peer): decode on the GPU,
then RandomResizedCrop to --crop² (scale 0.08 to 1, ratio 3/4 to 4/3,
bilinear with antialias) and normalisation (ImageNet's mean and std) as
float32, all on the GPU, with --threads CPU threads for torch
(torch.set_num_threads), stated in the lines:

  BenchmarkTorchDecodePipeline/set=imagenet/batch=256/crop=224/threads=16-16 256 5000 images/s

--device cpu runs the same code on the CPU (decode_jpeg to the CPU, the
crops there): for the tests only, never a GPU figure (the lines say
torch-device: cpu, and headspace cuda goals reads no such line).
--check prints the configuration lines and exits. Errors go to stderr
with exit 1 (exit 2 for bad arguments).

Usage:

  decode.py --set NAME=DIR [--set NAME=DIR ...] [--device cuda|cpu]
            [--batch 256] [--batches 20] [--pipeline] [--crop 224]
            [--threads N] [--seed 1] [--check]
"""

import argparse
import os
import platform
import re
import struct
import sys
import time

import torch
import torchvision
import torchvision.transforms as T
import torchvision.transforms.functional as F
from torchvision.io import ImageReadMode, decode_jpeg, read_file

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def named_set(s):
    name, sep, path = s.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z0-9._-]+", name) or not path:
        raise argparse.ArgumentTypeError(f"{s!r}: want NAME=DIR (NAME of letters, digits, . _ -)")
    return name, path


def jpeg_size(data, path):
    """The width and height in a JPEG's first SOF marker."""
    b = bytes(data)
    i = 2
    if b[:2] != b"\xff\xd8":
        raise SystemExit(f"decode.py: {path}: not a JPEG file (no SOI marker)")
    while i + 4 <= len(b):
        if b[i] != 0xFF:
            i += 1
            continue
        marker = b[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            i += 2 if marker != 0xFF else 1
            continue
        length = struct.unpack(">H", b[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", b[i + 5:i + 9])
            return w, h
        i += 2 + length
    raise SystemExit(f"decode.py: {path}: no frame header (SOF) in the JPEG")


def read_set(name, folder):
    """The set's files as uint8 tensors, and their one size."""
    try:
        names = sorted(f for f in os.listdir(folder) if f.lower().endswith((".jpg", ".jpeg")))
    except OSError as e:
        raise SystemExit(f"decode.py: --set {name}: {e}")
    if not names:
        raise SystemExit(f"decode.py: --set {name}: no *.jpg or *.jpeg in {folder}")
    files, size = [], None
    for n in names:
        path = os.path.join(folder, n)
        data = read_file(path)
        s = jpeg_size(data, path)
        if size is None:
            size = s
        elif s != size:
            raise SystemExit(f"decode.py: --set {name}: {path} is {s[0]}x{s[1]}, the set's first file {size[0]}x{size[1]}: want one size")
        files.append(data)
    return files, size


def batches(files, batch):
    """Endless batches of batch files, cycling."""
    i = 0
    while True:
        out = []
        for _ in range(batch):
            out.append(files[i % len(files)])
            i += 1
        yield out


def batched_api(version):
    """Whether torchvision version decodes a list in one call (0.19 on)."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (0, 19)


class Decoder:
    """decode_jpeg to device: one call for a list where torchvision has
    it (api batched), one call a file where not (api single)."""

    def __init__(self, device):
        self.device = device
        self.api = "batched" if device.type == "cuda" and batched_api(torchvision.__version__) else "single"

    def __call__(self, batch):
        dev = self.device.type
        if self.api == "batched":
            return decode_jpeg(batch, mode=ImageReadMode.RGB, device=dev)
        return [decode_jpeg(b, mode=ImageReadMode.RGB, device=dev) for b in batch]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def crop_normalise(images, crop, device):
    """RandomResizedCrop to crop² and ImageNet's normalisation, as float32
    on device: the fused pipeline's step after the decode."""
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    out = []
    for img in images:
        top, left, h, w = T.RandomResizedCrop.get_params(img, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3))
        out.append(F.resized_crop(img, top, left, h, w, [crop, crop], antialias=True))
    x = torch.stack(out).float().div_(255)
    return x.sub_(mean).div_(std)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--set", dest="sets", type=named_set, action="append", required=True, help="NAME=DIR: a folder of JPEG files of one size (repeat for more sets)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="where the files decode (cpu: for tests, never a GPU figure)")
    p.add_argument("--batch", type=int, default=256, help="files per batch")
    p.add_argument("--batches", type=int, default=20, help="timed batches per set (one more is run first, untimed)")
    p.add_argument("--pipeline", action="store_true", help="also time the fused decode + RandomResizedCrop + normalise on the device")
    p.add_argument("--crop", type=int, default=224, help="the fused pipeline's crop side")
    p.add_argument("--threads", type=int, default=0, help="torch's CPU threads (torch.set_num_threads; default: the CPU count)")
    p.add_argument("--seed", type=int, default=1, help="seed of the crops")
    p.add_argument("--check", action="store_true", help="print the configuration lines and exit")
    a = p.parse_args(argv)
    for name in ("batch", "batches", "crop"):
        if getattr(a, name) <= 0:
            p.error(f"--{name} {getattr(a, name)} must be positive")
    if a.threads < 0:
        p.error(f"--threads {a.threads} must not be negative")
    seen = set()
    for name, _ in a.sets:
        if name in seen:
            p.error(f"--set {name}: named twice")
        seen.add(name)
    if a.device == "cuda" and not a.check and not torch.cuda.is_available():
        print("decode.py: --device cuda: torch sees no CUDA device (use --device cpu for a test)", file=sys.stderr)
        return 1
    threads = a.threads or (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    device = torch.device("cuda:0" if a.device == "cuda" else "cpu")
    dec = Decoder(device)

    cfg = []
    if os.environ.get("HEADSPACE_COMMIT"):
        cfg.append(("commit", os.environ["HEADSPACE_COMMIT"]))
    cfg += [
        ("python", platform.python_version()),
        ("torch", torch.__version__),
        ("torchvision", torchvision.__version__),
        ("torch-device", a.device),
        ("decode-api", dec.api),
        ("cpu-threads", str(torch.get_num_threads())),
    ]
    if a.device == "cuda" and torch.cuda.is_available():
        cfg.append(("gpu", torch.cuda.get_device_name(device)))
    if a.pipeline:
        cfg += [("pipeline-crop", str(a.crop)), ("pipeline-scale", "0.08-1"), ("pipeline-antialias", "true"), ("pipeline-normalise", "imagenet")]
    for k, v in cfg:
        print(f"{k}: {v}")
    sys.stdout.flush()
    if a.check:
        return 0
    procs = os.cpu_count() or 1
    suffix = f"-{procs}" if procs != 1 else ""
    torch.manual_seed(a.seed)
    for name, folder in a.sets:
        files, (w, h) = read_set(name, folder)
        print(f"jpegs-{name}: {len(files)} files at {w}x{h} in {os.path.basename(os.path.normpath(folder))}")
        mp = w * h / 1e6
        gen = batches(files, a.batch)
        api = "" if dec.api == "batched" else "/api=single"
        for i in range(a.batches + 1):
            b = next(gen)
            sync(device)
            t0 = time.perf_counter()
            out = dec(b)
            sync(device)
            dt = time.perf_counter() - t0
            if len(out) != a.batch or tuple(out[0].shape) != (3, h, w):
                print(f"decode.py: --set {name}: decoded {len(out)} images of {tuple(out[0].shape)}, want {a.batch} of (3, {h}, {w})", file=sys.stderr)
                return 1
            if i == 0:
                continue
            print(f"BenchmarkTorchDecode/set={name}/batch={a.batch}/size={w}x{h}{api}{suffix} {a.batch} "
                  f"{a.batch / dt:.1f} images/s {a.batch * mp / dt:.4f} MP/s")
            sys.stdout.flush()
        if not a.pipeline:
            continue
        for i in range(a.batches + 1):
            b = next(gen)
            sync(device)
            t0 = time.perf_counter()
            x = crop_normalise(dec(b), a.crop, device)
            sync(device)
            dt = time.perf_counter() - t0
            if tuple(x.shape) != (a.batch, 3, a.crop, a.crop) or not torch.isfinite(x).all():
                print(f"decode.py: --set {name}: the pipeline gave {tuple(x.shape)}, want ({a.batch}, 3, {a.crop}, {a.crop}), finite", file=sys.stderr)
                return 1
            if i == 0:
                continue
            print(f"BenchmarkTorchDecodePipeline/set={name}/batch={a.batch}/crop={a.crop}/threads={threads}{api}{suffix} {a.batch} "
                  f"{a.batch / dt:.1f} images/s")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
