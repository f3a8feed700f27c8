"""A plain PyTorch training script on an ImageFolder of JPEGs, on the CPU,
that can run its own headspace analysis with SPDL's CacheDataLoader, the
way SPDL's "Headspace Analysis" chapter shows (docs/peers.md, "SPDL's own
headspace"):

    python train_cachedataloader.py --data DIR                 # as it is
    python train_cachedataloader.py --data DIR --spdl-cache \\
        --num-caches 10 --return-caches-after 40 --steps-after 30 --step-log steps.jsonl

As it is, nothing in it knows about headspace or SPDL (headspace analyze
runs it so). The loader: torchvision's ImageFolder (PIL decodes each JPEG),
RandomResizedCrop(--crop), a flip, ToTensor and Normalize, a DataLoader
with --workers worker processes, shuffled. The model step: a small CNN,
forward, loss, backward and SGD, on --threads of torch's intra-op threads
(1 by default, so its cost is one core's whatever the loader does).

--spdl-cache wraps the DataLoader in spdl.dataloader.CacheDataLoader:
--return-caches-after batches come from the loader (the first --num-caches
kept), then the kept ones are replayed for --steps-after steps; the pass
stops there (stop_after) and the script exits. --step-log writes each
step's time, from the end of one step to the end of the next (the wait for
the batch and the step), one JSON line a step: {"step": i, "ns": t}.
--check imports everything, prints "key: value" lines (versions and
settings) and exits.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))

    def forward(self, x):
        return self.body(x)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", help="ImageFolder root")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--crop", type=int, default=160)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch's intra-op threads for the model step")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--spdl-cache", action="store_true", help="wrap the loader in SPDL's CacheDataLoader")
    p.add_argument("--num-caches", type=int, default=10)
    p.add_argument("--return-caches-after", type=int, default=100)
    p.add_argument("--steps-after", type=int, default=100)
    p.add_argument("--step-log", help="write each step's time here, a JSON line a step")
    p.add_argument("--check", action="store_true", help="print the versions and settings, exit")
    a = p.parse_args()
    if not a.check and not a.data:
        p.error("--data is required")
    print("python: %s" % sys.version.split()[0])
    print("torch: %s" % torch.__version__)
    print("torchvision: %s" % torchvision.__version__)
    if a.spdl_cache or a.check:
        import spdl
        from spdl.dataloader import CacheDataLoader
        print("spdl: %s" % getattr(spdl, "__version__", "unknown"))
    sys.stdout.flush()
    if a.check:
        return

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.crop),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]),
    ])
    ds = datasets.ImageFolder(a.data, transform=tf)
    train = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers, drop_last=True)
    if a.spdl_cache:
        # SPDL's headspace analysis: cache, then replay (its documentation's
        # snippet), stopping once the cached steps are done.
        train = CacheDataLoader(train, num_caches=a.num_caches, return_caches_after=a.return_caches_after,
                                stop_after=a.return_caches_after + a.steps_after)
    model = Net(len(ds.classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    log = open(a.step_log, "w") if a.step_log else None
    step = 0
    for epoch in range(1 if a.spdl_cache else a.epochs):
        last = time.perf_counter_ns()
        for x, y in train:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            now = time.perf_counter_ns()
            if log:
                log.write(json.dumps({"step": step, "ns": now - last}) + "\n")
            last = now
            step += 1
        print("epoch %d: %d steps, loss %.3f" % (epoch, step, loss.item()))
    if log:
        log.close()


if __name__ == "__main__":
    main()
