#!/bin/sh
# Runs a command beside a throwaway PostgreSQL cluster (cluster.sh):
# RUNMON_TEST_PG holds the URI of its database runmon, PGPASSFILE the
# password. The cluster is stopped and removed however the command ends.
# Usage: with_cluster.sh COMMAND [ARG...]
set -eu
here=$(dirname "$0")
dir=$(mktemp -d /tmp/rmpg.XXXXXX) # short: a socket path holds 107 bytes
trap 'sh "$here/cluster.sh" stop "$dir"' EXIT
RUNMON_TEST_PG=$(sh "$here/cluster.sh" start "$dir")
PGPASSFILE=$dir/pgpass
export RUNMON_TEST_PG PGPASSFILE
"$@"
