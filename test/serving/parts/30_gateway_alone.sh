# shellcheck shell=bash
# Sourced by test/serving/run.sh.  scripts/gateway.sh in front of a cluster
# it did not make: LN_DATABASE_URL names two hosts, the first down, with
# target_session_attrs=read-write, and the gateway's role logs in over TCP
# with a SCRAM password.  Two gateways serve the database side by side,
# each with its own LN_DATA (configuration, logs), and scripts/stop.sh
# with one's LN_DATA stops that one alone.  The URL is kept from other
# users and out of nginx.conf; a wrong password is 503 with code 17.  A
# gateway connects with a TLS client certificate the server takes alone
# (hostssl ... cert).  gateway.sh's checks of the database put the URL on
# no command line and quote nothing of it in a warning; an LN_DATA that
# exists keeps its mode; what goes into nginx.conf is checked.
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
	"$(access_log_fields "$WORK/alone1/gateway/access.log" | grep -c ' GET /v1/namespace/ns/table/list 200 ') $(access_log_fields "$WORK/alone2/gateway/access.log" | grep -c ' GET /v1/namespace/ns/table/list 200 ')"
check "they connect over TCP as lance_gateway, by password" 2 \
	"$(sessions "usename = 'lance_gateway' AND client_addr = '127.0.0.1' AND application_name = 'lance_gateway'")"
check "the URL is the workers' user's alone" "600 lance_gateway" "$(stat -c '%a %U' "$WORK/alone1/gateway/database_url")"
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

# Over the Unix socket, as the password asks: the workers speak to the
# database themselves (gateway/lance_db_wire.lua) and give the password in
# the clear where pg_hba says "password", hashed where it says md5 (the
# password kept as md5); where it says scram-sha-256, which
# they do not speak, the calls go through libpq (in threads) from the first
# on, and the error log says so.
for unix_auth in password md5 scram-sha-256; do
	# md5: the password kept as an md5 hash (with a SCRAM one the server
	# would ask for SCRAM)
	[[ "$unix_auth" == md5 ]] && sql -c "SET password_encryption = 'md5'" \
		-c "ALTER ROLE lance_gateway PASSWORD 'gw-secret'" >/dev/null 2>&1
	sed -i "1i local all lance_gateway $unix_auth" "$PGDATA_DIR/pg_hba.conf"
	as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null
	P_UNIX="$(find_free_port $((P3 + 1)))"
	alone "unix-$unix_auth" "$P_UNIX" "postgresql://lance_gateway:gw-secret@/$DB?host=$SOCK&port=$PORT" ||
		fail "gateway.sh starts with a Unix socket and a password ($unix_auth)" \
			"$(tail -n 5 "$WORK/aloneunix-$unix_auth.log")"
	check "over the Unix socket, pg_hba's $unix_auth: 200, twice" "200 200" \
		"$(alone_status "$P_UNIX") $(alone_status "$P_UNIX")"
	# (said once by each worker that made a call)
	[[ "$unix_auth" == scram-sha-256 ]] && expected=yes || expected=no
	left_to_libpq=no
	grep -q 'is reached through libpq from now on' "$WORK/aloneunix-$unix_auth/gateway/error.log" && left_to_libpq=yes
	check "over the Unix socket, pg_hba's $unix_auth: the calls left to libpq: $expected" "$expected" "$left_to_libpq"
	LN_DATA="$WORK/aloneunix-$unix_auth" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
	[[ "$unix_auth" == md5 ]] && sql -c "SET password_encryption = 'scram-sha-256'" \
		-c "ALTER ROLE lance_gateway PASSWORD 'gw-secret'" >/dev/null
	sed -i '1d' "$PGDATA_DIR/pg_hba.conf"
	as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null
done

