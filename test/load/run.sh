#!/usr/bin/env bash
# Load test: writers on connections that come and go (4 writers, each
# reconnecting every 400 requests) send, for LOAD_SECONDS, a mix of
# CreateTableVersion, BatchCreateTableVersions (2-6 entries over several
# tables), BatchCommitTables (declare + create versions + delete versions),
# ListTableVersions, DescribeTableVersion, DescribeTable, ListTables and
# ListAllTables (70 tables under one namespace), through the SQL functions
# and through lance_rest(), on managed tables (local root: the catalog
# materializes the writers' staging manifests) and unmanaged ones (s3://,
# gs://: versions are records).  Every answer is checked against its
# request (versions and their order, manifest_path, manifest_size, entries,
# page tokens, names); conflicts between writers (LN014) are counted, not
# failures.  At the end the catalog (lance_catalog.version), the declared
# tables and the final manifests on disk are compared with every
# acknowledged answer.  The driver is load.mjs (plain Node; the wire
# protocol client of test/crash/pgwire.mjs).
#
# It guards against answers that disagree with the catalog: acknowledged
# batches once answered empty or garbage manifest paths (memory freed by
# SPI_finish) while the rows were right.
#
# Runs as root (or postgres) and starts its own cluster in a temporary
# folder.  Prints its figures, then "  ok    <check>" / "  FAIL  <check>"
# per check; exits 0 only when every check passed.
#
# Environment (optional):
#   LOAD_SECONDS    how long the writers run (default 60)
#   LOAD_WRITERS    writer processes (default 4)
#   LOAD_RECONNECT  requests per connection (default 400)
#   LN_TEST_PORT    first port to try (default 54541)
#   LOAD_KEEP=1     keep the work folder (cluster, server log, tables)
#   LOAD_PG_BIN     development only: the bin folder of another (relocated)
#                   installation of the same PostgreSQL version, e.g. one whose lib/ holds a
#                   deliberately broken lance_namespace.so, to see the checks
#                   fail
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source=scripts/common.sh
source "$HERE/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$HERE/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD
PG_BIN="${LOAD_PG_BIN:-$PG_BIN}"

new_work_dir
NODE_PID=""
START=$SECONDS

cleanup() {
	local rc=$?
	trap - EXIT
	[[ -n "$NODE_PID" ]] && kill "$NODE_PID" 2>/dev/null
	stop_clusters "$PGDATA_DIR"
	remove_work_dir "${LOAD_KEEP:-}"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

command -v node >/dev/null || {
	[[ $EUID -eq 0 ]] || die "node is missing"
	say "installing nodejs"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends nodejs
}

DB=lance_load
PORT="$(find_free_port "${LN_TEST_PORT:-54541}")"

init_cluster "$PGDATA_DIR" test >/dev/null
# refused writes (LN014) are expected by the thousand: log no statements
echo "log_min_error_statement = panic" >>"$PGDATA_DIR/postgresql.conf"
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 755

psql_() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres "$@"; }
psql_ -d postgres -c "CREATE DATABASE $DB"
psql_ -d "$DB" -v db="$DB" -v root="$TABLES" <<'SQL'
CREATE EXTENSION lance_namespace;
ALTER DATABASE :"db" SET lance_namespace.root = :'root';
ALTER DATABASE :"db" SET lance_namespace.local_roots = :'root';
SQL

# REST requests carry an API key of the connecting role, as a gateway's do:
# each one is authenticated under load too.
LOAD_API_KEY="$(psql_ -d "$DB" -At -c "SELECT lance_create_api_key(current_user)")"
export LOAD_API_KEY

rc=0
LOAD_PORT="$PORT" LOAD_SOCKDIR="$SOCK" LOAD_DB="$DB" LOAD_ROOT="$TABLES" LOAD_WORK="$WORK" \
	LOAD_PG_UID="$(id -u postgres)" LOAD_PG_GID="$(id -g postgres)" \
	node "$HERE/load.mjs" &
NODE_PID=$!
wait "$NODE_PID" || rc=$?
NODE_PID=""

# The server survived: no backend died of a signal, no PANIC, no assertion.
if grep -Eq 'terminated by signal|was terminated by|PANIC:|TRAP:|server process .* exited with exit code' "$PGDATA_DIR/server.log"; then
	mapfile -t crashes < <(grep -E 'terminated by signal|was terminated by|PANIC:|TRAP:|exited with exit code' "$PGDATA_DIR/server.log" | head -n 5)
	fail "the server did not crash" "${crashes[@]}"
	rc=1
else
	pass "the server did not crash"
fi
if ((rc != 0)); then
	say "load test failed; last lines of the server log:"
	grep -Ev '^\s*$|ERROR: .*(already exists|does not exist)|DETAIL:  \{"code":1[14]' "$PGDATA_DIR/server.log" |
		tail -n 15 | cut -c1-300 || true
fi
say "load test: $((SECONDS - START)) s"
exit "$rc"
