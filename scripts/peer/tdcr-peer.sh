#!/usr/bin/env bash
# Regenerates datasets/tdcr-disks/disk-positions.csv: the Continuum Robotics
# Lab's subsegment Cosserat rod model of their two-segment tendon-driven
# robot (Rao, Peyron, Lilge, Burgner-Kahrs 2021, "How to model
# tendon-driven continuum robots and benchmark modelling performance"),
# built from their public code and run on the load cases of
# scripts/peer/tdcr_cases.cpp; and disk-positions-full-reaction.csv, the
# same model with each intermediate disk taking the whole pull of a tendon
# passing through it (their code drops the part along the disk's normal;
# the two lines that do so are deleted before building). Needs git, g++, Eigen and GSL
# (apt-get install libeigen3-dev libgsl-dev) and the network for the clone;
# the tests read the stored table and never run this.
#
# Usage: scripts/peer/tdcr-peer.sh [OUT_DIR]   (TDCR_REPO: a local clone instead)
#        scripts/peer/tdcr-peer.sh --time [ROUNDS]   their solve times per
#        case (CSV, seconds: cold, and warm from the previous case's
#        solution), to set beside `cargo bench -p rodlab-bench --bench statics --
#        tdcr_peer_cases` (docs/results.md, Speed)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
time_rounds=""
if [ "${1:-}" = "--time" ]; then
  time_rounds="${2:-3}"
fi
out="${1:-$here/../../datasets/tdcr-disks}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q "${TDCR_REPO:-https://github.com/SvenLilge/tdcr-modeling}" "$work/tdcr"
git -C "$work/tdcr" checkout -q 379d34a
src="$work/tdcr/c++"
build() {
  g++ -O2 -std=c++17 -I "$src/include" -I /usr/include/eigen3 "$here/tdcr_cases.cpp" "$1" -lgsl -lgslcblas -o "$work/cases"
  "$work/cases" > "$2"
  echo "wrote $2"
}
if [ -n "$time_rounds" ]; then
  g++ -O2 -std=c++17 -I "$src/include" -I /usr/include/eigen3 "$here/tdcr_cases.cpp" "$src/src/subsegmentcosseratrodmodel.cpp" -lgsl -lgslcblas -o "$work/cases"
  "$work/cases" --time "$time_rounds"
  exit 0
fi
build "$src/src/subsegmentcosseratrodmodel.cpp" "$out/disk-positions.csv"
grep -v -E '^\s*force[12] -= zi\.dot' "$src/src/subsegmentcosseratrodmodel.cpp" > "$work/full-reaction.cpp"
[ "$(grep -c 'zi.dot' "$work/full-reaction.cpp")" = 0 ] || { echo "their code changed: the disks' normal projection not found" >&2; exit 1; }
build "$work/full-reaction.cpp" "$out/disk-positions-full-reaction.csv"
