#!/bin/sh
# tests/tools/pg/cluster.sh - a throwaway PostgreSQL cluster for the tests, the
# way integrations.md section 5 describes it: initdb and pg_ctl as an
# unprivileged user (postgres when run as root: the server refuses root),
# listening only on a Unix socket in DIR (no TCP port, so clusters of
# parallel tests never collide), password authentication (scram-sha-256)
# for the role runmon, whose password is in DIR/pgpass (mode 0600).
#
#   cluster.sh start DIR   starts it; prints the URI of database runmon
#                          (no password in it: PGPASSFILE=DIR/pgpass gives it)
#   cluster.sh stop DIR    stops it (fast shutdown) and removes DIR
set -eu
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || {
	echo "cluster.sh: PostgreSQL is not installed (Debian: apt-get install postgresql)" >&2
	exit 1
}
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
dir=$2
case $1 in
start)
	mkdir -p "$dir"
	chmod 700 "$dir"
	[ "$(id -u)" != 0 ] || chown postgres "$dir"
	password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	printf '%s\n' "$password" >"$dir/pw"
	[ "$(id -u)" != 0 ] || chown postgres "$dir/pw"
	as_owner "$bin/initdb" -D "$dir/data" -U runmon -A scram-sha-256 --pwfile="$dir/pw" -E UTF8 --locale=C.UTF-8 \
		>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
	rm -f "$dir/pw"
	as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-k $dir -p 5432 -c listen_addresses= -c fsync=off -c max_connections=60" start >/dev/null \
		|| { cat "$dir/server.log" >&2; exit 1; }
	printf '*:*:*:runmon:%s\n' "$password" >"$dir/pgpass"
	chmod 600 "$dir/pgpass"
	PGPASSFILE=$dir/pgpass "$bin/psql" -X -q -h "$dir" -p 5432 -U runmon -d postgres -c "CREATE DATABASE runmon" \
		|| { cat "$dir/server.log" >&2; exit 1; }
	echo "postgresql://runmon@/runmon?host=$dir&port=5432"
	;;
stop)
	as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$dir"
	;;
*)
	echo "usage: cluster.sh start|stop DIR" >&2
	exit 2
	;;
esac
