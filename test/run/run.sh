#!/usr/bin/env bash
# The front door: scripts/run.sh sets up and runs a catalog with its gateway
# in a fresh LN_DATA (an empty folder of mode 711, whose mode it keeps),
# keeps an administrator's key in LN_DATA/api_key (mode 0600) that the
# gateway takes, keeps that key on a rerun, replaces it once revoked, and
# scripts/stop.sh stops it all.  Its cluster authenticates
# every connection: another OS user (nobody) reaches it neither over the
# socket nor over TCP without a password, while root connects as the README
# says, the gateway by peer, and a role with a password over TCP (SCRAM); a
# cluster an older run.sh made to trust every local connection is fixed.
# The gateway's nginx (master and workers) runs as the OS user
# lance_gateway, which logs in as role lance_gateway alone (not as
# postgres), reads none of the cluster's files, and is the only OS user that
# logs in as lance_gateway over the socket; a cluster and gateway an older
# run.sh made (nginx as postgres, which pg_ident.conf mapped to
# lance_gateway) are moved to that on the next run.
#
# Runs as root.  Prints "  ok    <check>" / "  FAIL  <check>" per check;
# exits 0 only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try (default 54491)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD
# strace and python3, below
need_gateway_test_packages

WORK="$(mktemp -d)"
chmod 755 "$WORK"
# an LN_DATA that exists, empty, of a mode the operator chose: postgres and
# lance_gateway pass through it, others cannot list it; run.sh keeps that mode
DATA="$WORK/data"
mkdir -m 711 "$DATA"
# The ports picked here lie where the kernel also picks clients' ports, and
# the groups before this one leave hundreds of loopback connections closed a
# moment ago (TIME_WAIT): a port one of them holds cannot be listened on, the
# likeliest reason run.sh failed once in CI right after the serving group.
# find_free_port passes over such a port though nothing answers on it.
HELD_PORT="$(python3 - <<'PY'
import socket
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
client = socket.socket()
client.bind(("127.0.0.1", 0))  # a port the kernel gives out
client.connect(server.getsockname())
accepted, _ = server.accept()
print(client.getsockname()[1])
client.close()  # the side that closes first keeps the port in TIME_WAIT
accepted.close()
PY
)"
next_port="$(find_free_port "$HELD_PORT")"
if [[ "$next_port" != "$HELD_PORT" ]] && ! port_in_use "$HELD_PORT"; then
	pass "find_free_port passes over a port a closed client connection still holds (TIME_WAIT)"
else
	fail "find_free_port passes over a port a closed client connection still holds (TIME_WAIT)" \
		"held $HELD_PORT, picked $next_port"
fi
# and port_in_use, which scripts ask before they start a server, makes no
# connection: one to a port nothing listens on may be given that very port
# as its own and connect to itself (seen here: nginx could not bind the
# gateway's port for a minute after)
FREE_PORT="$(find_free_port 54391)"
strace -f -o "$WORK/probe.strace" -e trace=connect bash -c 'source "$1" && port_in_use "$2"' probe \
	"$ROOT/scripts/common.sh" "$FREE_PORT" >/dev/null 2>&1 || true
# traced to its end (it answers "free": exit 1), and no connect to the port
if tail -n 1 "$WORK/probe.strace" | grep '+++ exited with 1 +++' >/dev/null && ! grep -q "sin_port=htons($FREE_PORT)" "$WORK/probe.strace"; then
	pass "port_in_use makes no connection to the port it asks about"
else
	fail "port_in_use makes no connection to the port it asks about" "$(tail -n 5 "$WORK/probe.strace" 2>/dev/null)"
fi
PORT="$(find_free_port "${LN_TEST_PORT:-54491}")"
GW_PORT="$(find_free_port $((PORT + 1)))"
START=$SECONDS

