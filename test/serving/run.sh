#!/usr/bin/env bash
# The serving path under load and faults: the gateway (gateway/lance_db.lua)
# in front of a cluster it did not make.  run.sh starts a cluster and sources
# every test/serving/parts/*.sh in name order; each part starts the gateways
# it needs with the helpers below and checks one promise of README, "Serving":
#
#   10_blocking     with 8 requests waiting on one row lock, 20 reads in a
#                   row each answer in under 0.1 s
#   15_store_stall  the same while 2 commits wait for a store that stalls
#                   (the S3 test server: LN_S3_ENDPOINT, LN_S3_CONTROL, which
#                   scripts/test.sh gives), then answered 503, code 17
#   20_timeouts     LN_REQUEST_TIMEOUT: a request past it is cancelled in
#                   the database, rolled back (no version, no change-log
#                   entry) and answered 503, code 17, Retry-After; one that
#                   finds no free connection until then the same; one
#                   connecting to a silent server with LN_REQUEST_TIMEOUT=3.5
#                   within 3.5 s, and 3.5 connects to the database; 400
#                   requests from 100 concurrent clients all answer 200
#   25_send_stall   with the backend of the gateway's one connection stopped
#                   (SIGSTOP: it reads nothing), a commit with a 4 MB body
#                   is answered 503, code 17, within LN_REQUEST_TIMEOUT and
#                   its 2 s of grace, as not sent, not committed; the gateway
#                   serves again
#   27_lua_error    a Lua error in lance_db.lua's thread_call (injected through
#                   its arguments, by an nginx of the part's own) before the
#                   call's Sync answers not_sent, after it unknown, and leaves
#                   no connection open; a thread that raises past its own
#                   error handling: unknown, its connection never used again
#   30_gateway_alone  scripts/gateway.sh against a cluster it did not make,
#                   by a libpq URI (two hosts, the first down; a SCRAM
#                   password over TCP; then a TLS client certificate), two
#                   gateways side by side, each
#                   stopped by scripts/stop.sh with its LN_DATA; the URL
#                   on no command line (strace), in no warning; an
#                   LN_DATA that exists keeps its mode; settings that
#                   would add to nginx.conf are refused
#   35_slow_clients  4,000 connections from 127.0.0.2 trickling their
#                   headers are all held while 127.0.0.1's requests are each
#                   answered in under 1 s, and each is cut off within 20 s;
#                   LN_GATEWAY_CONNECTIONS_PER_ADDRESS=200: of 600 slow
#                   bodies from one address most are refused 429 (code 21)
#   37_fair_share   LN_KEY_CONCURRENCY: while 30 clients of tenant A send
#                   batch commits of 1,000 versions for 20 s, tenant B's
#                   describes are never told 429 and their p99 stays under
#                   0.5 s; some of A's are told 429 (code 21, Retry-After);
#                   the slots of a client gone and of a request timed out
#                   are given back
#   40_reconnect    after pg_ctl restart and pg_terminate_backend the next
#                   requests succeed; a write whose connection broke after
#                   it was sent is answered 503/17 and never sent again
#   45_reload       a commit in flight while the gateway reloads is answered
#                   by its old worker, which exits then
#   50_access_log   the access log has each request's real duration and end
#   55_metrics      GET /metrics with every connection busy (a key authorized
#                   a moment ago: 200 at once; one never authorized: 503),
#                   and its gauges after a reload with fewer workers
#   60_reads        LN_DATABASE_READ_URL: reads on a hot standby (replay
#                   paused), read-your-writes per API key, LN_READ_MAX_LAG,
#                   a standby down (helpers: replication.sh)
#   70_failover     a primary and a synchronous standby: the primary stopped
#                   (immediate) and the standby promoted, writes through the
#                   same gateway succeed within 20 s, no acknowledged write lost
#   80_pgbouncer    the gateway through PgBouncer in transaction pooling mode
#
# Runs as root (or postgres).  Prints "  ok    <check>" / "  FAIL  <check>"
# per check; exits 0 only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT   first port to try for the server (default 54571); the
#                  gateways take free ports from 2633 on
#   LN_SERVING_ONLY  run only the parts whose file names contain this
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD PGHOST PGPORT PGUSER
unset LN_GATEWAY_TLS_CERT LN_GATEWAY_TLS_KEY LN_GATEWAY_HOSTS LN_GATEWAY_ORIGINS LN_GATEWAY_ADDRESS
unset LN_REQUEST_TIMEOUT LN_GATEWAY_CONNECTIONS LN_DATABASE_URL LN_DATABASE_READ_URL LN_READ_MAX_LAG
unset LN_GATEWAY_CONNECTIONS_PER_ADDRESS LN_KEY_CONCURRENCY

