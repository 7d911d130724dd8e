# shellcheck shell=bash
# Sourced by test/serving/run.sh.  Reconnects.  After pg_ctl restart -m fast
# and after pg_terminate_backend of the gateway's connections, the very
# next requests succeed, with no touch to the gateway.  A commit whose
# connection is ended while it waits on a lock (sent, its outcome unknown
# to the gateway) is answered 503 with code 17 and never sent again: once
# the lock is free no version appears.
gw_up reconnect LN_GATEWAY_CONNECTIONS=4 || return 0
# ten_reads: the statuses of 10 listings in a row, counted
ten_reads() {
	for _ in $(seq 10); do
		request "$WORK/reconnect.read" GET "/v1/namespace/ns/table/list"
		cut -d' ' -f1 "$WORK/reconnect.read.status"
	done | sort | uniq -c | awk '{ printf "%s%s x %s", (NR > 1 ? ", " : ""), $1, $2 }'
}
check "10 reads" "10 x 200" "$(ten_reads)"
as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w restart >/dev/null
wait_ready "$SOCK" "$PORT" || fail "the server restarts"
request "$WORK/reconnect.first" GET "/v1/namespace/ns/table/list"
check "after pg_ctl restart -m fast: the first request" 200 "$(cut -d' ' -f1 "$WORK/reconnect.first.status")"
check "and the next 10" "10 x 200" "$(ten_reads)"
check "the gateway's connections were ended" "t" \
	"$(sql -c "SELECT count(pg_terminate_backend(pid)) > 0 FROM pg_stat_activity WHERE usename = 'lance_gateway'")"
wait_for 100 answers 0 gateway_backends || true
request "$WORK/reconnect.first" GET "/v1/namespace/ns/table/list"
check "after pg_terminate_backend: the first request" 200 "$(cut -d' ' -f1 "$WORK/reconnect.first.status")"
check "and the next 10" "10 x 200" "$(ten_reads)"

new_table lost
hold "SELECT lance_create_table_version('{\"id\": [\"ns\", \"lost\"], \"version\": 1, \"manifest_path\": \"serving/t.lance/_versions/1.manifest\"}') IS NOT NULL;"
request_bg "$WORK/lost.commit" POST "/v1/table/ns%24lost/version/create" "$(commit_body 1)"
lost_commit=$!
wait_for 300 answers 1 lock_waiters || fail "the commit waits on the lock" "waiting: $(lock_waiters)"
sql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'lance_gateway' AND wait_event_type = 'Lock'" >/dev/null
wait "$lost_commit" || true
if [[ "$(cut -d' ' -f1 "$WORK/lost.commit.status")" == 503 && "$(json_code "$WORK/lost.commit")" == 17 ]] &&
	grep -q 'not repeated' "$WORK/lost.commit"; then
	pass "a commit whose connection broke after it was sent: 503, code 17, not repeated"
else
	fail "a commit whose connection broke after it was sent: 503, code 17, not repeated" "got $(cat "$WORK/lost.commit.status"): $(cat "$WORK/lost.commit")"
fi
release
check "no connection of the gateway is busy (nothing was sent again)" 0 "$(sessions "usename = 'lance_gateway' AND state <> 'idle'")"
check "no version was made, no change logged" "0 0" "$(versions lost)"
request "$WORK/lost.again" POST "/v1/table/ns%24lost/version/create" "$(commit_body 1)"
check "the same commit sent again by the client succeeds" 200 "$(cut -d' ' -f1 "$WORK/lost.again.status")"
gw_down
