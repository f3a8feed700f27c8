"""SPDL (0.8)'s pipeline: threads, SPDL's own decoding. A PipelineBuilder
with the sample paths as its source, one pipe stage that loads each image
with spdl.io.load_image (demux, decode with SPDL's FFmpeg-based decoder,
and the random crop done by its filter graph, `crop=…,format=rgb24`)
running --workers at once, an aggregate of batch samples, a pipe that
collates the batch and applies the colour conversion and the scale to the
whole batch at once (torch, one matrix product), and a sink buffering two
batches; build(num_threads = --workers), as SPDL's documentation builds an
image pipeline."""

import sys

import numpy as np
import spdl.io
import spdl.pipeline
import torch
from spdl.pipeline import PipelineBuilder

import common

NAME = "spdl"
_M = torch.tensor(common.COLOR_MATRIX, dtype=torch.float32).T.contiguous() / common.SCALE_DIVISOR
_OFF = torch.tensor(common.COLOR_OFFSET, dtype=torch.float32) / common.SCALE_DIVISOR


def spdl_version():
    try:
        from importlib.metadata import version
        return version("spdl")
    except Exception:
        return "unknown"


def main(argv):
    a = common.parse_args(argv, "peer_spdl.py")
    torch.set_num_threads(1)  # the pipeline's threads are the cores
    settings = {"num_threads": a.workers, "load_concurrency": a.workers, "output_order": "completion",
                "sink_buffer": 2, "decode": "spdl.io.load_image (FFmpeg)"}
    versions = {"spdl": spdl_version(), "torch": torch.__version__, "numpy": np.__version__}

    def start():
        items = common.image_folder(a.data, a.batch * a.batches)
        # One probe for the images' size, as a user reading one dataset of
        # one size does; the crop windows depend on it.
        first = spdl.io.to_numpy(spdl.io.load_image(items[0][0]))
        h, w = first.shape[0], first.shape[1]

        def load(i):
            top, left = common.crop_origin(a.seed, i, h, w, a.crop)
            desc = f"crop={a.crop}:{a.crop}:{left}:{top},format=pix_fmts=rgb24"
            buf = spdl.io.load_image(items[i][0], filter_desc=desc)
            return spdl.io.to_numpy(buf)  # crop × crop × 3 uint8

        def collate(samples):
            x = torch.from_numpy(np.stack(samples)).to(torch.float32)  # B×C×C×3
            y = torch.addmm(_OFF, x.view(-1, 3), _M)  # each pixel's YCbCr / 255
            return y.view(len(samples), a.crop, a.crop, 3).permute(0, 3, 1, 2).contiguous()

        pipe = (PipelineBuilder()
                .add_source(range(len(items)))
                .pipe(load, concurrency=a.workers)
                .aggregate(a.batch)
                .pipe(collate)
                .add_sink(2)
                .build(num_threads=a.workers))
        pipe.start()
        it = pipe.get_iterator()

        def close():
            for _ in it:
                pass
            pipe.stop()
        return it, close

    common.run(NAME, a, versions, settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
