#!/usr/bin/env bash
# A rollback's undo against a newcomer: writer A creates version V (its final
# manifest is on disk) and rolls back; the rollback takes A out of the proc
# array before its abort callback removes A's final manifest, so a writer B
# arriving in between finds A's row dead and may take version V at once.  B
# must not write V's final manifest before A's undo is done, or A's undo
# removes B's committed manifest (seen once in test/crash: a committed
# version without its final manifest).
#
# The window is microseconds wide, so gdb holds A inside its undo (at the
# unlinkat of undo_on_abort) while B runs.  Checks: B waits for A; once A is
# let go, V is B's and its final manifest holds B's content.
#
# Runs as root (gdb attaches to A's backend).  Prints "  ok    <check>" /
# "  FAIL  <check>" per check; exits 0 only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try (default 54501)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD

# gdb holds the writer; a fresh machine has none
if ! command -v gdb >/dev/null; then
	[[ $EUID -eq 0 ]] || die "gdb is needed (apt-get install gdb)"
	say "installing gdb"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends gdb >/dev/null
fi

new_work_dir
PORT="$(find_free_port "${LN_TEST_PORT:-54501}")"
START=$SECONDS
GDB_PID="" A_PID=""

cleanup() {
	[[ -n "$GDB_PID" ]] && kill "$GDB_PID" 2>/dev/null
	exec 3>&- 2>/dev/null || true
	stop_clusters "$PGDATA_DIR"
	remove_work_dir
}
trap cleanup EXIT

sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d undo "$@"; }

init_cluster "$PGDATA_DIR" test >/dev/null
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 777
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE undo'
sql -v root="$TABLES" <<'SQL'
CREATE EXTENSION lance_namespace;
ALTER DATABASE undo SET lance_namespace.local_roots = :'root';
ALTER DATABASE undo SET lance_namespace.root = :'root';
SQL
VERSIONS="$TABLES/ns/t.lance/_versions"
as_postgres mkdir -p "$VERSIONS"
sql -c "SELECT lance_create_namespace('{\"id\": [\"ns\"]}')" \
	-c "SELECT lance_declare_table(jsonb_build_object('id', ARRAY['ns', 't'], 'location', '$TABLES/ns/t.lance'))" >/dev/null

# version 1, V2 naming: 2^64 - 2
FINAL=18446744073709551614.manifest
as_postgres sh -c "printf 'content of A\n' >'$VERSIONS/$FINAL-a'; printf 'content of B\n' >'$VERSIONS/$FINAL-b'"
request() { printf '{"id": ["ns", "t"], "version": 1, "manifest_path": "%s", "metadata": {"who": "%s"}}' "${VERSIONS#/}/$FINAL-$1" "$1"; }

# A: a session kept open on a fifo, so that its rollback can be sent later
mkfifo "$WORK/a.in"
"$PG_BIN/psql" -X -q -At -h "$SOCK" -p "$PORT" -U postgres -d undo <"$WORK/a.in" >"$WORK/a.out" 2>&1 &
exec 3>"$WORK/a.in"
echo "BEGIN; SELECT pg_backend_pid(); SELECT lance_create_table_version('$(request a)') IS NOT NULL;" >&3
# (the caps of these waits for a state, 120 s, only guard against a hang)
for _ in $(seq 1200); do [[ "$(wc -l <"$WORK/a.out")" -ge 2 ]] && break; sleep 0.1; done
A_PID="$(head -n 1 "$WORK/a.out")"
check "A made version 1's final manifest in its transaction" "content of A" "$(cat "$VERSIONS/$FINAL" 2>/dev/null)"

# gdb holds A at the unlinkat of its undo until B has had its chance
cat >"$WORK/gdb.cmd" <<GDB
set pagination off
handle SIGUSR1 nostop noprint pass
handle SIGUSR2 nostop noprint pass
handle SIGPIPE nostop noprint pass
attach $A_PID
break undo_on_abort
continue
break unlinkat
continue
shell touch $WORK/a.held
shell while [ ! -f $WORK/b.tried ]; do sleep 0.1; done
delete
detach
quit
GDB
gdb -q -batch -x "$WORK/gdb.cmd" >"$WORK/gdb.out" 2>&1 &
GDB_PID=$!
for _ in $(seq 1200); do grep -q 'Continuing' "$WORK/gdb.out" 2>/dev/null && break; sleep 0.1; done
echo "ROLLBACK;" >&3
for _ in $(seq 1200); do [[ -f "$WORK/a.held" ]] && break; sleep 0.1; done
if [[ -f "$WORK/a.held" ]]; then
	pass "A is held inside the undo of its rollback"
else
	fail "A is held inside the undo of its rollback" "$(tail -n 20 "$WORK/gdb.out")"
	exit 1
fi

# B: a newcomer for the same version, while A's undo has not run.  B must
# be seen waiting on a lock (pg_stat_activity), not merely still running
# after a while: on a slow machine a B that never waits could still be on
# its way after any fixed sleep, and the check would pass for nothing.  The
# loop ends when B waits or ends; its cap (120 s) only guards against a hang.
PGAPPNAME=undorace_b sql -c "SELECT lance_create_table_version('$(request b)') #>> '{version,version}'" >"$WORK/b.out" 2>&1 &
B_PID=$!
b_waits=""
for _ in $(seq 1200); do
	b_waits="$(sql -c "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE application_name = 'undorace_b' AND wait_event_type = 'Lock'")"
	[[ -n "$b_waits" ]] && break
	kill -0 "$B_PID" 2>/dev/null || break
	sleep 0.1
done
if [[ -n "$b_waits" ]] && kill -0 "$B_PID" 2>/dev/null; then
	pass "B waits for A's rollback to end before it writes the final manifest (B waits on $b_waits)"
else
	fail "B waits for A's rollback to end before it writes the final manifest" "B: $(cat "$WORK/b.out")"
fi
touch "$WORK/b.tried"
wait "$GDB_PID" || true
GDB_PID=""
wait "$B_PID" || true
exec 3>&-

check "B created version 1" "1" "$(cat "$WORK/b.out")"
check "version 1 is B's in the catalog" "b" "$(sql -c "SELECT metadata ->> 'who' FROM lance_catalog.version WHERE version = 1")"
check "version 1's final manifest is there, with B's content" "content of B" "$(cat "$VERSIONS/$FINAL" 2>/dev/null || echo missing)"

echo
say "undo race test: $CHECKS checks, $FAILS failed, $((SECONDS - START)) s"
((FAILS == 0))
