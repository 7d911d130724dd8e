# shellcheck shell=bash
# Sourced by test/serving/run.sh.  The access log tells the truth: a commit
# that waited 1.5 s on a lock is logged with a duration of at least 1.5 s
# and its end time, after a read that was answered meanwhile, logged with
# its own short duration.
gw_up accesslog || return 0
new_table logged
hold "SELECT lance_create_table_version('{\"id\": [\"ns\", \"logged\"], \"version\": 1, \"manifest_path\": \"serving/t.lance/_versions/1.manifest\"}') IS NOT NULL;"
request_bg "$WORK/logged.commit" POST "/v1/table/ns%24logged/version/create" "$(commit_body 1)"
logged_commit=$!
wait_for 300 answers 1 lock_waiters || fail "the commit waits on the lock" "waiting: $(lock_waiters)"
request "$WORK/logged.read" GET "/v1/namespace/ns/table/list"
held_from="$(date +%s)"
# the time the lock is held is what the log must show: measured, not a race
sleep 1.5
release
wait "$logged_commit" || true
check "the commit succeeds once the lock is free" 200 "$(cut -d' ' -f1 "$WORK/logged.commit.status")"
wait_for 50 grep -q "ns\$logged/version/create" "$GW_PREFIX/access.log" || true
LOG_LINES="$(access_log_fields "$GW_PREFIX/access.log" |
	grep -E " (GET /v1/namespace/ns/table/list|POST /v1/table/ns\\\$logged/version/create) ")"
read -r read_end _ _ _ read_secs _ <<<"$(sed -n 1p <<<"$LOG_LINES")"
read -r commit_end _ commit_path _ commit_secs _ <<<"$(sed -n 2p <<<"$LOG_LINES")"
check "the read is logged first (it ended first), then the commit" "ns\$logged/version/create" "${commit_path#/v1/table/}"
if awk -v s="${commit_secs:-0}" 'BEGIN { exit !(s >= 1.5) }'; then
	pass "the commit's line has its real duration ($commit_secs s)"
else
	fail "the commit's line has its real duration (at least 1.5 s)" "$LOG_LINES"
fi
if awk -v s="${read_secs:-9}" 'BEGIN { exit !(s < 0.1) }'; then
	pass "the read's line has its own short duration ($read_secs s)"
else
	fail "the read's line has its own short duration" "$LOG_LINES"
fi
if (($(date -d "$commit_end" +%s) >= held_from + 1)) && (($(date -d "$read_end" +%s) <= held_from)); then
	pass "each line has its request's end time ($read_end, $commit_end)"
else
	fail "each line has its request's end time" "lock held from $(date -d "@$held_from" -Iseconds)" "$LOG_LINES"
fi
gw_down
