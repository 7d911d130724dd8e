# shellcheck shell=bash
# Sourced by test/serving/run.sh.  No head-of-line blocking: with 8 commits
# of one version waiting behind a transaction that holds it (their
# connections seen waiting on the lock in pg_stat_activity), 20 reads in a
# row each answer in under 0.1 s; once the holder rolls back, one of the 8
# commits wins and the 7 others are 409.
gw_up blocking LN_GATEWAY_CONNECTIONS=24 || return 0
new_table blocked
hold "SELECT lance_create_table_version('{\"id\": [\"ns\", \"blocked\"], \"version\": 1, \"manifest_path\": \"serving/t.lance/_versions/1.manifest\"}') IS NOT NULL;"
commits=()
for i in 1 2 3 4 5 6 7 8; do
	request_bg "$WORK/block.commit$i" POST "/v1/table/ns%24blocked/version/create" "$(commit_body 1)"
	commits+=($!)
done
if wait_for 300 answers 8 lock_waiters; then
	pass "8 commits through the gateway wait on the held version's lock"
else
	fail "8 commits through the gateway wait on the held version's lock" "waiting: $(lock_waiters)"
fi
slow=()
for i in $(seq 20); do
	request "$WORK/block.read" GET "/v1/namespace/ns/table/list"
	read -r status secs <"$WORK/block.read.status"
	if [[ "$status" != 200 ]] || awk -v s="$secs" 'BEGIN { exit !(s >= 0.1) }'; then
		slow+=("read $i: status $status in $secs s")
	fi
done
pass_if_none "20 reads in a row while 8 requests wait: each 200 in under 0.1 s" "${slow[@]}"
check "the 8 commits still wait after the reads" 8 "$(lock_waiters)"
release
wait "${commits[@]}" || true
check "once the holder rolls back: one commit 200, seven 409" "1 7" \
	"$(cat "$WORK"/block.commit*.status | awk '$1 == 200 { a++ } $1 == 409 { b++ } END { print a + 0, b + 0 }')"
check "the table has that one version, and one change-log entry" "1 1" "$(versions blocked)"
gw_down