LN_DATA="$WORK/alone1" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
wait_for 100 answers 000 alone_status "$P1" || true
check "scripts/stop.sh with the first's LN_DATA stops it" 000 "$(alone_status "$P1")"
check "and not the second" 200 "$(alone_status "$P2")"
LN_DATA="$WORK/alone2" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
LN_DATA="$WORK/alone3" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
wait_for 100 answers 000 alone_status "$P2" || true
check "then the second" 000 "$(alone_status "$P2")"

# TLS with a client certificate: the server takes lance_gateway over TCP by
# its certificate alone (hostssl ... cert), the gateway's URL names the CA
# and its certificate and key (files the OS user lance_gateway reads, as
# the server reads its own: each its own key, mode 600)
TLS="$WORK/tls"
mkdir -m 755 "$TLS"
tls_made=1
(
	cd "$TLS" &&
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=serving test CA" -keyout ca.key -out ca.crt &&
		openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server.key -out server.csr &&
		openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out server.crt &&
		openssl req -newkey rsa:2048 -nodes -subj "/CN=lance_gateway" -keyout client.key -out client.csr &&
		openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out client.crt
) >"$WORK/tls.log" 2>&1 || tls_made=0
if ((tls_made)); then
	chown postgres:postgres "$TLS"/server.* "$TLS"/ca.*
	chown lance_gateway:lance_gateway "$TLS"/client.*
	chmod 600 "$TLS"/*.key
	sed -i '1s/.*/hostssl all lance_gateway 127.0.0.1\/32 cert/' "$PGDATA_DIR/pg_hba.conf"
	sql -c "ALTER SYSTEM SET ssl = on" -c "ALTER SYSTEM SET ssl_cert_file = '$TLS/server.crt'" \
		-c "ALTER SYSTEM SET ssl_key_file = '$TLS/server.key'" -c "ALTER SYSTEM SET ssl_ca_file = '$TLS/ca.crt'" >/dev/null
	as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null
	P4="$(find_free_port $((P3 + 1)))"
	if alone 4 "$P4" "postgresql://lance_gateway@127.0.0.1:$PORT/$DB?sslmode=verify-ca&sslrootcert=$TLS/ca.crt&sslcert=$TLS/client.crt&sslkey=$TLS/client.key"; then
		pass "gateway.sh with a TLS client certificate"
	else
		fail "gateway.sh with a TLS client certificate" "$(tail -n 5 "$WORK/alone4.log")"
	fi
	check "it answers, connected by TLS with its certificate (CN lance_gateway)" "200 /CN=lance_gateway" \
		"$(alone_status "$P4") $(sql -c "SELECT DISTINCT s.client_dn FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
		                               WHERE a.usename = 'lance_gateway' AND s.ssl")"
	LN_DATA="$WORK/alone4" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
	sql -c "ALTER SYSTEM RESET ssl" -c "ALTER SYSTEM RESET ssl_cert_file" -c "ALTER SYSTEM RESET ssl_key_file" \
		-c "ALTER SYSTEM RESET ssl_ca_file" >/dev/null
else
	fail "openssl makes a CA, a server and a client certificate" "$(tail -n 5 "$WORK/tls.log")"
fi
sed -i '1d' "$PGDATA_DIR/pg_hba.conf"
as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null

# ---------------------------------------------------------------------------
# What gateway.sh does with the operator's URL, folder and settings.  The
# cluster takes lance_gateway over TCP by password again.
# ---------------------------------------------------------------------------
sed -i '1i host all lance_gateway 127.0.0.1/32 scram-sha-256' "$PGDATA_DIR/pg_hba.conf"
as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null

