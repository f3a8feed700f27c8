"""A torchvision-style training script whose stages' truth is known: a
DatasetFolder over small files whose .loader sleeps --load-ms and whose
.transform sleeps --transform-ms, a step that sleeps --step-ms. --root is
where the files are made (the test's temporary directory). --remake makes
the DataLoader anew each epoch over the same dataset."""
import argparse
import os
import time

import torch
from torch.utils.data import DataLoader
from torchvision.datasets import DatasetFolder


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--load-ms", type=float, default=5)
    p.add_argument("--transform-ms", type=float, default=1)
    p.add_argument("--step-ms", type=float, default=2)
    p.add_argument("--files", type=int, default=64)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--remake", action="store_true", help="make the DataLoader anew each epoch, over the same dataset")
    a = p.parse_args()
    for c in ("a", "b"):
        os.makedirs(os.path.join(a.root, c), exist_ok=True)
        for i in range(a.files // 2):
            path = os.path.join(a.root, c, "%d.txt" % i)
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.write("%d\n" % i)

    def loader(path):
        time.sleep(a.load_ms / 1000)
        with open(path) as f:
            return float(f.read())

    def transform(x):
        time.sleep(a.transform_ms / 1000)
        return torch.full((4,), x)

    ds = DatasetFolder(a.root, loader=loader, extensions=(".txt",), transform=transform)
    train = DataLoader(ds, batch_size=4, num_workers=2, shuffle=True)
    for _ in range(a.epochs):
        if a.remake:  # a new DataLoader each epoch, over the same dataset
            train = DataLoader(ds, batch_size=4, num_workers=2, shuffle=True)
        for x, y in train:
            time.sleep(a.step_ms / 1000)


if __name__ == "__main__":
    main()
