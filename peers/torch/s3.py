#!/usr/bin/python3
"""The boto3 peer: what a PyTorch user writes to train from a bucket.

Two datasets, as users write them, over the same S3-compatible server and the
same emulated link as headspace's loader (harness/peer's RemoteSweep
starts both and points AWS_ENDPOINT_URL at the link):

  --layout imagefolder  a map-style torch Dataset over one object per image
                        (<prefix>/<class>/<name>.jpg, the first path element
                        the class, classes sorted as torchvision's
                        ImageFolder numbers them): __getitem__ is one
                        get_object, decoded with PIL;
  --layout shards       WebDataset-style streaming: an IterableDataset over
                        the prefix's .tar shards, each streamed with one
                        get_object and parsed as it arrives (tarfile's stream
                        mode "r|"), <key>.<jpg|png> with <key>.cls; shards
                        split across the DataLoader's workers (worker k takes
                        shards k, k+N, ...).

Either goes through the document's transforms (document.make_transform: PIL
to tensor, random crop, mask, colour, scale) and a torch DataLoader with
--workers worker processes, as peers/torch/dataloader.py does. Each worker
makes its own boto3 client (clients do not cross fork). The endpoint,
credentials and region come from the environment (AWS_ENDPOINT_URL_S3 or
AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
default us-east-1), addressed path-style as a local server needs.

One run reads the dataset once: imagefolder images i % count for
batches*batch samples; shards every shard once (each worker's last batch
may be short). It prints "key: value" configuration lines and one Go
benchmark-format line per worker count, with dataloader.py's definitions
(ttfb-ns from creating the iterator to the first batch; samples/s: the
samples after the first batch over the time from it to the last; cpu-s of
this process and its workers):

  BenchmarkPeerRemote/layout=shards/impl=torch/workers=4 6 1.2e+09 ttfb-ns 80.1 samples/s 9.3 cpu-s

Errors are one line on stderr, exit status 2 (bad input, an unreachable
endpoint, refused credentials, a missing bucket) or 1.

Usage:

  s3.py --data s3://BUCKET/PREFIX --layout imagefolder|shards
        [--raw-size 256] [--crop 128] [--batch 32] [--batches 6]
        [--workers 1,4] [--seed 1] [--check]
"""

import argparse
import io
import os
import platform
import random
import resource
import sys
import tarfile
import time
import urllib.parse

import boto3  # first: without it, --check says "No module named 'boto3'"
import botocore
from botocore.config import Config as BotoConfig
import numpy as np
import PIL
from PIL import Image
import scipy
import torch
import torchvision

import document  # the document's transforms (document.py)

# DataLoader's default; our loader's Prefetch is the same 2.
PREFETCH_FACTOR = 2
IMAGE_EXTS = (".jpg", ".jpeg", ".png")


