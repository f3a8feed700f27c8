"""torchdata.nodes (0.11) as its migration guide maps a DataLoader over a
map-style dataset: IterableWrapper of sample indices → Batcher (batch
indices) → ParallelMapper (torchsample.Batch: each batch's samples and
their collate in one worker, num_workers = --workers, method thread or
process, in_order=False) → Prefetcher(2) → Loader. Mapping whole batches
rather than samples is what the guide does and what keeps the processes'
traffic to one tensor a batch. --method picks threads (peer nodes-threads)
or processes (nodes-procs), fork."""

import sys

import torch
import torchdata
from torchdata.nodes import Batcher, IterableWrapper, Loader, ParallelMapper, Prefetcher

import common
import torchsample


def main(argv):
    method = "thread"
    if argv and argv[0].startswith("--method="):
        method, argv = argv[0].split("=", 1)[1], argv[1:]
    if method not in ("thread", "process"):
        raise SystemExit(f"--method={method}: want thread or process")
    name = "nodes-threads" if method == "thread" else "nodes-procs"
    a = common.parse_args(argv, "peer_nodes.py")
    if method == "thread":
        torch.set_num_threads(1)  # the workers are the threads: one core each
    settings = {"method": method, "num_workers": a.workers, "in_order": False, "prefetch_factor": 2,
                "map": "whole batches", "decode": "torchvision.io.decode_jpeg"}
    if method == "process":
        settings["multiprocessing_context"] = "fork"
    versions = dict(torchsample.versions(), torchdata=torchdata.__version__)

    def start():
        sample = torchsample.Sample(common.image_folder(a.data, a.batch * a.batches), a.crop, a.seed)
        node = IterableWrapper(range(len(sample)))
        node = Batcher(node, batch_size=a.batch, drop_last=False)
        node = ParallelMapper(node, map_fn=torchsample.Batch(sample), num_workers=a.workers, method=method,
                              in_order=False, multiprocessing_context="fork" if method == "process" else None)
        node = Prefetcher(node, prefetch_factor=2)
        it = iter(Loader(node))

        def close():
            for _ in it:  # to the end of the data, which stops the workers
                pass
        return (x for x, _ in it), close

    common.run(name, a, versions, settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
