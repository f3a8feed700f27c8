"""A timm training script as users write it: the loader from timm's
create_loader (its training transforms, and its PrefetchLoader, which
fetches the next batch ahead and normalises it on the device), a small
timm model and a plain loop on the CPU. The data are synthetic: a
map-style dataset of random RGB images made from the index, with the
.transform create_loader sets; __getitem__ sleeps --getitem-ms to stand
for reading the file. Nothing in it knows about headspace.

    python train_timm.py [--epochs 3] [--workers 0] [--getitem-ms 2]
"""
import argparse
import time

import numpy as np
import timm
import torch
import torch.nn as nn
from PIL import Image
from timm.data import create_loader
from torch.utils.data import Dataset


class Images(Dataset):
    def __init__(self, n, ms, side=80):
        self.n, self.ms, self.side = n, ms, side
        self.transform = None  # create_loader sets the training transforms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        rng = np.random.default_rng(i)
        img = Image.fromarray(rng.integers(0, 256, (self.side, self.side, 3), dtype=np.uint8))
        if self.transform is not None:
            img = self.transform(img)
        return img, i % 10


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=512)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--getitem-ms", type=float, default=2)
    a = p.parse_args()
    torch.manual_seed(0)
    loader = create_loader(Images(a.samples, a.getitem_ms), input_size=(3, 64, 64), batch_size=a.batch,
                           is_training=True, use_prefetcher=True, num_workers=a.workers,
                           device=torch.device("cpu"))
    model = timm.create_model("resnet10t", num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(a.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
