"""torch 2's DataLoader over a map-style Dataset (torchsample.Sample): worker
processes (num_workers = --workers), two batches prefetched a worker
(prefetch_factor), batches delivered as they are ready (in_order=False),
pin_memory off (no GPU), the default collate into a float32 tensor."""

import sys

import torch

import common
import torchsample

NAME = "torch2"


def main(argv):
    a = common.parse_args(argv, "peer_torch2.py")
    settings = {"num_workers": a.workers, "prefetch_factor": 2, "in_order": False, "pin_memory": False,
                "multiprocessing_context": "fork", "decode": "torchvision.io.decode_jpeg"}

    def start():
        ds = torchsample.Sample(common.image_folder(a.data, a.batch * a.batches), a.crop, a.seed)
        dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.workers, prefetch_factor=2,
                                         pin_memory=False, in_order=False, multiprocessing_context="fork")
        it = iter(dl)

        def close():
            it._shutdown_workers()  # wait for the workers, so their CPU counts
        return (x for x, _ in it), close

    common.run(NAME, a, torchsample.versions(), settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
