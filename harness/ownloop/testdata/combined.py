"""A loop over two DataLoaders combined by an iterator of the script's own
that, as Lightning's CombinedLoader does, holds them in a list named
iterables and calls iter() on each (the hook measures them together):
"a" of --samples samples and "b" of a third as many, cycled (Lightning's
max_size_cycle) or stopped with the shorter (--mode min_size); each
sample's __getitem__ sleeps --a-ms or --b-ms, each step --step-ms. Each
step checks that the two batches are the same batch of their passes (the
shorter one cycled); --sequential iterates one loader after the other
instead (Lightning's sequential) and checks each batch is its loader's."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset

B_FIRST = 100000


class Sleepy(Dataset):
    def __init__(self, n, ms, first=0):
        self.n, self.ms, self.first = n, ms, first

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        return torch.full((4,), float(self.first + i))


class MaxSizeCycle:
    def __init__(self, iterables, stop_with_shorter=False):
        self.iterables, self.stop = iterables, stop_with_shorter

    def __iter__(self):
        self.iterators = [iter(x) for x in self.iterables]
        self.consumed = [False] * len(self.iterables)
        return self

    def __next__(self):
        out = []
        for i, it in enumerate(self.iterators):
            try:
                out.append(next(it))
            except StopIteration:
                self.consumed[i] = True
                if self.stop or all(self.consumed):
                    raise
                self.iterators[i] = iter(self.iterables[i])
                out.append(next(self.iterators[i]))
        return out


class Sequential:
    def __init__(self, iterables):
        self.iterables = iterables

    def __iter__(self):
        for k in range(len(self.iterables)):
            self.iterators = [iter(self.iterables[k])]
            for b in self.iterators[0]:
                yield k, b


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--a-ms", type=float, default=2)
    p.add_argument("--b-ms", type=float, default=2)
    p.add_argument("--step-ms", type=float, default=2)
    p.add_argument("--samples", type=int, default=96)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--mode", default="max_size_cycle", choices=("max_size_cycle", "min_size", "sequential"))
    p.add_argument("--epochs", type=int, default=1000)
    a = p.parse_args()
    la = DataLoader(Sleepy(a.samples, a.a_ms), batch_size=4, num_workers=a.workers)
    lb = DataLoader(Sleepy(a.samples // 3, a.b_ms, B_FIRST), batch_size=4, num_workers=a.workers)
    w = torch.zeros(4, requires_grad=True)
    nb = a.samples // 3 // 4
    for _ in range(a.epochs):
        if a.mode == "sequential":
            for k, x in Sequential([la, lb]):
                if (k == 1) != bool(x[0, 0] >= B_FIRST):
                    raise SystemExit("loader %d's batch starts at sample %d: not its own" % (k, x[0, 0]))
                (w * x).sum().backward()
                time.sleep(a.step_ms / 1000)
            continue
        for xa, xb in MaxSizeCycle([la, lb], a.mode == "min_size"):
            ia, ib = int(xa[0, 0]) // 4, (int(xb[0, 0]) - B_FIRST) // 4
            if ia % nb != ib:
                raise SystemExit("a step of a's batch %d and b's batch %d: not the same step of their passes" % (ia, ib))
            (w * (xa + xb)).sum().backward()
            time.sleep(a.step_ms / 1000)


if __name__ == "__main__":
    main()
