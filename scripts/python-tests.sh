#!/usr/bin/env bash
# The Python package's tests (part of `make test`): builds the extension
# module with maturin into the project's venv (.venv, made by setup.sh) as
# an editable install, with cargo's dev profile, so that it reuses what
# `cargo build` / the Rust tests compiled (only pyo3 and the module itself
# compile here), then runs pytest on python/tests (arguments go to pytest,
# one run of them all; --build-only: build and install, no tests).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv"
if ! "$VENV/bin/python" -c "import maturin, numpy, polars, pytest" >/dev/null 2>&1; then
  echo "python-tests: SKIPPED: $VENV lacks maturin, numpy, polars or pytest (setup.sh could not install them)" >&2
  exit 0
fi
export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
cd "$ROOT/python"
# Stored, not deflated: the editable wheel is unpacked here and never
# shipped, and deflating its 240 MB module took 9 of 15 s (measured).
maturin develop --locked --quiet --compression-method stored
cd "$ROOT"
if [ "${1:-}" = "--build-only" ]; then exit 0; fi
if [ $# -gt 0 ] || ! python -c "import xdist" >/dev/null 2>&1; then
  exec python -m pytest -q python/tests "$@"
fi
# The tests that keep time (marked `realtime`: recordings from the
# emulators, a timed Ctrl-C) alone first, then the rest two at a time
# (pytest-xdist; about one core busy when they ran one by one). Both run
# before a failure is reported.
alone=0
python -m pytest -q -m realtime python/tests || alone=$?
paired=0
python -m pytest -q -n 2 -m "not realtime" python/tests || paired=$?
[ "$alone" = 0 ] && [ "$paired" = 0 ]
