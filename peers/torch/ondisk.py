"""Read a dataset written by `headspace dataset write`, as a torchvision pipeline would.

The dataset directory holds manifest.json and either one file per sample
(<key>.rgb|png|jpg, labels in the manifest) or WebDataset tar shards
(<key>.<ext> and <key>.cls members). OnDiskDataset returns (PIL image, label)
pairs, decoding PNG and JPEG with PIL (libjpeg-turbo / zlib, as a user's
torchvision ImageFolder or webdataset pipeline does) and wrapping raw RGB
bytes with Image.frombuffer. Shards are indexed once with tarfile (each
member's data offset) and read by offset, one open file per shard per
process, so DataLoader worker processes fetch concurrently.

Index i reads sample i % count: a run may ask for more samples than the
dataset holds, as headspace's loader cycles through its dataset.

It needs only the standard library and PIL, so it can be used (and tested)
without torch.
"""

import io
import json
import os
import tarfile

from PIL import Image

EXT = {"raw": "rgb", "png": "png", "jpeg": "jpg"}


class OnDiskDataset:
    def __init__(self, root, transform=None):
        self.root = root
        self.transform = transform
        with open(os.path.join(root, "manifest.json")) as f:
            m = json.load(f)
        if m.get("version") != 1:
            raise ValueError(f"{root}/manifest.json: format version {m.get('version')}, want 1")
        self.m = m
        self.count, self.width, self.height = m["count"], m["width"], m["height"]
        self.format, self.layout = m["format"], m["layout"]
        self.labels = m["labels"]
        self.ext = EXT[self.format]
        self.width_key = max(len(str(self.count - 1)), 6)
        self.locs = None
        if self.layout == "shards":
            # sample -> (shard name, data offset, size), from the tar headers
            self.locs = [None] * self.count
            for f in m["files"]:
                with tarfile.open(os.path.join(root, f["name"])) as tf:
                    for mem in tf.getmembers():
                        key, _, ext = mem.name.partition(".")
                        if ext == self.ext and key.isdigit() and int(key) < self.count:
                            self.locs[int(key)] = (f["name"], mem.offset_data, mem.size)
            missing = [i for i, l in enumerate(self.locs) if l is None]
            if missing:
                raise ValueError(f"{root}: no shard member for sample {missing[0]} ({len(missing)} missing)")
        self._files = {}  # shard name -> open file, per process

    def __len__(self):
        return self.count

    def fetch(self, i):
        """The encoded bytes of sample i."""
        if self.locs is None:
            name = f"{i:0{self.width_key}d}.{self.ext}"
            with open(os.path.join(self.root, name), "rb") as f:
                return f.read()
        name, off, size = self.locs[i]
        f = self._files.get(name)
        if f is None:
            f = self._files[name] = open(os.path.join(self.root, name), "rb")
        data = os.pread(f.fileno(), size, off)
        if len(data) != size:
            raise IOError(f"{self.root}/{name} member {i:0{self.width_key}d}.{self.ext}: truncated: {len(data)} of {size} bytes")
        return data

    def decode(self, data):
        if self.format == "raw":
            return Image.frombuffer("RGB", (self.width, self.height), data, "raw", "RGB", 0, 1)
        img = Image.open(io.BytesIO(data))
        return img.convert("RGB")

    def __getitem__(self, index):
        i = index % self.count
        img = self.decode(self.fetch(i))
        if self.transform is not None:
            img = self.transform(img)
        return img, self.labels[i]

    def __getstate__(self):
        # Open files do not cross into worker processes; each reopens.
        s = self.__dict__.copy()
        s["_files"] = {}
        return s


if __name__ == "__main__":
    # ondisk.py DIR [ROUNDS]: fetch and decode every sample ROUNDS times (1),
    # checking each image's size, and print the mean time per sample of
    # each stage (warm page cache after the first round).
    import sys
    import time

    ds = OnDiskDataset(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    tf = td = 0.0
    for _ in range(rounds):
        for k in range(len(ds)):
            t0 = time.perf_counter()
            data = ds.fetch(k)
            t1 = time.perf_counter()
            img = ds.decode(data)
            img.load()
            t2 = time.perf_counter()
            assert img.size == (ds.width, ds.height), (k, img.size)
            tf, td = tf + t1 - t0, td + t2 - t1
    n = rounds * len(ds)
    print(f"{len(ds)} samples: fetch {tf / n * 1e3:.3f} ms/sample, decode {td / n * 1e3:.3f} ms/sample (PIL {Image.__version__}, {ds.format}, {ds.layout})")
