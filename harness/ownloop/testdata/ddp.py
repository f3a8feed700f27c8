"""A data-parallel training script whose truth is known, for 2 or more
ranks on the CPU (gloo): each sample's __getitem__ sleeps --getitem-ms
(--slow-getitem-ms in rank --slow-rank), each step sleeps --step-ms and
then all-reduces one element, as DDP's gradient all-reduce keeps the
ranks in lockstep. Each rank reads its part of the dataset through a
DistributedSampler.

Run it under torchrun (each rank is a process of the launcher), with
--spawn N, which starts N ranks itself with torch.multiprocessing.spawn,
or with --slurm in each task of srun (its rank SLURM_PROCID of
SLURM_NTASKS, the rendezvous on 127.0.0.1:--port).
--truth N times each rank's own loop without the hook (N steps with the
DataLoader, then N on one batch reused) and prints one JSON line a rank.
--fail-rank R --fail-at N raises in rank R at step N; --hang-rank R
--hang-at N makes rank R sleep for an hour before its collective at step
N (the others wait in the all-reduce); --multi-node declares twice the
ranks started here, as a second node would. --max-workers N makes a
DataLoader worker numbered N or more fail in every rank, as a machine
without the memory for it would (headspace tune's failed candidate)."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


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


def train(rank, world, a):
    MAX_WORKERS[0] = a.max_workers
    if not dist.is_initialized():
        dist.init_process_group("gloo", rank=rank, world_size=world * (2 if a.multi_node else 1))
    ms = a.slow_getitem_ms if rank == a.slow_rank else a.getitem_ms
    ds = Sleepy(a.samples, ms)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(ds, batch_size=a.batch, num_workers=a.workers, sampler=sampler, worker_init_fn=worker_init)
    one = torch.ones(1)
    if a.truth:
        it = iter(loader)
        first = next(it)
        for _ in range(a.workers * 2):  # the workers' first round
            next(it)
        dist.all_reduce(one)
        t = time.perf_counter()
        for _ in range(a.truth):
            next(it)
            time.sleep(a.step_ms / 1000)
            dist.all_reduce(one)
        loader_s = (time.perf_counter() - t) / a.truth
        t = time.perf_counter()
        for _ in range(a.truth):
            _ = first
            time.sleep(a.step_ms / 1000)
            dist.all_reduce(one)
        cached_s = (time.perf_counter() - t) / a.truth
        print(json.dumps({"rank": rank, "loader_s": loader_s, "cached_s": cached_s}), flush=True)
        return
    step = 0
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            if rank == a.fail_rank and step == a.fail_at:
                raise RuntimeError("rank %d's own failure at step %d" % (rank, step))
            if rank == a.hang_rank and step == a.hang_at:
                time.sleep(3600)
            time.sleep(a.step_ms / 1000)
            dist.all_reduce(one)
            step += 1
    print("rank %d trained %d steps" % (rank, step), flush=True)


def spawned(i, world, a):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    train(i, world, a)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--getitem-ms", type=float, default=5)
    p.add_argument("--slow-getitem-ms", type=float, default=0)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--step-ms", type=float, default=10)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--samples", type=int, default=100000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--truth", type=int, default=0)
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--fail-at", type=int, default=-1)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-at", type=int, default=-1)
    p.add_argument("--multi-node", action="store_true")
    p.add_argument("--max-workers", type=int, default=-1)
    p.add_argument("--spawn", type=int, default=0, help="start this many ranks with torch.multiprocessing.spawn")
    p.add_argument("--port", type=int, default=29511)
    p.add_argument("--slurm", action="store_true", help="a task of srun: its rank from SLURM_PROCID")
    a = p.parse_args()
    torch.manual_seed(1)
    if a.slurm:
        rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.port, rank=rank,
                                world_size=world * (2 if a.multi_node else 1))
        train(rank, world, a)
        return
    if a.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(a.port)
        mp.spawn(spawned, args=(a.spawn, a), nprocs=a.spawn)
        return
    dist.init_process_group("gloo")
    train(dist.get_rank(), dist.get_world_size(), a)


if __name__ == "__main__":
    main()
