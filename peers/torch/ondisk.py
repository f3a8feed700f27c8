"""Read a dataset written by `headspace dataset write`, as a torchvision pipeline would.

It also reads a dataset the user brings (an ImageFolder or WebDataset shards)
through the index headspace made of it (`headspace dataset index DIR`, or the
one `headspace peer --data DIR` saves and passes as index=): the same files,
the same labels and the same order as headspace's reader, images of another
size resized to the raw size with PIL's bilinear filter, as headspace does.

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
    def __init__(self, root, transform=None, index=None, raw_size=None):
        self.root = root
        self.transform = transform
        self.index = None
        self._files = {}
        if index is not None:
            self._open_index(index, raw_size)
            return
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

    def _open_index(self, path, raw_size):
        """A foreign dataset, by headspace's index (datasets/ondisk.Index)."""
        with open(path) as f:
            x = json.load(f)
        if x.get("version") != 1 or x.get("kind") not in ("imagefolder", "webdataset"):
            raise ValueError(f"{path}: not a headspace index (version {x.get('version')}, kind {x.get('kind')})")
        if os.path.abspath(self.root) != x["dir"]:
            raise ValueError(f"{path}: an index of {x['dir']}, not of {self.root}")
        if raw_size is None:
            raise ValueError("a foreign dataset needs raw_size=(width, height)")
        self.index = x
        self.count = len(x["samples"])
        self.width, self.height = raw_size
        self.format, self.layout = x["kind"], "shards" if x["kind"] == "webdataset" else "files"
        self.labels = [s["label"] for s in x["samples"]]
        self.locs = None

    def __len__(self):
        return self.count

    def fetch(self, i):
        """The encoded bytes of sample i."""
        if self.index is not None:
            s = self.index["samples"][i]
            name = self.index["files"][s["file"]]
            where = os.path.join(self.root, name)
            if s.get("error"):
                raise IOError(f"{where}: {s['error']}")
            if self.index["kind"] == "imagefolder":
                with open(where, "rb") as f:
                    return f.read()
            f = self._files.get(name)
            if f is None:
                f = self._files[name] = open(where, "rb")
            data = os.pread(f.fileno(), s["size"], s.get("offset", 0))
            if len(data) != s["size"]:
                raise IOError(f"{where} member {s['member']}: truncated: {len(data)} of {s['size']} bytes")
            return data
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
        if self.index is not None:
            img = Image.open(io.BytesIO(data)).convert("RGB")
            if img.size != (self.width, self.height):
                img = img.resize((self.width, self.height), Image.BILINEAR)
            return img
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

    # ondisk.py DIR [ROUNDS] [INDEX WIDTH HEIGHT]: a foreign dataset by its
    # index, read at WIDTHxHEIGHT.
    if len(sys.argv) > 3:
        ds = OnDiskDataset(sys.argv[1], index=sys.argv[3], raw_size=(int(sys.argv[4]), int(sys.argv[5])))
    else:
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
