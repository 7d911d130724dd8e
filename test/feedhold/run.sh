#!/usr/bin/env bash
# A writer that made a change holds lance_changes() back for every reader
# until its transaction ends (the feed never skips a number that may still
# commit).  Two sessions of this script hold such a transaction open:
#
#   bound  one with lance_namespace.change_idle_timeout = 1s makes a change
#          and idles: it is ended with the idle-in-transaction error, its
#          change is gone, and a reader gets the entry committed after its
#          number (polled for up to 120 s: the bound is 1 s, the margin is
#          for a loaded machine).
#   named  one with change_idle_timeout = 0 (no bound) makes a change and
#          stays; a reader whose own bound is 1s, held back longer than that,
#          gets a NOTICE naming the holder's process, its pid in the DETAIL's
#          JSON (and when its transaction began, unless the reader may
#          not see the holder in pg_stat_activity); once the holder rolls
#          back, the reader gets what was behind it.
#
# With lance_namespace preloaded and change_idle_timeout = 2s for the
# server (ALTER SYSTEM), the background worker's launcher ends a holder
# that waits on its client longer than that where PostgreSQL's idle timeout
# does not reach (a LOG line names it), and the feed goes on:
#   reset     one sets idle_in_transaction_session_timeout = 0 after its
#             change and idles;
#   pipeline  one (pipeline_hold.c, built with gcc -lpq) sends its change with
#             the extended query protocol and Flush but no Sync: "active",
#             waiting on ClientRead, outside a transaction block;
#   busy      one that runs a statement (pg_sleep(8)) after its change is
#             left alone while it runs, and commits.
#
# Runs as root (or postgres); prints "  ok    <check>" / "  FAIL  <check>" per
# check; exits 0 only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try (default 54581)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD

new_work_dir
PORT="$(find_free_port "${LN_TEST_PORT:-54581}")"
START=$SECONDS
HOLDER_PID=""
# generous: CI runs the server under valgrind on a loaded machine
POLLS=600 # of 0.2 s: 120 s

cleanup() {
	local rc=$?
	trap - EXIT
	set +e
	[[ -n "$HOLDER_PID" ]] && kill "$HOLDER_PID" 2>/dev/null
	exec 3>&- 2>/dev/null
	stop_clusters "$PGDATA_DIR"
	remove_work_dir
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d feed "$@"; }

init_cluster "$PGDATA_DIR" test >/dev/null
printf "\nshared_preload_libraries = 'lance_namespace'\n" >>"$PGDATA_DIR/postgresql.conf"
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE feed'
sql -c 'CREATE EXTENSION lance_namespace'

# hold <name> <setting> [<sql>]: a session (HOLDER_PID, its input on fd 3,
# its output in $WORK/<name>.out) that sets change_idle_timeout to <setting>
# (none if empty), makes namespace <name> in a transaction it leaves open,
# runs <sql> then, and prints its pid.
hold() {
	mkfifo "$WORK/$1.in"
	sql <"$WORK/$1.in" >"$WORK/$1.out" 2>&1 &
	HOLDER_PID=$!
	exec 3>"$WORK/$1.in"
	[[ -n "$2" ]] && printf "SET lance_namespace.change_idle_timeout = '%s';\n" "$2" >&3
	printf 'BEGIN;\n' >&3
	printf "SELECT lance_create_namespace('{\"id\": [\"%s\"]}') IS NOT NULL AS made;\n" "$1" >&3
	[[ -n "${3:-}" ]] && printf '%s\n' "$3" >&3
	printf 'SELECT pg_backend_pid();\n\\echo taken\n' >&3
	for _ in $(seq "$POLLS"); do grep -q taken "$WORK/$1.out" && return 0; sleep 0.2; done
	return 1
}

# end_holder [<sql>]: send <sql> to the holding session, close its input and wait for it.
end_holder() {
	[[ -n "${1:-}" ]] && printf '%s\n' "$1" >&3
	exec 3>&-
	wait "$HOLDER_PID" || true
	HOLDER_PID=""
}

# position: the log's last number now
position() { sql -c 'SELECT COALESCE(max(seq), 0) FROM lance_catalog.change'; }

# ---------------------------------------------------------------------------
# bound
# ---------------------------------------------------------------------------
say "a writer that idles is ended after change_idle_timeout"
base="$(position)"
if hold held 1s; then pass "a session makes a change in a transaction and idles"; else fail "a session makes a change and idles" "$(cat "$WORK/held.out")"; fi
sql -c "SELECT lance_create_namespace('{\"id\": [\"after\"]}') IS NOT NULL" >/dev/null
got=0
for _ in $(seq "$POLLS"); do
	got="$(sql -c "SELECT count(*) FROM lance_changes($base) WHERE objects = '{after}'")"
	((got == 1)) && break
	sleep 0.2
