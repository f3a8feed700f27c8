"""A training script for headspace tune whose best loader settings are
known: each sample's __getitem__ sleeps --getitem-ms (a read, not the
CPU: workers beyond the cores help), each step sleeps --step-ms, the
DataLoader has --workers workers (0 by default) and nothing else set.
At its first batch it prints the loader's settings as it runs them (the
hook may have replaced them). --max-workers N makes a worker numbered N
or more fail, as a machine without the memory for it would."""
import argparse
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Sleepy(Dataset):
    def __init__(self, n, ms):
        self.n, self.ms = n, ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        return torch.full((4,), float(i))


MAX_WORKERS = [-1]


def worker_init(worker_id):
    if 0 <= MAX_WORKERS[0] <= worker_id:
        raise MemoryError("worker %d: out of memory (--max-workers %d)" % (worker_id, MAX_WORKERS[0]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--getitem-ms", type=float, default=5)
    p.add_argument("--step-ms", type=float, default=10)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--samples", type=int, default=400)
    p.add_argument("--epochs", type=int, default=1000)
    p.add_argument("--max-workers", type=int, default=-1)
    a = p.parse_args()
    MAX_WORKERS[0] = a.max_workers
    train = DataLoader(Sleepy(a.samples, a.getitem_ms), batch_size=a.batch, num_workers=a.workers,
                       worker_init_fn=worker_init)
    first = True
    for _ in range(a.epochs):
        for batch in train:
            if first:
                ctx = train.multiprocessing_context
                sys.stderr.write("loader: num_workers=%d prefetch_factor=%s pin_memory=%s persistent_workers=%s start=%s\n" % (
                    train.num_workers, train.prefetch_factor, train.pin_memory, train.persistent_workers,
                    ctx.get_start_method() if ctx is not None else "default"))
                sys.stderr.flush()
                first = False
            time.sleep(a.step_ms / 1000)


if __name__ == "__main__":
    main()
