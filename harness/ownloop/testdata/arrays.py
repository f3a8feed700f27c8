"""A CIFAR10-style training script whose stages' truth is known: the
dataset holds its samples in memory and has a .transform but no .loader;
its __getitem__ reads a sample (sleeping --fetch-ms, standing for a read
and decode) and hands it to self.transform (sleeping --transform-ms), as
torchvision's CIFAR10 and MNIST do; a step sleeps --step-ms. Each step
checks the batch's shape and that the targets are the samples' own.
--returns picks what __getitem__ returns: "pair" (sample, target), as
CIFAR10 does; "views" two transformed views and the target (the
.transform called twice); "changed" the transform's output changed
after it (level raw cannot replay it)."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Arrays(Dataset):
    def __init__(self, n, fetch_ms, transform, returns):
        self.data = torch.arange(n, dtype=torch.float32).repeat(4, 1).t().contiguous()
        self.targets = list(range(n))
        self.fetch_ms, self.transform, self.returns = fetch_ms, transform, returns

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        time.sleep(self.fetch_ms / 1000)
        img, target = self.data[i].clone(), self.targets[i]
        if self.returns == "views":
            return self.transform(img), self.transform(img), target
        x = self.transform(img)
        if self.returns == "changed":
            return x * 1, target
        return x, target


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fetch-ms", type=float, default=12)
    p.add_argument("--transform-ms", type=float, default=3)
    p.add_argument("--step-ms", type=float, default=2)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--returns", default="pair", choices=("pair", "views", "changed"))
    p.add_argument("--samples", type=int, default=4096)
    a = p.parse_args()

    def transform(x):
        time.sleep(a.transform_ms / 1000)
        return x + torch.rand(4) * 0.01  # an augmentation: drawn anew each call

    train = DataLoader(Arrays(a.samples, a.fetch_ms, transform, a.returns), batch_size=4, num_workers=a.workers, shuffle=True)
    for _ in range(100):
        for batch in train:
            x, y = batch[0], batch[-1]
            if x.shape != (4, 4) or y.shape != (4,):
                raise SystemExit("batch of shapes %s, %s: want (4, 4) and (4,)" % (tuple(x.shape), tuple(y.shape)))
            if (x[:, 0] - y.float()).abs().max() > 0.02:
                raise SystemExit("samples %s with targets %s: a target that is not its sample's" % (x[:, 0].tolist(), y.tolist()))
            time.sleep(a.step_ms / 1000)


if __name__ == "__main__":
    main()
