"""NVIDIA DALI's CPU pipeline: fn.readers.file over the same files,
fn.decoders.image_crop on the CPU (libjpeg-turbo, decoding the crop's
window, the fused decode-and-crop DALI's documentation recommends) at a
random window (fn.random.uniform), fn.coord_transform for the colour
conversion (a 3×3 matrix and an offset on each pixel) and
fn.crop_mirror_normalize for the scale and the CHW layout, float32;
num_threads = --workers, device_id=None (CPU only), prefetch_queue_depth 2."""

import sys

import numpy as np
import nvidia.dali as dali
import nvidia.dali.fn as fn
import nvidia.dali.types as types
from nvidia.dali import pipeline_def

import common

NAME = "dali"


def main(argv):
    a = common.parse_args(argv, "peer_dali.py")
    settings = {"num_threads": a.workers, "device_id": "None", "prefetch_queue_depth": 2,
                "decode": "fn.decoders.image_crop (cpu)"}
    versions = {"nvidia-dali": dali.__version__, "numpy": np.__version__}

    def start():
        items = common.image_folder(a.data, a.batch * a.batches)
        m = np.array(common.COLOR_MATRIX, dtype=np.float32)
        off = np.array(common.COLOR_OFFSET, dtype=np.float32)

        @pipeline_def(batch_size=a.batch, num_threads=a.workers, device_id=None, seed=a.seed,
                      prefetch_queue_depth=2)
        def pipeline():
            jpegs, labels = fn.readers.file(files=[p for p, _ in items], labels=[l for _, l in items],
                                            random_shuffle=False, name="files")
            imgs = fn.decoders.image_crop(jpegs, device="cpu", output_type=types.RGB,
                                          crop=(a.crop, a.crop),
                                          crop_pos_x=fn.random.uniform(range=(0.0, 1.0)),
                                          crop_pos_y=fn.random.uniform(range=(0.0, 1.0)))
            imgs = fn.coord_transform(fn.cast(imgs, dtype=types.FLOAT), M=m.flatten().tolist(), T=off.tolist())
            imgs = fn.crop_mirror_normalize(imgs, dtype=types.FLOAT, output_layout="CHW",
                                            mean=[0.0, 0.0, 0.0], std=[common.SCALE_DIVISOR] * 3)
            return imgs, labels

        pipe = pipeline()
        pipe.build()

        def batches():
            while True:
                imgs, _ = pipe.run()
                yield np.asarray(imgs.as_tensor())

        def close():
            del pipe_ref[:]
        pipe_ref = [pipe]
        return batches(), close

    common.run(NAME, a, versions, settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
