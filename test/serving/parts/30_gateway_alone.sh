# shellcheck shell=bash
# Sourced by test/serving/run.sh.  scripts/gateway.sh in front of a cluster
# it did not make: LN_DATABASE_URL names two hosts, the first down, with
# target_session_attrs=read-write, and the gateway's role logs in over TCP
# with a SCRAM password.  Two gateways serve the database side by side,
# each with its own LN_DATA (configuration, logs), and scripts/stop.sh
# with one's LN_DATA stops that one alone.  The URL is kept from other
# users and out of nginx.conf; a wrong password is 503 with code 17.
# the cluster takes lance_gateway over TCP by password only
sed -i '1i host all lance_gateway 127.0.0.1/32 scram-sha-256' "$PGDATA_DIR/pg_hba.conf"
as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null
sql -c "SET password_encryption = 'scram-sha-256'" -c "ALTER ROLE lance_gateway PASSWORD 'gw-secret'" >/dev/null
DEAD_PORT="$(find_free_port 54597)"
ALONE_URL="postgresql://lance_gateway:gw-secret@127.0.0.1:$DEAD_PORT,127.0.0.1:$PORT/$DB?target_session_attrs=read-write"

# alone <n> <port> <url>: scripts/gateway.sh with LN_DATA=WORK/alone<n>
alone() {
	GATEWAYS+=("$WORK/alone$1/gateway")
	LN_DATA="$WORK/alone$1" LN_GATEWAY_PORT="$2" LN_DATABASE_URL="$3" LN_GATEWAY_CONNECTIONS=4 \
		bash "$ROOT/scripts/gateway.sh" >"$WORK/alone$1.log" 2>&1
}
alone_status() {
	curl -s --max-time 20 -o /dev/null -w '%{http_code}' -H "x-api-key: $KEY" "http://127.0.0.1:$1/v1/namespace/ns/table/list" || true
}
P1="$(find_free_port 2633)"
if alone 1 "$P1" "$ALONE_URL"; then pass "scripts/gateway.sh starts a gateway alone"; else fail "scripts/gateway.sh starts a gateway alone" "$(tail -n 5 "$WORK/alone1.log")"; fi
P2="$(find_free_port $((P1 + 1)))"
if alone 2 "$P2" "$ALONE_URL"; then pass "a second gateway.sh beside it"; else fail "a second gateway.sh beside it" "$(tail -n 5 "$WORK/alone2.log")"; fi
check "the first answers (its URL's first host is down: the second serves)" 200 "$(alone_status "$P1")"
check "the second answers" 200 "$(alone_status "$P2")"
check "each logs its own request" "1 1" \
	"$(grep -c ' GET /v1/namespace/ns/table/list 200 ' "$WORK/alone1/gateway/access.log") $(grep -c ' GET /v1/namespace/ns/table/list 200 ' "$WORK/alone2/gateway/access.log")"
check "they connect over TCP as lance_gateway, by password" 2 \
	"$(sessions "usename = 'lance_gateway' AND client_addr = '127.0.0.1' AND application_name = 'lance_gateway'")"
check "the URL is the workers' user's alone" "600 postgres" "$(stat -c '%a %U' "$WORK/alone1/gateway/database_url")"
if grep -q 'gw-secret' "$WORK/alone1/gateway/nginx.conf" "$WORK/alone1.log"; then
	fail "the password is neither in nginx.conf nor in the script's output"
else
	pass "the password is neither in nginx.conf nor in the script's output"
fi
P3="$(find_free_port $((P2 + 1)))"
alone 3 "$P3" "postgresql://lance_gateway:wrong@127.0.0.1:$PORT/$DB" || fail "gateway.sh starts with a wrong password" "$(tail -n 5 "$WORK/alone3.log")"
if grep -q 'warning: cannot reach the database' "$WORK/alone3.log"; then
	pass "gateway.sh warns that it cannot reach the database"
else
	fail "gateway.sh warns that it cannot reach the database" "$(cat "$WORK/alone3.log")"
fi
answer="$(curl -s --max-time 20 -w ' %{http_code}' -H "x-api-key: $KEY" "http://127.0.0.1:$P3/v1/namespace/ns/table/list")"
if [[ "$answer" == '{"code":17,'*' 503' ]]; then
	pass "a wrong password: 503, code 17"
else
	fail "a wrong password: 503, code 17" "got: $answer"
fi

LN_DATA="$WORK/alone1" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
wait_for 100 answers 000 alone_status "$P1" || true
check "scripts/stop.sh with the first's LN_DATA stops it" 000 "$(alone_status "$P1")"
check "and not the second" 200 "$(alone_status "$P2")"
LN_DATA="$WORK/alone2" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
LN_DATA="$WORK/alone3" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
wait_for 100 answers 000 alone_status "$P2" || true
check "then the second" 000 "$(alone_status "$P2")"
sed -i '1d' "$PGDATA_DIR/pg_hba.conf"
as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null
