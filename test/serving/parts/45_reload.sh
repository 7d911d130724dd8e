# shellcheck shell=bash
# Sourced by test/serving/run.sh.  A reload answers the requests in flight.
# scripts/run.sh and scripts/gateway.sh reload a gateway that runs (nginx
# -s reload): its old workers stop once their requests are answered.  A
# commit waiting on a held version's lock while the gateway reloads is
# answered by its old worker (200, once the holder rolls back), which is
# seen shutting down meanwhile: a worker with no timer of its own pending
# exits at once, and a call in a thread holds none (lance_db keeps one).
gw_up reload LN_GATEWAY_CONNECTIONS=4 || return 0
new_table reloading
hold "SELECT lance_create_table_version('{\"id\": [\"ns\", \"reloading\"], \"version\": 1, \"manifest_path\": \"serving/t.lance/_versions/1.manifest\"}') IS NOT NULL;"
request_bg "$WORK/reload.commit" POST "/v1/table/ns%24reloading/version/create" "$(commit_body 1)"
reload_commit=$!
if wait_for 300 answers 1 lock_waiters; then
	pass "a commit through the gateway waits on the held version's lock"
else
	fail "a commit through the gateway waits on the held version's lock" "waiting: $(lock_waiters)"
fi
(
	# (as gw_up: no limit per key, whose requests the old worker still counts)
	export LN_GATEWAY_CONNECTIONS=4 LN_KEY_CONCURRENCY=10000
	start_gateway_url "$GW_PREFIX" "${GW##*:}" "$DB_URL" >/dev/null
) || fail "the gateway reloads" "$(tail -n 5 "$GW_PREFIX/error.log" 2>/dev/null)"
# shutting_down: a worker of this gateway says it is shutting down
shutting_down() { pgrep -P "$(cat "$GW_PREFIX/nginx.pid" 2>/dev/null || echo 0)" -f 'shutting down' >/dev/null; }
# (until the old worker is seen shutting down, or the commit got an answer)
# shellcheck disable=SC2016 # expanded by eval
wait_for 300 eval 'shutting_down || ! kill -0 "$reload_commit" 2>/dev/null'
request "$WORK/reload.read" GET "/v1/namespace/ns/table/list"
check "after the reload a new worker answers" 200 "$(cut -d' ' -f1 "$WORK/reload.read.status")"
release
wait "$reload_commit" 2>/dev/null || true
check "the commit in flight during the reload is answered: 200, one version" "200 1 1" \
	"$(cut -d' ' -f1 "$WORK/reload.commit.status") $(versions reloading)"
if wait_for 300 eval '! shutting_down'; then
	pass "and the old worker exits then"
else
	fail "and the old worker exits then" "$(ps --ppid "$(cat "$GW_PREFIX/nginx.pid")" -o pid=,args=)"
fi
gw_down