# gateway_sh <name> [VAR=value...]: scripts/gateway.sh with LN_DATA=WORK/<name>
# and those settings, exported in a subshell (so on no command line); its
# output in WORK/<name>.log.  With TRACE=<file> in the environment, under
# strace, which writes there every program started and its arguments (and,
# with TRACE_ENV=1, its environment).
gateway_sh() {
	local name="$1"
	shift
	GATEWAYS+=("$WORK/$name/gateway")
	(
		export LN_DATA="$WORK/$name"
		for assignment in "$@"; do export "${assignment?}"; done
		if [[ -n "${TRACE:-}" ]]; then
			verbose=()
			[[ "${TRACE_ENV:-}" == 1 ]] && verbose=(-v)
			exec strace -f -qq "${verbose[@]}" -s 100000 -e trace=execve -o "$TRACE" bash "$ROOT/scripts/gateway.sh"
		fi
		exec bash "$ROOT/scripts/gateway.sh"
	) >"$WORK/$name.log" 2>&1
}

# gateway_sh_refuses <name> <check> <message> [VAR=value...]: gateway.sh with
# LN_DATA=WORK/<name> (and the settings of this part's other runs) stops,
# its output holding <message>; a gateway it started anyway is stopped.
gateway_sh_refuses() {
	local name="$1" what="$2" message="$3"
	shift 3
	if gateway_sh "$name" LN_GATEWAY_PORT="$P5" LN_DATABASE_URL="$ALONE_URL" LN_GATEWAY_CONNECTIONS=4 "$@"; then
		fail "$what" "started: $(tail -n 3 "$WORK/$name.log")"
		LN_DATA="$WORK/$name" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
		wait_for 100 answers 000 alone_status "$P5" || true
	elif grep -qF -- "$message" "$WORK/$name.log"; then
		pass "$what"
	else
		fail "$what" "$(cat "$WORK/$name.log")"
	fi
}
# status_as <port> <header...>: the status of a listing with the key and those headers
status_as() {
	local gw_port="$1" args=() header
	shift
	for header in "$@"; do args+=(-H "$header"); done
	curl -s --max-time 20 -o /dev/null -w '%{http_code}' -H "x-api-key: $KEY" "${args[@]}" \
		"http://127.0.0.1:$gw_port/v1/namespace/ns/table/list" || true
}

# The URL reaches the database's checks (lance_rest() there?
# max_connections?) on no command line, which ps shows every user: with
# gateway.sh under strace, no program starts with the password in its
# arguments.  The password is percent-encoded (gw%2Dsecret is gw-secret) and
# the first host is down: the checks connect all the same (no warning).
# LN_GATEWAY_PORT is the server's, in use: gateway.sh stops there, after
# both checks and before nginx.
PCT_URL="postgresql://lance_gateway:gw%2Dsecret@127.0.0.1:$DEAD_PORT,127.0.0.1:$PORT/$DB?target_session_attrs=read-write"
TRACE="$WORK/traced.strace" gateway_sh traced LN_GATEWAY_PORT="$PORT" LN_DATABASE_URL="$PCT_URL" || true
if grep -q "port $PORT on 127.0.0.1 is already in use" "$WORK/traced.log" && ! grep -q 'warning' "$WORK/traced.log"; then
	pass "gateway.sh checks the database of a URL with a percent-encoded password and a host down"
else
	fail "gateway.sh checks the database of a URL with a percent-encoded password and a host down" "$(cat "$WORK/traced.log")"
fi
started="$(grep -c 'execve(' "$WORK/traced.strace" || true)"
leaked="$(grep -e 'gw%2Dsecret' -e 'gw-secret' "$WORK/traced.strace" || true)"
if ((started > 5)) && [[ -z "$leaked" ]]; then
	pass "no program gateway.sh starts has the URL's password in its arguments ($started traced)"
else
	fail "no program gateway.sh starts has the URL's password in its arguments ($started traced)" "$leaked"
fi

