#!/usr/bin/env bash
# Benchmark, not a test: every kernel on the default adapter (dlsys-lab bench
# kernels), then NumPy's softmax on the same CPU and the *same data*, and the
# ratio of the best WGSL softmax to NumPy. ROWS, COLS and TRIALS can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${ROWS:-4096}
cols=${COLS:-1024}
trials=${TRIALS:-10}
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy
cargo build -q --release -p dlsys-lab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./target/release/dlsys-lab bench kernels --rows "$rows" --cols "$cols" --trials "$trials" --dump-input "$tmp/x.bin" --json > "$tmp/ours.json" || true
./target/release/dlsys-lab bench kernels --rows "$rows" --cols "$cols" --trials "$trials" 2>/dev/null | tail -n +1
python3 - "$tmp/x.bin" "$tmp/ours.json" "$rows" "$cols" "$trials" <<'PY'
import json, sys, time
import numpy as np
path, ours_path, rows, cols, trials = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
x = np.fromfile(path, dtype="<f4").reshape(rows, cols)
def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
softmax(x)
times = []
for _ in range(trials):
    t = time.perf_counter()
    softmax(x)
    times.append(time.perf_counter() - t)
numpy_ms = sorted(times)[len(times) // 2] * 1e3
ours = json.load(open(ours_path))
best = ours["summary"]["best_softmax"]
best_ms = ours["summary"]["best_softmax_ms"]
print()
print(f"NumPy {np.__version__} softmax {rows}x{cols}: {numpy_ms:.3f} ms (median of {trials})")
print(f"best WGSL softmax ({best}) on {ours['adapter']}: {best_ms:.3f} ms")
print(f"ratio best WGSL / NumPy = {numpy_ms / best_ms:.2f}x (> 1 means the WGSL kernel is faster)")
PY
