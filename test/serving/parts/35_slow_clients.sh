# shellcheck shell=bash
# Sourced by test/serving/run.sh.  Slow clients (README, "Serving: threads,
# deadlines, reconnects"), from test/serving/slow_clients.py: loopback
# connections from 127.0.0.2 that send their requests very slowly, bounded
# in count and time (the program ends by itself after its --seconds).
#
#   flood    4,000 connections from 127.0.0.2, each sending its header a
#            line every 10 s and never its end: all 4,000 held open at once
#            (worker_connections and worker_rlimit_nofile fit them, where
#            1024 connections a worker and an open file limit of 1024 did
#            not), while 20 requests from 127.0.0.1 are each answered 200 in
#            under 1 s; the gateway cuts each of the 4,000 off within 20 s of
#            its connection (client_header_timeout, 15 s), and its error.log
#            says nothing of worker_connections or open files
#   trickle  meanwhile one header from 127.0.0.1 trickled a line every 2 s:
#            cut off within 20 s (nginx's default, 60 s, kept it open)
#   bodies   LN_GATEWAY_CONNECTIONS_PER_ADDRESS=200: 600 POSTs from
#            127.0.0.2 whose bodies come a byte a second: at most 200 held
#            (and of 60 such 8 MB bodies from 127.0.0.3, at most 16),
#            the others refused 429 with a Lance body (code 21), Retry-After
#            and an X-Request-Id, and error.log says "limiting connections";
#            a request of 127.0.0.1 is answered 200 meanwhile; one of
#            127.0.0.2 with a secret in its query string is refused 400
#            (code 13) before the limit, whose error.log line would quote
#            the query, and the secret is in no log; /metrics counts the
#            refusals as lance_throttled_total{reason="connections_per_address"}
#
# The bounds on time are the point of the checks and have margin: the
# 127.0.0.1 requests are a listing a worker answers in milliseconds (the
# slow connections cost it nothing but memory, so 1 s holds on a loaded
# 2-core machine), and a cut-off due at 15 s is checked at 20 s.
S35_CLIENT="$SERVING_DIR/slow_clients.py"

# s35_field <json file> <field>: a field of the client's summary.
s35_field() { jq -r ".$2" "$1" 2>/dev/null || echo "?"; }

