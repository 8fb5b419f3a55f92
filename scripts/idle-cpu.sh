#!/bin/bash
# Idle CPU of dlsys-lab with the WGSL editor focused, under Xvfb, read from
# /proc/PID/stat (utime + stime over 30 s). Needs Xvfb, xdotool, imagemagick.
# Usage: scripts/idle-cpu.sh   (after `cargo build -p dlsys-lab`)
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/idle /tmp/xdg && chmod 700 /tmp/xdg
export DISPLAY=:77 XDG_RUNTIME_DIR=/tmp/xdg HOME=/tmp/idle/home
mkdir -p "$HOME"
Xvfb :77 -screen 0 1400x900x24 >/dev/null 2>&1 & X=$!
sleep 2
./target/debug/dlsys-lab --lesson write_kernels >/tmp/idle/app.log 2>&1 & A=$!
sleep 25
WIN=$(xdotool search --pid $A | tail -1)
xdotool windowfocus --sync $WIN; xdotool mousemove 700 500 click 1
sleep 1
xdotool key End
import -window root /tmp/idle/focused.png 2>/dev/null
sleep 3
tick=$(getconf CLK_TCK)
t() { awk '{print $14+$15}' /proc/$A/stat; }
a=$(t); s0=$(date +%s.%N); sleep 30; b=$(t); s1=$(date +%s.%N)
python3 -c "print(f'idle CPU over {($s1-$s0):.1f} s: {100*($b-$a)/$tick/($s1-$s0):.2f} % of one core')"
kill $A $X
