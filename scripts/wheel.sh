#!/usr/bin/env bash
# `make wheel`: the Python package as one abi3 wheel (CPython 3.9 and
# later) that carries the device build (recording, tracking, calibration,
# the emulators), into target/wheels. A colleague's `pip install
# rodlab-*.whl` needs no cargo; the machine needs OpenCV's shared
# libraries (libopencv-dev, or the runtime packages it pulls in), as the
# binary does. Built with cargo's dev profile (the physics optimised), the
# one `make test` compiled: after it, maturin only links and packs.
# Arguments go to `maturin build` (`--auditwheel skip`: without bundling
# OpenCV, 5 MB, for machines that have it); WHEEL_OUT: where it goes.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv"
export PATH="$VENV/bin:$HOME/.cargo/bin:$PATH" VIRTUAL_ENV="$VENV"
started=$(date +%s)
cd "$ROOT/python"
echo "wheel: building (cargo's progress below)" >&2
OUT="${WHEEL_OUT:-$ROOT/target/wheels}"
maturin build --locked --strip --out "$OUT" "$@"
wheel=$(ls -t "$OUT"/rodlab-*.whl | head -n 1)
echo "wheel: $wheel ($(( $(stat -c %s "$wheel") / 1048576 )) MB) in $(( $(date +%s) - started )) s" >&2
