"""litdata (Lightning's streaming data) on the same images in a bucket, in
its own format: --prepare reads the ImageFolder's objects (s3images) and
writes them with litdata.optimize, uploaded to the bucket beside it (--data
+ ".litdata": items of image (the JPEG's bytes), label, index; 64 MB
chunks, no compression, one optimize worker, so that the chunks hold the
items in order); a run reads that
with litdata.StreamingDataset (a fresh cache directory, removed at the
end, so every run downloads; max_pre_download at its default 2) in
litdata's StreamingDataLoader of worker processes, prefetch_factor 2, as
its documentation sets both up. Each sample is decoded with
torchvision.io.decode_jpeg, then cropped, converted and scaled as every
peer does (torchsample). The endpoint goes in storage_options
(endpoint_url, as litdata documents for an S3-compatible store), from
AWS_ENDPOINT_URL; the credentials are AWS_*. optimize writes to a local
directory, uploaded with boto3.

litdata fetches chunks with obstore, whose S3Store it builds with client
options of its own (litdata.streaming.downloader._OBSTORE_CLIENT_OPTIONS),
which replace the ones obstore would read from the environment
(AWS_ALLOW_HTTP), and storage_options never reach them: obstore would
refuse the local server's http:// endpoint (reqwest's BadScheme). For an
http:// endpoint, allow_http() adds obstore's own allow_http to those
options, at import, so that worker processes have it too: the one change
to litdata as installed. Should a litdata without that variable meet an
http endpoint, the run stops with HTTP_REFUSED."""

import atexit
import os
import shutil
import sys
import tempfile

import common
import s3images

SUFFIX = "litdata"


def storage_options():
    return {"endpoint_url": s3images.endpoint(), "config": _path_style()}


def _path_style():
    from botocore.config import Config
    return Config(s3={"addressing_style": "path"})


# Why it could not run against the local server without allow_http(): it
# fetches chunks with obstore and passes obstore client options of its own,
# which replace the ones object_store reads from the environment
# (AWS_ALLOW_HTTP): obstore then refuses the http:// endpoint.
HTTP_REFUSED = ("litdata {}: cannot read a plain-http S3 endpoint such as the local server's: it fetches chunks "
                "with obstore and sets obstore's client options without allow_http (reqwest BadScheme); it needs https")


def allow_http():
    """Adds allow_http to the obstore client options litdata builds its
    S3Store with, for an http:// endpoint (see the notes above). Returns
    whether it did."""
    if not os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        return False
    try:
        from litdata.streaming import downloader
    except ImportError:
        return False  # --check reports the missing package
    opts = getattr(downloader, "_OBSTORE_CLIENT_OPTIONS", None)
    if not isinstance(opts, dict):
        return False
    opts["allow_http"] = True
    return True


ALLOW_HTTP = allow_http()
# What the file records: the rule (the --check that prints the settings
# runs before the bucket's endpoint is known).
ALLOW_HTTP_SETTING = "added to litdata's obstore client options when AWS_ENDPOINT_URL is http://"


class Item:
    """Picklable for optimize's workers: (bucket, key, label, index) to the
    stored item."""

    def __init__(self, bucket):
        self.bucket = bucket

    def __call__(self, item):
        key, label, index = item
        body = s3images.client().get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return {"image": body, "label": label, "index": index}


def prepare(a):
    """Writes the first batch × batches images as litdata chunks to the bucket."""
    import litdata
    bucket, keys = s3images.keys(a.data)
    n = a.batch * a.batches
    classes = sorted({k.rsplit("/", 2)[-2] for k in keys})
    items = [(keys[i % len(keys)], classes.index(keys[i % len(keys)].rsplit("/", 2)[-2]), i) for i in range(n)]
    out = s3images.format_url(a.data, SUFFIX)
    # optimize writes the chunks here, then they are uploaded with boto3:
    # litdata's own upload goes through obstore (HTTP_REFUSED).
    local = tempfile.mkdtemp(prefix="headspace-litdata-out-")
    try:
        # One optimize worker: with more, the merged index lists the
        # workers' chunks in the order the workers finished, so the
        # first batch was not always the first images, as every other
        # side's is.
        litdata.optimize(fn=Item(bucket), inputs=items, output_dir=local, chunk_bytes="64MB",
                         num_workers=1, verbose=False)
        dst_bucket, prefix = s3images.split(out)
        s3 = s3images.client()
        for name in sorted(os.listdir(local)):
            s3.upload_file(os.path.join(local, name), dst_bucket, prefix + name)
    finally:
        shutil.rmtree(local, ignore_errors=True)
    print(f"litdata-prepared: {n} samples to {out}")


def main(argv):
    prep = "--prepare" in argv
    argv = [x for x in argv if x != "--prepare"]
    a = common.parse_args(argv, "peer_litdata.py")
    import litdata
    import torch
    import torchsample
    if prep:
        prepare(a)
        return
    settings = {"format": "litdata chunks (optimize: image bytes, label, index; 64 MB chunks, no compression)",
                "dataset": "StreamingDataset(s3, a fresh cache_dir, storage_options endpoint_url, max_pre_download=2)",
                "obstore-allow-http": ALLOW_HTTP_SETTING,
                "loader": "StreamingDataLoader", "num_workers": a.workers, "prefetch_factor": 2,
                "decode": "torchvision.io.decode_jpeg"}
    versions = dict(torchsample.versions(), litdata=litdata.__version__)

    class Images(litdata.StreamingDataset):
        def __getitem__(self, i):
            s = super().__getitem__(i)
            return torchsample.from_bytes(s["image"], int(s["index"]), a.crop, a.seed)

    def start():
        cache = tempfile.mkdtemp(prefix="headspace-litdata-")
        atexit.register(shutil.rmtree, cache, ignore_errors=True)  # a run that fails too
        ds = Images(s3images.format_url(a.data, SUFFIX), cache_dir=cache, storage_options=storage_options())
        if len(ds) < a.batch * a.batches:
            raise SystemExit(f"{len(ds)} samples, want {a.batch * a.batches}")
        dl = litdata.StreamingDataLoader(ds, batch_size=a.batch, num_workers=a.workers, prefetch_factor=2,
                                         pin_memory=False)
        it = iter(dl)

        def batches():
            for _ in range(a.batches):
                try:
                    b = next(it)
                except Exception as e:
                    if "BadScheme" in str(e):
                        raise SystemExit(HTTP_REFUSED.format(litdata.__version__)) from None
                    raise
                yield b

        def close():
            inner = getattr(it, "_shutdown_workers", None)
            if inner:
                inner()
            shutil.rmtree(cache, ignore_errors=True)
        return batches(), close

    common.run("litdata", a, versions, settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
