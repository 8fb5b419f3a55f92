#!/usr/bin/env python3
"""The NumPy reference for scripts/bench-mlp.sh: the same 784-128-10 MLP (ReLU,
softmax cross-entropy, SGD with momentum 0.9, lr 0.05, batch 64) on the same
8,000 MNIST training images, written the usual way (float32 matrices, hand-
written backward). Prints samples per second (median over epochs)."""
import os
import struct
import sys
import time
import zlib

import numpy as np


def load(path):
    raw = zlib.decompress(open(path, "rb").read())
    count, rows, cols, classes, max_value = struct.unpack("<IHHHB", raw[5:16])
    labels = np.frombuffer(raw[16:16 + count], dtype=np.uint8).astype(np.int64)
    pixels = np.frombuffer(raw[16 + count:], dtype=np.uint8).reshape(count, rows * cols)
    return pixels.astype(np.float32) / max_value, labels, classes


def main():
    epochs = int(os.environ.get("EPOCHS", "5"))
    x, y, classes = load(sys.argv[1])
    rng = np.random.default_rng(1)
    order = rng.permutation(len(y))
    train, test = order[:8000], order[8000:]
    xtr, ytr, xte, yte = x[train], y[train], x[test], y[test]
    w1 = (rng.uniform(-1, 1, (784, 128)) * np.sqrt(6 / 784)).astype(np.float32)
    b1 = np.zeros(128, np.float32)
    w2 = (rng.uniform(-1, 1, (128, classes)) * np.sqrt(6 / 128)).astype(np.float32)
    b2 = np.zeros(classes, np.float32)
    params = [w1, b1, w2, b2]
    velocity = [np.zeros_like(p) for p in params]
    lr, mu, batch = np.float32(0.05), np.float32(0.9), 64
    times = []
    for epoch in range(epochs):
        start = time.perf_counter()
        perm = rng.permutation(len(ytr))
        for i in range(0, len(perm), batch):
            idx = perm[i:i + batch]
            xb, yb = xtr[idx], ytr[idx]
            h = xb @ w1 + b1
            a = np.maximum(h, 0)
            z = a @ w2 + b2
            z = z - z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            dz = p
            dz[np.arange(len(yb)), yb] -= 1
            dz /= len(yb)
            dw2 = a.T @ dz
            db2 = dz.sum(axis=0)
            da = dz @ w2.T
            dh = da * (h > 0)
            dw1 = xb.T @ dh
            db1 = dh.sum(axis=0)
            for p_, v, g in zip(params, velocity, [dw1, db1, dw2, db2]):
                v *= mu
                v -= lr * g
                p_ += v
        # Evaluate on the test set, as the Rust trainer does each epoch.
        logits = np.maximum(xte @ w1 + b1, 0) @ w2 + b2
        accuracy = float((logits.argmax(axis=1) == yte).mean())
        times.append(time.perf_counter() - start)
    median = sorted(times)[len(times) // 2]
    print(f"numpy {np.__version__}: {len(ytr) / median:.0f} samples/s (median epoch {median:.3f} s over {epochs} epochs, test acc {100 * accuracy:.2f}%)")
    print(f"SAMPLES_PER_SECOND {len(ytr) / median}")


if __name__ == "__main__":
    main()
