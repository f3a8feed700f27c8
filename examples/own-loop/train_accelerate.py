"""An Accelerate training loop as users write it: a small MLP, an AdamW
optimiser and a DataLoader handed to Accelerator().prepare, which wraps
the loader (DataLoaderShard, a DataLoader subclass that fetches one batch
ahead and gives each rank its part) and the model (DistributedDataParallel
where there are ranks); accelerator.backward does the gradients'
all-reduce. On the CPU with the gloo backend. The data are synthetic:
__getitem__ makes a sample from its index and sleeps --getitem-ms to
stand for decoding; each step sleeps --step-ms on top of the model's own
work, to stand for a bigger model. Nothing in it knows about headspace.

    accelerate launch --multi_gpu --num_processes 2 train_accelerate.py [--epochs 2] [--workers 1]
    accelerate launch --cpu train_accelerate.py        # one process

(--multi_gpu starts the ranks with torch.distributed.run, on the CPU too
where the script asks for Accelerator(cpu=True); without it, and with
--cpu, accelerate launch runs one process.)
"""
import argparse
import time

import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset


class Synthetic(Dataset):
    def __init__(self, n, ms, dim=64):
        self.n, self.ms, self.dim = n, ms, dim

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.dim, generator=g), i % 4


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=1024)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--getitem-ms", type=float, default=2)
    p.add_argument("--step-ms", type=float, default=0)
    a = p.parse_args()
    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(Synthetic(a.samples, a.getitem_ms), batch_size=a.batch, shuffle=True, num_workers=a.workers)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(a.epochs):
        model.train()
        total, n = 0.0, 0
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            accelerator.backward(loss)
            opt.step()
            if a.step_ms:
                time.sleep(a.step_ms / 1000)
            total, n = total + loss.item(), n + 1
        accelerator.print("epoch %d: %d steps a rank, loss %.3f" % (epoch, n, total / max(n, 1)))


if __name__ == "__main__":
    main()
