#!/usr/bin/env bash
# Set up and run a local lance_namespace catalog.
#
#   scripts/run.sh           install deps, build, start the catalog server
#   scripts/stop.sh          stop it again
#
# Environment (all optional):
#   LN_DATA  state directory        (default: <project>/.data)
#   LN_PORT  TCP port on 127.0.0.1  (default: 5433; 5432 is Debian's own cluster)
#   LN_DB    database name          (default: lance)
#   LN_GATEWAY_PORT  REST gateway port on 127.0.0.1 (default: 2333)
#
# Layout under LN_DATA: pgdata/ (cluster, server.log inside), run/ (Unix
# socket), tables/ (lance_namespace.root and local_roots: where table data
# and manifests go), gateway/ (nginx configuration, pid and log).
# Safe to run again: every step checks before it acts.
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

LN_DATA="$(ln_data_dir)"
LN_PORT="${LN_PORT:-5433}"
LN_DB="${LN_DB:-lance}"
LN_GATEWAY_PORT="${LN_GATEWAY_PORT:-2333}"
[[ "$LN_PORT" =~ ^[0-9]+$ ]] || die "LN_PORT must be a number, got '$LN_PORT'"
[[ "$LN_GATEWAY_PORT" =~ ^[0-9]+$ ]] || die "LN_GATEWAY_PORT must be a number, got '$LN_GATEWAY_PORT'"

PGDATA_DIR="$LN_DATA/pgdata"
SOCKET_DIR="$LN_DATA/run"
TABLES_DIR="$LN_DATA/tables"
# Checked before anything is created, not only when the server starts.
check_socket_dir "$SOCKET_DIR"

# psql as the calling user, connected as database superuser postgres over the
# socket.  -X skips ~/.psqlrc so a personal config cannot change the output.
ln_psql() {
	"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCKET_DIR" -p "$LN_PORT" -U postgres "$@"
}

ensure_cluster() {
	if [[ -f "$PGDATA_DIR/PG_VERSION" ]]; then
		say "using existing cluster in $PGDATA_DIR"
	elif [[ -d "$PGDATA_DIR" && -n "$(ls -A "$PGDATA_DIR")" ]]; then
		die "$PGDATA_DIR exists, is not empty and is not a cluster; move it away"
	else
		# LN_DATA itself stays owned by the caller but must be traversable
		# by postgres to reach pgdata/, run/ and tables/.
		mkdir -p "$LN_DATA"
		chmod 755 "$LN_DATA"
		# A folder above it that postgres cannot enter (a clone in /root)
		# would make initdb fail with a bare "Permission denied".
		as_postgres test -x "$LN_DATA" ||
			die "the postgres user cannot reach $LN_DATA (a folder above it is closed to it); set LN_DATA to a folder it can reach, e.g. LN_DATA=/var/lib/lance_namespace"
		init_cluster "$PGDATA_DIR" run
	fi
}

# The background worker (removing dropped tables' data, sweeping crash
# leftovers) runs only with the library preloaded.  A server that runs
# without it is restarted once to take it.
ensure_preload() {
	local conf="$PGDATA_DIR/postgresql.conf"
	grep -q "^shared_preload_libraries = 'lance_namespace'" "$conf" && return 0
	say "preloading lance_namespace for its background worker"
	printf "\n# Written by lance_namespace scripts/run.sh: its background worker.\nshared_preload_libraries = 'lance_namespace'\n" |
		as_postgres tee -a "$conf" >/dev/null
	if cluster_running "$PGDATA_DIR"; then
		stop_cluster "$PGDATA_DIR"
	fi
}

ensure_running() {
	if cluster_running "$PGDATA_DIR"; then
		# Connect where it really runs, even if LN_PORT changed since.
		local port
		port="$(postmaster_field "$PGDATA_DIR" 4)"
		if [[ -n "$port" && "$port" != "$LN_PORT" ]]; then
			say "server already running on port $port (not LN_PORT=$LN_PORT); using $port"
			LN_PORT="$port"
		else
			say "server already running on port $LN_PORT"
		fi
		wait_ready "$SOCKET_DIR" "$LN_PORT" || die "server runs but does not accept connections; see $PGDATA_DIR/server.log"
	else
		start_cluster "$PGDATA_DIR" "$LN_PORT" "$SOCKET_DIR"
	fi
}

# Create the database and extension and point lance_namespace.root and
# local_roots at TABLES_DIR, so that tables go there and the catalog manages
# their versions.  Names and paths travel as psql variables (:'x' / :"x") so any
# value is quoted correctly.
ensure_database() {
	local exists
	exists="$(ln_psql -d postgres -tA -v db="$LN_DB" <<<"SELECT 1 FROM pg_database WHERE datname = :'db';")"
	if [[ "$exists" == 1 ]]; then
		say "database $LN_DB already exists"
	else
		say "creating database $LN_DB"
		ln_psql -d postgres -v db="$LN_DB" <<<'CREATE DATABASE :"db";'
	fi

	# The server (postgres OS user) writes table data here.
	make_postgres_dir "$TABLES_DIR" 755

	say "ensuring extension lance_namespace in $LN_DB"
	# client_min_messages hides the "already exists, skipping" NOTICE on reruns.
	ln_psql -d "$LN_DB" -v db="$LN_DB" -v root="$TABLES_DIR" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS lance_namespace;
ALTER DATABASE :"db" SET lance_namespace.root = :'root';
ALTER DATABASE :"db" SET lance_namespace.local_roots = :'root';
SQL
}

print_usage() {
	cat <<EOF

lance_namespace: catalog is running.
  REST namespace:      http://127.0.0.1:$LN_GATEWAY_PORT
                       e.g. lancedb.connectNamespace("rest", {uri: "http://127.0.0.1:$LN_GATEWAY_PORT"})
  database:  $LN_DB    (lance_namespace.root = local_roots = $TABLES_DIR)
  connect via socket:  $PG_BIN/psql -h $SOCKET_DIR -p $LN_PORT -U postgres $LN_DB
  connect via TCP:     $PG_BIN/psql -h 127.0.0.1 -p $LN_PORT -U postgres $LN_DB
  connection URI:      postgresql://postgres@127.0.0.1:$LN_PORT/$LN_DB
  server log:          $PGDATA_DIR/server.log
  gateway log:         $LN_DATA/gateway/error.log
  stop:                $ROOT/scripts/stop.sh$([[ "$LN_DATA" != "$ROOT/.data" ]] && printf '   (with LN_DATA=%s)' "$LN_DATA")
EOF
}

main() {
	install_deps
	build_and_install
	ensure_cluster
	ensure_preload
	ensure_running
	ensure_database
	start_gateway "$LN_DATA/gateway" "$LN_GATEWAY_PORT" "$LN_DB" "$SOCKET_DIR" "$LN_PORT"
	print_usage
}

main "$@"
