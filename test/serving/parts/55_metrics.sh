# shellcheck shell=bash
# Sourced by test/serving/run.sh.  GET /metrics while every database
# connection is busy, and its gauges after a reload with fewer workers.
#
#   busy     with the only connection (LN_GATEWAY_CONNECTIONS=1) held by a
#            commit waiting on a row lock, a scrape with the key the
#            database authorized a moment ago answers 200 at once (a scrape
#            never queues for a connection), showing that connection in use;
#            with an administrator's key it never authorized, 503 with code
#            17 at once; without a key, 401 with code 16
#   lookup   a request waiting for the look-up of the extension's schema
#            that a scrape started (pg_extension locked: given up after the
#            scrape's 2 s) looks it up itself and answers 200
#   stalled  with the backend of the only connection stopped (SIGSTOP), a
#            scrape with a key authorized a moment ago answers 200 within
#            9 s (the check of the key gives up after 2 s)
#   reload   a gateway of 2 workers (1 connection each), with a commit
#            waiting on the lock in each worker, reloaded with 1 worker; its
#            old workers then end without writing their gauges back (killed):
#            the gauges count the running worker alone (0 in use, 0 waiting)
#
# LN_REQUEST_TIMEOUT=60: a scrape that queued would wait up to that; curl
# gives up after 10 s.

# m55_scrape <out file> [key]: the status of GET /metrics, its body in <out file>.
m55_scrape() {
	local args=(-sS --max-time 10 -o "$1" -w '%{http_code}')
	[[ -n "${2:-}" ]] && args+=(-H "x-api-key: $2")
	: >"$1"
	# (no answer: curl writes 000)
	curl "${args[@]}" "$GW/metrics" 2>/dev/null || true
}
# m55_gauge <name> <file>: the primary pool's value of gauge <name> in a scrape.
m55_gauge() { awk -v n="$1{pool=\"primary\"}" '$1 == n { print $2 }' "$2"; }
# m55_settled: requests of the gauged gateway waiting on the lock in the
# database plus those waiting for a connection in the gateway ("" when the
# scrape fails).
m55_settled() {
	[[ "$(m55_scrape "$WORK/m55.settled" "$KEY")" == 200 ]] || return 0
	echo $(($(lock_waiters) + $(m55_gauge lance_db_connections_waiting "$WORK/m55.settled")))
}

# ---------------------------------------------------------------------------
# busy
# ---------------------------------------------------------------------------
gw_up metrics LN_GATEWAY_CONNECTIONS=1 LN_REQUEST_TIMEOUT=60 || return 0
M55_NEVER="$(create_api_key lance_admin -h "$SOCK" -p "$PORT" -U postgres -d "$DB")"
check "a scrape with an administrator's key" 200 "$(m55_scrape "$WORK/m55.txt" "$KEY")"
new_table gauged
hold "SELECT lance_create_table_version('{\"id\": [\"ns\", \"gauged\"], \"version\": 1, \"manifest_path\": \"serving/t.lance/_versions/1.manifest\"}') IS NOT NULL;"
request_bg "$WORK/m55.commit" POST "/v1/table/ns%24gauged/version/create" "$(commit_body 1)"
m55_commit=$!
wait_for 300 answers 1 lock_waiters || fail "the commit waits on the lock" "waiting: $(lock_waiters)"
check "the only connection busy: a scrape with the key authorized a moment ago, 200 at once, 1 connection in use" \
	"200 1" "$(m55_scrape "$WORK/m55.txt" "$KEY") $(m55_gauge lance_db_connections_in_use "$WORK/m55.txt")"
check "the only connection busy: an administrator's key never authorized, 503 with code 17 at once" \
	"503 17" "$(m55_scrape "$WORK/m55.never" "$M55_NEVER") $(json_code "$WORK/m55.never")"
check "the only connection busy: no key, 401 with code 16" "401 16" \
	"$(m55_scrape "$WORK/m55.nokey") $(json_code "$WORK/m55.nokey")"
release
wait "$m55_commit" || true
check "the commit went on once the lock was free" 200 "$(cut -d' ' -f1 "$WORK/m55.commit.status")"
gw_down

# ---------------------------------------------------------------------------
# lookup
# ---------------------------------------------------------------------------
# A fresh gateway does not know the extension's schema yet.  With
# pg_extension locked, a scrape's look-up of it waits on the lock past its
# 2 s (given up after lance_db's grace: 503); a request that arrived
# meanwhile waited for that look-up, and, with time left, looks the schema
# up itself once the scrape has its answer, which succeeds once the lock is
# free.
gw_up lookup LN_GATEWAY_CONNECTIONS=1 LN_REQUEST_TIMEOUT=60 || return 0
hold "LOCK TABLE pg_catalog.pg_extension IN ACCESS EXCLUSIVE MODE;"
m55_scrape "$WORK/m55.lookup" "$KEY" >"$WORK/m55.lookup.status" &
m55_lookup_scrape=$!
BACKGROUND+=("$m55_lookup_scrape")
wait_for 300 answers 1 lock_waiters || fail "the scrape's look-up waits on the lock" "waiting: $(lock_waiters)"
request_bg "$WORK/m55.lookup_request" GET "/v1/namespace/ns/list"
m55_lookup_request=$!
wait "$m55_lookup_scrape" || true
check "the scrape whose look-up waited on the lock past its 2 s: 503 with code 17" "503 17" \
	"$(cat "$WORK/m55.lookup.status") $(json_code "$WORK/m55.lookup")"
