#!/usr/bin/env bash
# Make sure a local PostgreSQL with pgvector is answering on 127.0.0.1:5432 and
# that the project's databases exist. Called by `make db` (and so by `make test`
# and `make run`). Safe to run any number of times: when everything is already
# there it prints one line and takes a fraction of a second.
#
#   1. PostgreSQL: use a server already answering on 127.0.0.1:5432; else start a
#      stopped local cluster on port 5432; else apt-get install postgresql, give
#      it trust auth on loopback and start it.
#   2. pgvector: if the server cannot offer the `vector` extension, build it from
#      Debian trixie's source package (bookworm does not package it) against the
#      running server's major version and install it.
#   3. Databases: create the ones named by DATABASE_URL and TEST_DATABASE_URL.
#      The `vector` extension itself is created by the project's migrations.
#
# Env: DATABASE_URL, TEST_DATABASE_URL (defaults below). URLs that do not point
# at 127.0.0.1:5432 or localhost:5432 are left alone (the note says so).
set -euo pipefail

DEFAULT_DATABASE_URL='postgres://postgres@127.0.0.1:5432/engram?sslmode=disable'
DEFAULT_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/engram_test?sslmode=disable'
DATABASE_URL=${DATABASE_URL:-$DEFAULT_DATABASE_URL}
TEST_DATABASE_URL=${TEST_DATABASE_URL:-$DEFAULT_TEST_DATABASE_URL}

PGHOST_LOCAL=127.0.0.1
PGPORT_LOCAL=${DEVDB_PORT:-5432}   # another port only for testing this script
PGVECTOR_SUITE=${PGVECTOR_SUITE:-trixie}
LOCK_FILE=${TMPDIR:-/tmp}/engram-devdb.lock

export DEBIAN_FRONTEND=noninteractive
export PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-5}
# Do not let libpq pick up a caller's PG* settings for the admin connection.
unset PGHOST PGPORT PGDATABASE PGUSER PGSERVICE PGSERVICEFILE PGHOSTADDR

WORK=""   # temporary directory of a pgvector build, removed on exit
LOG=""    # log of the current noisy step, shown on failure

say() { printf 'devdb: %s\n' "$*"; }
die() {
	printf 'devdb: ERROR: %s\n' "$*" >&2
	if [[ -n $LOG && -s $LOG ]]; then
		printf 'devdb: last lines of %s (kept):\n' "$LOG" >&2
		tail -n 25 "$LOG" | sed 's/^/    /' >&2
		LOG=""
	fi
	exit 1
}
cleanup() {
	if [[ -n $WORK ]]; then rm -rf -- "$WORK"; fi
	if [[ -n $LOG ]]; then rm -f -- "$LOG"; fi
}
trap cleanup EXIT

# Runs a command as root. Also closes fd 9 (the lock, see below) for it, so that a
# server it starts (pg_ctlcluster, a package's postinst) does not hold the lock.
as_root() {
	if [[ $EUID -eq 0 ]]; then
		"$@" 9>&-
	elif command -v sudo >/dev/null 2>&1; then
		sudo -n "$@" 9>&- || die "needs root for: $* (sudo -n failed; run as root or configure sudo)"
	else
		die "needs root for: $*"
	fi
}

# run CMD... with its output going to $LOG; on failure die with MSG ($1).
logged() {
	local msg=$1
	shift
	"$@" >>"$LOG" 2>&1 || die "$msg"
}

# ---------------------------------------------------------------- URLs --------

LOCAL_DBS=()   # database names to create
ADMIN_URL=""   # connection to the local server's `postgres` database

# Accept postgres[ql]://[user[:pw]@]host[:port]/dbname[?query] on 127.0.0.1 or
# localhost, port 5432. Sets DB_NAME and ADMIN_URL (first local URL wins).
local_db_of() {
	local url=$1
	local re='^postgres(ql)?://([^@/]*@)?([^:/?]+)(:([0-9]+))?/([^?/]+)(\?.*)?$'
	[[ $url =~ $re ]] || return 1
	local userinfo=${BASH_REMATCH[2]-} host=${BASH_REMATCH[3]} port=${BASH_REMATCH[5]:-5432}
	local query=${BASH_REMATCH[7]-}
	DB_NAME=${BASH_REMATCH[6]}
	[[ ($host == 127.0.0.1 || $host == localhost) && $port == "$PGPORT_LOCAL" ]] || return 1
	[[ $DB_NAME =~ ^[A-Za-z_][A-Za-z0-9_-]*$ ]] ||
		die "database name '$DB_NAME' in $url: use letters, digits, _ and - only"
	if [[ -z $ADMIN_URL ]]; then
		ADMIN_URL="postgres://${userinfo}${PGHOST_LOCAL}:${PGPORT_LOCAL}/postgres${query}"
	fi
}

