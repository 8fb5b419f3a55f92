#!/usr/bin/env python3
"""The NumPy reference for scripts/bench-cnn.sh: the same CNN as
`dlsys-lab train --model cnn` (conv 5x5, 1 -> 16, padding 2 -> BatchNorm ->
ReLU -> max-pool 2 -> conv 3x3, 16 -> 32, padding 1 -> BatchNorm -> ReLU ->
max-pool 2 -> linear 1568 -> 10; softmax cross-entropy; Adam, lr 3e-3 on a
cosine to 0, batch 16), written the usual way: float32, convolution through
im2col (sliding windows) and one matrix multiply, backward by hand, col2im
as a sum over the kernel's taps. One epoch on the same 8,000 MNIST training
images. Prints seconds per epoch and the test accuracy."""
import math
import os
import struct
import sys
import time
import zlib

import numpy as np

EPS = np.float32(1e-5)


def load(path):
    raw = zlib.decompress(open(path, "rb").read())
    count, rows, cols, classes, max_value = struct.unpack("<IHHHB", raw[5:16])
    labels = np.frombuffer(raw[16:16 + count], dtype=np.uint8).astype(np.int64)
    pixels = np.frombuffer(raw[16 + count:], dtype=np.uint8).reshape(count, 1, rows, cols)
    return pixels.astype(np.float32) / max_value, labels


def conv_forward(x, w, pad):
    n, c, h, wd = x.shape
    oc, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    oh, ow = win.shape[2], win.shape[3]
    cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * k * k)
    out = cols @ w.reshape(oc, -1).T
    return out.reshape(n, oh, ow, oc).transpose(0, 3, 1, 2), (cols, xp.shape, oh, ow)


def conv_backward(dout, w, pad, cache):
    cols, padded, oh, ow = cache
    n, c = padded[0], padded[1]
    oc, _, k, _ = w.shape
    dmat = dout.transpose(0, 2, 3, 1).reshape(-1, oc)
    dw = (dmat.T @ cols).reshape(w.shape)
    dcols = (dmat @ w.reshape(oc, -1)).reshape(n, oh, ow, c, k, k)
    dxp = np.zeros(padded, np.float32)
    for ky in range(k):
        for kx in range(k):
            dxp[:, :, ky:ky + oh, kx:kx + ow] += dcols[:, :, :, :, ky, kx].transpose(0, 3, 1, 2)
    return dxp[:, :, pad:padded[2] - pad, pad:padded[3] - pad], dw


def bn_forward(x, gamma, beta):
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    inv = 1 / np.sqrt(var + EPS)
    xhat = (x - mean) * inv
    return gamma.reshape(1, -1, 1, 1) * xhat + beta.reshape(1, -1, 1, 1), (xhat, inv)


def bn_backward(dy, gamma, cache):
    xhat, inv = cache
    dbeta = dy.sum(axis=(0, 2, 3))
    dgamma = (dy * xhat).sum(axis=(0, 2, 3))
    g = dy * gamma.reshape(1, -1, 1, 1)
    dx = inv * (g - g.mean(axis=(0, 2, 3), keepdims=True)
                - xhat * (g * xhat).mean(axis=(0, 2, 3), keepdims=True))
    return dx, dgamma, dbeta


def pool_forward(x):
    n, c, h, w = x.shape
    r = x.reshape(n, c, h // 2, 2, w // 2, 2)
    out = r.max(axis=(3, 5))
    return out, (r == out[:, :, :, None, :, None])


def pool_backward(dout, mask):
    d = mask * dout[:, :, :, None, :, None]
    n, c, h2, _, w2, _ = d.shape
    return d.reshape(n, c, h2 * 2, w2 * 2)


def main():
    x, y = load(sys.argv[1])
    rng = np.random.default_rng(1)
    order = rng.permutation(len(y))
    train, test = order[:8000], order[8000:]
    he = lambda fan, shape: (rng.uniform(-1, 1, shape) * np.sqrt(6 / fan)).astype(np.float32)
    params = [
        he(25, (16, 1, 5, 5)), np.ones(16, np.float32), np.zeros(16, np.float32),
        he(144, (32, 16, 3, 3)), np.ones(32, np.float32), np.zeros(32, np.float32),
        he(1568, (1568, 10)), np.zeros(10, np.float32),
    ]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    batch, lr0, steps = 16, 3e-3, 0
    total = math.ceil(len(train) / batch) * int(os.environ.get("EPOCHS", "1"))
    b1, b2 = 0.9, 0.999
    times = []
    for _ in range(int(os.environ.get("EPOCHS", "1"))):
        start = time.perf_counter()
        perm = rng.permutation(train)
        for i in range(0, len(perm), batch):
            idx = perm[i:i + batch]
            xb, yb = x[idx], y[idx]
            w1, g1, be1, w2, g2, be2, wf, bf = params
            z1, c1 = conv_forward(xb, w1, 2)
            n1, bn1 = bn_forward(z1, g1, be1)
            a1 = np.maximum(n1, 0)
            p1, m1 = pool_forward(a1)
            z2, c2 = conv_forward(p1, w2, 1)
            n2, bn2 = bn_forward(z2, g2, be2)
            a2 = np.maximum(n2, 0)
            p2, m2 = pool_forward(a2)
            flat = p2.reshape(len(yb), -1)
            logits = flat @ wf + bf
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            dz = p
            dz[np.arange(len(yb)), yb] -= 1
            dz /= len(yb)
            dwf = flat.T @ dz
            dbf = dz.sum(axis=0)
            dp2 = (dz @ wf.T).reshape(p2.shape)
            da2 = pool_backward(dp2, m2) * (n2 > 0)
            dz2, dg2, dbe2 = bn_backward(da2, g2, bn2)
            dp1, dw2 = conv_backward(dz2, w2, 1, c2)
            da1 = pool_backward(dp1, m1) * (n1 > 0)
            dz1, dg1, dbe1 = bn_backward(da1, g1, bn1)
            _, dw1 = conv_backward(dz1, w1, 2, c1)
            grads = [dw1, dg1, dbe1, dw2, dg2, dbe2, dwf, dbf]
            steps += 1
            lr = lr0 * 0.5 * (1 + math.cos(math.pi * (steps - 1) / total))
            for j, g in enumerate(grads):
                m[j] = b1 * m[j] + (1 - b1) * g
                v[j] = b2 * v[j] + (1 - b2) * g * g
                mh = m[j] / (1 - b1 ** steps)
                vh = v[j] / (1 - b2 ** steps)
                params[j] -= np.float32(lr) * mh / (np.sqrt(vh) + 1e-8)
        times.append(time.perf_counter() - start)
    # Test accuracy with the batch's statistics, 500 at a time (no running
    # averages are kept here: this script times training).
    correct = 0
    w1, g1, be1, w2, g2, be2, wf, bf = params
    for i in range(0, len(test), 500):
        idx = test[i:i + 500]
        h = pool_forward(np.maximum(bn_forward(conv_forward(x[idx], w1, 2)[0], g1, be1)[0], 0))[0]
        h = pool_forward(np.maximum(bn_forward(conv_forward(h, w2, 1)[0], g2, be2)[0], 0))[0]
        correct += int(((h.reshape(len(idx), -1) @ wf + bf).argmax(axis=1) == y[idx]).sum())
    epoch = sorted(times)[len(times) // 2]
    print(f"numpy {np.__version__}: {epoch:.2f} s per epoch of 8000 images, "
          f"test acc {100 * correct / len(test):.2f}%")
    print(f"EPOCH_SECONDS {epoch:.4f}")


if __name__ == "__main__":
    main()
