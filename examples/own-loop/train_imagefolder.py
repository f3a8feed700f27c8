"""A plain PyTorch training script on a torchvision ImageFolder: the
worked example of docs/own-loop.md. Nothing in it knows about headspace.

    python3 train_imagefolder.py --data DIR [--make 512] [--workers 2] [--device cuda]

--make N first writes N random JPEGs (256x256, 4 classes) into DIR when it
is empty, so the example needs no download. --device cuda trains on the GPU
the way most scripts do: the model moved once, each batch copied from pinned
memory with non_blocking=True.
"""
import argparse
import os
import random

import torch
import torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def make(root, n, seed=1):
    rng = random.Random(seed)
    for i in range(n):
        d = os.path.join(root, "class%d" % (i % 4))
        os.makedirs(d, exist_ok=True)
        img = Image.effect_noise((256, 256), 64).convert("RGB")
        img = Image.blend(img, Image.new("RGB", (256, 256), tuple(rng.randrange(256) for _ in range(3))), 0.5)
        img.save(os.path.join(d, "%05d.jpg" % i), quality=90)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 4))

    def forward(self, x):
        return self.body(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--make", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    if a.make and not (os.path.isdir(a.data) and os.listdir(a.data)):
        make(a.data, a.make)
    torch.manual_seed(0)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(128),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]),
    ])
    train = DataLoader(datasets.ImageFolder(a.data, transform=tf), batch_size=a.batch,
                       shuffle=True, num_workers=a.workers, drop_last=True,
                       pin_memory=a.device.startswith("cuda"))
    device = torch.device(a.device)
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(a.epochs):
        for x, y in train:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        print("epoch %d loss %.3f" % (epoch, loss.item()))


if __name__ == "__main__":
    main()
