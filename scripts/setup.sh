#!/usr/bin/env bash
# Installs what rodlab needs on a Debian machine, idempotently and quietly
# when everything is already there. Run as root (or with sudo available).
set -euo pipefail

# System packages: clang/libclang + pkg-config for the OpenCV bindings,
# OpenCV itself, fontconfig for plotters, socat for serial-port tests,
# chromium for the report rendering test.
PACKAGES=(pkg-config clang libclang-dev libopencv-dev libfontconfig-dev socat chromium)

missing=()
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

if ! command -v cargo >/dev/null 2>&1; then
  for d in "$HOME/.cargo/bin" /usr/local/cargo/bin; do
    if [ -x "$d/cargo" ]; then export PATH="$d:$PATH"; fi
  done
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install the Rust toolchain (rustup) first" >&2
  exit 1
fi
