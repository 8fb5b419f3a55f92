#!/usr/bin/env python3
"""Writes core/tests/data/ml_dtypes_reference.txt: an independent reference for
the float emulator, computed by ml_dtypes (Google's NumPy dtypes for bf16 and
the OCP fp8 formats) and NumPy's float16.

    pip install ml_dtypes==0.5.* numpy && python3 scripts/gen-float-reference.py

Lines:
    decode FORMAT PATTERN VALUE_AS_F64_BITS   (every fp8 pattern)
    F32_BITS FP16 BF16 FP8_E4M3 FP8_E5M2      (round-to-nearest-even from f32, hex)
NaN results are written as `nan` (their payload and sign are not compared).
"""
import random
import struct

import ml_dtypes
import numpy as np

FORMATS = {
    "fp16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "fp8-e4m3": ml_dtypes.float8_e4m3fn,
    "fp8-e5m2": ml_dtypes.float8_e5m2,
}
WIDTH = {"fp16": 16, "bf16": 16, "fp8-e4m3": 8, "fp8-e5m2": 8}


def f32(bits):
    return np.frombuffer(struct.pack("<I", bits), dtype=np.float32)


def pattern(value, dtype, width):
    raw = np.asarray(value, dtype=dtype).view(np.uint8 if width == 8 else np.uint16)
    return int(raw)


def main():
    rng = random.Random(20261130)
    lines = []
    for name in ("fp8-e4m3", "fp8-e5m2"):
        dtype = FORMATS[name]
        for bits in range(256):
            value = np.array([bits], dtype=np.uint8).view(dtype)[0]
            as_f64 = float(value)
            if np.isnan(as_f64):
                lines.append(f"decode {name} 0x{bits:02x} nan")
            else:
                lines.append(f"decode {name} 0x{bits:02x} 0x{struct.unpack('<Q', struct.pack('<d', as_f64))[0]:016x}")
    inputs = set()
    # Edges: every power of two in f32's range, their neighbours and midpoints.
    for e in range(-149, 128):
        x = np.float32(2.0) ** np.float32(e) if e > -127 else np.float32(2.0**e)
        b = struct.unpack("<I", struct.pack("<f", float(x)))[0]
        for d in range(-3, 4):
            inputs.add((b + d) & 0xFFFFFFFF)
        for frac in (0x400000, 0x100000, 0x1000, 0x8000, 0x10000):
            inputs.add((b | frac) & 0xFFFFFFFF)
            inputs.add((b | frac) + 1 & 0xFFFFFFFF)
            inputs.add((b | frac) - 1 & 0xFFFFFFFF)
    for v in (448.0, 464.0, 465.0, 480.0, 57344.0, 61440.0, 65504.0, 65520.0, 65519.0, 0.0, -0.0):
        inputs.add(struct.unpack("<I", struct.pack("<f", v))[0])
    for _ in range(4000):
        inputs.add(rng.getrandbits(32))
    for _ in range(4000):
        v = rng.uniform(-600.0, 600.0) * 2.0 ** rng.randint(-30, 10)
        inputs.add(struct.unpack("<I", struct.pack("<f", v))[0])
    inputs.update([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001])
    for bits in sorted(inputs):
        x = f32(bits)[0]
        outs = []
        for name, dtype in FORMATS.items():
            with np.errstate(all="ignore"):
                y = np.asarray(x).astype(dtype)
            outs.append("nan" if np.isnan(float(y)) else f"{pattern(y, dtype, WIDTH[name]):x}")
        lines.append(f"{bits:08x} " + " ".join(outs))
    with open("core/tests/data/ml_dtypes_reference.txt", "w") as f:
        f.write(f"# ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}; see scripts/gen-float-reference.py\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
