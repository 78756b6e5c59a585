#!/usr/bin/env bash
# The Python package's tests (part of `make test`): builds the extension
# module with maturin into the project's venv (.venv, made by setup.sh) as
# an editable install, with cargo's dev profile, so that it reuses what
# `cargo build` / the Rust tests compiled (only pyo3 and the module itself
# compile here), then runs pytest on python/tests (arguments go to pytest;
# --build-only: build and install, no tests).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv"
if ! "$VENV/bin/python" -c "import maturin, numpy, polars, pytest" >/dev/null 2>&1; then
  echo "python-tests: SKIPPED: $VENV lacks maturin, numpy, polars or pytest (setup.sh could not install them)" >&2
  exit 0
fi
export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
cd "$ROOT/python"
maturin develop --locked --quiet
cd "$ROOT"
if [ "${1:-}" = "--build-only" ]; then exit 0; fi
python -m pytest -q python/tests "$@"
