#!/usr/bin/env bash
# Writes DIR/reports.html: one page linking every report (index.html) under DIR.
set -euo pipefail
dir=${1:?usage: demo-index.sh REPORTS_DIR}
{
  echo '<!doctype html><html><head><meta charset="utf-8"><title>rodlab demo: every report</title></head><body>'
  echo '<h1>rodlab demo: every report</h1><ul>'
  (cd "$dir" && find . -name index.html | sort) | while read -r f; do
    echo "<li><a href=\"${f#./}\">${f#./}</a></li>"
  done
  echo '</ul></body></html>'
} > "$dir/reports.html"
