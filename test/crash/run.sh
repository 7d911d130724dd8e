#!/usr/bin/env bash
# Crash test: concurrent writers commit versions of managed tables (single
# versions, batches over several tables, batch commits) on a local root while
# the server is SIGKILLed at random moments and restarted; after every
# restart nothing acknowledged may be lost, no batch partly present, every
# catalog version must have its final manifest with its staging content,
# every final manifest without a catalog row must be replaced by the next
# commit, and the next commit on every table must work.  The driver is
# crash.mjs (plain Node, no npm packages; its own wire-protocol client).
#
# Runs as root (or postgres).  It starts its OWN cluster in a temporary
# folder, on a free port from CRASH_PORT, with the "run" settings of
# scripts/common.sh: fsync on and synchronous_commit on.  Why not the fast
# "test" settings: synchronous_commit=off acknowledges a commit before its
# WAL leaves the server's shared memory, so a SIGKILL loses acknowledged
# commits by design and the test would report false losses.  fsync=off with
# synchronous_commit=on would in fact survive these kills (a killed process
# does not lose the OS page cache, and the WAL is written to it before the
# acknowledgment), but it is not how a catalog is run and it would hide a
# missing fsync in no case we could tell apart here; fsync on costs little.
# Likewise the manifests the extension writes survive any process kill;
# whether they are flushed (for power loss) is not what this test can see.
#
# The last lines printed are "crash: kills N", "crash: acknowledged commits
# N", "crash: lost N", "crash: partial N" and "crash: PASS" or "crash: FAIL";
# the exit status is 0 only when every check passed.
#
# Environment (optional):
#   CRASH_KILLS    SIGKILLs per run (default 20, at least 20 is the issue's floor)
#   CRASH_WRITERS  concurrent writer processes (default 6, at least 4)
#   CRASH_TABLES   managed tables (default 6)
#   CRASH_PORT     first port to try (default 55101)
#   CRASH_DIR      work folder (default: a new mktemp -d; removed at the end)
#   CRASH_KEEP=1   keep the work folder (cluster, logs, tables) at the end
#   CRASH_INJECT   development only: lost, partial, corrupt or orphan damages
#                  the state before the first check, to see the checks fail
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source=scripts/common.sh
source "$HERE/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$HERE/../lib.sh"

# Only explicit connection settings reach the server.
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD

WORK=""
PGDATA_DIR=""
NODE_PID=""

# Every process of our cluster runs in its data directory: stop by that, so
# that no other cluster on the machine is touched, even after a crash.
kill_leftovers() {
	local p
	for p in /proc/[0-9]*; do
		[[ "$(readlink "$p/cwd" 2>/dev/null)" == "$PGDATA_DIR" ]] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	return 0
}

cleanup() {
	local rc=$?
	trap - EXIT
	[[ -n "$NODE_PID" ]] && kill "$NODE_PID" 2>/dev/null
	if [[ -n "$PGDATA_DIR" ]]; then
		stop_clusters "$PGDATA_DIR"
		# a server killed at the wrong moment may leave processes pg_ctl
		# no longer knows of
		kill_leftovers
	fi
	remove_work_dir "${CRASH_KEEP:-}"
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

# CRASH_DIR may hold the cluster of an earlier run, killed or still up:
# its processes go before new_work_dir empties the folder.
if [[ -n "${CRASH_DIR:-}" ]]; then
	PGDATA_DIR="$(realpath -m -- "$CRASH_DIR")/pgdata"
	kill_leftovers
fi
new_work_dir "${CRASH_DIR:-}"
LOGDIR="$WORK/logs"
DB=lance_crash
PORT="$(find_free_port "${CRASH_PORT:-55101}")"

init_cluster "$PGDATA_DIR" run
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK"
make_postgres_dir "$TABLES" 777
mkdir -p "$LOGDIR"

psql_() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres "$@"; }
psql_ -d postgres -c "CREATE DATABASE $DB"
psql_ -d "$DB" -v db="$DB" -v root="$TABLES" <<'SQL'
CREATE EXTENSION lance_namespace;
ALTER DATABASE :"db" SET lance_namespace.local_roots = :'root';
ALTER DATABASE :"db" SET lance_namespace.root = :'root';
SQL
fsync="$(psql_ -d "$DB" -At -c "SELECT current_setting('fsync') || '/' || current_setting('synchronous_commit')")"
say "crash test: cluster $PGDATA_DIR on port $PORT, fsync/synchronous_commit $fsync"

CRASH_PGDATA="$PGDATA_DIR" CRASH_PORT="$PORT" CRASH_SOCKDIR="$SOCK" CRASH_DB="$DB" \
	CRASH_ROOT="$TABLES" CRASH_LOGDIR="$LOGDIR" \
	node "$HERE/crash.mjs" &
NODE_PID=$!
rc=0
wait "$NODE_PID" || rc=$?
NODE_PID=""
if ((rc != 0)); then
	say "crash test failed; last lines of the server log:"
	tail -n 20 "$PGDATA_DIR/server.log" || true
fi
exit "$rc"
