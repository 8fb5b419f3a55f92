#!/usr/bin/env bash
# Benchmark, not a test: the GEMM ladder with the FMA compute roof on the
# default adapter (dlsys-lab bench kernels --family gemm), then NumPy's
# matmul with its default threads on the same CPU and the *same A and B*,
# and the ratios: best GEMM / naive GEMM, best GEMM / NumPy. Then the
# fusion and access families for their ratios. M, N, K, TRIALS can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
m=${M:-1024}
n=${N:-1024}
k=${K:-1024}
trials=${TRIALS:-5}
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy
cargo build -q --release -p dlsys-lab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench=(./target/release/dlsys-lab bench kernels --trials "$trials")
"${bench[@]}" --family gemm --m "$m" --n "$n" --k "$k" --rows 1024 --cols 1024 \
  --dump-input "$tmp/ab.bin" --json > "$tmp/gemm.json"
python3 - "$tmp/ab.bin" "$tmp/gemm.json" "$m" "$n" "$k" "$trials" <<'PY'
import json, sys, time
import numpy as np
path, ours_path = sys.argv[1], sys.argv[2]
m, n, k, trials = (int(v) for v in sys.argv[3:7])
x = np.fromfile(path, dtype="<f4")
offset = (m * k + 3) // 4 * 4
a = x[: m * k].reshape(m, k)
b = x[offset : offset + k * n].reshape(k, n)
a @ b
times = []
for _ in range(max(trials, 5)):
    t = time.perf_counter()
    a @ b
    times.append(time.perf_counter() - t)
numpy_ms = sorted(times)[len(times) // 2] * 1e3
ours = json.load(open(ours_path))
rows = {r["kernel"]: r for r in ours["results"]}
s = ours["summary"]
flops = 2 * m * n * k
print(f"adapter: {ours['adapter']} ({ours['backend']}), timer: {ours['timer']}")
print(f"GEMM {m}x{k} by {k}x{n}, f32, median of {ours['trials']} trials:")
for kid, r in rows.items():
    if kid.startswith("gemm/") or kid == "fma":
        gf = flops / (r["median_ms"] * 1e6) if kid != "fma" else s["compute_roof_gflops"]
        print(f"  {kid:<16} {r['median_ms']:10.3f} ms  {gf:8.2f} GFLOP/s  ok={r['ok']}")
print(f"compute roof (FMA chains): {s['compute_roof_gflops']:.2f} GFLOP/s")
print(f"best GEMM {s['best_gemm']}: {s['best_gemm_gflops']:.2f} GFLOP/s = {s['best_gemm_vs_naive']:.2f}x the naive GEMM")
best_ms = rows[s["best_gemm"]]["median_ms"]
print(f"NumPy {np.__version__} matmul (default threads): {numpy_ms:.3f} ms = {flops / (numpy_ms * 1e6):.2f} GFLOP/s")
print(f"ratio best GEMM / NumPy speed = {numpy_ms / best_ms:.3f}x (> 1 means the WGSL kernel is faster)")
PY
for family in fusion access; do
  "${bench[@]}" --family "$family" --rows 4096 --cols 1024 | tail -n 4
done