done
check "the feed moves past the idle writer's number to the entry after it" 1 "$got"
end_holder 'SELECT 1;'
if grep -q 'terminating connection due to idle-in-transaction timeout' "$WORK/held.out"; then
	pass "the idle writer was ended with the idle-in-transaction error"
else
	fail "the idle writer was ended with the idle-in-transaction error" "$(cat "$WORK/held.out")"
fi
check "and its change is gone" 0 \
	"$(sql -c "SELECT count(*) FROM lance_catalog.object WHERE name = 'held'")"

# ---------------------------------------------------------------------------
# named
# ---------------------------------------------------------------------------
say "a reader held back longer than change_idle_timeout learns by whom"
base="$(position)"
if hold kept 0; then pass "a session with no bound makes a change in a transaction and stays"; else fail "a session with no bound makes a change and stays" "$(cat "$WORK/kept.out")"; fi
holder="$(sed -n 's/^\([0-9][0-9]*\)$/\1/p' "$WORK/kept.out" | tail -n 1)"
sql -c "SELECT lance_create_namespace('{\"id\": [\"behind\"]}') IS NOT NULL" >/dev/null
notice=""
for _ in $(seq "$POLLS"); do
	out="$(sql -c "SET lance_namespace.change_idle_timeout = '1s'" \
		-c "SELECT count(*) FROM lance_changes($base) WHERE operation IS NOT NULL" 2>&1)"
	if [[ "$out" == *"held back"* ]]; then
		notice="$out"
		break
	fi
	sleep 0.2
done
if [[ "$notice" == *"NOTICE:  the change feed is held back at entry $((base + 1)) by process $holder, whose transaction began at "* ]]; then
	pass "the reader's NOTICE names the holder's process ($holder) and entry"
else
	fail "the reader's NOTICE names the holder's process ($holder) and entry" "got: $notice"
fi
if [[ "$notice" == *"DETAIL:  {\"pid\": $holder, \"since\": \""*"\", \"held_back_at\": $((base + 1))}"* ]]; then
	pass "its DETAIL holds them as JSON"
else
	fail "its DETAIL holds them as JSON" "got: $notice"
fi
check "and the reader gets nothing past the holder's number meanwhile" 0 "$(grep -x '[0-9][0-9]*' <<<"$notice" | tail -n 1)"
# A reader that may not see the holder in pg_stat_activity learns its
# process, but not when its transaction began.
sql -c "CREATE ROLE ln_feed_stranger NOLOGIN" >/dev/null
out="$(sql -c "SET lance_namespace.change_idle_timeout = '1s'" -c "SET ROLE ln_feed_stranger" \
	-c "SELECT count(*) FROM lance_changes($base) WHERE operation IS NOT NULL" 2>&1)"
if [[ "$out" == *"NOTICE:  the change feed is held back at entry $((base + 1)) by process $holder, whose transaction began longer ago than lance_namespace.change_idle_timeout"* &&
	"$out" == *"DETAIL:  {\"pid\": $holder, \"since\": null, \"held_back_at\": $((base + 1))}"* ]]; then
	pass "a reader that may not see the holder's activity gets its process, not when it began"
else
	fail "a reader that may not see the holder's activity gets its process, not when it began" "got: $out"
fi
end_holder 'ROLLBACK;'
check "once the holder rolls back, the reader gets what was behind it" 1 \
	"$(sql -c "SELECT count(*) FROM lance_changes($base) WHERE objects = '{behind}'")"

# ---------------------------------------------------------------------------
# the background worker ends holders PostgreSQL's idle timeout does not reach
# ---------------------------------------------------------------------------
sql -c "ALTER SYSTEM SET lance_namespace.change_idle_timeout = '2s'" -c 'SELECT pg_reload_conf()' >/dev/null

# feed_moves_past <after> <name>: poll until lance_changes(<after>) holds
# the entry that made namespace <name>; prints how many it holds (1).
feed_moves_past() {
	local got=0
	for _ in $(seq "$POLLS"); do
		# (without the notices that name the holder meanwhile)
		got="$(sql -c "SELECT count(*) FROM lance_changes($1) WHERE objects = '{$2}'" 2>/dev/null)"
		((got == 1)) && break
		sleep 0.2
	done
	echo "$got"
}

# ended_in_log <pid> <entry>: the launcher's LOG line about <pid> holding <entry>.
ended_in_log() {
	grep -q "LOG:  lance_namespace: ended process $1 (role \"postgres\", database \"feed\"), which holds back the change feed at entry $2 and has waited on its client for [0-9]* ms" \
		"$PGDATA_DIR/server.log"
}

say "a writer that lifts its idle timeout after its change is ended"
base="$(position)"
if hold reset '' 'SET idle_in_transaction_session_timeout = 0;'; then
	pass "a session makes a change, sets idle_in_transaction_session_timeout to 0 and idles"
else
	fail "a session makes a change, lifts its idle timeout and idles" "$(cat "$WORK/reset.out")"
