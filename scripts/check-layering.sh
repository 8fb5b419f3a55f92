#!/usr/bin/env bash
# The arrows only point down: app → lessons → shaders → core.
# Fails if the pure core reaches a UI or GPU crate, or the GPU crate reaches egui.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
core=$(cargo tree -p dlsys-core -e normal --prefix none --locked)
if grep -Eq '^(egui|eframe|egui_plot|egui_extras|wgpu|naga)( |$)' <<<"$core"; then
  echo "layering: dlsys-core depends on a UI or GPU crate:" >&2
  grep -E '^(egui|eframe|egui_plot|egui_extras|wgpu|naga)( |$)' <<<"$core" | sort -u >&2
  fail=1
fi
shaders=$(cargo tree -p dlsys-shaders -e normal --prefix none --locked)
if grep -Eq '^(egui|eframe|egui_plot|egui_extras|egui-wgpu)( |$)' <<<"$shaders"; then
  echo "layering: dlsys-shaders depends on egui:" >&2
  grep -E '^(egui|eframe|egui_plot|egui_extras|egui-wgpu)( |$)' <<<"$shaders" | sort -u >&2
  fail=1
fi
lessons=$(cargo tree -p dlsys-lessons -e normal --prefix none --locked)
if grep -Eq '^(eframe|dlsys-lab)( |$)' <<<"$lessons"; then
  echo "layering: dlsys-lessons depends on the app shell (eframe / dlsys-lab)" >&2
  fail=1
fi
[ "$fail" = 0 ] && echo "layering: ok (core: no egui/wgpu; shaders: no egui; lessons: no eframe)"
exit "$fail"