# A key=value URL with two hosts (the first down) and the default number of
# connections: a quarter of what the server allows ordinary roles, split
# over the workers, as the server says it (not the 16 of a server that
# cannot be asked)
KV_URL="host=127.0.0.1,127.0.0.1 port=$DEAD_PORT,$PORT dbname=$DB user=lance_gateway password='gw-secret' target_session_attrs=read-write"
P5="$(find_free_port $((${P4:-$P3} + 1)))"
free="$(sql -c "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int")"
total=$((free / 4 < 2 ? 2 : free / 4 > 64 ? 64 : free / 4))
workers="$(nproc)"
((workers <= total)) || workers="$total"
# Traced with the environments of the programs started: what the operator
# exported (here LN_TEST_SECRET, as PGPASSWORD or a cloud key would be)
# reaches no program the OS user lance_gateway runs (the database checks'
# luajit, nginx), whose environments its processes keep.
# strace follows nginx too, so it ends once the gateway is stopped.
TRACE="$WORK/kv.strace" TRACE_ENV=1 gateway_sh kv LN_GATEWAY_PORT="$P5" LN_DATABASE_URL="$KV_URL" \
	LN_TEST_SECRET=exported-marker &
kv_traced=$!
wait_for 300 answers 200 alone_status "$P5" || true
check "it answers" 200 "$(alone_status "$P5")"
LN_DATA="$WORK/kv" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
wait_for 100 answers 000 alone_status "$P5" || true
kv_status=0
wait "$kv_traced" || kv_status=$?
if ((kv_status == 0)) && ! grep -q warning "$WORK/kv.log"; then
	pass "gateway.sh with a key=value URL"
else
	fail "gateway.sh with a key=value URL" "$(cat "$WORK/kv.log")"
