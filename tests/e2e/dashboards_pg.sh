#!/bin/sh
# The PostgreSQL dashboard's SQL on a real server (run through
# tests/tools/pg/with_cluster.sh), on runs simulated and diagnosed into SQLite and
# copied there. Usage: dashboards_pg.sh RUNMON DASHBOARDS_DIR
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"
pg=${RUNMON_TEST_PG:?run through tests/tools/pg/with_cluster.sh}
"$runmon" --db "$tmp/d.db" simulate --strategy chunked --steps 3000 --spikes bucket --run homog >/dev/null
"$runmon" --db "$tmp/d.db" simulate --strategy interleaved --steps 3000 --run "it's-interleaved" >/dev/null
"$runmon" --db "$tmp/d.db" diagnose homog >/dev/null || true
"$runmon" --db "$tmp/d.db" diagnose "it's-interleaved" >/dev/null || true
"$runmon" copy --from "$tmp/d.db" --to "$pg" --all >/dev/null
python3 "$(dirname "$0")/dashboards_pg.py" "$2/runmon-postgres.json" "$2/runmon.json" "$tmp/d.db" "$pg" \
	homog "it's-interleaved"
