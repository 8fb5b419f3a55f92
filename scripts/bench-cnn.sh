#!/usr/bin/env bash
# Benchmark, not a test: one CNN training epoch (8,000 MNIST images, batch
# 16), dlsys-lab's engine vs the same network in NumPy with im2col, same
# machine, same run: ROUNDS alternating rounds of each (default 3), medians
# of the training time (evaluation not counted). Installs NumPy if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy
cargo build -q --release -p dlsys-lab
rounds=${ROUNDS:-3}
ours=()
theirs=()
for _ in $(seq "$rounds"); do
  line=$(./target/release/dlsys-lab train --model cnn --epochs 1 --json | head -1)
  seconds=$(python3 - "$line" <<'PY'
import json, sys
e = json.loads(sys.argv[1])
print(f"dlsys-lab: {e['train_seconds']:.2f} s per epoch of 8000 images, test acc {100 * e['test_accuracy']:.2f}%", file=sys.stderr)
print(e["train_seconds"])
PY
)
  ours+=("$seconds")
  out=$(python3 scripts/bench_cnn_numpy.py assets/data/mnist10k.dlds)
  echo "$out" | grep -v EPOCH_SECONDS
  theirs+=("$(echo "$out" | awk '/EPOCH_SECONDS/ {print $2}')")
done
python3 - "${ours[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
ours = [float(x) for x in sys.argv[1].split()]
theirs = [float(x) for x in sys.argv[2].split()]
a, b = statistics.median(ours), statistics.median(theirs)
print(f"median over {len(ours)} rounds: dlsys-lab {a:.2f} s, NumPy {b:.2f} s per epoch")
print(f"speed ratio dlsys-lab / NumPy = {b / a:.2f}x (> 1 means dlsys-lab is faster)")
PY
