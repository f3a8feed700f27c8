"""A plain data-parallel PyTorch training script: the multi-rank worked
example of docs/own-loop.md. Each rank trains a DistributedDataParallel
copy of a small CNN on its part of a torchvision ImageFolder (a
DistributedSampler), on the CPU with the gloo backend. Nothing in it knows
about headspace.

    torchrun --nproc_per_node 2 train_ddp.py --data DIR [--make 512] [--workers 1]
    python3 train_ddp.py --spawn 2 --data DIR      # torch.multiprocessing.spawn
    srun --ntasks 2 python3 train_ddp.py --data DIR  # each task of srun a rank (SLURM_PROCID)

--make N first writes N random JPEGs (256x256, 4 classes) into DIR when it
is empty (train_imagefolder.py's make), so the example needs no download.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms

from train_imagefolder import Net, make


def train(rank, world, a):
    if not dist.is_initialized():
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(128),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]),
    ])
    ds = datasets.ImageFolder(a.data, transform=tf)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, drop_last=True)
    train = DataLoader(ds, batch_size=a.batch, sampler=sampler, num_workers=a.workers, drop_last=True)
    model = DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for x, y in train:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()  # DDP all-reduces the gradients: the ranks step together
            opt.step()
        if rank == 0:
            print("epoch %d loss %.3f" % (epoch, loss.item()), flush=True)


def spawned(i, world, a):
    train(i, world, a)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--make", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--spawn", type=int, default=0, help="start this many ranks with torch.multiprocessing.spawn")
    a = p.parse_args()
    if a.make and not (os.path.isdir(a.data) and os.listdir(a.data)):
        make(a.data, a.make)
    if a.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29512")
        mp.spawn(spawned, args=(a.spawn, a), nprocs=a.spawn)
        return
    if "RANK" not in os.environ and "SLURM_PROCID" in os.environ:
        # A task of srun: its rank and the world from Slurm's environment.
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29513")
        rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
        dist.init_process_group("gloo", rank=rank, world_size=world)
        train(rank, world, a)
        return
    dist.init_process_group("gloo")
    train(dist.get_rank(), dist.get_world_size(), a)


if __name__ == "__main__":
    main()
