#!/bin/sh
# The dashboard's SQL on a database filled by runmon simulate and diagnose.
# Usage: dashboards.sh RUNMON DASHBOARD.json
set -eu
. "$(dirname "$0")/common.sh"
"$1" --db "$tmp/d.db" simulate --strategy chunked --steps 3000 --spikes bucket --run homog >/dev/null
"$1" --db "$tmp/d.db" simulate --strategy interleaved --steps 3000 --run "it's-interleaved" >/dev/null
"$1" --db "$tmp/d.db" diagnose homog >/dev/null || true
"$1" --db "$tmp/d.db" diagnose "it's-interleaved" >/dev/null || true
python3 "$(dirname "$0")/dashboards.py" "$2" "$tmp/d.db" homog "it's-interleaved"
