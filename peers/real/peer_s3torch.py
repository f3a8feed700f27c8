"""s3torchconnector (AWS's S3 connector for PyTorch) on the same images in a
bucket: --kind=map is S3MapDataset.from_prefix (one GET an image, indexed
by the listing) in a DataLoader with worker processes; --kind=iterable is
S3IterableDataset.from_prefix(enable_sharding=True), the objects split
across the DataLoader's workers and streamed in listing order, as its
documentation sets both up for training. Each object is decoded with
torchvision.io.decode_jpeg, then cropped, converted and scaled as every
peer does (torchsample). The endpoint, region and credentials come from
AWS_ENDPOINT_URL, AWS_REGION and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY;
addressing is path-style (a local server)."""

import os
import sys
import zlib

import torch
from torchvision.io import ImageReadMode, decode_jpeg
from torchvision.transforms.v2 import functional as F

import common
import torchsample


class Transform:
    """Picklable: an object (S3Reader) to its transformed crop, the crop
    window drawn from the object's key (the reader knows no index)."""

    def __init__(self, crop, seed):
        self.crop, self.seed = crop, seed

    def __call__(self, reader):
        data = torch.frombuffer(bytearray(reader.read()), dtype=torch.uint8)
        img = decode_jpeg(data, mode=ImageReadMode.RGB)
        _, h, w = img.shape
        top, left = common.crop_origin(self.seed, zlib.crc32(reader.key.encode()), h, w, self.crop)
        x = F.crop(img, top, left, self.crop, self.crop).reshape(3, -1).to(torch.float32)
        return torch.addmm(torchsample._OFF, torchsample._M, x).view(3, self.crop, self.crop)


def main(argv):
    kind = "map"
    if argv and argv[0].startswith("--kind="):
        kind, argv = argv[0].split("=", 1)[1], argv[1:]
    if kind not in ("map", "iterable"):
        raise SystemExit(f"--kind={kind}: want map or iterable")
    name = "s3map" if kind == "map" else "s3iter"
    a = common.parse_args(argv, "peer_s3torch.py")
    import s3torchconnector
    from s3torchconnector import S3ClientConfig, S3IterableDataset, S3MapDataset
    settings = {"dataset": "S3MapDataset.from_prefix" if kind == "map" else "S3IterableDataset.from_prefix(enable_sharding=True)",
                "num_workers": a.workers, "prefetch_factor": 2, "force_path_style": True,
                "decode": "torchvision.io.decode_jpeg"}
    versions = dict(torchsample.versions(), s3torchconnector=s3torchconnector.__version__)

    def start():
        region = os.environ.get("AWS_REGION", "us-east-1")
        endpoint = os.environ.get("AWS_ENDPOINT_URL")
        cfg = S3ClientConfig(force_path_style=True)
        prefix = a.data if a.data.endswith("/") else a.data + "/"
        tr = Transform(a.crop, a.seed)
        if kind == "map":
            ds = S3MapDataset.from_prefix(prefix, region=region, endpoint=endpoint, transform=tr, s3client_config=cfg)
            n = a.batch * a.batches
            if len(ds) < n:
                raise SystemExit(f"{prefix}: {len(ds)} objects, want {n}")
            ds = torch.utils.data.Subset(ds, range(n))
        else:
            ds = S3IterableDataset.from_prefix(prefix, region=region, endpoint=endpoint, transform=tr,
                                               s3client_config=cfg, enable_sharding=True)
        dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.workers, prefetch_factor=2,
                                         pin_memory=False, multiprocessing_context="fork")
        it = iter(dl)

        def batches():
            for _ in range(a.batches):
                yield next(it)

        def close():
            it._shutdown_workers()
        return batches(), close

    common.run(name, a, versions, settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
