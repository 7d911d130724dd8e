# shellcheck shell=bash
# Sourced by test/serving/run.sh.  Bounded waits, with LN_REQUEST_TIMEOUT=2
# and one connection (LN_GATEWAY_CONNECTIONS=1).  A commit that waits on a
# lock past 2 s is cancelled in the database (its connection no longer
# waits), rolled back (no version, no change-log entry) and answered 503,
# code 17, with Retry-After.  Against a database that accepts connections
# and never answers (a listener that never speaks; the URL's
# connect_timeout=10 keeps the first request's connection attempt going), a
# request queued for the only connection gets the same at its own deadline.
# Without a connect_timeout of its own, a request against that listener
# with LN_REQUEST_TIMEOUT=3.5 is answered 503 within 3.5 s (libpq's
# connect_timeout is the whole seconds left), and against the database a
# fractional LN_REQUEST_TIMEOUT connects (libpq takes no "3.5").
# Then 400 requests (reads and creations) from 100 concurrent clients
# through a gateway of the default size all answer 200.
gw_up timeouts LN_REQUEST_TIMEOUT=2 LN_GATEWAY_CONNECTIONS=1 || return 0
new_table slow
hold "SELECT lance_create_table_version('{\"id\": [\"ns\", \"slow\"], \"version\": 1, \"manifest_path\": \"serving/t.lance/_versions/1.manifest\"}') IS NOT NULL;"
request_bg "$WORK/slow.commit" POST "/v1/table/ns%24slow/version/create" "$(commit_body 1)"
slow_commit=$!
wait_for 300 answers 1 lock_waiters || fail "the commit waits on the lock" "waiting: $(lock_waiters)"
wait "$slow_commit" || true
read -r status secs <"$WORK/slow.commit.status"
if [[ "$status" == 503 && "$(json_code "$WORK/slow.commit")" == 17 ]] &&
	grep -qi '^retry-after: [0-9]' "$WORK/slow.commit.headers"; then
	pass "a commit past LN_REQUEST_TIMEOUT (2 s): 503, code 17, Retry-After"
else
	fail "a commit past LN_REQUEST_TIMEOUT (2 s): 503, code 17, Retry-After" "got $status in $secs s: $(cat "$WORK/slow.commit")" "$(cat "$WORK/slow.commit.headers")"
fi
if awk -v s="$secs" 'BEGIN { exit !(s >= 1.9 && s < 4) }'; then
	pass "it was answered at its deadline ($secs s)"
else
	fail "it was answered at its deadline" "after $secs s"
fi
check "it was cancelled in the database: no connection of the gateway waits any more" 0 "$(lock_waiters)"
release
check "the cancelled commit was rolled back whole: no version, no change-log entry" "0 0" "$(versions slow)"
request "$WORK/slow.again" POST "/v1/table/ns%24slow/version/create" "$(commit_body 1)"
check "once the lock is free the same commit succeeds" 200 "$(cut -d' ' -f1 "$WORK/slow.again.status")"
gw_down

# a database that never answers: a listener that accepts and stays silent
SILENT_PORT="$(find_free_port 54591)"
perl -MIO::Socket::INET -MIO::Handle -e '
	my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 16, ReuseAddr => 1)
		or die "listen: $!";
	open(my $log, ">>", $ARGV[1]) or die "log: $!";
	$log->autoflush(1);
	my @held;
	while (my $c = $s->accept) { push @held, $c; print $log "accepted\n"; }' "$SILENT_PORT" "$WORK/silent.accepted" &
SILENT_PID=$!
BACKGROUND+=("$SILENT_PID")
wait_for 100 port_in_use "$SILENT_PORT" || fail "the silent listener listens"
# count the gateway's connections from here (port_in_use reads the kernel's
# table of sockets and makes none)
: >"$WORK/silent.accepted"
gw_up silent LN_REQUEST_TIMEOUT=2 LN_GATEWAY_CONNECTIONS=1 \
	"LN_DATABASE_URL=postgresql://lance_gateway@127.0.0.1:$SILENT_PORT/$DB?connect_timeout=10" || return 0
request_bg "$WORK/silent.first" GET "/v1/namespace/ns/table/list"
silent_first=$!
# the first request holds the only connection slot (connecting); this one queues
wait_for 100 test -s "$WORK/silent.accepted" || fail "the first request connects to the silent listener"
request "$WORK/silent.queued" GET "/v1/namespace/ns/table/list"
read -r status secs <"$WORK/silent.queued.status"
if [[ "$status" == 503 && "$(json_code "$WORK/silent.queued")" == 17 ]] &&
	grep -qi '^retry-after: [0-9]' "$WORK/silent.queued.headers" && grep -q 'for a connection' "$WORK/silent.queued" &&
	awk -v s="$secs" 'BEGIN { exit !(s >= 1.9 && s < 4) }'; then
	pass "a request that finds no free connection until its deadline: 503, code 17, Retry-After, at the deadline ($secs s)"
