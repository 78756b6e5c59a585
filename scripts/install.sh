#!/usr/bin/env bash
# `make install`: a `rodlab` that can do every command, on the PATH. The
# binary loads its device build (OpenCV, the device drivers:
# librodlab_devices.so) and its tracking build (librodlab_tracking.so) from
# beside itself, so the three go into one directory, PREFIX/lib/rodlab,
# and PREFIX/bin/rodlab links to the binary there. The build is the one
# `make test` and `make demo` use (cargo's dev profile, the physics
# optimised): after them, nothing compiles. (`cargo install --path
# crates/cli` installs the binary alone: its device commands then say
# which library they miss.)
# Usage: scripts/install.sh [PREFIX]   (default: $HOME/.local)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PREFIX="${1:-${PREFIX:-$HOME/.local}}"
export PATH="$HOME/.cargo/bin:$PATH"
started=$(date +%s)
cd "$ROOT"
echo "install: building rodlab and its device and tracking builds (cargo's progress below; nothing to compile after make test)" >&2
cargo build --locked --workspace
LIB="$PREFIX/lib/rodlab"
mkdir -p "$LIB" "$PREFIX/bin"
for f in rodlab librodlab_devices.so librodlab_tracking.so; do
  install -m 755 "target/debug/$f" "$LIB/$f.new"
  mv -f "$LIB/$f.new" "$LIB/$f"
done
ln -sfn "$LIB/rodlab" "$PREFIX/bin/rodlab"
echo "install: $PREFIX/bin/rodlab -> $LIB (with librodlab_devices.so, librodlab_tracking.so) in $(( $(date +%s) - started )) s" >&2
case ":$PATH:" in
  *":$PREFIX/bin:"*) ;;
  *) echo "install: add $PREFIX/bin to your PATH (export PATH=\"$PREFIX/bin:\$PATH\")" >&2 ;;
esac
