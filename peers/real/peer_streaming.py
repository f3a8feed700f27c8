"""Mosaic's Streaming (mosaicml-streaming) on the same images in a bucket,
in its own format: --prepare reads the ImageFolder's objects (s3images)
and writes them with Streaming's MDSWriter straight to the bucket beside
it (--data + ".mds": columns image (the JPEG's bytes), label, index; no
compression, its default 64 MB shard size limit); a run reads that with
StreamingDataset (remote = the bucket, local = a fresh cache directory,
removed at the end, so every run downloads) in a DataLoader of worker
processes, as Streaming's documentation sets it up for training:
batch_size given to the dataset (its partitioning), shuffle off (the job's
order is left to the loader), predownload at its default (8 × batch), the
DataLoader's prefetch_factor 2. Each sample is decoded with
torchvision.io.decode_jpeg, then cropped, converted and scaled as every
peer does (torchsample). The endpoint is S3_ENDPOINT_URL, as Streaming
documents for an S3-compatible store, set from AWS_ENDPOINT_URL; the
credentials are AWS_*."""

import atexit
import os
import shutil
import sys
import tempfile

import common
import s3images

SUFFIX = "mds"


def prepare(a):
    """Writes the first batch × batches images as MDS shards to the bucket."""
    from streaming import MDSWriter
    os.environ["S3_ENDPOINT_URL"] = s3images.endpoint()
    bucket, keys = s3images.keys(a.data)
    s3 = s3images.client()
    n = a.batch * a.batches
    out = s3images.format_url(a.data, SUFFIX)
    columns = {"image": "bytes", "label": "int", "index": "int"}
    classes = sorted({k.rsplit("/", 2)[-2] for k in keys})
    with MDSWriter(out=out, columns=columns, progress_bar=False, exist_ok=True) as w:
        for i in range(n):
            key = keys[i % len(keys)]
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            w.write({"image": body, "label": classes.index(key.rsplit("/", 2)[-2]), "index": i})
    print(f"streaming-prepared: {n} samples to {out}")


def main(argv):
    prep = "--prepare" in argv
    argv = [x for x in argv if x != "--prepare"]
    a = common.parse_args(argv, "peer_streaming.py")
    import streaming
    import torch
    import torchsample
    if prep:
        prepare(a)
        return
    settings = {"format": "MDS (MDSWriter: image bytes, label, index; no compression, 64 MB shards)",
                "dataset": "StreamingDataset(remote=s3, local=a fresh cache, batch_size, shuffle=False, predownload=8*batch)",
                "num_workers": a.workers, "prefetch_factor": 2, "endpoint": "S3_ENDPOINT_URL",
                "decode": "torchvision.io.decode_jpeg"}
    versions = dict(torchsample.versions(), streaming=streaming.__version__)

    class Images(streaming.StreamingDataset):
        def __getitem__(self, i):
            s = super().__getitem__(i)
            return torchsample.from_bytes(s["image"], int(s["index"]), a.crop, a.seed)

    def start():
        os.environ["S3_ENDPOINT_URL"] = s3images.endpoint()
        local = tempfile.mkdtemp(prefix="headspace-streaming-")
        atexit.register(shutil.rmtree, local, ignore_errors=True)  # a run that fails too
        ds = Images(remote=s3images.format_url(a.data, SUFFIX), local=local, batch_size=a.batch, shuffle=False)
        if len(ds) < a.batch * a.batches:
            raise SystemExit(f"{ds.remote}: {len(ds)} samples, want {a.batch * a.batches}")
        dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.workers, prefetch_factor=2,
                                         pin_memory=False, multiprocessing_context="fork")
        it = iter(dl)

        def batches():
            for _ in range(a.batches):
                yield next(it)

        def close():
            it._shutdown_workers()
            shutil.rmtree(local, ignore_errors=True)
        return batches(), close

    common.run("streaming", a, versions, settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
