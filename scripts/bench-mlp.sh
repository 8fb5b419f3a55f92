#!/usr/bin/env bash
# Benchmark, not a test: MLP training throughput, dlsys-lab vs NumPy, same
# machine, same run: ROUNDS alternating rounds of each (default 3), medians.
# Installs NumPy if it is missing. EPOCHS=N epochs per round (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy
cargo bench -q -p dlsys-core --bench mlp_epoch --no-run 2>/dev/null
rounds=${ROUNDS:-3}
ours=()
theirs=()
for _ in $(seq "$rounds"); do
  out=$(cargo bench -q -p dlsys-core --bench mlp_epoch 2>/dev/null)
  echo "$out" | grep -v SAMPLES_PER_SECOND
  ours+=("$(echo "$out" | awk '/SAMPLES_PER_SECOND/ {print $2}')")
  out=$(python3 scripts/bench_mlp_numpy.py assets/data/mnist10k.dlds)
  echo "$out" | grep -v SAMPLES_PER_SECOND
  theirs+=("$(echo "$out" | awk '/SAMPLES_PER_SECOND/ {print $2}')")
done
python3 - "${ours[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
ours = [float(x) for x in sys.argv[1].split()]
theirs = [float(x) for x in sys.argv[2].split()]
a, b = statistics.median(ours), statistics.median(theirs)
print(f"median over {len(ours)} rounds: dlsys-lab {a:.0f} samples/s, NumPy {b:.0f} samples/s")
print(f"ratio dlsys-lab / NumPy = {a / b:.2f}x (> 1 means dlsys-lab is faster)")
PY