fi
gateway_programs="$(grep -E 'execve\("[^"]*/(luajit|nginx)"' "$WORK/kv.strace" || true)"
if [[ "$(grep -c '' <<<"$gateway_programs")" -ge 2 && "$gateway_programs" == *nginx* && "$gateway_programs" == *luajit* &&
	"$gateway_programs" != *exported-marker* && "$gateway_programs" != *LN_DATABASE_URL* ]]; then
	pass "the gateway's programs (luajit, nginx) start without the operator's environment"
else
	fail "the gateway's programs (luajit, nginx) start without the operator's environment" \
		"$(grep -o -E 'execve\("[^"]*/(luajit|nginx)".{0,300}' <<<"$gateway_programs" | head -n 3)"
fi
check "its connections are what the server allows, a quarter" "$workers workers, $((total / workers)) database connections each" \
	"$(grep -o '[0-9]* workers, [0-9]* database connections each' "$WORK/kv.log")"

# A database it cannot reach: a fixed warning, never libpq's message, which
# may quote the URL (here a malformed one, and its password)
gateway_sh leak LN_GATEWAY_PORT="$PORT" LN_DATABASE_URL="postgresql://lance_gateway:leak%zzmarker@127.0.0.1:$PORT/$DB" || true
if grep -q 'warning: cannot reach the database' "$WORK/leak.log" && ! grep -q zzmarker "$WORK/leak.log"; then
	pass "a malformed URL: gateway.sh warns, and says nothing of its password"
else
	fail "a malformed URL: gateway.sh warns, and says nothing of its password" "$(cat "$WORK/leak.log")"
fi

# An LN_DATA that exists is the operator's, its mode theirs: one of mode 700
# that the gateway's OS user (lance_gateway) cannot pass through stays 700,
# and gateway.sh stops there, says so, and makes nothing in it; one of 711
# stays 711 and serves.
mkdir -m 700 "$WORK/closed"
touch "$WORK/closed/private"
gateway_sh_refuses closed "gateway.sh stops at an LN_DATA the gateway's OS user cannot pass through, and says why" \
	"the OS user lance_gateway cannot pass through $WORK/closed"
check "that LN_DATA keeps its mode, and nothing is made there" "700 private" "$(stat -c %a "$WORK/closed") $(ls "$WORK/closed")"
mkdir -m 711 "$WORK/passable"
gateway_sh passable LN_GATEWAY_PORT="$P5" LN_DATABASE_URL="$ALONE_URL" LN_GATEWAY_CONNECTIONS=4 ||
	fail "gateway.sh in an LN_DATA of mode 711" "$(cat "$WORK/passable.log")"
check "an LN_DATA of mode 711 keeps it, and the gateway there answers" "711 200" \
	"$(stat -c %a "$WORK/passable") $(alone_status "$P5")"
LN_DATA="$WORK/passable" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
wait_for 100 answers 000 alone_status "$P5" || true

# A pid file that outlived its nginx (a crash), its pid now another
# process's (of the gateway's OS user, which could be signalled): gateway.sh
# starts the gateway anew and leaves that process alone; stop.sh too.
# (setpriv execs sleep in its own process: $! is the sleep's pid)
setpriv --reuid=lance_gateway --regid=lance_gateway --clear-groups sleep 600 &
STALE_PID=$!
printf '%s\n' "$STALE_PID" | runuser -u lance_gateway -- tee "$WORK/passable/gateway/nginx.pid" >/dev/null
if gateway_sh passable LN_GATEWAY_PORT="$P5" LN_DATABASE_URL="$ALONE_URL" LN_GATEWAY_CONNECTIONS=4 &&
	grep -q 'starting gateway' "$WORK/passable.log"; then
	pass "gateway.sh over a stale nginx.pid naming another process starts the gateway"
else
	fail "gateway.sh over a stale nginx.pid naming another process starts the gateway" "$(tail -n 5 "$WORK/passable.log")"
fi
check "it answers" 200 "$(alone_status "$P5")"
LN_DATA="$WORK/passable" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
wait_for 100 answers 000 alone_status "$P5" || true
check "the process whose pid the stale file held is untouched" "S sleep" "$(ps -o state=,comm= -p "$STALE_PID" || true)"
kill "$STALE_PID" 2>/dev/null || true
wait "$STALE_PID" 2>/dev/null || true

# The gateway's folder is handed over to lance_gateway only when an
# earlier version made it (postgres's) or it is empty: another user's is
# left as it is, and so is a link (root would hand over where it leads)
mkdir -p "$WORK/foreign/gateway"
touch "$WORK/foreign/gateway/theirs"
chown -R nobody: "$WORK/foreign/gateway"
gateway_sh_refuses foreign "gateway.sh stops at a gateway folder of another user's, naming it" \
	"error: the gateway's folder $WORK/foreign/gateway is the OS user nobody's"
check "that folder stays that user's" "nobody nobody" "$(stat -c %U "$WORK/foreign/gateway" "$WORK/foreign/gateway/theirs" | tr '\n' ' ' | sed 's/ $//')"
mkdir -p "$WORK/linked" "$WORK/elsewhere"
ln -s "$WORK/elsewhere" "$WORK/linked/gateway"
gateway_sh_refuses linked "gateway.sh stops at a gateway folder that is a link" \
	"is a symbolic link"
check "where the link leads is left as it was" "root 0" "$(stat -c %U "$WORK/elsewhere") $(find "$WORK/elsewhere" -mindepth 1 | wc -l)"

# The group lance_gateway may enter a run cluster's socket folder: while
# another user (here nobody, for the time of one run) is in it, gateway.sh
# stops, naming that user, before it makes anything
gpasswd -a nobody lance_gateway >/dev/null
gateway_sh grouped LN_GATEWAY_PORT="$P5" LN_DATABASE_URL="$ALONE_URL" LN_GATEWAY_CONNECTIONS=4 && grouped=0 || grouped=$?
gpasswd -d nobody lance_gateway >/dev/null
if ((grouped == 0)); then
	fail "gateway.sh stops while the group lance_gateway has another member" "$(tail -n 3 "$WORK/grouped.log")"
	LN_DATA="$WORK/grouped" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
	wait_for 100 answers 000 alone_status "$P5" || true
elif grep -q "error: the group lance_gateway, which alone may enter the cluster's socket folder, has other members: nobody;" "$WORK/grouped.log" &&
	[[ ! -e "$WORK/grouped" ]]; then
	pass "gateway.sh stops while the group lance_gateway has another member, naming it, and makes nothing"
else
	fail "gateway.sh stops while the group lance_gateway has another member, naming it, and makes nothing" "$(cat "$WORK/grouped.log")"
fi

# What goes into nginx.conf is checked: a quote in LN_GATEWAY_HOSTS or
# LN_GATEWAY_ORIGINS would end nginx's string and add directives of its own
# (here lua_code_cache off); a line break, a brace, a $ (an nginx variable);
# an address without brackets; an LN_DATA with a ';'; a count that is no
# positive integer (LN_GATEWAY_CONNECTIONS_PER_ADDRESS, LN_KEY_CONCURRENCY).
# gateway.sh stops, naming the setting, and writes no nginx.conf.
i=0
# shellcheck disable=SC2016 # the $ are the values
for setting in 'LN_GATEWAY_HOSTS=x"; lua_code_cache off; set $lance_x "' \
	'LN_GATEWAY_ORIGINS=https://app.example"; lua_code_cache off; set $lance_x "' \
	$'LN_GATEWAY_HOSTS=catalog.example\n}' 'LN_GATEWAY_ORIGINS=https://${host}' \
	'LN_GATEWAY_ADDRESS=::1' "LN_DATA=$WORK/bad;dir" LN_REQUEST_TIMEOUT=86401 LN_GATEWAY_CONNECTIONS=10001 \
	LN_READ_MAX_LAG=1e9 "LN_GATEWAY_HOSTS=$(printf 'a%.0s' {1..254})" LN_GATEWAY_CONNECTIONS_PER_ADDRESS=0 \
	'LN_KEY_CONCURRENCY=4; lua_code_cache off'; do
	i=$((i + 1))
	name="${setting%%=*}"
	shown="$name='${setting#*=}'"
	[[ "$setting" != *$'\n'* ]] || shown="$name=$(printf '%q' "${setting#*=}")"
	data="$WORK/inject$i"
	[[ "$name" == LN_DATA ]] && data="${setting#*=}"
	if gateway_sh "inject$i" LN_GATEWAY_PORT="$P5" LN_DATABASE_URL="$ALONE_URL" LN_GATEWAY_CONNECTIONS=4 "$setting"; then
		fail "$shown: gateway.sh stops" "$(tail -n 3 "$WORK/inject$i.log")"
		LN_DATA="$data" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
		wait_for 100 answers 000 alone_status "$P5" || true
	elif grep -q "error: $name" "$WORK/inject$i.log" && [[ ! -e "$data/gateway/nginx.conf" ]]; then
		pass "$shown: gateway.sh stops, naming it, and writes no nginx.conf"
	else
		fail "$shown: gateway.sh stops, naming it, and writes no nginx.conf" "$(cat "$WORK/inject$i.log")"
	fi
done

# Host names and origins separated by any white space are served
if gateway_sh lists LN_GATEWAY_PORT="$P5" LN_DATABASE_URL="$ALONE_URL" LN_GATEWAY_CONNECTIONS=4 \
	$'LN_GATEWAY_HOSTS=catalog.example\t[fd00::1]\n  other.example' \
	'LN_GATEWAY_ORIGINS=https://app.example:8443 http://localhost:3000'; then
	pass "gateway.sh with lists of hosts and origins"
else
	fail "gateway.sh with lists of hosts and origins" "$(cat "$WORK/lists.log")"
fi
check "hosts and origins listed are served, others not" "200 200 421 200 200 403" \
	"$(status_as "$P5" 'Host: other.example') $(status_as "$P5" 'Host: [fd00::1]:80') $(status_as "$P5" 'Host: evil.example') $(status_as "$P5" 'Origin: https://app.example:8443') $(status_as "$P5" 'Origin: http://localhost:3000') $(status_as "$P5" 'Origin: https://evil.example')"
LN_DATA="$WORK/lists" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1
wait_for 100 answers 000 alone_status "$P5" || true

sed -i '1d' "$PGDATA_DIR/pg_hba.conf"
as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null