run_catalog() { LN_DATA="$DATA" LN_PORT="$PORT" LN_GATEWAY_PORT="$GW_PORT" bash "$ROOT/scripts/run.sh"; }
cleanup() {
	LN_DATA="$DATA" bash "$ROOT/scripts/stop.sh" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

# status <key or ""> <path>: the HTTP status of a GET through the gateway
status() {
	local args=(-s -o /dev/null -w '%{http_code}')
	[[ -n "$1" ]] && args+=(-H "x-api-key: $1")
	curl "${args[@]}" "http://127.0.0.1:$GW_PORT$2"
}
key_of() { cat "$DATA/api_key" 2>/dev/null || true; }

if run_catalog >"$WORK/run1.log" 2>&1; then
	pass "scripts/run.sh in a fresh LN_DATA"
else
	fail "scripts/run.sh in a fresh LN_DATA" "$(tail -n 20 "$WORK/run1.log")"
	exit 1
fi
check "an LN_DATA that existed keeps its mode" 711 "$(stat -c '%a' "$DATA")"
KEY="$(key_of)"
if is_api_key "$KEY"; then pass "LN_DATA/api_key holds an API key"; else fail "LN_DATA/api_key holds an API key" "got: ${KEY:0:20}"; fi
check "LN_DATA/api_key is the caller's alone (mode 600)" "600 $(id -un)" "$(stat -c '%a %U' "$DATA/api_key")"
grep -q "$DATA/api_key" "$WORK/run1.log" && pass "run.sh says where the key is and how to send it" ||
	fail "run.sh says where the key is and how to send it" "$(tail -n 20 "$WORK/run1.log")"
grep -q "x-api-key" "$WORK/run1.log" && pass "run.sh shows the x-api-key header" || fail "run.sh shows the x-api-key header"
check "the gateway answers the key" 200 "$(status "$KEY" /v1/namespace/%24/list)"
check "the gateway refuses no key (401)" 401 "$(status "" /v1/namespace/%24/list)"
check "the gateway connects as lance_gateway" "lance_gateway" \
	"$("$PG_BIN/psql" -X -At -h "$DATA/run" -p "$PORT" -U postgres -d lance \
		-c "SELECT DISTINCT usename FROM pg_stat_activity WHERE application_name <> 'psql' AND usename = 'lance_gateway'")"

# Who reaches the cluster.  psql -w never asks for a password.
as_user() { (cd / && runuser -u "$@"); }
as_nobody() { as_user nobody -- "$@"; }
# login_as <OS user> <psql args...>: the role psql logs in as, or the error
login_as() {
	local user="$1"
	shift
	as_user "$user" -- "$PG_BIN/psql" -X -w -At -p "$PORT" -d lance "$@" -c 'SELECT current_user' 2>&1
}
# refused_as <OS user> <check> <psql args...>: the connection fails
refused_as() {
	local user="$1" what="$2" out
	shift 2
	if out="$(login_as "$user" "$@")"; then
		fail "$what" "connected: $out"
	else
		pass "$what"
	fi
}
# refused <check> <psql args...>: the connection fails, as OS user nobody
refused() { refused_as nobody "$@"; }
# The OS users the gateway's nginx runs as: its master's, then its workers'.
nginx_users() {
	local master
	master="$(cat "$DATA/gateway/nginx.pid")"
	printf '%s / %s\n' "$(ps -o user:32= -p "$master" | tr -d ' ')" \
		"$(ps -o user:32= --ppid "$master" | tr -d ' ' | sort -u | tr '\n' ' ')"
}
check_auth() {
	local when="$1"
	refused "OS user nobody cannot connect as postgres over TCP ($when)" -h 127.0.0.1 -U postgres
	refused "OS user nobody cannot connect as lance_gateway over TCP ($when)" -h 127.0.0.1 -U lance_gateway
	refused "OS user nobody cannot connect over the socket ($when)" -h "$DATA/run" -U postgres
	refused "OS user nobody cannot connect as lance_gateway over the socket ($when)" -h "$DATA/run" -U lance_gateway
	check "the socket folder is postgres's, open to the gateway's group alone ($when)" "750 postgres lance_gateway" \
		"$(stat -c '%a %U %G' "$DATA/run")"
	# the gateway's logs name every request's path and key id
	check "OS user nobody reads none of the gateway's files ($when)" "refused" \
		"$(as_nobody cat "$DATA/gateway/access.log" "$DATA/gateway/error.log" >/dev/null 2>&1 && echo read || echo refused)"
	check "the gateway's folder is its OS user's alone ($when)" "700 lance_gateway" "$(stat -c '%a %U' "$DATA/gateway")"
	# the tables' folders are names the catalog shows only to their readers
	check "the tables folder is postgres's alone ($when)" "700 postgres" "$(stat -c '%a %U' "$DATA/tables")"
	check "OS user nobody lists no table's folder ($when)" "refused" \
		"$(as_nobody ls "$DATA/tables" >/dev/null 2>&1 && echo read || echo refused)"
	check "the gateway's database URL is its OS user's alone ($when)" "600 lance_gateway" \
		"$(stat -c '%a %U' "$DATA/gateway/database_url")"
	# a flaw in nginx or its Lua is no superuser's: they run as lance_gateway
	check "nginx's master and workers run as the OS user lance_gateway ($when)" "lance_gateway / lance_gateway " "$(nginx_users)"
	check "the OS user lance_gateway logs in as lance_gateway over the socket ($when)" lance_gateway \
		"$(login_as lance_gateway -h "$DATA/run" -U lance_gateway)"
	refused_as lance_gateway "the OS user lance_gateway cannot log in as postgres over the socket ($when)" \
		-h "$DATA/run" -U postgres
	check "the OS user lance_gateway reads nothing of the cluster's folder ($when)" "refused" \
		"$(as_user lance_gateway -- ls "$DATA/pgdata" >/dev/null 2>&1 && echo read || echo refused)"
	refused_as postgres "the OS user postgres cannot log in as lance_gateway over the socket ($when)" \
		-h "$DATA/run" -U lance_gateway
	check "the OS user postgres logs in as postgres over the socket ($when)" postgres \
		"$(login_as postgres -h "$DATA/run" -U postgres)"
	check "no rule of pg_hba.conf trusts ($when)" "0 0" \
		"$("$PG_BIN/psql" -X -At -F ' ' -h "$DATA/run" -p "$PORT" -U postgres -d lance \
			-c "SELECT count(*) FILTER (WHERE auth_method = 'trust'), count(*) FILTER (WHERE error IS NOT NULL) FROM pg_hba_file_rules")"
}
check "root connects over the socket as the README says" postgres \
	"$("$PG_BIN/psql" -X -At -h "$DATA/run" -p "$PORT" -U postgres lance -c 'SELECT current_user')"
check_auth "a fresh cluster"
# TCP takes a role's SCRAM password, from any OS user
"$PG_BIN/psql" -X -q -h "$DATA/run" -p "$PORT" -U postgres -d lance \
	-c "SET password_encryption = 'scram-sha-256'" -c "CREATE ROLE run_tcp LOGIN PASSWORD 'run-tcp-secret'"
check "a role with a password connects over TCP, as any OS user" run_tcp \
	"$(PGPASSWORD=run-tcp-secret as_nobody "$PG_BIN/psql" -X -w -At -h 127.0.0.1 -p "$PORT" -U run_tcp -d lance -c 'SELECT current_user' 2>&1)"
PGPASSWORD=wrong refused "a wrong password is refused" -h 127.0.0.1 -U run_tcp

started_at() { "$PG_BIN/psql" -X -At -h "$DATA/run" -p "$PORT" -U postgres -d lance -c "SELECT pg_postmaster_start_time()"; }
STARTED="$(started_at)"
if run_catalog >"$WORK/run2.log" 2>&1; then pass "scripts/run.sh again"; else fail "scripts/run.sh again" "$(tail -n 20 "$WORK/run2.log")"; fi
check "a rerun keeps the working key" "$KEY" "$(key_of)"
check "the kept key still works" 200 "$(status "$KEY" /v1/namespace/%24/list)"
check "a rerun of the same build keeps the server running" "$STARTED" "$(started_at)"

# A server that started with another build of the preloaded library runs that
# build until it restarts: run.sh restarts it (the stamp stands for the build
# the server started with).
echo "an older build" >"$DATA/library.sha256"
# and the cluster an older run.sh made: it trusted every local connection,
# and anyone could reach the socket
printf '%s\n' '# Written by lance_namespace scripts/common.sh: local use only.' \
	'# TYPE  DATABASE  USER  ADDRESS       METHOD' \
	'local   all       all                 trust' \
	'host    all       all   127.0.0.1/32  trust' >"$DATA/pgdata/pg_hba.conf"
chmod 755 "$DATA/run" "$DATA/tables"
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DATA/pgdata" reload >/dev/null
if run_catalog >"$WORK/run2b.log" 2>&1; then pass "scripts/run.sh after a new build"; else fail "scripts/run.sh after a new build" "$(tail -n 20 "$WORK/run2b.log")"; fi
grep -q "restarting the server: it runs an older build of the library" "$WORK/run2b.log" &&
	pass "run.sh says it restarts the server for the new build" ||
	fail "run.sh says it restarts the server for the new build" "$(tail -n 20 "$WORK/run2b.log")"
if [[ "$(started_at)" != "$STARTED" ]]; then pass "the server was restarted"; else fail "the server was restarted"; fi
check "the stamp names the installed build" "$(sha256sum "$("$PG_CONFIG" --pkglibdir)/lance_namespace.so" | cut -d' ' -f1)" "$(cat "$DATA/library.sha256")"
check "the key works through the gateway after the restart" 200 "$(status "$KEY" /v1/namespace/%24/list)"
grep -q "replacing pg_hba.conf, which trusts every local connection" "$WORK/run2b.log" &&
	pass "run.sh says it replaces the old pg_hba.conf that trusts" ||
	fail "run.sh says it replaces the old pg_hba.conf that trusts" "$(tail -n 20 "$WORK/run2b.log")"
check_auth "a cluster an older run.sh made"

# The cluster and gateway of a run.sh from before the gateway had an OS user
# of its own: pg_ident.conf let the OS user postgres log in as
# lance_gateway, the socket folder was postgres's alone, and nginx ran as
# postgres in a folder of postgres's.
stop_gateway "$DATA/gateway" >/dev/null
for _ in $(seq 100); do gateway_running "$DATA/gateway" || break; sleep 0.1; done
printf '%s\n' "$LN_RUN_IDENT_POSTGRES_GATEWAY" >"$DATA/pgdata/pg_ident.conf"
chown postgres:postgres "$DATA/run"
chmod 700 "$DATA/run"
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DATA/pgdata" reload >/dev/null
chown -R postgres:postgres "$DATA/gateway"
runuser -u postgres -- nginx -q -p "$DATA/gateway" -c "$DATA/gateway/nginx.conf" -e "$DATA/gateway/error.log" ||
	fail "nginx starts as postgres" "$(tail -n 3 "$DATA/gateway/error.log")"
check "(as an older run.sh ran it) nginx runs as postgres, and answers" "postgres / postgres  200" \
	"$(nginx_users) $(status "$KEY" /v1/namespace/%24/list)"
# An LN_DATA the OS user lance_gateway cannot pass through (postgres can,
# by its group): run.sh stops before it changes anything, so that the
# older gateway (postgres's, mapped to lance_gateway) still logs in.
chgrp postgres "$DATA"
chmod 710 "$DATA"
if run_catalog >"$WORK/run2closed.log" 2>&1; then
	fail "run.sh stops at an LN_DATA the OS user lance_gateway cannot pass through" "$(tail -n 5 "$WORK/run2closed.log")"
elif grep -q "the OS user lance_gateway cannot pass through $DATA" "$WORK/run2closed.log"; then
	pass "run.sh stops at an LN_DATA the OS user lance_gateway cannot pass through, and says why"
else
	fail "run.sh stops at an LN_DATA the OS user lance_gateway cannot pass through, and says why" "$(tail -n 5 "$WORK/run2closed.log")"
fi
check "before that, it changed nothing: pg_ident.conf still maps postgres to lance_gateway" "$LN_RUN_IDENT_POSTGRES_GATEWAY" \
	"$(cat "$DATA/pgdata/pg_ident.conf")"
chgrp root "$DATA"
chmod 711 "$DATA"
if run_catalog >"$WORK/run2c.log" 2>&1; then pass "scripts/run.sh over them"; else fail "scripts/run.sh over them" "$(tail -n 20 "$WORK/run2c.log")"; fi
if grep -q "replacing pg_ident.conf, which lets the OS user postgres log in as lance_gateway" "$WORK/run2c.log"; then
	pass "run.sh says it replaces that pg_ident.conf"
else
	fail "run.sh says it replaces that pg_ident.conf" "$(tail -n 20 "$WORK/run2c.log")"
fi
if grep -q "restarting the gateway in $DATA/gateway, which runs as OS user postgres, as lance_gateway" "$WORK/run2c.log"; then
	pass "run.sh says it restarts the gateway as lance_gateway"
else
	fail "run.sh says it restarts the gateway as lance_gateway" "$(tail -n 20 "$WORK/run2c.log")"
fi
check "the key works through the restarted gateway" 200 "$(status "$KEY" /v1/namespace/%24/list)"
check_auth "a cluster whose gateway ran as postgres"
check "nothing in the gateway's folder is postgres's any more" "" \
	"$(find "$DATA/gateway" -user postgres | head -n 3)"

# A pid file that outlived its nginx (a crash) in a gateway folder of
# postgres's (an older run.sh's), its pid now the postmaster's: run.sh
# starts the gateway and signals nothing (no QUIT to the postmaster).
stop_gateway "$DATA/gateway" >/dev/null
for _ in $(seq 100); do gateway_running "$DATA/gateway" || break; sleep 0.1; done
chown -R postgres:postgres "$DATA/gateway"
head -n 1 "$DATA/pgdata/postmaster.pid" | runuser -u postgres -- tee "$DATA/gateway/nginx.pid" >/dev/null
STARTED="$(started_at)"
if run_catalog >"$WORK/run2stale.log" 2>&1 && grep -q "starting gateway" "$WORK/run2stale.log"; then
	pass "run.sh over a stale nginx.pid holding the postmaster's pid starts the gateway"
else
	fail "run.sh over a stale nginx.pid holding the postmaster's pid starts the gateway" "$(tail -n 5 "$WORK/run2stale.log")"
fi
check "the postmaster is untouched" "$STARTED" "$(started_at 2>&1)"
check "the key works through that gateway" 200 "$(status "$KEY" /v1/namespace/%24/list)"

# A pg_ident.conf changed by hand is left as it is; when its map lacks the
# gateway's line, run.sh says so
printf '%s\n' '# mine' 'lance_namespace   postgres         postgres' 'lance_namespace   root             postgres' \
	>"$DATA/pgdata/pg_ident.conf"
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DATA/pgdata" reload >/dev/null
run_catalog >"$WORK/run2ident.log" 2>&1 || fail "run.sh with a pg_ident.conf changed by hand" "$(tail -n 5 "$WORK/run2ident.log")"
if grep -q 'warning: pg_ident.conf (changed by hand, so left as it is) has no line "lance_namespace lance_gateway lance_gateway"' "$WORK/run2ident.log"; then
	pass "run.sh warns that a pg_ident.conf changed by hand lets the gateway not log in"
else
	fail "run.sh warns that a pg_ident.conf changed by hand lets the gateway not log in" "$(tail -n 5 "$WORK/run2ident.log")"
fi
check "and leaves it as it is" "# mine" "$(head -n 1 "$DATA/pgdata/pg_ident.conf")"
write_run_ident "$DATA/pgdata"
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DATA/pgdata" reload >/dev/null

"$PG_BIN/psql" -X -q -At -h "$DATA/run" -p "$PORT" -U postgres -d lance \
	-c "SELECT lance_revoke_api_key('${KEY:0:16}')" >/dev/null
check "a revoked key is refused" 401 "$(status "$KEY" /v1/namespace/%24/list)"
if run_catalog >"$WORK/run3.log" 2>&1; then pass "scripts/run.sh after the key was revoked"; else fail "scripts/run.sh after the key was revoked" "$(tail -n 20 "$WORK/run3.log")"; fi
NEW="$(key_of)"
if is_api_key "$NEW" && [[ "$NEW" != "$KEY" ]]; then pass "it makes a new key"; else fail "it makes a new key"; fi
check "the new key works" 200 "$(status "$NEW" /v1/namespace/%24/list)"
check "the new key's file is the caller's alone" "600" "$(stat -c '%a' "$DATA/api_key")"

# LN_ROOT: the root is set on every run; an S3 root works once a storage
# setting covers it (no store is reached: declaring a table writes nothing)
D() { "$PG_BIN/psql" -X -q -At -h "$DATA/run" -p "$PORT" -U postgres -d lance "$@"; }
root_now() { D -c "SHOW lance_namespace.root"; }
D -c "SELECT lance_set_storage('{\"location\": \"s3://lake/run\", \"options\": {\"aws_endpoint\": \"http://127.0.0.1:9\", \"allow_http\": \"true\", \"aws_access_key_id\": \"k\", \"aws_secret_access_key\": \"s\"}}')" >/dev/null
if LN_ROOT=s3://lake/run run_catalog >"$WORK/run4.log" 2>&1; then pass "LN_ROOT=s3://lake/run scripts/run.sh"; else fail "LN_ROOT=s3://lake/run scripts/run.sh" "$(tail -n 20 "$WORK/run4.log")"; fi
check "LN_ROOT sets lance_namespace.root" "s3://lake/run" "$(root_now)"
curl -sS -o "$WORK/runs3.create" -w '%{http_code}\n' -H "x-api-key: $NEW" -H 'content-type: application/json' -d '{}' \
	"http://127.0.0.1:$GW_PORT/v1/namespace/runs3/create" >"$WORK/runs3.status" 2>&1 || true
curl -sS -o "$WORK/runs3.declare" -w '%{http_code}\n' -H "x-api-key: $NEW" -H 'content-type: application/json' -d '{}' \
	"http://127.0.0.1:$GW_PORT/v1/table/runs3%24t/declare" >>"$WORK/runs3.status" 2>&1 || true
runs3="$(node -e 'try { const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
	console.log(r.location.startsWith("s3://lake/run/runs3/t_"), r.managed_versioning); } catch (e) { console.log("-"); }' "$WORK/runs3.declare")"