# ---------------------------------------------------------------------------
# flood and trickle
# ---------------------------------------------------------------------------
# s35_flood: the flood and the trickle, through a gateway of their own.
s35_flood() {
	gw_up slow || return 0
	s35_port="${GW##*:}"
	python3 "$S35_CLIENT" headers --port "$s35_port" --count 4000 --interval 10 --seconds 25 --reconnect \
		--ready "$WORK/s35.flood.ready" >"$WORK/s35.flood.json" 2>"$WORK/s35.flood.err" &
	s35_flood_pid=$!
	BACKGROUND+=("$s35_flood_pid")
	python3 "$S35_CLIENT" headers --port "$s35_port" --source 127.0.0.1 --count 1 --interval 2 --seconds 30 \
		>"$WORK/s35.trickle.json" 2>"$WORK/s35.trickle.err" &
	s35_trickle=$!
	BACKGROUND+=("$s35_trickle")
	# (the cap only ends a hang: the 4,000 are made in a few seconds)
	wait_for 600 test -s "$WORK/s35.flood.ready" || fail "the 4,000 slow connections are made" "$(cat "$WORK/s35.flood.err")"
	s35_slow=()
	for i in $(seq 20); do
		answer="$(curl -sS -o /dev/null --max-time 10 -w '%{http_code} %{time_total}' -H "x-api-key: $KEY" \
			"$GW/v1/namespace/ns/list" 2>&1)" || true
		read -r code secs <<<"$answer"
		if [[ "$code" != 200 ]] || ! awk -v s="$secs" 'BEGIN { exit !(s < 1) }'; then
			s35_slow+=("request $i: $answer")
		fi
		# spread over 4 s of the flood, which tries again what the gateway drops
		sleep 0.2
	done
	s35_open="$(cat "$WORK/s35.flood.ready")"
	pass_if_none "with $s35_open slow connections from 127.0.0.2 open, 20 requests from 127.0.0.1: each 200 in under 1 s" \
		"${s35_slow[@]}"
	wait "$s35_flood_pid" || true
	wait "$s35_trickle" || true
	check "all 4,000 slow connections were held open at once (none failed)" "4000 0" \
		"$(s35_field "$WORK/s35.flood.json" most_open) $(s35_field "$WORK/s35.flood.json" failed)"
	s35_cut="$(s35_field "$WORK/s35.flood.json" closed_by_gateway)"
	s35_longest="$(s35_field "$WORK/s35.flood.json" longest_life)"
	if [[ "$s35_cut" =~ ^[0-9]+$ ]] && ((s35_cut >= 4000)) && [[ "$(s35_field "$WORK/s35.flood.json" overstayed)" == 0 ]]; then
		pass "the gateway cut each of them off within 20 s of its connection ($s35_cut cut, the longest lived $s35_longest s)"
	else
		fail "the gateway cut each of them off within 20 s of its connection" "$(cat "$WORK/s35.flood.json")"
	fi
	s35_trickled="$(s35_field "$WORK/s35.trickle.json" closed_by_gateway) $(s35_field "$WORK/s35.trickle.json" longest_life)"
	if [[ "$s35_trickled" == "1 "* ]] && awk -v s="${s35_trickled#1 }" 'BEGIN { exit !(s < 20) }'; then
		pass "a header trickled a line every 2 s is cut off within 20 s (after ${s35_trickled#1 } s)"
	else
		fail "a header trickled a line every 2 s is cut off within 20 s" "$(cat "$WORK/s35.trickle.json")"
	fi
	check "error.log says nothing of worker_connections or open files" 0 \
		"$(grep -c -e 'worker_connections' -e 'Too many open files' -e 'setrlimit' "$GW_PREFIX/error.log" || true)"
	gw_down
}
# The gateway holds as many clients as the hard open file limit of its OS
# user lets it (README, "Serving"): 4,000 at once need more than 1024.
s35_hard="$(as_gateway sh -c 'ulimit -Hn' 2>/dev/null || true)"
if [[ "$s35_hard" != unlimited ]] && ! { [[ "$s35_hard" =~ ^[0-9]+$ ]] && ((s35_hard >= 8192)); }; then
	say "serving: 35_slow_clients: the OS user $LN_GATEWAY_USER's hard open file limit is $s35_hard: too few for the 4,000 slow connections; the flood is not checked"
else
	s35_flood
fi

# ---------------------------------------------------------------------------
# bodies
# ---------------------------------------------------------------------------
gw_up slowbody LN_GATEWAY_CONNECTIONS_PER_ADDRESS=200 || return 0
s35_port="${GW##*:}"
# (%24: ns$slowbody; none is made: no body ends)
python3 "$S35_CLIENT" bodies --port "$s35_port" --count 600 --interval 1 --seconds 12 --length 100 \
	--path "/v1/namespace/ns%24slowbody/create" --ready "$WORK/s35.bodies.ready" \
	>"$WORK/s35.bodies.json" 2>"$WORK/s35.bodies.err" &
s35_bodies=$!
BACKGROUND+=("$s35_bodies")
# every one of them answered, or held with a byte of its body sent (the
# cap only ends a hang)
wait_for 600 test -s "$WORK/s35.bodies.ready" || fail "the 600 slow requests are under way" "$(cat "$WORK/s35.bodies.err")"
# while 200 are held: one more from 127.0.0.2 is refused, 127.0.0.1 is served
curl -sS --interface 127.0.0.2 --max-time 10 -o "$WORK/s35.over" -D "$WORK/s35.over.headers" -w '%{http_code}' \
	-H "x-api-key: $KEY" "$GW/v1/namespace/ns/list" >"$WORK/s35.over.status" 2>&1 || true
if [[ "$(cat "$WORK/s35.over.status") $(json_code "$WORK/s35.over")" == "429 21" ]] &&
	grep -qi '^retry-after: 1' "$WORK/s35.over.headers" && grep -qi '^x-request-id: ' "$WORK/s35.over.headers" &&
	grep -qi '^content-type: application/json' "$WORK/s35.over.headers"; then
	pass "another request from 127.0.0.2, past its 200: 429, code 21 in a JSON body, Retry-After, X-Request-Id"
else
	fail "another request from 127.0.0.2, past its 200: 429, code 21 in a JSON body, Retry-After, X-Request-Id" \
		"$(cat "$WORK/s35.over.status")" "$(cat "$WORK/s35.over.headers")" "$(cat "$WORK/s35.over")"
