"""The document's toy pipeline, written once for every Python peer.

This is the input pipeline of "A Caching Strategy for Identifying Bottlenecks
on the Data Input Pipeline" (document 003) as the document
writes it: a random raw image drawn with np.random.randint and wrapped with
Image.fromarray, a random label, and the transforms T.PILToTensor,
T.RandomCrop, RandomMask (ratio 0.25, 4-neighbour dilation with scipy's
convolve2d), ConvertColor (a 3x3 matmul plus an offset) and Scale. The
peers (dataloader.py, ladder.py) import it, so a change to the document's
code is made in one place. So are their parsers of image sizes (size, for
--raw-size) and worker counts (positive_ints, for --workers).

One departure from the document's text: its RandomMask and draw read the
globals img_size and input_img_size; here they are arguments (RandomMask's
size, draw's height and width), set from the peers' command lines.
"""

import argparse

import numpy as np
import torch
import torchvision.transforms as T
from PIL import Image
from scipy.signal import convolve2d

# The document's number of classes is not given; headspace's synthetic
# dataset (datasets.DefaultSynthetic) and the Net's last layer use 10.
NUM_CLASSES = 10


def draw(height, width):
    """The document's FakeDataset.__getitem__ before its transforms: a random
    raw image (1024x1024 in the document) and a random label."""
    # create a random 1024x1024 image
    img = Image.fromarray(
        np.random.randint(low=0, high=256, size=(height, width, 3), dtype=np.uint8)
    )
    # create a random label
    target = np.random.randint(low=0, high=NUM_CLASSES, dtype=np.uint8).item()
    return img, target


class RandomMask(torch.nn.Module):
    def __init__(self, size, ratio=0.25):
        super().__init__()
        self.ratio = ratio
        self.size = size  # the document's img_size, the crop's side

    def dilate_mask(self, mask):
        # perform 4 neighbor dilation on mask
        dilated = convolve2d(
            mask, [[0, 1, 0], [1, 1, 1], [0, 1, 0]], mode="same"
        ).astype(bool)
        return dilated

    def forward(self, img):
        mask = np.random.uniform(size=(self.size, self.size)) < self.ratio
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


def make_transform(img_size):
    """The document's transform: crop to img_size, mask, convert, scale."""
    return T.Compose(
        [T.PILToTensor(), T.RandomCrop(img_size), RandomMask(img_size), ConvertColor(), Scale()]
    )


def size(s):
    """The peers' --raw-size: an image size "N" or "WxH", as (width, height)."""
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


def positive_ints(s):
    """The peers' --workers: comma-separated positive whole numbers."""
    out = []
    for f in s.split(","):
        f = f.strip()
        try:
            n = int(f)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{f!r} is not a whole number")
        if n <= 0:
            raise argparse.ArgumentTypeError(f"{n} must be positive")
        out.append(n)
    return out
