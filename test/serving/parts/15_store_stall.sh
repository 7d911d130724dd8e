# shellcheck shell=bash
# Sourced by test/serving/run.sh.  A store that stalls holds up only the
# calls that wait for it: with 2 commits of a table on S3 waiting for a
# store that takes requests and never answers (the S3 test server in mode
# stall), 20 reads of other tables in a row each answer in under 0.1 s, and
# the 2 commits are answered 503 with code 17 (LN_REQUEST_TIMEOUT=4) with
# nothing committed.  A store that asks for fewer requests (429): the
# commit's answer is the database's 429 with code 21, which the gateway
# gives a Retry-After and counts in /metrics (lance_throttled_total,
# reason "rate").  Needs the S3 test server (LN_S3_ENDPOINT and
# LN_S3_CONTROL, which scripts/test.sh gives); without it the part says so
# and checks nothing.
if [[ -z "${LN_S3_ENDPOINT:-}" || -z "${LN_S3_CONTROL:-}" ]]; then
	say "serving: 15_store_stall needs the S3 test server (LN_S3_ENDPOINT, LN_S3_CONTROL): run it through scripts/test.sh"
	return 0
fi
store_mode() { curl -s -o /dev/null --max-time 10 "$LN_S3_CONTROL/mode/$1"; }
sql <<SQL >/dev/null
SELECT lance_set_storage(jsonb_build_object('location', 's3://lake/serving', 'options',
        jsonb_build_object('aws_endpoint', '$LN_S3_ENDPOINT', 'aws_access_key_id', 'S3RVER',
                           'aws_secret_access_key', 'S3RVER', 'allow_http', 'true')));
SELECT lance_declare_table('{"id": ["ns", "onstore"], "location": "s3://lake/serving/onstore.lance"}');
SQL
gw_up stall LN_REQUEST_TIMEOUT=4 LN_GATEWAY_CONNECTIONS=8 || return 0
store_mode stall
stalled=()
for i in 1 2; do
	request_bg "$WORK/stall.commit$i" POST "/v1/table/ns%24onstore/version/create" \
		'{"version": 1, "manifest_path": "serving/onstore.lance/_versions/staged.manifest"}'
	stalled+=($!)
done
if wait_for 100 answers 2 sessions "usename = 'lance_gateway' AND state = 'active'"; then
	pass "2 commits of a table on S3 wait for the stalled store"
else
	fail "2 commits of a table on S3 wait for the stalled store" "active: $(sessions "usename = 'lance_gateway' AND state = 'active'")"
fi
slow=()
for i in $(seq 20); do
	request "$WORK/stall.read" GET "/v1/namespace/ns/table/list"
	read -r status secs <"$WORK/stall.read.status"
	if [[ "$status" != 200 ]] || awk -v s="$secs" 'BEGIN { exit !(s >= 0.1) }'; then
		slow+=("read $i: status $status in $secs s")
	fi
done
pass_if_none "20 reads of other tables meanwhile: each 200 in under 0.1 s" "${slow[@]}"
wait "${stalled[@]}" || true
store_mode up
check "the stalled commits: 503 with code 17, within the deadline and its 2 s of grace" "503 17 503 17" \
	"$(for i in 1 2; do
		read -r status secs <"$WORK/stall.commit$i.status"
		awk -v s="$secs" 'BEGIN { exit !(s < 6.5) }' || status="$status(${secs}s)"
		printf '%s %s ' "$status" "$(json_code "$WORK/stall.commit$i")"
	done | sed 's/ $//')"
check "nothing was committed" "0 0" "$(versions onstore)"
# A store that asks for fewer requests (429): the catalog's code 21, to
# which the gateway adds Retry-After, and which /metrics counts as the
# database's (reason "rate")
store_mode error/5/429
request "$WORK/throttled.commit" POST "/v1/table/ns%24onstore/version/create" \
	'{"version": 1, "manifest_path": "serving/onstore.lance/_versions/staged.manifest"}'
# the errors the commit did not use would meet whoever comes next (test/memory's puts)
store_mode error/0/429
store_mode up
if [[ "$(cut -d' ' -f1 "$WORK/throttled.commit.status") $(json_code "$WORK/throttled.commit")" == "429 21" ]] &&
	grep -qi '^retry-after: 1' "$WORK/throttled.commit.headers"; then
	pass "a commit the store asks to slow down: the database's 429, code 21, with the gateway's Retry-After"
else
	fail "a commit the store asks to slow down: the database's 429, code 21, with the gateway's Retry-After" \
		"$(cat "$WORK/throttled.commit.status" "$WORK/throttled.commit" "$WORK/throttled.commit.headers")"
fi
check "/metrics counts it: lance_throttled_total{reason=\"rate\"} 1" 1 \
	"$(curl -sS --max-time 10 -H "x-api-key: $KEY" "$GW/metrics" 2>/dev/null |
		awk '$1 == "lance_throttled_total{reason=\"rate\"}" { print $2 }')"
gw_down