for var in DATABASE_URL TEST_DATABASE_URL; do
	if local_db_of "${!var}"; then
		[[ " ${LOCAL_DBS[*]-} " == *" $DB_NAME "* ]] || LOCAL_DBS+=("$DB_NAME")
	else
		say "$var does not point at ${PGHOST_LOCAL}:${PGPORT_LOCAL}; not setting it up"
	fi
done
if [[ ${#LOCAL_DBS[@]} -eq 0 ]]; then
	exit 0
fi

# ---------------------------------------------------------------- server ------

server_answers() {
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -h "$PGHOST_LOCAL" -p "$PGPORT_LOCAL" -t 3
	else
		timeout 3 bash -c "exec 3<>/dev/tcp/$PGHOST_LOCAL/$PGPORT_LOCAL" 2>/dev/null
	fi
}

wait_for_server() {
	local i
	for ((i = 0; i < 60; i++)); do
		server_answers && return 0
		sleep 0.5
	done
	die "PostgreSQL did not start answering on ${PGHOST_LOCAL}:${PGPORT_LOCAL} within 30s (see /var/log/postgresql/)"
}

psql_admin() { psql "$ADMIN_URL" -X -w -q -A -t -v ON_ERROR_STOP=1 "$@"; }

APT_UPDATED=0
apt_update() {
	if [[ $APT_UPDATED -eq 0 ]]; then
		say "apt-get update"
		logged "apt-get update failed" as_root apt-get -q -o DPkg::Lock::Timeout=300 update
		APT_UPDATED=1
	fi
}

# apt_install PKG...: install packages; on failure refresh the lists once and retry.
apt_install() {
	say "installing $*"
	local cmd=(apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "$@")
	if ! as_root "${cmd[@]}" >>"$LOG" 2>&1; then
		if [[ $APT_UPDATED -eq 1 ]]; then die "apt-get install $* failed"; fi
		apt_update
		logged "apt-get install $* failed" as_root "${cmd[@]}"
	fi
}

# Cluster on our port as "VER NAME STATUS", from pg_lsclusters.
cluster_on_port() {
	command -v pg_lsclusters >/dev/null 2>&1 || return 0
	pg_lsclusters -h 2>/dev/null | awk -v p="$PGPORT_LOCAL" '$3 == p {print $1, $2, $4; exit}'
}

# Trust auth on loopback, for a cluster we created ourselves.
trust_loopback() {
	local hba=/etc/postgresql/$1/$2/pg_hba.conf
	[[ -f $hba ]] || die "no $hba"
	if ! grep -qE '^host[[:space:]]+all[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' "$hba"; then
		say "adding trust auth for 127.0.0.1 and ::1 to $hba"
		local tmp
		tmp=$(mktemp)
		{
			echo '# added by engram scripts/devdb.sh: local development and tests only'
			echo 'host all all 127.0.0.1/32 trust'
			echo 'host all all ::1/128 trust'
			cat "$hba"
		} >"$tmp"
		as_root cp -- "$tmp" "$hba" # onto the existing file: keeps its owner and mode
		rm -f "$tmp"
	fi
}

start_cluster() {
	say "starting PostgreSQL cluster $1/$2"
	logged "could not start PostgreSQL cluster $1/$2" \
		as_root pg_ctlcluster --skip-systemctl-redirect "$1" "$2" start
}

install_postgresql() {
	say "no PostgreSQL found; installing Debian's postgresql"
	apt_update
	apt_install postgresql
	local c ver name status
	c=$(cluster_on_port)
	if [[ -z $c ]]; then
		if [[ -n $(pg_lsclusters -h 2>/dev/null) ]]; then
			die "PostgreSQL clusters exist but none on port $PGPORT_LOCAL: $(pg_lsclusters -h | tr '\n' ';')"
		fi
		ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1)
		[[ -n $ver ]] || die "postgresql installed but no /usr/lib/postgresql/VER"
		say "creating PostgreSQL cluster $ver/main on port $PGPORT_LOCAL"
		logged "pg_createcluster failed" as_root pg_createcluster --port "$PGPORT_LOCAL" "$ver" main
		c=$(cluster_on_port)
	fi
	read -r ver name status <<<"$c"
	trust_loopback "$ver" "$name"
	if [[ $status == online* ]]; then
		logged "could not reload PostgreSQL" as_root pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" reload
	else
		start_cluster "$ver" "$name"
	fi
}

ensure_server() {
	server_answers && return 0
	local c ver name status
	c=$(cluster_on_port)
	if [[ -n $c ]]; then
		read -r ver name status <<<"$c"
		if [[ $status == down* ]]; then
			start_cluster "$ver" "$name"
		fi
	elif command -v pg_lsclusters >/dev/null 2>&1 && [[ -n $(pg_lsclusters -h 2>/dev/null) ]]; then
		die "no PostgreSQL cluster on port $PGPORT_LOCAL (clusters: $(pg_lsclusters -h | awk '{print $1 "/" $2 ":" $3}' | tr '\n' ' '))"
	else
		install_postgresql
	fi
	wait_for_server
}

ensure_client() {
	command -v psql >/dev/null 2>&1 || apt_install postgresql-client
}

# ---------------------------------------------------------------- pgvector ----

# Same mirror and keyring as the system's Debian source, if it says so.
debian_mirror() {
	MIRROR=http://deb.debian.org/debian
	KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
	local f=/etc/apt/sources.list.d/debian.sources uri key
	if [[ -f $f ]]; then
		# first stanza whose Suites has a plain release name (not -security/-updates)
		read -r uri key < <(awk '
			BEGIN { RS = ""; FS = "\n" }
			{
				u = ""; k = ""; s = ""
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^URIs:/)      { u = $i; sub(/^URIs:[ \t]*/, "", u); sub(/[ \t].*/, "", u) }
					if ($i ~ /^Signed-By:/) { k = $i; sub(/^Signed-By:[ \t]*/, "", k) }
					if ($i ~ /^Suites:/)    { s = $i }
				}
				if (u != "" && s ~ /Suites:[ \t]*[a-z]+([ \t]|$)/ && u !~ /security/) { print u, k; exit }
			}' "$f") || true
		[[ -n ${uri-} ]] && MIRROR=$uri
		[[ -n ${key-} && -f ${key-} ]] && KEYRING=$key
	fi
	return 0
}

build_pgvector() {
	local major=$1
	local pgconfig=/usr/lib/postgresql/$major/bin/pg_config
	[[ -d /usr/lib/postgresql/$major ]] ||
		die "the server on ${PGHOST_LOCAL}:${PGPORT_LOCAL} is PostgreSQL $major but /usr/lib/postgresql/$major is missing: it is not a local Debian install, so install pgvector on it yourself"

	say "pgvector is missing for PostgreSQL $major; building it from Debian $PGVECTOR_SUITE's source package (one-time, about a minute)"
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/engram-pgvector.XXXXXX")

	local pkgs=()
	command -v dpkg-source >/dev/null 2>&1 || pkgs+=(dpkg-dev)
	{ command -v make && command -v gcc; } >/dev/null 2>&1 || pkgs+=(build-essential)
	# pg_config and pgxs.mk come with the client package; the server headers don't.
	local pgxs=/usr/lib/postgresql/$major/lib/pgxs/src/makefiles/pgxs.mk
	local hdr=/usr/include/postgresql/$major/server/postgres.h
	[[ -x $pgconfig && -f $pgxs && -f $hdr ]] || pkgs+=("postgresql-server-dev-$major")
	if [[ ${#pkgs[@]} -gt 0 ]]; then
		apt_install "${pkgs[@]}"
	fi
	[[ -x $pgconfig && -f $pgxs && -f $hdr ]] ||
		die "postgresql-server-dev-$major did not provide $pgconfig, $pgxs and $hdr"

	# A private apt configuration that only knows trixie's sources: the system's
	# own apt configuration and lists are not touched.
	debian_mirror
	mkdir -p "$WORK/apt/sources.list.d" "$WORK/apt/lists/partial" "$WORK/src"
	cat >"$WORK/apt/sources.list.d/pgvector-src.sources" <<-EOF
		Types: deb-src
		URIs: $MIRROR
		Suites: $PGVECTOR_SUITE
		Components: main
		Signed-By: $KEYRING
	EOF
	local aptopts=(
		-o "Dir::Etc::SourceList=/dev/null"
		-o "Dir::Etc::SourceParts=$WORK/apt/sources.list.d"
		-o "Dir::State::Lists=$WORK/apt/lists"
		-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
		-o "APT::Sandbox::User=root"
	)
	say "fetching the pgvector source package from $MIRROR $PGVECTOR_SUITE"
	logged "apt-get update for the $PGVECTOR_SUITE sources failed" \
		apt-get -q "${aptopts[@]}" update
	(cd "$WORK/src" && apt-get -q "${aptopts[@]}" source pgvector) >>"$LOG" 2>&1 ||
		die "apt-get source pgvector ($PGVECTOR_SUITE) failed"
	local src
	src=$(find "$WORK/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)
	[[ -n $src ]] || die "no pgvector-* directory after apt-get source"

	say "building $(basename "$src") for PostgreSQL $major"
	# OPTFLAGS= : no -march=native, so the library runs on any x86-64 machine.
	# with_llvm=no : no JIT bitcode, so clang is not needed.
	local mk=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$src"
		"PG_CONFIG=$pgconfig" OPTFLAGS= with_llvm=no)
	logged "building pgvector failed" "${mk[@]}" -j"$(nproc 2>/dev/null || echo 2)"
	logged "installing pgvector failed" as_root "${mk[@]}" install
	say "installed $(basename "$src") into /usr/lib/postgresql/$major"
}

# ---------------------------------------------------------------- state -------

# Prints "VERSION_NUM|VERSION|VECTOR_VERSION|missing dbs", one psql round trip.
server_state() {
	local names
	names=$(printf "'%s'," "${LOCAL_DBS[@]}")
	psql_admin -F '|' -c "SELECT current_setting('server_version_num'),
		split_part(current_setting('server_version'), ' ', 1),
		coalesce((SELECT default_version FROM pg_available_extensions WHERE name = 'vector'), ''),
		coalesce((SELECT string_agg(d, ' ') FROM unnest(ARRAY[${names%,}]) AS d
			WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = d)), '')"
}

# Proves the extension can really be created (library loads), leaving nothing.
vector_works() {
	psql_admin >/dev/null 2>&1 <<-'EOF'
		BEGIN;
		CREATE EXTENSION IF NOT EXISTS vector;
		SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector;
		ROLLBACK;
	EOF
}

VERNUM="" VERSION="" VECTOR="" MISSING=""
read_state() {
	local s
	s=$(server_state 2>&1) || die "cannot connect to ${ADMIN_URL}: $s"
	IFS='|' read -r VERNUM VERSION VECTOR MISSING <<<"$s"
}

ready_line() {
	say "ready: PostgreSQL $VERSION on ${PGHOST_LOCAL}:${PGPORT_LOCAL}, pgvector $VECTOR, databases: ${LOCAL_DBS[*]}"
}

# ---------------------------------------------------------------- main --------

# Fast path: everything already there.
if command -v psql >/dev/null 2>&1 && server_answers; then
	read_state
	if [[ -n $VECTOR && -z $MISSING ]] && vector_works; then
		ready_line
		exit 0
	fi
fi

# Slow path, one caller at a time (make test and make run may race). Commands
# that may start a daemon run through as_root, which closes fd 9 for them.
exec 9>"$LOCK_FILE"
if ! flock -n 9; then
	say "waiting for another devdb.sh to finish (lock $LOCK_FILE)"
	flock -w 900 9 || die "timed out waiting for the lock $LOCK_FILE"
fi

LOG=$(mktemp "${TMPDIR:-/tmp}/engram-devdb.XXXXXX.log")

ensure_server
ensure_client
read_state

if [[ -z $VECTOR ]]; then
	build_pgvector $((VERNUM / 10000))
	read_state
	[[ -n $VECTOR ]] || die "pgvector was installed but the server does not list the vector extension"
fi
if ! vector_works; then
	err=$(psql_admin -c 'BEGIN; CREATE EXTENSION IF NOT EXISTS vector; ROLLBACK;' 2>&1) || true
	die "the vector extension is listed but cannot be created: $err"
fi

for db in $MISSING; do
	say "creating database $db"
	psql_admin -c "CREATE DATABASE \"$db\"" || die "could not create database $db"
done

ready_line
