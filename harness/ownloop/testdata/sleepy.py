"""A training script whose truth is known: each sample's __getitem__ sleeps
--getitem-ms, each step sleeps --step-ms. With --truth it times its own
loop (no hook): the mean step time with the DataLoader, then with one
batch reused, and prints them as JSON: the truth headspace analyze is
checked against. --record FILE writes each batch's sample indices, one
line a batch, to check that the hook changes no batch nor their order.
--fail-at N raises at batch N; --val-every N iterates a second
(validation) DataLoader every N steps; --no-loader never iterates one."""
import argparse
import json
import time

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset


class Sleepy(Dataset):
    def __init__(self, n, ms):
        self.n, self.ms = n, ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        return torch.full((4,), float(i))


class SleepyStream(IterableDataset):
    def __init__(self, n, ms):
        self.n, self.ms = n, ms

    def __iter__(self):
        for i in range(self.n):
            time.sleep(self.ms / 1000)
            yield torch.full((4,), float(i))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--getitem-ms", type=float, default=5)
    p.add_argument("--step-ms", type=float, default=10)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--samples", type=int, default=100000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--truth", type=int, default=0, help="time this many steps of each loop, without the hook")
    p.add_argument("--record", default="")
    p.add_argument("--fail-at", type=int, default=-1)
    p.add_argument("--val-every", type=int, default=0)
    p.add_argument("--no-loader", type=float, default=0, help="sleep this many seconds and end without a loader")
    p.add_argument("--iterable", action="store_true", help="an IterableDataset (one worker at most)")
    a = p.parse_args()
    if a.no_loader:
        time.sleep(a.no_loader)
        return
    torch.manual_seed(1)
    if a.iterable:
        train = DataLoader(SleepyStream(a.samples, a.getitem_ms), batch_size=a.batch, num_workers=min(a.workers, 1))
    else:
        train = DataLoader(Sleepy(a.samples, a.getitem_ms), batch_size=a.batch, num_workers=a.workers, shuffle=a.shuffle)
    val = DataLoader(Sleepy(8, 0), batch_size=4)
    if a.truth:
        out = {}
        it = iter(train)
        first = next(it)
        for _ in range(a.workers * 2):  # the workers' first round
            next(it)
        t = time.perf_counter()
        for _ in range(a.truth):
            next(it)
            time.sleep(a.step_ms / 1000)
        out["loader_s"] = (time.perf_counter() - t) / a.truth
        t = time.perf_counter()
        for _ in range(a.truth):
            _ = first
            time.sleep(a.step_ms / 1000)
        out["cached_s"] = (time.perf_counter() - t) / a.truth
        print(json.dumps(out))
        return
    rec = open(a.record, "w") if a.record else None
    step = 0
    for _ in range(a.epochs):
        for batch in train:
            if rec:
                rec.write(",".join(str(int(v)) for v in batch[:, 0].tolist()) + "\n")
                rec.flush()
            if step == a.fail_at:
                raise RuntimeError("the script's own failure at step %d" % step)
            time.sleep(a.step_ms / 1000)
            step += 1
            if a.val_every and step % a.val_every == 0:
                for _ in val:
                    pass
    print("trained %d steps" % step)


if __name__ == "__main__":
    main()