def client(attempts=5):
    """A boto3 S3 client from the environment, path-style, retrying each
    request up to attempts times in all (botocore's standard mode: resets,
    throttling such as 503 SlowDown, 5xx)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
    cfg = BotoConfig(
        s3={"addressing_style": "path"},
        connect_timeout=5,
        read_timeout=60,
        retries={"max_attempts": attempts, "mode": "standard"},
        max_pool_connections=10,
    )
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name=os.environ.get("AWS_REGION") or "us-east-1", config=cfg
    )


def parse_url(s):
    if not s.startswith("s3://"):
        raise argparse.ArgumentTypeError(f"{s!r}: want s3://BUCKET/PREFIX")
    bucket, _, prefix = s[len("s3://"):].partition("/")
    if not bucket:
        raise argparse.ArgumentTypeError(f"{s!r}: no bucket")
    prefix = prefix.strip("/")
    return bucket, prefix + "/" if prefix else ""


def list_objects(bucket, prefix):
    """[(key, size)] under prefix, in key order. Two attempts: an endpoint
    that cannot be reached is said within seconds."""
    out = []
    for page in client(attempts=2).get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out += [(o["Key"], o["Size"]) for o in page.get("Contents", [])]
    return sorted(out)


def decode(data, size):
    """PIL decodes; an image of another size is resized as headspace resizes."""
    img = Image.open(io.BytesIO(data)).convert("RGB")
    if img.size != size:
        img = img.resize(size, Image.BILINEAR)
    return img


class S3ImageFolder(torch.utils.data.Dataset):
    """One object per image, one get_object per sample; cycled to length."""

    def __init__(self, bucket, prefix, objects, transform, size, length):
        keys = [k for k, _ in objects if k.lower().endswith(IMAGE_EXTS) and "/" in k[len(prefix):]]
        if not keys:
            raise ValueError(f"s3://{bucket}/{prefix}: no images under class folders")
        classes = sorted({k[len(prefix):].split("/", 1)[0] for k in keys})
        index = {c: i for i, c in enumerate(classes)}
        self.samples = [(k, index[k[len(prefix):].split("/", 1)[0]]) for k in keys]
        self.bucket, self.transform, self.size, self.length = bucket, transform, size, length
        self.s3 = None

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        if self.s3 is None:
            self.s3 = client()
        key, label = self.samples[i % len(self.samples)]
        data = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return self.transform(decode(data, self.size)), label

    def __getstate__(self):
        s = self.__dict__.copy()
        s["s3"] = None
        return s


class S3TarShards(torch.utils.data.IterableDataset):
    """WebDataset-style: each shard streamed with one GET, parsed as it arrives."""

    def __init__(self, bucket, objects, transform, size):
        self.shards = [k for k, _ in objects if k.endswith(".tar")]
        if not self.shards:
            raise ValueError(f"s3://{bucket}: no .tar shards under the prefix")
        self.bucket, self.transform, self.size = bucket, transform, size

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        k, n = (info.id, info.num_workers) if info is not None else (0, 1)
        s3 = client()
        for shard in self.shards[k::n]:
            body = s3.get_object(Bucket=self.bucket, Key=shard)["Body"]
            key, img, label = None, None, None
            with tarfile.open(fileobj=body, mode="r|") as tf:
                for m in tf:
                    if not m.isfile():
                        continue
                    base, _, ext = m.name.rpartition("/")[2].partition(".")
                    if base != key:
                        key, img, label = base, None, None
                    data = tf.extractfile(m).read()
                    if ("." + ext.lower()) in IMAGE_EXTS:
                        img = data
                    elif ext == "cls":
                        label = int(data)
                    if img is not None and label is not None:
                        yield self.transform(decode(img, self.size)), label
                        key, img, label = None, None, None


def cpu_seconds():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def measure(dataset, workers, batch):
    """One run: (batches, ttfb s, samples/s, cpu s)."""
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=batch, num_workers=workers, pin_memory=False,
        prefetch_factor=PREFETCH_FACTOR if workers > 0 else None,
    )
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    it = iter(loader)
    first_batch = next(it)
    first = time.perf_counter()
    batches, after = 1, 0
    del first_batch
    last = first
    for b in it:
        batches += 1
        after += len(b[1])
        last = time.perf_counter()
        del b
    if hasattr(it, "_shutdown_workers"):  # wait for the workers, so their CPU is counted
        it._shutdown_workers()
    del it
    cpu = cpu_seconds() - cpu0
    sps = after / (last - first) if last > first else 0.0
    return batches, first - start, sps, cpu


def fail(msg):
    print(f"s3.py: {msg}", file=sys.stderr)
    return 2


def explain(e, what):
    """One line for an S3 error: the endpoint, bucket or credentials."""
    if isinstance(e, botocore.exceptions.EndpointConnectionError):
        u = urllib.parse.urlsplit(e.kwargs.get("endpoint_url", ""))
        return f"{what}: cannot reach the endpoint {u.scheme}://{u.netloc}"
    if isinstance(e, botocore.exceptions.NoCredentialsError):
        return f"{what}: no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
    if isinstance(e, botocore.exceptions.ClientError):
        err = e.response.get("Error", {})
        return f"{what}: {err.get('Code', 'error')}: {err.get('Message', '')}".rstrip(": ")
    return f"{what}: {type(e).__name__}: {e}"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=parse_url, help="s3://BUCKET/PREFIX")
    p.add_argument("--layout", choices=("imagefolder", "shards"), help="one object per image, or tar shards streamed")
    p.add_argument("--raw-size", type=document.size, default=(256, 256), help="image size, N or WxH (others are resized to it)")
    p.add_argument("--crop", type=int, default=128, help="random crop side")
    p.add_argument("--batch", type=int, default=32, help="samples per batch")
    p.add_argument("--batches", type=int, default=6, help="imagefolder: batches per run, at least 2")
    p.add_argument("--workers", type=document.positive_ints, default=[1], help="comma-separated worker counts")
    p.add_argument("--seed", type=int, default=1, help="seed of torch, numpy and random")
    p.add_argument("--check", action="store_true", help="print the configuration lines and exit: the imports work")
    a = p.parse_args(argv)
    (w, h) = a.raw_size
    if a.crop <= 0 or a.crop > w or a.crop > h:
        p.error(f"--crop {a.crop} must be positive and fit the {w}x{h} image")
    if a.batch <= 0 or a.batches < 2:
        p.error("--batch must be positive and --batches at least 2")
    cfg = [
        ("python", platform.python_version()),
        ("torch", torch.__version__),
        ("torchvision", torchvision.__version__),
        ("numpy", np.__version__),
        ("scipy", scipy.__version__),
        ("pillow", PIL.__version__),
        ("boto3", boto3.__version__),
        ("botocore", botocore.__version__),
        ("start-method", torch.multiprocessing.get_start_method()),
        ("prefetch-factor", str(PREFETCH_FACTOR)),
    ]
    if a.check:
        for k, v in cfg:
            print(f"{k}: {v}")
        return 0
    if a.data is None or a.layout is None:
        p.error("--data s3://BUCKET/PREFIX and --layout are required")
    bucket, prefix = a.data
    where = f"s3://{bucket}/{prefix}"
    try:
        objects = list_objects(bucket, prefix)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        return fail(explain(e, f"list {where}"))
    if not objects:
        return fail(f"{where}: no objects")
    tf = document.make_transform(a.crop)
    try:
        if a.layout == "imagefolder":
            ds = S3ImageFolder(bucket, prefix, objects, tf, (w, h), a.batches * a.batch)
        else:
            ds = S3TarShards(bucket, objects, tf, (w, h))
    except ValueError as e:
        return fail(str(e))
    cfg += [("peer-objects", str(len(objects))), ("peer-bytes", str(sum(s for _, s in objects)))]
    for k, v in cfg:
        print(f"{k}: {v}")
    sys.stdout.flush()
    for workers in a.workers:
        torch.manual_seed(a.seed)
        np.random.seed(a.seed % 2**32)
        random.seed(a.seed)
        try:
            batches, ttfb, sps, cpu = measure(ds, workers, a.batch)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            return fail(explain(e, f"{where} (workers={workers})"))
        except StopIteration:
            return fail(f"{where} (workers={workers}): no samples")
        except Exception as e:  # a worker's error comes back re-raised, often as RuntimeError
            lines = [l for l in str(e).strip().splitlines() if l.strip()] or [""]
            return fail(f"{where} (workers={workers}): {type(e).__name__}: {lines[-1].strip()}")
        if batches < 2:
            return fail(f"{where} (workers={workers}): {batches} batch; want at least 2 (more samples or a smaller --batch)")
        print(
            f"BenchmarkPeerRemote/layout={a.layout}/impl=torch/workers={workers} {batches} "
            f"{round(ttfb * 1e9)} ttfb-ns {sps:.2f} samples/s {cpu:.3f} cpu-s"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