release
wait "$m55_lookup_request" || true
check "a request that waited for that look-up looks the schema up itself: 200" 200 \
	"$(cut -d' ' -f1 "$WORK/m55.lookup_request.status")"
gw_down

# ---------------------------------------------------------------------------
# stalled
# ---------------------------------------------------------------------------
# The backend of the gateway's only connection stopped (SIGSTOP): the idle
# connection looks usable, and a scrape's check of the key waits for an
# answer that never comes.  It gives up within 2 s (and lance_db's grace)
# and answers from the authorization kept, well within Prometheus's 10 s.
gw_up stalled LN_GATEWAY_CONNECTIONS=1 LN_REQUEST_TIMEOUT=60 || return 0
check "a scrape with an administrator's key" 200 "$(m55_scrape "$WORK/m55.txt" "$KEY")"
wait_for 300 answers 1 gateway_backends || fail "the gateway holds one connection" "$(gateway_backends)"
m55_backend="$(sql -c "SELECT pid FROM pg_stat_activity WHERE usename = 'lance_gateway'")"
STOPPED+=("$m55_backend")
kill -STOP "$m55_backend"
check "its backend stopped: a scrape with the key authorized a moment ago, 200 within 9 s" 200 \
	"$(curl -sS --max-time 9 -o /dev/null -w '%{http_code}' -H "x-api-key: $KEY" "$GW/metrics" 2>/dev/null || true)"
kill -CONT "$m55_backend"
gw_down

# ---------------------------------------------------------------------------
# reload
# ---------------------------------------------------------------------------
if (($(nproc) < 2)); then
	say "serving: 55_metrics: one core, one worker: no reload with fewer workers to check"
	return 0
fi
# (an old worker's title: "nginx: worker process is shutting down")
m55_old_workers() { pgrep -P "$M55_MASTER" -f 'worker process is shutting down' || true; }
# m55_workers: "<old workers> <new workers>"
m55_workers() {
	local old all
	old="$(m55_old_workers | wc -l)"
	all="$(pgrep -c -P "$M55_MASTER" || true)"
	echo "$old $((all - old))"
}
gw_up gauges LN_GATEWAY_CONNECTIONS=2 LN_REQUEST_TIMEOUT=60 || return 0
M55_MASTER="$(cat "$GW_PREFIX/nginx.pid")"
check "a gateway of 2 workers" "0 2" "$(m55_workers)"
check "a scrape with an administrator's key" 200 "$(m55_scrape "$WORK/m55.txt" "$KEY")"
new_table gauged2
hold "SELECT lance_create_table_version('{\"id\": [\"ns\", \"gauged2\"], \"version\": 1, \"manifest_path\": \"serving/t.lance/_versions/1.manifest\"}') IS NOT NULL;"
# Commits, one at a time, until each worker's connection waits on the lock:
# a commit goes to either worker, and one that finds its worker's connection
# taken waits for it in the gateway (lance_db_connections_waiting).
for i in $(seq 20); do
	request_bg "$WORK/m55.g$i" POST "/v1/table/ns%24gauged2/version/create" "$(commit_body 1)"
	wait_for 300 answers "$i" m55_settled || break
	(($(lock_waiters) < 2)) || break
done
check "each worker's connection waits on the lock" 2 "$(lock_waiters)"
m55_scrape "$WORK/m55.txt" "$KEY" >/dev/null
check "the gauges: 2 connections in use, the other commits waiting" "2 $((i - 2))" \
	"$(m55_gauge lance_db_connections_in_use "$WORK/m55.txt") $(m55_gauge lance_db_connections_waiting "$WORK/m55.txt")"
# reload with one worker: the old two finish their requests while the new
# one serves; killed, they never write their gauges back
(
	export LN_GATEWAY_CONNECTIONS=1 LN_REQUEST_TIMEOUT=60 LN_KEY_CONCURRENCY=10000
	start_gateway_url "$GW_PREFIX" "${GW##*:}" "$DB_URL" >/dev/null
)
wait_for 300 answers "2 1" m55_workers ||
	fail "the reload leaves 2 old workers shutting down and 1 new one" "$(ps --ppid "$M55_MASTER" -o pid=,args=)"
for pid in $(m55_old_workers); do kill -KILL "$pid"; done
wait_for 300 answers "0 1" m55_workers || fail "the old workers end" "$(ps --ppid "$M55_MASTER" -o pid=,args=)"
release
check "after the reload with 1 worker and its old workers' end: 0 connections in use, 0 waiting" "200 0 0" \
	"$(m55_scrape "$WORK/m55.txt" "$KEY") $(m55_gauge lance_db_connections_in_use "$WORK/m55.txt") $(m55_gauge lance_db_connections_waiting "$WORK/m55.txt")"
gw_down
