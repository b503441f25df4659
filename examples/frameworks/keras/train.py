#!/usr/bin/env python3
"""Keras with the ``TensorBoard`` callback's defaults and no gpuctl code.

``keras.callbacks.TensorBoard()`` writes to ``logs/train/`` and ``logs/validation/``; gpuctl
finds them with no flags and keys the scalars as TensorBoard shows them, split first:
``train/epoch_loss``, ``validation/epoch_loss``, ``validation/evaluation_loss_vs_iterations`` …
``ModelCheckpoint`` saves ``checkpoints/model-NN.keras`` each epoch; gpuctl finds them in the working
dir, with the epoch from the name. A small dense network on synthetic data: seconds on a CPU.

    deno task cli job submit -- python examples/frameworks/keras/train.py
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 8)).astype("float32")
    y = (x @ rng.normal(size=(8, 1)) > 0).astype("float32")
    model = keras.Sequential([
        keras.Input(shape=(8,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, epochs=args.epochs, batch_size=32, validation_split=0.25, verbose=2,
              callbacks=[keras.callbacks.TensorBoard(),
                         keras.callbacks.ModelCheckpoint("checkpoints/model-{epoch:02d}.keras")])


if __name__ == "__main__":
    main()
