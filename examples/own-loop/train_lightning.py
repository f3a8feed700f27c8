"""A Lightning training script as users write it: a LightningModule, its
train and validation DataLoaders from a LightningDataModule, and
Trainer.fit on the CPU. The data are synthetic (random tensors and labels
made in __getitem__, which sleeps --getitem-ms to stand for decoding), so
the example needs no download. Nothing in it knows about headspace.

    python train_lightning.py [--epochs 3] [--workers 0] [--getitem-ms 4]
"""
import argparse
import time

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Synthetic(Dataset):
    def __init__(self, n, ms):
        self.n, self.ms = n, ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 32, 32, generator=g), i % 10


class Data(L.LightningDataModule):
    def __init__(self, a):
        super().__init__()
        self.a = a

    def train_dataloader(self):
        return DataLoader(Synthetic(self.a.samples, self.a.getitem_ms), batch_size=self.a.batch,
                          shuffle=True, num_workers=self.a.workers, drop_last=True)

    def val_dataloader(self):
        return DataLoader(Synthetic(64, 0), batch_size=self.a.batch, num_workers=0)


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                                 nn.Flatten(), nn.Linear(256, 10))

    def training_step(self, batch, i):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=512)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--getitem-ms", type=float, default=4)
    a = p.parse_args()
    torch.manual_seed(0)
    trainer = L.Trainer(max_epochs=a.epochs, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Net(), datamodule=Data(a))


if __name__ == "__main__":
    main()