command -v curl >/dev/null || die "the serving test needs curl"
need_gateway_test_packages
SERVING_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
START=$SECONDS

new_work_dir
DB=serving
PORT="$(find_free_port "${LN_TEST_PORT:-54571}")"
# what the parts started, stopped at the end whatever happens
GATEWAYS=()
CLUSTERS=("$PGDATA_DIR")
BACKGROUND=()
# backends a part stopped (SIGSTOP), to go on before the cluster stops
STOPPED=()
HOLD_FD=""

cleanup() {
	local rc=$? prefix pid
	trap - EXIT
	set +e
	[[ -n "$HOLD_FD" ]] && exec {HOLD_FD}>&-
	for pid in "${BACKGROUND[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${STOPPED[@]}"; do kill -CONT "$pid" 2>/dev/null; done
	for prefix in "${GATEWAYS[@]}"; do stop_gateway "$prefix" >/dev/null 2>&1; done
	stop_clusters "${CLUSTERS[@]}"
	remove_work_dir "${LN_SERVING_KEEP:-0}"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------
# Helpers the parts share
# ---------------------------------------------------------------------------
# sql <psql args...>: psql as postgres in the test database, unaligned.
sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d "$DB" "$@"; }

# The gateway's URI for the test cluster: over its socket as lance_gateway.
DB_URL="postgresql:///$DB?host=$SOCK&port=$PORT&user=lance_gateway"

# gw_up <name> [VAR=value...]: start the gateway <name> (prefix
# WORK/gw-<name>) on a free port with those settings (LN_REQUEST_TIMEOUT,
# LN_GATEWAY_CONNECTIONS, LN_DATABASE_URL: default DB_URL); sets GW (its
# base URL) and GW_PREFIX.  The parts send most of their requests, many at
# once, with one key, KEY: LN_KEY_CONCURRENCY is 10000 unless given
# (LN_KEY_CONCURRENCY= for its default; 37_fair_share checks the limit).
gw_up() {
	local name="$1" port
	shift
	GW_PREFIX="$WORK/gw-$name"
	port="$(find_free_port 2633)"
	GATEWAYS+=("$GW_PREFIX")
	(
		export LN_KEY_CONCURRENCY=10000
		for assignment in "$@"; do export "${assignment?}"; done
		start_gateway_url "$GW_PREFIX" "$port" "${LN_DATABASE_URL:-$DB_URL}" >/dev/null
	) || {
		fail "gateway $name starts" "$(tail -n 5 "$GW_PREFIX/error.log" 2>/dev/null)"
		return 1
	}
	GW="http://127.0.0.1:$port"
}

# gw_down: stop the gateway of the last gw_up.
gw_down() { stop_gateway "$GW_PREFIX" >/dev/null 2>&1 || true; }

# request <out file> <method> <path> [body]: one request with the key;
# writes "<status> <seconds>" to <out file>.status, headers to
# <out file>.headers and the body to <out file>.
request() {
	local out="$1" method="$2" path="$3" body="${4:-}" args
	args=(-sS --max-time 60 -o "$out" -D "$out.headers" -w '%{http_code} %{time_total}\n' -X "$method"
		-H "x-api-key: $KEY")
	[[ -n "$body" ]] && args+=(-H 'content-type: application/json' --data-binary "$body")
	curl "${args[@]}" "$GW$path" >"$out.status" 2>"$out.err" || printf '000 0\n' >"$out.status"
}

# request_bg <out file> <method> <path> [body]: the same in the background.
request_bg() {
	request "$@" &
	BACKGROUND+=($!)
}

