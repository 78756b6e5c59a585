#!/usr/bin/env bash
# `make test` after the system set-up: every test of the workspace, then
# the Python package's. With cargo-nextest where it is installed (every
# test its own process; .config/nextest.toml): the computing tests two at
# a time, then the recordings six at a time beside the live virtual-lab
# days one at a time, then the doc tests; else cargo test. Both passes run
# before a failure is reported.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
# The venv is made while the tests compile: pip unpacks and compiles its
# modules (about 37 s on a fresh clone), the build keeps both cores busy
# for minutes either way, and no test runs before both are done.
bash scripts/setup.sh python > target/setup-python.log 2>&1 &
venv=$!
finish_venv() {
  wait "$venv" || { cat target/setup-python.log >&2; exit 1; }
  cat target/setup-python.log >&2
}
set -x
if command -v cargo-nextest >/dev/null 2>&1; then
  # --timings: where a cold build's minutes go, kept in
  # target/cargo-timings/ (the build budget of #82).
  cargo nextest run --workspace --locked --no-run --timings
  built=$?
  finish_venv
  [ "$built" = 0 ] || exit "$built"
  cargo nextest run --workspace --locked --profile computing
  computing=$?
  cargo nextest run --workspace --locked --profile recordings
  recordings=$?
  { [ "$computing" = 0 ] && [ "$recordings" = 0 ]; } || exit 1
  # Not the benchmarks' crates: their doc tests are none, and cargo would
  # compile criterion for them (13 s).
  cargo test --workspace --locked --doc --exclude rodlab-bench --exclude rodlab-bench-lab || exit 1
else
  cargo test --workspace --locked --no-run
  built=$?
  finish_venv
  [ "$built" = 0 ] || exit "$built"
  cargo test --workspace --locked -- --nocapture || exit 1
fi
# The Python package (python/): built into .venv, its pytest suite run.
bash scripts/python-tests.sh
