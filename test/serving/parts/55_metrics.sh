# shellcheck shell=bash
# Sourced by test/serving/run.sh.  GET /metrics while every database
# connection is busy.
#
#   busy     with the only connection (LN_GATEWAY_CONNECTIONS=1) held by a
#            commit waiting on a row lock, a scrape with the key the
#            database authorized a moment ago answers 200 at once (a scrape
#            never queues for a connection), showing that connection in use;
#            with an administrator's key it never authorized, 503 with code
#            17 at once; without a key, 401 with code 16
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