# commit_body <version>: a CreateTableVersion body for version <version>.
commit_body() { printf '{"version": %s, "manifest_path": "serving/t.lance/_versions/%s.manifest"}' "$1" "$1"; }

# new_table <name>: a table ns$<name> whose versions the catalog records
# (its location is in no managed root: no store is reached).
new_table() {
	sql -c "SELECT lance_register_table(jsonb_build_object('id', ARRAY['ns', '$1'], 'location', 's3://serving/$1.lance'))" >/dev/null
}

# versions <table>: how many versions <table> has, and change-log entries
# that made a version of it.
versions() {
	sql -c "SELECT (SELECT count(*) FROM lance_catalog.version v JOIN lance_catalog.object o ON o.id = v.table_id
	                 WHERE o.name = '$1') || ' ' ||
	               (SELECT count(*) FROM lance_catalog.change WHERE 'ns\$$1' = ANY (objects)
	                   AND pg_catalog.array_remove(versions, NULL) <> '{}')"
}

# hold <sql>: a psql session (application_name serving_hold) that runs
# <sql> in an open transaction and keeps it open (its locks held) until
# release; returns once it is idle in that transaction.
hold() {
	local fifo="$WORK/hold.fifo"
	rm -f "$fifo"
	mkfifo "$fifo"
	PGAPPNAME=serving_hold "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres \
		-d "$DB" <"$fifo" >"$WORK/hold.out" 2>&1 &
	BACKGROUND+=($!)
	exec {HOLD_FD}>"$fifo"
	printf 'BEGIN;\n%s\n' "$1" >&"$HOLD_FD"
	wait_for 300 answers 1 sessions "application_name = 'serving_hold' AND state = 'idle in transaction'"
}

# release: roll the held transaction back and end its session.
release() {
	[[ -n "$HOLD_FD" ]] || return 0
	printf 'ROLLBACK;\n\\q\n' >&"$HOLD_FD"
	exec {HOLD_FD}>&-
	HOLD_FD=""
	wait_for 300 answers 0 sessions "application_name = 'serving_hold'"
}

# wait_for <tries> <command...>: run <command> every 0.1 s, at most <tries>
# times; true once it succeeds.
wait_for() {
	local tries="$1" i
	shift
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# answers <expected> <command...>: true when <command> prints <expected>.
answers() { [[ "$("${@:2}")" == "$1" ]]; }

# sessions <condition>: the server's sessions matching an SQL condition.
sessions() { sql -c "SELECT count(*) FROM pg_stat_activity WHERE $1"; }

# lock_waiters: the gateway's connections waiting for a lock.
lock_waiters() {
	sql -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'lance_gateway' AND wait_event_type = 'Lock'"
}

# gateway_backends: the gateway's connections, all states.
gateway_backends() { sql -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'lance_gateway'"; }

# json_code <file>: the "code" of a Lance error body.
json_code() { sed -n 's/^{"code":\([0-9]*\),.*/\1/p' "$1"; }

# ---------------------------------------------------------------------------
# The cluster, its database, an administrator's key
# ---------------------------------------------------------------------------
init_cluster "$PGDATA_DIR" test >/dev/null
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 755
"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d postgres -c "CREATE DATABASE $DB"
sql <<SQL >/dev/null
CREATE EXTENSION lance_namespace;
ALTER DATABASE $DB SET lance_namespace.root = '$TABLES';
ALTER DATABASE $DB SET lance_namespace.local_roots = '$TABLES';
SELECT lance_create_namespace('{"id": ["ns"]}');
SQL
ensure_gateway_role -h "$SOCK" -p "$PORT" -U postgres -d "$DB"
KEY="$(create_api_key lance_admin -h "$SOCK" -p "$PORT" -U postgres -d "$DB")"
is_api_key "$KEY" || die "lance_create_api_key answered no key"

for part in "$SERVING_DIR"/parts/*.sh; do
	[[ -z "${LN_SERVING_ONLY:-}" || "$(basename "$part")" == *"$LN_SERVING_ONLY"* ]] || continue
	say "serving: $(basename "$part" .sh)"
	# shellcheck source=/dev/null
	source "$part"
	release
done

echo
say "serving test: $CHECKS checks, $FAILS failed, $((SECONDS - START)) s"
((FAILS == 0))
