# shellcheck shell=bash
# Sourced by test/serving/run.sh.  A server that stops reading holds a call
# only until its deadline.  With the backend of the gateway's one connection
# stopped (SIGSTOP: it reads nothing, as behind a network that stopped), a
# commit with a 4 MB body, more than the socket's buffers take, is answered
# 503 with code 17 within LN_REQUEST_TIMEOUT=3 and its 2 s of grace (a
# blocking send would wait for as long as the backend does).  Once the
# backend goes on it gets part of the call and the end of the connection:
# nothing is committed, and the gateway serves again.  The answer is the
# not_sent one (the call's end never left), not "outcome unknown".  Both
# ways a gateway calls the database: a Unix socket the workers speak to
# themselves (gateway/lance_db_wire.lua: a cosocket's send timeout) and TCP
# through libpq in a thread (nonblocking sends until the deadline).
for ss_via in unix tcp; do
	if [[ "$ss_via" == unix ]]; then
		ss_url="$DB_URL"
	else
		ss_url="postgresql://lance_gateway@127.0.0.1:$PORT/$DB"
	fi
	gw_up "send_stall_$ss_via" LN_DATABASE_URL="$ss_url" LN_REQUEST_TIMEOUT=3 LN_GATEWAY_CONNECTIONS=1 || break
	new_table stalled_send_$ss_via
	request "$WORK/send_stall.read" GET "/v1/namespace/ns/table/list"
	check "($ss_via) a first request: 200, over the gateway's one connection" "200 1" \
		"$(cut -d' ' -f1 "$WORK/send_stall.read.status") $(gateway_backends)"
	backend="$(sql -c "SELECT pid FROM pg_stat_activity WHERE usename = 'lance_gateway'")"
	# a commit that would succeed, padded to 4 MB (the gateway takes up to 8 MB)
	{
		printf '{"version": 1, "manifest_path": "serving/t.lance/_versions/1.manifest", "padding": "'
		head -c 4000000 /dev/zero | tr '\0' x
		printf '"}'
	} >"$WORK/send_stall.body"
	STOPPED+=("$backend")
	kill -STOP "$backend"
	curl -sS --max-time 60 -o "$WORK/send_stall.commit" -w '%{http_code} %{time_total}\n' -X POST \
		-H "x-api-key: $KEY" -H 'content-type: application/json' --data-binary "@$WORK/send_stall.body" \
		"$GW/v1/table/ns%24stalled_send_$ss_via/version/create" >"$WORK/send_stall.commit.status" 2>"$WORK/send_stall.err" ||
		printf '000 0\n' >"$WORK/send_stall.commit.status"
	kill -CONT "$backend"
	read -r status secs <"$WORK/send_stall.commit.status"
	# The time is the point here: LN_REQUEST_TIMEOUT (3 s) and the grace
	# (2 s) are 5 s; 6.5 leaves 1.5 s for a slow, loaded machine, while a
	# send that waited for the backend would take until curl's 60 s.
	if [[ "$status" == 503 && "$(json_code "$WORK/send_stall.commit")" == 17 ]] &&
		awk -v s="$secs" 'BEGIN { exit !(s < 6.5) }'; then
		pass "($ss_via) a 4 MB commit to a backend that reads nothing: 503, code 17, within the deadline and its grace"
	else
		fail "($ss_via) a 4 MB commit to a backend that reads nothing: 503, code 17, within the deadline and its grace" \
			"got $status in $secs s: $(head -c 300 "$WORK/send_stall.commit" 2>/dev/null)"
	fi
	if grep -q 'the catalog database is unavailable' "$WORK/send_stall.commit" &&
		grep -q "cannot send to the database: the database took no more of the call before the request's deadline" \
			"$GW_PREFIX/error.log"; then
		pass "($ss_via) answered as not sent (its end never left), not as an unknown outcome"
	else
		fail "($ss_via) answered as not sent (its end never left), not as an unknown outcome" \
			"$(head -c 300 "$WORK/send_stall.commit"): $(grep 'lance_gateway: ' "$GW_PREFIX/error.log" | tail -n 2)"
	fi
	if wait_for 300 answers 0 sessions "pid = $backend"; then
		pass "($ss_via) the stopped backend, going on, finds its connection closed and ends"
	else
		fail "($ss_via) the stopped backend, going on, finds its connection closed and ends" \
			"$(sql -c "SELECT state, wait_event FROM pg_stat_activity WHERE pid = $backend")"
	fi
	check "($ss_via) nothing was committed" "0 0" "$(versions stalled_send_$ss_via)"
	request "$WORK/send_stall.read" GET "/v1/namespace/ns/table/list"
	check "($ss_via) the gateway serves again" 200 "$(cut -d' ' -f1 "$WORK/send_stall.read.status")"
	request "$WORK/send_stall.again" POST "/v1/table/ns%24stalled_send_$ss_via/version/create" "$(commit_body 1)"
	check "($ss_via) the commit sent again with a small body succeeds" "200 1 1" \
		"$(cut -d' ' -f1 "$WORK/send_stall.again.status") $(versions stalled_send_$ss_via)"
	gw_down
done