fi
holder="$(sed -n 's/^\([0-9][0-9]*\)$/\1/p' "$WORK/reset.out" | tail -n 1)"
sql -c "SELECT lance_create_namespace('{\"id\": [\"after_reset\"]}') IS NOT NULL" >/dev/null
check "the feed moves past its number to the entry after it" 1 "$(feed_moves_past "$base" after_reset)"
end_holder 'SELECT 1;'
if grep -q 'terminating connection due to administrator command' "$WORK/reset.out"; then
	pass "the writer was ended as pg_terminate_backend() ends it"
else
	fail "the writer was ended as pg_terminate_backend() ends it" "$(cat "$WORK/reset.out")"
fi
if ended_in_log "$holder" "$((base + 1))"; then
	pass "the server's log names its process, role, database and entry"
else
	fail "the server's log names its process, role, database and entry" "$(grep 'lance_namespace: ended' "$PGDATA_DIR/server.log")"
fi
check "and its change is gone" 0 \
	"$(sql -c "SELECT count(*) FROM lance_catalog.object WHERE name = 'reset'")"

say "a writer of the extended query protocol that never sends Sync is ended"
gcc -Wall -o "$WORK/pipeline_hold" "$(dirname "${BASH_SOURCE[0]}")/pipeline_hold.c" \
	-I"$("$PG_CONFIG" --includedir)" -lpq
base="$(position)"
mkfifo "$WORK/pipeline.in"
"$WORK/pipeline_hold" "host=$SOCK port=$PORT user=postgres dbname=feed" piped \
	<"$WORK/pipeline.in" >"$WORK/pipeline.out" 2>&1 &
HOLDER_PID=$!
exec 3>"$WORK/pipeline.in"
taken=0
for _ in $(seq "$POLLS"); do
	grep -q taken "$WORK/pipeline.out" && taken=1 && break
	sleep 0.2
done
check "a client sends its change with Execute and Flush, no Sync, and waits" 1 "$taken"
holder="$(sed -n 's/^\([0-9][0-9]*\)$/\1/p' "$WORK/pipeline.out" | head -n 1)"
sql -c "SELECT lance_create_namespace('{\"id\": [\"after_pipeline\"]}') IS NOT NULL" >/dev/null
check "the feed moves past its number to the entry after it" 1 "$(feed_moves_past "$base" after_pipeline)"
end_holder
if grep -q '^FATAL:  terminating connection due to administrator command' "$WORK/pipeline.out" &&
	grep -q '^ended: ' "$WORK/pipeline.out"; then
	pass "the server ended the client's connection"
else
	fail "the server ended the client's connection" "$(cat "$WORK/pipeline.out")"
fi
if ended_in_log "$holder" "$((base + 1))"; then
	pass "the server's log names its process, role, database and entry"
else
	fail "the server's log names its process, role, database and entry" "$(grep 'lance_namespace: ended' "$PGDATA_DIR/server.log")"
fi
check "and its change is gone" 0 \
	"$(sql -c "SELECT count(*) FROM lance_catalog.object WHERE name = 'piped'")"

say "a writer that runs a long statement after its change is left alone"
mkfifo "$WORK/busy.in"
sql <"$WORK/busy.in" >"$WORK/busy.out" 2>&1 &
HOLDER_PID=$!
exec 3>"$WORK/busy.in"
printf "BEGIN;\nSELECT lance_create_namespace('{\"id\": [\"busy\"]}') IS NOT NULL AS made;\n" >&3
printf 'SELECT pg_sleep(8) AS busy;\n\\echo survived\nCOMMIT;\n' >&3
# until it has run its statement for more than twice the bound (checks run every second)
running=0
for _ in $(seq "$POLLS"); do
	running="$(sql -c "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep(8) AS busy%' AND pid <> pg_catalog.pg_backend_pid() AND state_change < pg_catalog.now() - interval '5s'")"
	((running == 1)) && break
	sleep 0.2
done
holder="$(sql -c "SELECT pid FROM pg_catalog.pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(8) AS busy%' AND pid <> pg_catalog.pg_backend_pid()")"
check "it runs its statement for longer than twice the bound" 1 "$running"
end_holder
if grep -q '^survived$' "$WORK/busy.out" && ! grep -q 'terminating' "$WORK/busy.out"; then
	pass "it was not ended, and went on"
else
	fail "it was not ended, and went on" "$(cat "$WORK/busy.out")"
fi
check "and its change committed" 1 \
	"$(sql -c "SELECT count(*) FROM lance_catalog.object WHERE name = 'busy'")"
if grep -q "lance_namespace: ended process $holder " "$PGDATA_DIR/server.log"; then
	fail "the server's log names no such process" "$(grep 'lance_namespace: ended' "$PGDATA_DIR/server.log")"
else
	pass "the server's log names no such process"
fi

echo
say "feed hold test: $CHECKS checks, $FAILS failed, $((SECONDS - START)) s"
((FAILS == 0))
