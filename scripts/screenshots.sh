#!/usr/bin/env bash
# The identify and validate reports in a real browser, before and after
# #81 (figures a paper can use), into docs/screenshots: the same inputs
# (the PLS paper's cable-arm data; the contact paper's stick session,
# synthesised with seed 3) reported by the binary BEFORE (a build of the
# commit before #81, e.g. `git worktree add /tmp/old ee46963 && cargo build
# --bin rodlab` there) and by this checkout's target/debug/rodlab.
# Usage: scripts/screenshots.sh BEFORE_BINARY
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BEFORE="$1"
AFTER="$ROOT/target/debug/rodlab"
WORK="$(mktemp -d)"
cd "$ROOT"
"$AFTER" synth session --scene configs/scene/contact-paper-stick.toml --rod configs/rod/contact-paper-steel-core.toml \
  --out "$WORK/stick" --seed 3 >/dev/null
shots=()
for which in before after; do
  bin=$([ "$which" = before ] && echo "$BEFORE" || echo "$AFTER")
  "$bin" identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm --out "$WORK/$which/identify" >/dev/null
  "$bin" validate "$WORK/stick" --rod configs/rod/contact-paper-steel-core.toml --scene configs/scene/contact-paper-stick.toml \
    --out "$WORK/$which/validate" >/dev/null
  shots+=("$WORK/$which/identify/index.html" "docs/screenshots/identify-$which.png")
  shots+=("$WORK/$which/validate/index.html" "docs/screenshots/validate-$which.png")
done
"$ROOT/.venv/bin/python" scripts/screenshots.py "${shots[@]}"
rm -rf "$WORK"
