#!/usr/bin/env bash
# Writes DIR/reports.html: the demo's reports by part, each with what it
# shows and what to read first (every index.html under DIR is listed).
set -euo pipefail
dir=${1:?usage: demo-index.sh REPORTS_DIR}
title_of() { sed -n 's:.*<title>\(.*\)</title>.*:\1:p' "$1" | head -n 1; }
section() { # heading, text, then the reports under the given paths
  local heading=$1 text=$2; shift 2
  echo "<h2>$heading</h2><p>$text</p><ul>"
  for p in "$@"; do
    (cd "$dir" && find "$p" -name index.html 2>/dev/null | sort) | while read -r f; do
      echo "<li><a href=\"$f\">$f</a>: $(title_of "$dir/$f")</li>"
    done
  done
  echo "</ul>"
}
{
  echo '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>rodlab demo: its reports</title>'
  echo '<style>body{font-family:sans-serif;max-width:900px;margin:2em auto;color:#222}p{line-height:1.4}</style></head><body>'
  echo '<h1>rodlab demo: its reports</h1>'
  section "1. The PLS paper's arm: identification on the paper's data" \
    "Read this first: the paper gives its arm's length, radii and cable positions but no drawing (the sensor's hole is not sized), so <code>configs/rod/pls-cable-arm.toml</code> assumes a solid cone with the cables on its surface. On that assumed arm the paper's own values (E 2.563e5 Pa, G 8.543e4 Pa, rho 1.41e3 kg/m^3) miss the measured tips by tens of millimetres and find no equilibrium for one experiment: the report's first paragraph gives the figures. The identified values (E about three times the paper's, a density no silicone has) are what this assumed geometry needs to fit the data, not the specimen's material; the variants' table shows which geometry corrections bring them back, and the leave-one-out errors how well each predicts. The paper's Tables II and III (its cantilever, known geometry) are reproduced by <code>rodlab paper-table</code> (printed by the demo)." \
    index.html
  section "2. Tracking" \
    "A board calibration and a synthetic video with an occluded marker, tracked; a few annotated frames are in <code>track/overlay/</code> (one in twenty)." \
    track
  section "3. A virtual lab day" \
    "Sessions recorded live through the device emulators (RTDE robot, FT 300 that nobody zeroed, load cells, a rendered camera), identified, then validated against the contact paper's stick and slide experiments; friction and damping from motion." \
    lab-day
  section "4. A motion-capture lab" \
    "A clamped beam with hung masses, tracked by motion capture (C3D files of two vendors' conventions), identified and validated." \
    mocap
  echo '<h2>Everything else</h2><ul>'
  (cd "$dir" && find . -mindepth 2 -name index.html | sed 's:^\./::' | { grep -v -E '^(track|lab-day|mocap)/' || true; } | sort) | while read -r f; do
    echo "<li><a href=\"$f\">$f</a>: $(title_of "$dir/$f")</li>"
  done
  echo '</ul></body></html>'
} > "$dir/reports.html"