fi
check "meanwhile a request from 127.0.0.1: 200" 200 \
	"$(curl -sS -o /dev/null --max-time 10 -w '%{http_code}' -H "x-api-key: $KEY" "$GW/v1/namespace/ns/list" 2>&1)"
S35_SECRET="s35secret$RANDOM$RANDOM"
check "a request from 127.0.0.2 with a secret in its query string: 400, code 13 (refused before the limit)" "400 13" \
	"$(curl -sS --interface 127.0.0.2 --max-time 10 -o "$WORK/s35.secret" -w '%{http_code}' \
		"$GW/v1/namespace/ns/list?token=$S35_SECRET" 2>&1) $(json_code "$WORK/s35.secret")"
wait "$s35_bodies" || true
s35_refused="$(jq -r '.statuses["429"] // 0' "$WORK/s35.bodies.json" 2>/dev/null || echo 0)"
s35_held="$(jq -r '.statuses.none // 0' "$WORK/s35.bodies.json" 2>/dev/null || echo 0)"
if ((s35_refused >= 350 && s35_held <= 200 && s35_refused + s35_held == 600)); then
	pass "600 slow bodies from 127.0.0.2 with LN_GATEWAY_CONNECTIONS_PER_ADDRESS=200: $s35_held held, $s35_refused refused 429"
else
	fail "600 slow bodies from 127.0.0.2 with LN_GATEWAY_CONNECTIONS_PER_ADDRESS=200: at most 200 held, the others refused 429" \
		"$(cat "$WORK/s35.bodies.json")"
fi
if jq -r '.refusal // ""' "$WORK/s35.bodies.json" | tr -d '\r' | grep -E '^\{"code":21,"error":"[^"]+"\}$' >/dev/null; then
	pass "their refusal's body is a Lance error, code 21"
else
	fail "their refusal's body is a Lance error, code 21" "$(cat "$WORK/s35.bodies.json")"
fi
# Bodies of 100 KB and more hold up to 1 MB each while they come: at most
# 16 of them in flight per address (of 60 from 127.0.0.3, sent a byte a
# second, most refused), whatever LN_GATEWAY_CONNECTIONS_PER_ADDRESS allows
python3 "$S35_CLIENT" bodies --port "$s35_port" --source 127.0.0.3 --count 60 --interval 1 --seconds 8 \
	--length 8000000 --path "/v1/namespace/ns%24slowbody/create" >"$WORK/s35.large.json" 2>"$WORK/s35.large.err" || true
s35_large_refused="$(jq -r '.statuses["429"] // 0' "$WORK/s35.large.json" 2>/dev/null || echo 0)"
s35_large_held="$(jq -r '.statuses.none // 0' "$WORK/s35.large.json" 2>/dev/null || echo 0)"
if ((s35_large_refused >= 40 && s35_large_held <= 16 && s35_large_refused + s35_large_held == 60)); then
	pass "60 slow 8 MB bodies from 127.0.0.3: $s35_large_held held, $s35_large_refused refused 429"
else
	fail "60 slow 8 MB bodies from 127.0.0.3: at most 16 held, the others refused 429" \
		"$(cat "$WORK/s35.large.json" "$WORK/s35.large.err")"
fi
check "error.log says \"limiting connections\"" yes \
	"$(grep -q 'limiting connections' "$GW_PREFIX/error.log" && echo yes || echo no)"
check "the query's secret is in neither log" 0 \
	"$(grep -c -F "$S35_SECRET" "$GW_PREFIX/error.log" "$GW_PREFIX/access.log" | awk -F: '{ n += $NF } END { print n + 0 }')"
s35_throttled="$(curl -sS --max-time 10 -H "x-api-key: $KEY" "$GW/metrics" 2>/dev/null |
	awk '$1 == "lance_throttled_total{reason=\"connections_per_address\"}" { print $2 }')"
if [[ "$s35_throttled" =~ ^[0-9]+$ ]] && ((s35_throttled >= s35_refused + 1 + s35_large_refused)); then
	pass "/metrics counts them: lance_throttled_total{reason=\"connections_per_address\"} $s35_throttled"
else
	fail "/metrics counts them: lance_throttled_total{reason=\"connections_per_address\"} at least $((s35_refused + 1 + s35_large_refused))" \
		"got '$s35_throttled'"
fi
gw_down
