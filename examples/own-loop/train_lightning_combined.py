"""A Lightning training script with two training loaders at once, as users
write it: trainer.fit(model, train_dataloaders={"images": ..., "extra": ...})
(Lightning combines them in a CombinedLoader, mode max_size_cycle), or a
CombinedLoader of the two in the mode --mode names. Lightning's Trainer
refuses mode sequential for training, so with --mode sequential the script
runs its own loop over the CombinedLoader (plain torch, SGD). The data are
synthetic: "images" has --samples samples and "extra" a third as many, each
__getitem__ sleeping --getitem-ms to stand for decoding. Each step checks
that its combined batch is consistent: the two loaders' batches are the
same batch of their passes (the shorter one cycled), or, in sequential
mode, the batch is the loader's that Lightning says it is. Nothing in it
knows about headspace.

    python train_lightning_combined.py [--mode dict|max_size_cycle|min_size|max_size|sequential] [--val] [--epochs 3]
"""
import argparse
import time

import lightning as L
import torch
import torch.nn as nn
from lightning.pytorch.utilities import CombinedLoader
from torch.utils.data import DataLoader, Dataset

EXTRA = 100000  # the extra loader's targets start here: a batch says whose it is


class Synthetic(Dataset):
    def __init__(self, n, ms, first=0):
        self.n, self.ms, self.first = n, ms, first

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 32, 32, generator=g), self.first + i


def net():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10))


def check(batch, a, dataloader_idx=None):
    """The combined batch is consistent: raises SystemExit where it is not."""
    if dataloader_idx is not None:  # sequential: one loader's batch
        _, y = batch
        if (dataloader_idx == 1) != bool(y[0] >= EXTRA):
            raise SystemExit("a batch of targets %s given as loader %d's" % (y[:2].tolist(), dataloader_idx))
        return
    if batch["extra"] is None:  # max_size: the shorter loader's pass is over
        return
    (_, ya), (_, yb) = batch["images"], batch["extra"]
    if yb[0] < EXTRA or ya[0] >= EXTRA:
        raise SystemExit("the loaders' batches are swapped")
    na = int(ya[0]) // a.batch  # the batch of its pass
    nb = (int(yb[0]) - EXTRA) // a.batch
    if na % (a.samples // 3 // a.batch) != nb:
        raise SystemExit("a combined batch of images' batch %d and extra's batch %d: not the same step of their passes" % (na, nb))


def loss_of(model, batch):
    x, y = batch
    return nn.functional.cross_entropy(model(x), y % 10)


class Net(L.LightningModule):
    def __init__(self, a):
        super().__init__()
        self.a, self.net = a, net()

    def training_step(self, batch, i):
        check(batch, self.a)
        return sum(loss_of(self.net, b) for b in batch.values() if b is not None)

    def validation_step(self, batch, i):
        self.log("val_loss", loss_of(self.net, batch))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", default="dict", choices=("dict", "max_size_cycle", "min_size", "max_size", "sequential"))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=384)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--getitem-ms", type=float, default=4)
    p.add_argument("--val", action="store_true", help="a validation loader too (Lightning's sanity check iterates it first)")
    a = p.parse_args()
    torch.manual_seed(0)
    # In order (no shuffle), so that a step can check its combined batch.
    loaders = {"images": DataLoader(Synthetic(a.samples, a.getitem_ms), batch_size=a.batch, num_workers=a.workers, drop_last=True),
               "extra": DataLoader(Synthetic(a.samples // 3, a.getitem_ms, EXTRA), batch_size=a.batch, num_workers=a.workers, drop_last=True)}
    if a.mode == "sequential":
        model = net()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        combined = CombinedLoader(loaders, "sequential")
        for _ in range(a.epochs):
            for batch, _, dataloader_idx in combined:
                check(batch, a, dataloader_idx)
                opt.zero_grad()
                loss_of(model, batch).backward()
                opt.step()
        return
    train = loaders if a.mode == "dict" else CombinedLoader(loaders, a.mode)
    val = DataLoader(Synthetic(64, 0), batch_size=a.batch) if a.val else None
    trainer = L.Trainer(max_epochs=a.epochs, accelerator="cpu", devices=1, logger=False, num_sanity_val_steps=2 if a.val else 0,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Net(a), train_dataloaders=train, val_dataloaders=val)


if __name__ == "__main__":
    main()