if [[ "$runs3" == "true true" ]]; then
	pass "a table declared through the gateway goes below it, managed"
else
	fail "a table declared through the gateway goes below it, managed" \
		"statuses: $(tr '\n' ' ' <"$WORK/runs3.status"); answer: $(head -c 300 "$WORK/runs3.declare" 2>/dev/null);" \
		"error.log: $(tail -n 8 "$DATA/gateway/error.log" 2>/dev/null)"
fi
if LN_ROOT=s3://elsewhere/x run_catalog >"$WORK/run5.log" 2>&1; then pass "LN_ROOT with no storage setting still starts"; else fail "LN_ROOT with no storage setting still starts" "$(tail -n 20 "$WORK/run5.log")"; fi
grep -q "no storage setting covers s3://elsewhere/x" "$WORK/run5.log" && pass "run.sh warns that nothing covers that root" ||
	fail "run.sh warns that nothing covers that root" "$(tail -n 20 "$WORK/run5.log")"
if run_catalog >"$WORK/run6.log" 2>&1; then pass "scripts/run.sh without LN_ROOT"; else fail "scripts/run.sh without LN_ROOT" "$(tail -n 20 "$WORK/run6.log")"; fi
check "without LN_ROOT the root is the tables folder again" "$DATA/tables" "$(root_now)"

if LN_DATA="$DATA" bash "$ROOT/scripts/stop.sh" >"$WORK/stop.log" 2>&1; then pass "scripts/stop.sh"; else fail "scripts/stop.sh" "$(cat "$WORK/stop.log")"; fi
check "nothing answers on the gateway's port once stopped" 000 "$(status "$NEW" /v1/namespace/%24/list || true)"

# A program the scripts run as lance_gateway or postgres, started from
# root's terminal, has no controlling terminal (setsid): it cannot push
# keystrokes into root's shell (the TIOCSTI ioctl).  script(1) gives the
# scripts a terminal; field 7 of /proc/<pid>/stat is the process's
# controlling terminal (0: none).
tty_as() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	script -qec "bash -c 'source \"\$1\"; $1 cat /proc/self/stat' _ $ROOT/scripts/common.sh" /dev/null |
		tr -d '\r' | awk '{ print $7 }'
}
check "a program run as lance_gateway from root's terminal has no controlling terminal" 0 "$(tty_as as_gateway)"
check "a program run as postgres from root's terminal has no controlling terminal" 0 "$(tty_as as_postgres)"

echo
say "run test: $CHECKS checks, $FAILS failed, $((SECONDS - START)) s"
((FAILS == 0))
