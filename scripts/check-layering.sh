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
# Inside the lessons crate the arrows point one way too: a lesson imports no
# other lesson, and the kit (what pages share) imports no lesson.
lessons_src=lessons/src
lesson_dirs=$(for d in "$lessons_src"/*/; do b=$(basename "$d"); [ "$b" = kit ] || echo "$b"; done)
for a in $lesson_dirs kit; do
  for b in $lesson_dirs; do
    [ "$a" = "$b" ] && continue
    hits=$(grep -rnE "(crate|dlsys_lessons)::$b(::|[^A-Za-z0-9_]|$)|super::super::$b(::|[^A-Za-z0-9_]|$)" "$lessons_src/$a" 2>/dev/null || true)
    if [ -n "$hits" ]; then
      if [ "$a" = kit ]; then
        echo "layering: the kit imports the lesson $b (move what it needs into kit/):" >&2
      else
        echo "layering: the lesson $a imports the lesson $b (move what they share into kit/):" >&2
      fi
      echo "$hits" >&2
      fail=1
    fi
  done
done
[ "$fail" = 0 ] && echo "layering: ok (core: no egui/wgpu; shaders: no egui; lessons: no eframe; no lesson imports another, the kit none)"
exit "$fail"
