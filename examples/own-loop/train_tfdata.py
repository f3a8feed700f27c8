"""A TensorFlow training script whose input is a tf.data pipeline, measured
by headspace through headspace_hook.wrap() (docs/own-loop.md, "Loops that
are not DataLoaders"). The data are synthetic: each element is a random
128x128 RGB image made from its index (standing for a read and decode),
then a random crop to 112x112, a flip and a conversion to floats in
parallel map calls, batched and prefetched. A small Keras CNN is trained
with a GradientTape on the CPU. The three lines that name headspace are
the only change to the script; without headspace, wrap is not imported
and the loop runs as it is.

    python train_tfdata.py [--epochs 3] [--batch 32] [--samples 2048] [--map-calls 2]

The interpreter must import torch as well (headspace's hook patches
torch's DataLoader before it runs the script).
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402


def pipeline(a):
    def make(i):
        seed = tf.stack([i, tf.constant(7, tf.int64)])
        img = tf.random.stateless_uniform((128, 128, 3), seed, maxval=256, dtype=tf.int32)
        return tf.cast(img, tf.uint8), tf.cast(i % 10, tf.int32)

    def augment(img, label):
        img = tf.image.random_crop(img, (112, 112, 3))
        img = tf.image.random_flip_left_right(img)
        return tf.image.convert_image_dtype(img, tf.float32), label

    ds = tf.data.Dataset.range(a.samples).shuffle(a.samples, seed=1)
    ds = ds.map(make, num_parallel_calls=a.map_calls).map(augment, num_parallel_calls=a.map_calls)
    return ds.batch(a.batch, drop_remainder=True).prefetch(2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--map-calls", type=int, default=2, help="the map's num_parallel_calls")
    a = p.parse_args()
    tf.random.set_seed(1)
    model = tf.keras.Sequential([
        tf.keras.Input((112, 112, 3)),
        tf.keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
        tf.keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
        tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(10),
    ])
    opt = tf.keras.optimizers.SGD(0.05)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    batches = pipeline(a)
    try:
        import headspace_hook                   # present only under headspace
        batches = headspace_hook.wrap(batches, name="tf.data pipeline")
    except ImportError:
        pass
    for epoch in range(a.epochs):
        for x, y in batches:
            loss = step(x, y)
        print("epoch %d: loss %.3f" % (epoch, float(loss)), flush=True)


if __name__ == "__main__":
    main()
