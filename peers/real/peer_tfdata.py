"""tf.data (tensorflow-cpu): Dataset.from_tensor_slices of the paths, a map
that reads the file and decodes the crop's window with
tf.image.decode_and_crop_jpeg (the fused decode-and-crop TensorFlow's
documentation recommends over decode then crop) at a window drawn by
tf.random.stateless_uniform, the colour conversion (tensordot) and the
scale, transposed to CHW; map(num_parallel_calls=AUTOTUNE), batch,
prefetch(AUTOTUNE), deterministic=False, the private thread pool and the
autotuner's CPU budget set to --workers, as the tf.data performance guide
recommends."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

import common

NAME = "tfdata"


def main(argv):
    a = common.parse_args(argv, "peer_tfdata.py")
    tf.config.threading.set_inter_op_parallelism_threads(a.workers)
    tf.config.threading.set_intra_op_parallelism_threads(a.workers)
    settings = {"num_parallel_calls": "AUTOTUNE", "prefetch": "AUTOTUNE", "deterministic": False,
                "private_threadpool_size": a.workers, "autotune_cpu_budget": a.workers,
                "decode": "tf.image.decode_and_crop_jpeg"}
    versions = {"tensorflow": tf.__version__, "numpy": np.__version__}
    mt = tf.constant(np.array(common.COLOR_MATRIX, dtype=np.float32).T / common.SCALE_DIVISOR)
    off = tf.constant(np.array(common.COLOR_OFFSET, dtype=np.float32) / common.SCALE_DIVISOR)
    crop = a.crop

    def load(path, i):
        data = tf.io.read_file(path)
        shape = tf.image.extract_jpeg_shape(data)
        hi = tf.stack([shape[0] - crop + 1, shape[1] - crop + 1])
        u = tf.random.stateless_uniform([2], seed=tf.stack([tf.cast(a.seed, tf.int64), i]), dtype=tf.float32)
        org = tf.cast(tf.floor(u * tf.cast(hi, tf.float32)), tf.int32)
        img = tf.image.decode_and_crop_jpeg(data, tf.stack([org[0], org[1], crop, crop]), channels=3)
        x = tf.tensordot(tf.cast(img, tf.float32), mt, 1) + off
        return tf.transpose(x, [2, 0, 1])

    def start():
        items = common.image_folder(a.data, a.batch * a.batches)
        ds = tf.data.Dataset.from_tensor_slices(([p for p, _ in items], np.arange(len(items), dtype=np.int64)))
        ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        ds = ds.batch(a.batch).prefetch(tf.data.AUTOTUNE)
        opts = tf.data.Options()
        opts.deterministic = False
        opts.threading.private_threadpool_size = a.workers
        opts.autotune.cpu_budget = a.workers
        ds = ds.with_options(opts)
        it = iter(ds)

        def close():
            for _ in it:
                pass
        return it, close

    common.run(NAME, a, versions, settings, start)


if __name__ == "__main__":
    main(sys.argv[1:])
