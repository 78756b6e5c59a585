#!/usr/bin/env bash
# A short dry-run recording from the emulators: RTDE robot on loopback, FT 300
# and an ASCII load cell behind socat pty pairs (configs/rig/emulated.toml).
# Usage: scripts/dry-run.sh [OUT_DIR [SECONDS [RODLAB]]]
#   OUT_DIR  session directory to write (default sessions/dry-run)
#   SECONDS  how long to record (default 3)
#   RODLAB   the binary (default target/debug/rodlab, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-sessions/dry-run}; SECONDS_TO_RECORD=${2:-3}; RODLAB=${3:-target/debug/rodlab}
if [ ! -x "$RODLAB" ]; then cargo build --workspace --locked --quiet; fi
pids=()
# Newest first: the emulators stop before the pty pairs they write to, or
# each would report its port's broken pipe as an error.
cleanup() { for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; wait "${pids[i]}" 2>/dev/null || true; done; }
trap cleanup EXIT
"$RODLAB" emulate robot --bind 127.0.0.1:30004 > /dev/null & pids+=($!)
for s in ft300 ascii; do
  rm -f /tmp/rodlab-$s-a /tmp/rodlab-$s-b
  socat pty,raw,echo=0,link=/tmp/rodlab-$s-a pty,raw,echo=0,link=/tmp/rodlab-$s-b 2>/dev/null & pids+=($!)
done
for _ in $(seq 100); do [ -e /tmp/rodlab-ft300-b ] && [ -e /tmp/rodlab-ascii-b ] && break; sleep 0.05; done
"$RODLAB" emulate ft300 --port /tmp/rodlab-ft300-a > /dev/null & pids+=($!)
"$RODLAB" emulate ascii-sensor --port /tmp/rodlab-ascii-a > /dev/null & pids+=($!)
sleep 0.5
rm -rf "$OUT"
"$RODLAB" record --rig configs/rig/emulated.toml --out "$OUT" --duration "$SECONDS_TO_RECORD"
"$RODLAB" session info "$OUT"
"$RODLAB" session check "$OUT"
