"""One sample as a PyTorch user writes it with torchvision 2: read the file,
torchvision.io.decode_jpeg (libjpeg-turbo) to a uint8 3×H×W tensor, the
random crop (torchvision.transforms.v2.functional.crop at common.crop_origin),
then the colour conversion and the scale as one matrix product on the
crop's float32 pixels. peer_torch2 and peer_nodes use it."""

import torch
import torchvision
from torchvision.io import decode_jpeg, read_file, ImageReadMode
from torchvision.transforms.v2 import functional as F

import common

_M = torch.tensor(common.COLOR_MATRIX, dtype=torch.float32) / common.SCALE_DIVISOR
_OFF = (torch.tensor(common.COLOR_OFFSET, dtype=torch.float32) / common.SCALE_DIVISOR).unsqueeze(1)


def versions():
    return {"torch": torch.__version__, "torchvision": torchvision.__version__}


class Sample:
    """Picklable: (path, label) items, crop side and seed; sample(i) is the
    transformed crop of item i, float32 3×crop×crop, and its label."""

    def __init__(self, items, crop, seed):
        self.items, self.crop, self.seed = items, crop, seed

    def __len__(self):
        return len(self.items)

    def __call__(self, i):
        path, label = self.items[i]
        img = decode_jpeg(read_file(path), mode=ImageReadMode.RGB)
        _, h, w = img.shape
        top, left = common.crop_origin(self.seed, i, h, w, self.crop)
        x = F.crop(img, top, left, self.crop, self.crop).reshape(3, -1).to(torch.float32)
        y = torch.addmm(_OFF, _M, x)
        return y.view(3, self.crop, self.crop), label

    __getitem__ = __call__


class Batch:
    """Picklable: the collated batch of a list of indices of sample, as
    torchdata.nodes' migration guide maps a map-style dataset (Batcher of
    indices, then ParallelMapper of the batch's samples and the collate)."""

    def __init__(self, sample):
        self.sample = sample

    def __call__(self, indices):
        return torch.utils.data.default_collate([self.sample(i) for i in indices])


def from_bytes(buf, i, crop, seed):
    """Sample i from its JPEG's bytes (the bucket peers' formats hold
    them): the same decode, crop, conversion and scale as Sample."""
    img = decode_jpeg(torch.frombuffer(bytearray(buf), dtype=torch.uint8), mode=ImageReadMode.RGB)
    _, h, w = img.shape
    top, left = common.crop_origin(seed, i, h, w, crop)
    x = F.crop(img, top, left, crop, crop).reshape(3, -1).to(torch.float32)
    return torch.addmm(_OFF, _M, x).view(3, crop, crop)
