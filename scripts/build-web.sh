#!/usr/bin/env bash
# Builds the browser bundle into web/dist: the app as WebAssembly (profile
# `web`: optimised for size), wasm-bindgen's JS glue, index.html, and the
# MNIST file the trainer fetches on demand. Works offline once crates and
# wasm-bindgen-cli are present; installs the pinned wasm-bindgen-cli if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=web/dist
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if ! wasm-bindgen --version 2>/dev/null | grep -q " $version\$"; then
  echo "installing wasm-bindgen-cli $version (matches Cargo.lock)"
  # A debug build: it installs in about 80 s instead of 180 s on 2 cores and
  # writes the same bytes, in about 6 s instead of 1.5 s on this bundle.
  cargo install --debug wasm-bindgen-cli --version "$version"
fi
cargo build --locked --profile web --target wasm32-unknown-unknown -p dlsys-lab --bin dlsys-lab
rm -rf "$out"
mkdir -p "$out/assets/data" "$out/assets/fonts"
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name dlsys-lab \
  target/wasm32-unknown-unknown/web/dlsys-lab.wasm
# wasm-opt from npm's binaryen (Debian's binaryen 108 breaks the bundle).
# -O1: on this bundle npm's binaryen took over 10 minutes at -Oz and -Os
# (single-threaded JS) and 61 s at -O1, for 7.3 MiB / 2.9 MiB gzipped.
if [ ! -x web/test/node_modules/.bin/wasm-opt ]; then
  (cd web/test && npm ci --no-audit --no-fund)
fi
web/test/node_modules/.bin/wasm-opt -O1 --enable-bulk-memory --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
  "$out/dlsys-lab_bg.wasm" -o "$out/dlsys-lab_bg.wasm"
wasm=$(stat -c %s "$out/dlsys-lab_bg.wasm")
# The page shows download progress against the wasm's real size.
sed "s/{{WASM_BYTES}}/$wasm/" web/index.html >"$out/index.html"
cp assets/data/mnist10k.dlds "$out/assets/data/"
# The Chinese font, fetched when Chinese is first chosen.
cp assets/fonts/NotoSansSC-dlsys.otf "$out/assets/fonts/"
# Precompressed copies for web/serve.py (or any server that serves .br/.gz).
node -e '
  const fs = require("fs"), zlib = require("zlib");
  for (const file of process.argv.slice(1)) {
    const data = fs.readFileSync(file);
    fs.writeFileSync(file + ".gz", zlib.gzipSync(data, { level: 9 }));
    fs.writeFileSync(file + ".br", zlib.brotliCompressSync(data, {
      params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length } }));
  }' "$out/dlsys-lab_bg.wasm" "$out/dlsys-lab.js" "$out/index.html" "$out/assets/fonts/NotoSansSC-dlsys.otf"
gz=$(stat -c %s "$out/dlsys-lab_bg.wasm.gz")
br=$(stat -c %s "$out/dlsys-lab_bg.wasm.br")
echo "web bundle in $out: wasm $((wasm / 1024)) KiB, $((gz / 1024)) KiB gzipped, $((br / 1024)) KiB brotli"
# The first load's budget (the Chinese font is fetched on demand, so it is
# not part of it): every change must keep the wasm within it. What a learner
# downloads is the brotli file (web/serve.py, or any server that sends
# precompressed files): 2.27 MB with the twelfth lesson, 3.1 s to the first
# frame at 10 Mbit/s (README). A lesson adds about 45 KB gzipped. Raised from
# 3,000,000 gzipped when the inference lesson crossed it (room for the four
# lessons after it, all landed: 3,305 KiB gzipped, 2,532 KiB brotli), then
# from 3,400,000 gzipped / 2,600,000 brotli by the study companion (the
# Progress page, the progress file read and written as JSON, the search
# index: +75 KiB gzipped, +51 KiB brotli), leaving room for about three
# lessons more.
if [ "$wasm" -gt 9400000 ] || [ "$gz" -gt 3600000 ] || [ "$br" -gt 2750000 ]; then
  echo "error: the wasm is $wasm bytes ($gz gzipped, $br brotli); the limit is 9,400,000 (3,600,000 gzipped, 2,750,000 brotli)" >&2
  exit 1
fi
echo "serve it: python3 web/serve.py $out 8080, then open http://127.0.0.1:8080/"
