"""torchdata.nodes (0.11): IterableWrapper of sample indices → ParallelMapper
(torchsample.Sample, num_workers = --workers, method thread or process,
in_order=False) → Batcher → Mapper (collate) → Prefetcher(2) → Loader, as
torchdata's nodes documentation builds a pipeline. --method picks threads
(peer nodes-threads) or processes (nodes-procs)."""

import sys

import torch
import torchdata
from torchdata.nodes import Batcher, IterableWrapper, Loader, Mapper, ParallelMapper, Prefetcher
from torch.utils.data import default_collate

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
                "decode": "torchvision.io.decode_jpeg"}
    versions = dict(torchsample.versions(), torchdata=torchdata.__version__)

    def start():
        sample = torchsample.Sample(common.image_folder(a.data, a.batch * a.batches), a.crop, a.seed)
        node = IterableWrapper(range(len(sample)))
        node = ParallelMapper(node, map_fn=sample, num_workers=a.workers, method=method, in_order=False)
        node = Batcher(node, batch_size=a.batch, drop_last=False)
        node = Mapper(node, default_collate)
        node = Prefetcher(node, prefetch_factor=2)
        it = iter(Loader(node))

        def close():
            for _ in it:  # to the end of the data, which stops the workers
                pass
        return (x for x, _ in it), close

    common.run(name, a, versions, settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
