"""A training script that does what real scripts do and the hook must
survive: each option is one habit. Samples sleep --getitem-ms, each step
runs a backward pass and an SGD step on a tiny model, then sleeps
--step-ms.

--rebuild       a new DataLoader each epoch, made at the same line
--peek          next(iter(DataLoader(...))) on its own loader first
--stats N       a statistics pass over N batches of its own loader
                first (no backward, no optimizer step)
--zip MS        each step also takes a batch of a second loader whose
                samples sleep MS
--stall-at N    the loop stops at step N (sleeps --stall-s)
--break-at N    each epoch ends by break after N batches
--islice N      each epoch is itertools.islice(loader, N)
--thread        the loop runs in a thread of its own
--child         starts a child in a session of its own that sleeps
                (its command line names this script)
--orphan        starts a child that starts such a sleeper and exits at
                once: the sleeper outlives its parent
--dist          init_process_group(gloo, world_size=1) first
--touch-fd3     closes file descriptor 3, opens a file there and writes
                a line to it
--close-fds     closes every descriptor from 3 up, before its loop
--slow-first S  the first sample sleeps S seconds
--no-train      the steps run no backward pass nor optimizer step
--spawn         the loader's workers are spawned, not forked
--split-dict    train and validation loaders made on one line, as
                {split: DataLoader(...) for split in ...}; a validation
                pass of 2 batches after each epoch of --samples
"""
import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Sleepy(Dataset):
    def __init__(self, n, ms, first_s=0.0):
        self.n, self.ms, self.first_s = n, ms, first_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == 0 and self.first_s:
            time.sleep(self.first_s)
        time.sleep(self.ms / 1000)
        return torch.full((4,), float(i))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--getitem-ms", type=float, default=1)
    p.add_argument("--step-ms", type=float, default=1)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--samples", type=int, default=100000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--peek", action="store_true")
    p.add_argument("--stats", type=int, default=0)
    p.add_argument("--zip", type=float, default=-1)
    p.add_argument("--stall-at", type=int, default=-1)
    p.add_argument("--stall-s", type=float, default=600)
    p.add_argument("--break-at", type=int, default=0)
    p.add_argument("--islice", type=int, default=0)
    p.add_argument("--thread", action="store_true")
    p.add_argument("--child", action="store_true")
    p.add_argument("--sleep-child", action="store_true")
    p.add_argument("--orphan", action="store_true")
    p.add_argument("--start-sleeper", action="store_true")
    p.add_argument("--dist", action="store_true")
    p.add_argument("--touch-fd3", action="store_true")
    p.add_argument("--slow-first", type=float, default=0)
    p.add_argument("--no-train", action="store_true")
    p.add_argument("--spawn", action="store_true")
    p.add_argument("--split-dict", action="store_true")
    p.add_argument("--close-fds", action="store_true")
    a = p.parse_args()
    if a.sleep_child:
        time.sleep(600)
        return
    if a.child or a.start_sleeper:
        subprocess.Popen([sys.executable, os.path.abspath(__file__), "--sleep-child"], start_new_session=True)
    if a.start_sleeper:
        return
    if a.orphan:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--start-sleeper"], check=True)
    if a.touch_fd3:
        try:
            os.close(3)
        except OSError:
            pass
        f = tempfile.TemporaryFile()
        try:
            os.write(3, b"the script's own line\n")
        except OSError:
            pass
        print("fd 3 is the script's:", f.fileno() == 3)
    if a.close_fds:
        os.closerange(3, 1 << 16)
    if a.dist:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
    torch.manual_seed(1)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)

    def step(batch):
        if not a.no_train:
            opt.zero_grad()
            model(batch).sum().backward()
            opt.step()
        time.sleep(a.step_ms / 1000)

    def make():
        return DataLoader(Sleepy(a.samples, a.getitem_ms, a.slow_first), batch_size=a.batch, num_workers=a.workers,
                          multiprocessing_context="spawn" if a.spawn and a.workers > 0 else None)

    def train():
        if a.peek:
            print("peek:", next(iter(DataLoader(Sleepy(64, 0), batch_size=a.batch))).shape)
        if a.stats:
            total = 0.0
            for x in DataLoader(Sleepy(a.stats * a.batch, 0), batch_size=a.batch):
                total += float(x.sum())
            print("mean:", total / (a.stats * a.batch * 4))
        loader = make()
        if a.split_dict:
            sizes = {"train": a.samples, "val": 8}
            loaders = {k: DataLoader(Sleepy(sizes[k], a.getitem_ms), batch_size=a.batch, num_workers=a.workers) for k in ("train", "val")}
            n = 0
            for _ in range(a.epochs):
                for k in ("train", "val"):
                    for batch in loaders[k]:
                        if k == "train":
                            step(batch)
                            n += 1
            print("trained %d steps" % n)
            return
        side = DataLoader(Sleepy(a.samples, a.zip), batch_size=a.batch, num_workers=1) if a.zip >= 0 else None
        n = 0
        for _ in range(a.epochs):
            if a.rebuild:
                loader = make()
            batches = loader
            if a.islice:
                batches = itertools.islice(loader, a.islice)
            if side is not None:
                batches = zip(loader, side)
            for i, batch in enumerate(batches):
                if a.break_at and i == a.break_at:
                    break
                if side is not None:
                    batch = batch[0] + batch[1]
                if n == a.stall_at:
                    time.sleep(a.stall_s)
                step(batch)
                n += 1
        print("trained %d steps" % n)

    if a.thread:
        t = threading.Thread(target=train)
        t.start()
        t.join()
    else:
        train()


if __name__ == "__main__":
    main()
