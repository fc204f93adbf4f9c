#!/usr/bin/env bash
# make test-ha: builds engram's production topology on this machine from
# Debian's packages — a primary and a streaming replica (synchronous, WAL
# archived, a base backup taken) on ports of their own, PgBouncer in
# transaction and session mode in front of the primary, a port for a
# restored cluster — runs the scenarios of internal/hatest against it, and
# tears everything down. Loopback only. Idempotent: a run left behind by a
# killed one is cleared first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/local/go/bin"

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
BASE=${ENGRAM_HA_DIR:-/tmp/engram-ha}
PRIMARY_PORT=${ENGRAM_HA_PRIMARY_PORT:-5441}
REPLICA_PORT=${ENGRAM_HA_REPLICA_PORT:-5442}
BOUNCER_PORT=${ENGRAM_HA_BOUNCER_PORT:-6441}
RESTORE_PORT=${ENGRAM_HA_RESTORE_PORT:-5443}

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

if ! command -v pgbouncer >/dev/null; then
	echo "== installing pgbouncer (Debian)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
	# The package starts its own service on 6432; this run uses its own.
	service pgbouncer stop >/dev/null 2>&1 || true
fi

teardown() {
	for d in "$BASE/primary" "$BASE/replica" "$BASE/restored"; do
		[ -f "$d/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
	done
	if [ -f "$BASE/pgbouncer.pid" ]; then kill "$(cat "$BASE/pgbouncer.pid")" 2>/dev/null || true; fi
	rm -rf "$BASE"
}
teardown
trap teardown EXIT
mkdir -p "$BASE/wal"
chown -R postgres: "$BASE" 2>/dev/null || true

echo "== primary on 127.0.0.1:$PRIMARY_PORT"
as_pg "$PGBIN/initdb" -D "$BASE/primary" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
cat >>"$BASE/primary/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PRIMARY_PORT
unix_socket_directories = '$BASE'
wal_level = replica
max_wal_senders = 5
archive_mode = on
archive_command = 'cp %p $BASE/wal/%f'
shared_buffers = 64MB
max_connections = 100
CONF
as_pg "$PGBIN/pg_ctl" -D "$BASE/primary" -l "$BASE/primary.log" -w start >/dev/null
as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres engram
# Behind a transaction pooler no startup parameter passes: the database
# sets pgvector's iterative scans itself (docs/operations.md).
as_pg "$PGBIN/psql" -qX -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -d engram \
	-c "ALTER DATABASE engram SET hnsw.iterative_scan = 'relaxed_order'" >/dev/null

# The night's base backup: with the WAL archive, it restores the database
# to any later point in time (the restore scenario).
echo "== base backup in $BASE/base"
as_pg "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$BASE/base" -X stream -c fast >/dev/null

echo "== replica on 127.0.0.1:$REPLICA_PORT (pg_basebackup, synchronous)"
as_pg "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$BASE/replica" -R -X stream -c fast >/dev/null
cat >>"$BASE/replica/postgresql.auto.conf" <<CONF
port = $REPLICA_PORT
primary_conninfo = 'host=127.0.0.1 port=$PRIMARY_PORT user=postgres application_name=replica1'
archive_mode = off
CONF
as_pg "$PGBIN/pg_ctl" -D "$BASE/replica" -l "$BASE/replica.log" -w start >/dev/null
# Synchronous once the standby is there: a commit is acknowledged only when
# the replica has its WAL, so a failover loses no acknowledged write.
as_pg "$PGBIN/psql" -qX -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -d engram \
	-c "ALTER SYSTEM SET synchronous_standby_names = 'replica1'" -c "SELECT pg_reload_conf()" >/dev/null

echo "== pgbouncer on 127.0.0.1:$BOUNCER_PORT (pool_mode = transaction; engram_session in session mode)"
cat >"$BASE/pgbouncer.ini" <<CONF
[databases]
engram = host=127.0.0.1 port=$PRIMARY_PORT dbname=engram
; The same database in session mode: a server connection per client
; connection, for as long as it lasts.
engram_session = host=127.0.0.1 port=$PRIMARY_PORT dbname=engram pool_mode=session pool_size=40
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $BASE/userlist.txt
pool_mode = transaction
max_client_conn = 200
default_pool_size = 10
pidfile = $BASE/pgbouncer.pid
logfile = $BASE/pgbouncer.log
CONF
echo '"postgres" ""' >"$BASE/userlist.txt"
chown postgres: "$BASE/pgbouncer.ini" "$BASE/userlist.txt" 2>/dev/null || true
if [ "$(id -u)" = 0 ]; then pgbouncer -d -u postgres "$BASE/pgbouncer.ini"; else pgbouncer -d "$BASE/pgbouncer.ini"; fi

echo "== scenarios"
go build -o "$BASE/bin/" ./cmd/engramd
ENGRAM_HA_BIN="$BASE/bin/engramd" ENGRAM_HA_DIR="$BASE" PGBIN="$PGBIN" ENGRAM_HA_RESTORE_PORT="$RESTORE_PORT" \
ENGRAM_HA_PRIMARY="postgres://postgres@127.0.0.1:$PRIMARY_PORT/engram?sslmode=disable" \
ENGRAM_HA_REPLICA="postgres://postgres@127.0.0.1:$REPLICA_PORT/engram?sslmode=disable" \
ENGRAM_HA_BOUNCER="postgres://postgres@127.0.0.1:$BOUNCER_PORT/engram?sslmode=disable" \
ENGRAM_HA_BOUNCER_SESSION="postgres://postgres@127.0.0.1:$BOUNCER_PORT/engram_session?sslmode=disable" \
	timeout 480 go test -tags ha -count=1 -v -timeout 7m ./internal/hatest/