else
	fail "a request that finds no free connection until its deadline: 503, code 17, Retry-After, at the deadline" "got $status in $secs s: $(cat "$WORK/silent.queued")"
fi
wait "$silent_first" || true
check "the request stuck connecting: 503, code 17" "503 17" "$(cut -d' ' -f1 "$WORK/silent.first.status") $(json_code "$WORK/silent.first")"
gw_down
gw_up silent_bounded LN_REQUEST_TIMEOUT=3.5 LN_GATEWAY_CONNECTIONS=1 \
	"LN_DATABASE_URL=postgresql://lance_gateway@127.0.0.1:$SILENT_PORT/$DB" || return 0
: >"$WORK/silent.accepted"
request "$WORK/silent.bounded" GET "/v1/namespace/ns/table/list"
read -r status secs <"$WORK/silent.bounded.status"
if [[ "$status" == 503 && "$(json_code "$WORK/silent.bounded")" == 17 && -s "$WORK/silent.accepted" ]] &&
	awk -v s="$secs" 'BEGIN { exit !(s < 3.5) }'; then
	pass "LN_REQUEST_TIMEOUT=3.5, a database that never answers: 503, code 17, within 3.5 s ($secs s)"
else
	fail "LN_REQUEST_TIMEOUT=3.5, a database that never answers: 503, code 17, within 3.5 s" \
		"got $status in $secs s, $(wc -l <"$WORK/silent.accepted") connections: $(cat "$WORK/silent.bounded")"
fi
gw_down
gw_up fraction LN_REQUEST_TIMEOUT=3.5 LN_GATEWAY_CONNECTIONS=1 || return 0
request "$WORK/fraction.read" GET "/v1/namespace/ns/table/list"
check "LN_REQUEST_TIMEOUT=3.5 against the database: 200" 200 "$(cut -d' ' -f1 "$WORK/fraction.read.status")"
gw_down
kill "$SILENT_PID" 2>/dev/null || true
wait "$SILENT_PID" 2>/dev/null || true

# A gateway of the default size starts without a warning from nginx under
# the usual open file limit of 1024 (its worker_rlimit_nofile is the hard
# limit, 1024, and its worker_connections what that leaves room for).
GATEWAYS+=("$WORK/gw-nofile")
(
	ulimit -n 1024
	start_gateway_url "$WORK/gw-nofile" "$(find_free_port 2633)" "$DB_URL"
) >"$WORK/gw-nofile.out" 2>&1 || true
check "a gateway of the default size starts under an open file limit of 1024 without nginx's warning" \
	"started, no warning" "$(grep -q 'starting gateway' "$WORK/gw-nofile.out" && echo started), $(grep -q 'warn' "$WORK/gw-nofile.out" && echo warning || echo no warning)"
# nor do its workers, which raise their own limit at their start (an alert
# in error.log alone: setrlimit failed), once they serve
curl -sS -o /dev/null --max-time 10 "$(sed -n 's|.*starting gateway on \(http://[0-9.:]*\) .*|\1|p' "$WORK/gw-nofile.out")/healthz" 2>/dev/null || true
check "and its workers say nothing in error.log as they start" "" \
	"$(grep -E '\[(warn|alert|crit|emerg)\]' "$WORK/gw-nofile/error.log" 2>/dev/null | head -n 3)"
stop_gateway "$WORK/gw-nofile" >/dev/null 2>&1 || true

# 400 requests, 100 at a time: 200 listings and 200 creations of namespaces
gw_up crowd || return 0
# each client a curl of its own: even numbers list, odd ones create crowd<n>
# shellcheck disable=SC2016 # expanded by that shell
seq 400 | KEY="$KEY" GW="$GW" xargs -P 100 -I NUM sh -c '
	if [ $(($1 % 2)) = 0 ]; then
		curl -s --max-time 60 -o /dev/null -w "%{http_code}\n" -H "x-api-key: $KEY" "$GW/v1/namespace/ns/table/list"
	else
		curl -s --max-time 60 -o /dev/null -w "%{http_code}\n" -H "x-api-key: $KEY" -H "content-type: application/json" \
			-d "{}" "$GW/v1/namespace/crowd$1/create"
	fi' sh NUM >"$WORK/crowd.out" 2>"$WORK/crowd.err" || true
check "400 requests from 100 concurrent clients: all 200" "400 200" \
	"$(sort "$WORK/crowd.out" | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? "; " : ""), $1, $2 }')"
check "the 200 namespaces were made" 200 "$(sql -c "SELECT count(*) FROM lance_catalog.object WHERE parent_id = 0 AND name LIKE 'crowd%'")"
# Its workers speak to the database themselves (gateway/lance_db_wire.lua):
# each connection slot gets its own connection back (a keepalive pool of its
# own), so what is prepared on it is known, and however many connections
# the crowd opened, none is taken for a pooler's.
crowd_pooler=no
grep -q 'does not keep prepared statements\|is reached through libpq' "$GW_PREFIX/error.log" && crowd_pooler=yes
check "the crowd's statements stayed prepared: no pooler seen, no call left to libpq" no "$crowd_pooler"
gw_down
