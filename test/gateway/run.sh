#!/usr/bin/env bash
# The gateway and its keys: what scripts/common.sh sets up, seen from outside.
#
#   role   the gateway connects as lance_gateway: it logs in, is no
#          superuser, inherits nothing, owns nothing, is a member of
#          lance_admin (so administrator keys work through it), and making it
#          again changes nothing; without a key it can do nothing itself.
#          Functions named as the extension's, and pg_catalog's (quote_ident,
#          set_config, the operator =), in a schema ahead of it and of
#          pg_catalog on the role's search_path, never run: the gateway names
#          the schema of every function and operator it calls.
#   http   a key answers 200 (x-api-key or Authorization: Bearer), no key or
#          an unknown or revoked one 401 with code 16; the access log has one
#          line per request with the id of the key the database authenticated
#          and never the key: key=- for a forged lnk_<victim id>_junk; a key
#          after 100 other headers is refused (431, code 13), not dropped.
#   context the commit log keeps the request headers the gateway passed on
#          (x-request-id) as the entry's headers, and the body's context
#          apart, as the caller's: a forged header.x-request-id in the body
#          is no header, and header.authorization is dropped; a 7 MB context
#          is 400 with code 13, and no change.
#   https  with LN_GATEWAY_TLS_CERT and LN_GATEWAY_TLS_KEY (a self-signed
#          certificate made here with openssl) the gateway serves HTTPS: 200
#          with a key and 401 without one for a client that trusts the
#          certificate, and refuses plain HTTP and clients that do not trust it.
#   ops    /healthz, /readyz, X-Request-Id; /metrics: 401 without a key, 403
#          for a key that is not an administrator's, its counts parsed; a key
#          authorized a moment ago and revoked since gets the database's
#          error for a header not valid UTF-8 (400), not the authorization
#          kept; with the database stopped, 200 for a key authorized a moment
#          ago (its line in the access log names it), 503 for one never
#          authorized or refused since (revoked), 401 without a key; a role
#          with a request limit (1 a second, bursts of 2; the server
#          preloads the library) is told 429, code 21, Retry-After for most
#          of 12 rapid requests, counted in lance_throttled_total{reason=
#          "rate"}, while another role's key is served; a writer's
#          DeclareTable in the way of an administrator's table: 400, code
#          13, naming no table, while the server log names it.
#   query  a secret in the query string (?x-api-key=lnk_<random>,
#          ?token=<random>) reaches none of access.log, error.log and the
#          server log (which logs every statement with its parameters),
#          whatever the request's fate: a 9 MB body, a URI too long (414), a
#          malformed request line (400), no key in the headers, a header or
#          a body that never comes (timeouts), the database down; such a
#          query string is refused 400 with code 13 (parameters named like a
#          secret in any case, percent-encoded letters), page_token served.
#   schema the extension dropped and made anew in another schema, a
#          lance_rest planted in the old one by the same transaction: within
#          a few seconds requests reach the new schema's; a schema whose
#          name holds "$" is refused (503, code 17, logged).
#
# Runs as root (or postgres) and starts its own cluster and two gateways in a
# temporary folder.  Prints "  ok    <check>" / "  FAIL  <check>" per check;
# exits 0 only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try for the server (default 54521); the
#                 gateways take free ports from 2533 on
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD PGHOST PGPORT PGUSER
unset LN_GATEWAY_TLS_CERT LN_GATEWAY_TLS_KEY LN_GATEWAY_HOSTS LN_GATEWAY_ORIGINS

command -v curl >/dev/null || die "the gateway test needs curl"
command -v openssl >/dev/null || die "the gateway test needs openssl"
need_gateway_test_packages

new_work_dir
HTTP_PREFIX="$WORK/gw-http"
TLS_PREFIX="$WORK/gw-https"
DB=gateway
PORT="$(find_free_port "${LN_TEST_PORT:-54521}")"

cleanup() {
	local rc=$?
	trap - EXIT
	set +e
	stop_gateway "$HTTP_PREFIX" >/dev/null 2>&1
	stop_gateway "$TLS_PREFIX" >/dev/null 2>&1
	stop_clusters "$PGDATA_DIR"
	remove_work_dir
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" "$@"; }
PSQL_ARGS=(-h "$SOCK" -p "$PORT" -U postgres -d "$DB")

init_cluster "$PGDATA_DIR" test >/dev/null
# preloaded, as scripts/run.sh's: the request limits per role count in shared memory
printf "\nshared_preload_libraries = 'lance_namespace'\n" | as_postgres tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 755
sql -U postgres -d postgres -c "CREATE DATABASE $DB"
sql -U postgres -d "$DB" <<SQL
CREATE EXTENSION lance_namespace;
ALTER DATABASE $DB SET lance_namespace.root = '$TABLES';
ALTER DATABASE $DB SET lance_namespace.local_roots = '$TABLES';
SELECT lance_create_namespace('{"id": ["gw"]}') IS NOT NULL AS created \gset
SQL

# curl_status <curl args...>: "<status> <body>" of one request.
curl_status() {
	local out
	out="$(curl -sS --max-time 20 -w '\n%{http_code}' "$@" 2>&1)" || {
		printf 'curl failed: %s' "$(tr '\n' ' ' <<<"$out")"
		return 0
	}
	printf '%s %s' "${out##*$'\n'}" "${out%$'\n'*}"
}
# expect <check> <status> <code or -> <curl args...>: the status, and the body's code.
expect() {
	local what="$1" status="$2" code="$3" answer
	shift 3
	answer="$(curl_status "$@")"
	if [[ "$answer" != "$status "* ]]; then
		fail "$what: status $status" "got: $answer"
	elif [[ "$code" != - && "$answer" != "$status {\"code\":$code,"* ]]; then
		fail "$what: status $status, code $code" "got: $answer"
	else
		[[ "$code" == - ]] && pass "$what: $status" || pass "$what: $status, code $code"
	fi
}

# ---------------------------------------------------------------------------
# role
# ---------------------------------------------------------------------------
say "the gateway's role"
ensure_gateway_role "${PSQL_ARGS[@]}"
ensure_gateway_role "${PSQL_ARGS[@]}" # twice: idempotent
check "role lance_gateway: login, not superuser, no inherit, no createdb/createrole/replication/bypassrls" \
	"t|f|f|f|f|f|f" \
	"$(sql -U postgres -d "$DB" -c "SELECT concat_ws('|', rolcanlogin, rolsuper, rolinherit, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls) FROM pg_roles WHERE rolname = 'lance_gateway'")"
check "role lance_gateway owns nothing" 0 \
	"$(sql -U postgres -d "$DB" -c "SELECT count(*) FROM pg_shdepend WHERE refclassid = 'pg_authid'::regclass AND refobjid = 'lance_gateway'::regrole AND deptype = 'o'")"
check "role lance_gateway is a member of no role" 0 \
	"$(sql -U postgres -d "$DB" -c "SELECT count(*) FROM pg_auth_members WHERE member = 'lance_gateway'::regrole")"

# Without a key the gateway's role holds no right of lance_admin (NOINHERIT).
out="$(sql -U lance_gateway -d "$DB" -c "SELECT lance_create_api_key('lance_admin')" 2>&1 || true)"
if [[ "$out" == *"permission denied"* ]]; then
	pass "lance_gateway cannot make keys itself (permission denied)"
else
	fail "lance_gateway cannot make keys itself" "got: $out"
fi
out="$(sql -U lance_gateway -d "$DB" -v VERBOSITY=verbose -c "SELECT lance_create_namespace('{\"id\": [\"gw\", \"by_gateway\"]}')" 2>&1 || true)"
if [[ "$out" == *"ERROR:  LN015:"* || "$out" == *"ERROR:  LN001:"* ]]; then
	pass "lance_gateway cannot change the catalog itself ($(sed -n 's/^ERROR:  \(LN0[0-9][0-9]\).*/\1/p' <<<"$out" | head -n 1))"
else
	fail "lance_gateway cannot change the catalog itself" "got: $out"
fi
out="$(sql -U lance_gateway -d "$DB" -c "SELECT count(*) FROM lance_catalog.api_key" 2>&1 || true)"
if [[ "$out" == *"permission denied"* ]]; then
	pass "lance_gateway cannot read the keys' table"
else
	fail "lance_gateway cannot read the keys' table" "got: $out"
fi

KEY="$(create_api_key lance_admin "${PSQL_ARGS[@]}")"
KEY_ID="${KEY:0:16}"
if is_api_key "$KEY"; then pass "an administrator key: $KEY_ID..."; else fail "an administrator key" "got: $KEY"; fi
if api_key_works "$KEY" "${PSQL_ARGS[@]}"; then pass "api_key_works: the key works"; else fail "api_key_works: the key works"; fi
if ! api_key_works "lnk_000000000000_$(printf '0%.0s' {1..64})" "${PSQL_ARGS[@]}"; then
	pass "api_key_works: a made-up key does not"
else
	fail "api_key_works: a made-up key does not"
fi

# Functions named as the extension's, in a schema of someone else's that
# comes first on the gateway role's search_path: an unqualified call would
# run them (checked here), the gateway names the extension's schema and
# never does.  They stay for the rest of this test, each of whose requests
# would otherwise answer their 299 (lance_rest), be logged as their
# operation Shadow (lance_operations) or be not ready (lance_library_version).
sql -U postgres -d "$DB" <<'SQL' >/dev/null
CREATE ROLE gw_shadow NOLOGIN;
CREATE SCHEMA gw_shadow AUTHORIZATION gw_shadow;
SET ROLE gw_shadow;
GRANT USAGE ON SCHEMA gw_shadow TO PUBLIC;
CREATE FUNCTION gw_shadow.lance_rest(method text, path text, query text, body text, headers jsonb,
    OUT status integer, OUT response_headers jsonb, OUT response_body text, OUT key_id text)
    LANGUAGE sql AS $$ SELECT 299, '{"content-type": "application/json"}'::jsonb, '{"shadow": true}', NULL::text $$;
CREATE FUNCTION gw_shadow.lance_library_version() RETURNS text LANGUAGE sql AS $$ SELECT 'shadow'::text $$;
CREATE FUNCTION gw_shadow.lance_operations(
    OUT operation_id text, OUT sql_function text, OUT http_method text, OUT http_path text,
    OUT changes_catalog boolean, OUT privilege text, OUT served boolean, OUT not_served text,
    OUT request_members text[]) RETURNS SETOF record
    LANGUAGE sql AS $$ SELECT 'Shadow', 'shadow', 'GET', '/v1/namespace/{id}/list', false, '', true, NULL, '{}'::text[] $$;
-- pg_catalog's own names the gateway's statements use, ahead of pg_catalog
-- (named on the path, it is searched where it stands): quote_ident (the
-- schema it names would be gw_shadow), set_config and the operator = on
-- text, name and oid (each raises)
CREATE FUNCTION gw_shadow.quote_ident(text) RETURNS text LANGUAGE sql AS $$ SELECT 'gw_shadow'::pg_catalog.text $$;
CREATE FUNCTION gw_shadow.set_config(text, text, boolean) RETURNS text LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'gw_shadow.set_config ran'; END $$;
CREATE FUNCTION gw_shadow.shadow_eq(text, text) RETURNS boolean LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'gw_shadow.= (text) ran'; END $$;
CREATE FUNCTION gw_shadow.shadow_eq(name, name) RETURNS boolean LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'gw_shadow.= (name) ran'; END $$;
CREATE FUNCTION gw_shadow.shadow_eq(oid, oid) RETURNS boolean LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'gw_shadow.= (oid) ran'; END $$;
CREATE OPERATOR gw_shadow.= (LEFTARG = text, RIGHTARG = text, FUNCTION = gw_shadow.shadow_eq);
CREATE OPERATOR gw_shadow.= (LEFTARG = name, RIGHTARG = name, FUNCTION = gw_shadow.shadow_eq);
CREATE OPERATOR gw_shadow.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = gw_shadow.shadow_eq);
RESET ROLE;
ALTER ROLE lance_gateway SET search_path = gw_shadow, pg_catalog, public;
SQL
check "an unqualified call of the gateway's role finds the shadowing functions" "299 shadow Shadow" \
	"$(sql -U lance_gateway -d "$DB" -c "SELECT (SELECT status FROM lance_rest('GET', '/v1/namespace/gw/list', NULL, NULL, NULL))
		|| ' ' || lance_library_version() || ' ' || (SELECT string_agg(operation_id, ',') FROM lance_operations())")"
check "and its pg_catalog names: quote_ident, set_config, =" "gw_shadow gw_shadow.set_config ran gw_shadow.= (name) ran" \
	"$(sql -U lance_gateway -d "$DB" -c "SELECT quote_ident('x')" 2>&1) $(sql -U lance_gateway -d "$DB" -c "SELECT set_config('a.b', 'c', true)" 2>&1 | sed -n 's/^ERROR:  //p') $(sql -U lance_gateway -d "$DB" -c "SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = 'x'" 2>&1 | sed -n 's/^ERROR:  //p')"

# ---------------------------------------------------------------------------
# http
# ---------------------------------------------------------------------------
say "the gateway over HTTP"
HTTP_PORT="$(find_free_port 2533)"
start_gateway "$HTTP_PREFIX" "$HTTP_PORT" "$DB" "$SOCK" "$PORT" >/dev/null
URL="http://127.0.0.1:$HTTP_PORT/v1"
expect "HTTP, x-api-key" 200 - -H "x-api-key: $KEY" "$URL/namespace/gw/list"
answer="$(curl_status -H "x-api-key: $KEY" "$URL/namespace/gw/list")"
if [[ "$answer" == '200 {"namespaces":'* ]]; then
	pass "the gateway runs the extension's lance_rest, not one ahead of it on its role's search_path"
else
	fail "the gateway runs the extension's lance_rest, not one ahead of it on its role's search_path" "got: $answer"
fi
expect "HTTP, Authorization: Bearer" 200 - -H "Authorization: Bearer $KEY" "$URL/namespace/gw/list"
expect "HTTP, no key" 401 16 "$URL/namespace/gw/list"
expect "HTTP, an unknown key" 401 16 -H "x-api-key: ${KEY:0:17}$(printf 'f%.0s' {1..64})" "$URL/namespace/gw/list"
expect "HTTP, no key, a change" 401 16 -X POST -H 'content-type: application/json' -d '{}' "$URL/namespace/gw%24nokey/create"
expect "HTTP, the change was not made" 404 1 -X POST -H "x-api-key: $KEY" -H 'content-type: application/json' -d '{}' "$URL/namespace/gw%24nokey/exists"
check "the gateway's connections are lance_gateway's" "lance_gateway" \
	"$(sql -U postgres -d "$DB" -c "SELECT string_agg(DISTINCT usename, ',') FROM pg_stat_activity WHERE datname = '$DB' AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name = 'lance_gateway'")"
# a revoked key stops at once
OTHER="$(create_api_key lance_admin "${PSQL_ARGS[@]}")"
expect "HTTP, a second key" 200 - -H "x-api-key: $OTHER" "$URL/namespace/gw/list"
sql -U postgres -d "$DB" -v id="${OTHER:0:16}" <<<"SELECT lance_revoke_api_key(:'id');" >/dev/null
expect "HTTP, that key once revoked" 401 16 -H "x-api-key: $OTHER" "$URL/namespace/gw/list"

# The access log: a JSON object per line, with time, request id, method,
# path, operation, status, Lance code, duration, key id; never a key.
# nginx writes its log line after the answer: wait for the 9th (the cap,
# 60 s, only guards against a hang).  FIELDS: the log's lines as
# access_log_fields (test/lib.sh) writes them.
LOG="$HTTP_PREFIX/access.log"
for _ in $(seq 600); do (($(wc -l <"$LOG") >= 9)) && break; sleep 0.1; done
lines="$(wc -l <"$LOG")"
check "the access log has a line per request" 9 "$lines"
FIELDS="$(access_log_fields "$LOG")"
check "every line is one JSON object" 0 "$(grep -c '^INVALID$' <<<"$FIELDS" || true)"
if grep -qE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}[+-][0-9:]{5} GET /v1/namespace/gw/list 200 [0-9.]+ key=$KEY_ID ListNamespaces null [0-9a-f]{32}$" <<<"$FIELDS"; then
	pass "a line: time, method, path, status, duration, key_id $KEY_ID, operation, no code, a request id"
else
	fail "a line: time, method, path, status, duration, key_id $KEY_ID, operation, no code, a request id" \
		"$(head -n 3 "$LOG")"
fi
check "a 401's line has the Lance code 16" "GET /v1/namespace/gw/list 401 key=- ListNamespaces 16" \
	"$(awk '$4 == 401 { print $2, $3, $4, $6, $7, $8; exit }' <<<"$FIELDS")"
# key_id is the key the database authenticated: none for no key (2), an
# unknown key and a revoked one
check "requests the database authenticated no key for log key_id -" 4 "$(grep -c ' key=- ' <<<"$FIELDS" || true)"
check "no 401 line names a key" 0 "$(grep -c " 401 [0-9.]* key=lnk_" <<<"$FIELDS" || true)"
if ! grep -rqF -e "${KEY:17}" -e "${OTHER:17}" "$HTTP_PREFIX"/*.log; then
	pass "no key's secret part in the gateway's logs"
else
	fail "no key's secret part in the gateway's logs" "$(grep -rlF -e "${KEY:17}" -e "${OTHER:17}" "$HTTP_PREFIX"/*.log)"
fi
if ! grep -qF -e "${KEY:17}" -e "${OTHER:17}" "$PGDATA_DIR/server.log"; then
	pass "no key's secret part in the server log"
else
	fail "no key's secret part in the server log"
fi

# A key of the form lnk_<victim's id>_<junk> is no key of the victim's: the
# log names no key for it, whatever the answer (401, or 404 for a path with
# no route, where no key is checked at all).  Each request is told apart by
# its path.
expect "HTTP, a forged key lnk_<victim id>_junk" 401 16 -H "x-api-key: ${KEY_ID}_junk" "$URL/namespace/gw%24forged1/list"
expect "HTTP, a forged key of a key's form" 401 16 -H "Authorization: Bearer ${KEY_ID}_$(printf '0%.0s' {1..64})" \
	"$URL/namespace/gw%24forged2/list"
expect "HTTP, a forged key on a path without a route" 404 - -H "x-api-key: ${KEY_ID}_junk" "$URL/forged3"
# A body with a NUL byte is refused: the catalog takes text, and would run
# (and log) another request than the one sent
printf '{"properties": {"a": "b"}}\0{"x": 1}' >"$WORK/nul_body.json"
expect "HTTP, a body with a NUL byte" 400 13 -X POST -H "x-api-key: $KEY" -H 'content-type: application/json' \
	--data-binary "@$WORK/nul_body.json" "$URL/namespace/gw%24nul/create"
check "and nothing was made" 0 \
	"$(sql -U postgres -d "$DB" -c "SELECT count(*) FROM lance_catalog.object WHERE name = 'nul'")"
# A path cannot write fields of its own into the log: its spaces (and any
# byte that could split a field) are written %XX, so a path holding
# " 200 0.001 key=<an id>" is one field, and the line's key is "-".
expect "HTTP, a path that spells a log line's fields" 401 16 \
	"$URL/namespace/forged4%20200%200.001%20key=${KEY_ID}%20/list"
# A request with more headers than the gateway reads (100) is refused, so a
# key after 100 other headers is never dropped unread; with 100 it is read.
# curl sends Host, User-Agent and Accept of its own.
many_headers() { local i; for ((i = 1; i <= $1; i++)); do printf -- '-H\nx-filler-%d: %d\n' "$i" "$i"; done; }
mapfile -t FILL96 < <(many_headers 96)
mapfile -t FILL97 < <(many_headers 97)
expect "HTTP, the key as the 100th header" 200 - "${FILL96[@]}" -H "x-api-key: $KEY" "$URL/namespace/gw/list/"
expect "HTTP, the key after 100 other headers" 431 13 "${FILL97[@]}" -H "x-api-key: $KEY" "$URL/namespace/gw%24header101/list"
for _ in $(seq 600); do (($(wc -l <"$LOG") >= 15)) && break; sleep 0.1; done
FIELDS="$(access_log_fields "$LOG")"
# logged <path>...: "<path> <status> key=<id>" of the log's line for each path
logged() {
	local path
	for path in "$@"; do awk -v p="$path" '$3 == p { print $3, $4, $6 }' <<<"$FIELDS"; done | tr '\n' ' ' | sed 's/ $//'
}
# shellcheck disable=SC2016 # the paths hold a literal $
check "a path that spells fields is one field of its line, whose key is -" \
	"9 /v1/namespace/forged4%20200%200.001%20key=${KEY_ID}%20/list 401 key=-" \
	"$(awk '/forged4/ { print NF, $3, $4, $6 }' <<<"$FIELDS")"
# nor can it write JSON fields: its quote stays in the path's string
expect "HTTP, a path that spells JSON fields" 401 16 \
	"$URL/namespace/forged5%22,%22status%22:200,%22key_id%22:%22${KEY_ID}/list"
for _ in $(seq 600); do grep -q forged5 "$LOG" && break; sleep 0.1; done
check "a path that spells JSON fields stays in the path's value" \
	"401 - /v1/namespace/forged5%22,%22status%22:200,%22key_id%22:%22${KEY_ID}/list" \
	"$(grep forged5 "$LOG" | jq -r '"\(.status) \(.key_id) \(.path)"')"
# Requests nginx refuses before the server's rewrite phase, where the
# gateway's values are set (a request line longer than nginx's header
# buffers: 414; a malformed one: 400), still log a line that is JSON, with
# no code, operation or key (without the log phase's defaults: "code":,).
# The 20 s limits and the 60 s poll below only end a hang (nginx answers
# these at once); no check rests on how long anything took.
BEFORE="$(wc -l <"$LOG")"
LONG_PATH="/v1/namespace/refused$(printf 'l%.0s' {1..9000})/list"
check "a request line too long for nginx is refused" 414 \
	"$(curl -sS -o /dev/null -w '%{http_code}' --max-time 20 "http://127.0.0.1:$HTTP_PORT$LONG_PATH")"
# (in a subshell: a connection that fails is a failed check, not the end of the script)
RAW_ANSWER="$( (exec 3<>"/dev/tcp/127.0.0.1/$HTTP_PORT" &&
	printf 'GET /v1/namespace/refused%%22x/list HTTP/1.1 junk\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
	timeout 20 head -n 1 <&3) 2>&1 | tr -d '\r' || true)"
check "a malformed request line is refused" "HTTP/1.1 400 Bad Request" "$RAW_ANSWER"
for _ in $(seq 600); do (($(wc -l <"$LOG") >= BEFORE + 2)) && break; sleep 0.1; done
check "their lines are JSON: status, code, operation and key id" "400 null - -|414 null - -" \
	"$(tail -n +"$((BEFORE + 1))" "$LOG" |
		jq -R -r '(fromjson? | "\(.status) \(.code) \(.operation) \(.key_id)") // "INVALID"' | sort | paste -sd '|')"
check "and error.log has no warning a client could make nginx write at will" 0 \
	"$(grep -c 'using uninitialized' "$HTTP_PREFIX/error.log" || true)"
check "the forged keys' requests log key=-" \
	"/v1/namespace/gw\$forged1/list 401 key=- /v1/namespace/gw\$forged2/list 401 key=- /v1/forged3 404 key=-" \
	"$(logged '/v1/namespace/gw$forged1/list' '/v1/namespace/gw$forged2/list' /v1/forged3)"
# shellcheck disable=SC2016 # the paths hold a literal $
check "the key as the 100th header is logged; after 100 others, key=-" \
	"/v1/namespace/gw/list/ 200 key=$KEY_ID /v1/namespace/gw\$header101/list 431 key=-" \
	"$(logged /v1/namespace/gw/list/ '/v1/namespace/gw$header101/list')"

# ---------------------------------------------------------------------------
# context
# ---------------------------------------------------------------------------
say "what the commit log keeps of a request's headers and context"
expect "HTTP, a change whose body claims headers" 200 - -X POST -H "x-api-key: $KEY" -H 'x-request-id: real-1' \
	-H 'content-type: application/json' \
	-d '{"context": {"header.x-request-id": "forged", "header.authorization": "Bearer abc", "job": "nightly"}}' \
	"$URL/namespace/gw%24ctx/create"
check "the entry's headers are those the request carried" '{"x-request-id": "real-1"}' \
	"$(sql -U postgres -d "$DB" -c "SELECT headers FROM lance_catalog.change WHERE objects = '{gw\$ctx}'")"
check "the body's context stays apart, without its credential" \
	'{"job": "nightly", "header.x-request-id": "forged"}' \
	"$(sql -U postgres -d "$DB" -c "SELECT context FROM lance_catalog.change WHERE objects = '{gw\$ctx}'")"
{
	printf '{"context": {"big": "'
	head -c $((7 * 1024 * 1024)) /dev/zero | tr '\0' x
	printf '"}}'
} >"$WORK/big_context.json"
expect "HTTP, a change with a 7 MB context" 400 13 -X POST -H "x-api-key: $KEY" \
	-H 'content-type: application/json' --data-binary "@$WORK/big_context.json" "$URL/namespace/gw%24big/create"
check "and no entry" 0 \
	"$(sql -U postgres -d "$DB" -c "SELECT count(*) FROM lance_catalog.change WHERE objects = '{gw\$big}'")"

# ---------------------------------------------------------------------------
# https
# ---------------------------------------------------------------------------
say "the gateway over HTTPS, with a self-signed certificate"
TLS="$WORK/tls"
mkdir -m 700 "$TLS"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-keyout "$TLS/key.pem" -out "$TLS/cert.pem" >"$TLS/openssl.log" 2>&1 ||
	die "openssl could not make a certificate: $(cat "$TLS/openssl.log")"
chmod 600 "$TLS/key.pem"
TLS_PORT="$(find_free_port $((HTTP_PORT + 1)))"
LN_GATEWAY_TLS_CERT="$TLS/cert.pem" LN_GATEWAY_TLS_KEY="$TLS/key.pem" \
	start_gateway "$TLS_PREFIX" "$TLS_PORT" "$DB" "$SOCK" "$PORT" >/dev/null
check "the private key's copy is the gateway's OS user's alone" "600 lance_gateway" \
	"$(stat -c '%a %U' "$TLS_PREFIX/tls/key.pem")"
SURL="https://127.0.0.1:$TLS_PORT/v1"
expect "HTTPS, x-api-key" 200 - --cacert "$TLS/cert.pem" -H "x-api-key: $KEY" "$SURL/namespace/gw/list"
expect "HTTPS by name (localhost), Authorization: Bearer" 200 - --cacert "$TLS/cert.pem" \
	-H "Authorization: Bearer $KEY" "https://localhost:$TLS_PORT/v1/namespace/gw/list"
expect "HTTPS, no key" 401 16 --cacert "$TLS/cert.pem" "$SURL/namespace/gw/list"
expect "HTTPS, a change with a key" 200 - --cacert "$TLS/cert.pem" -X POST -H "x-api-key: $KEY" \
	-H 'content-type: application/json' -d '{}' "$SURL/namespace/gw%24over_tls/create"
expect "HTTPS, the change is in the catalog" 204 - --cacert "$TLS/cert.pem" -X POST -H "x-api-key: $KEY" \
	-H 'content-type: application/json' -d '{}' "$SURL/namespace/gw%24over_tls/exists"
answer="$(curl_status -H "x-api-key: $KEY" "$SURL/namespace/gw/list")"
if [[ "$answer" == "curl failed: "* ]]; then
	pass "a client that does not trust the certificate does not connect"
else
	fail "a client that does not trust the certificate does not connect" "got: $answer"
fi
expect "plain HTTP to the HTTPS port is refused" 400 - -H "x-api-key: $KEY" "http://127.0.0.1:$TLS_PORT/v1/namespace/gw/list"
# the line of the HTTPS request, written after its answer (the cap only guards against a hang)
for _ in $(seq 600); do grep -q '"path":"/v1/namespace/gw/list","operation":"ListNamespaces","status":200,' "$TLS_PREFIX/access.log" 2>/dev/null && break; sleep 0.1; done
# A pipeline ends in a grep that reads all its input (>/dev/null, not -q):
# under pipefail, a writer that grep -q's early exit cuts off fails the
# pipeline, and the check, now and then (scripts/check_suites.sh).
if access_log_fields "$TLS_PREFIX/access.log" | grep " GET /v1/namespace/gw/list 200 [0-9.]* key=$KEY_ID " >/dev/null &&
	! grep -qF "${KEY:17}" "$TLS_PREFIX/access.log"; then
	pass "HTTPS requests are logged with the key's id, never the key"
else
	fail "HTTPS requests are logged with the key's id, never the key" "$(head -n 3 "$TLS_PREFIX/access.log")"
fi
# the HTTP gateway is still plain HTTP: the TLS settings went with the start that had them
expect "the HTTP gateway still answers HTTP" 200 - -H "x-api-key: $KEY" "$URL/namespace/gw/list"

# ---------------------------------------------------------------------------
# ops: health, readiness, request ids
# ---------------------------------------------------------------------------
say "health, readiness and request ids"
BASE="http://127.0.0.1:$HTTP_PORT"
expect "GET /healthz without a key" 200 - "$BASE/healthz"
check "its body says nothing but ok" '{"status":"ok"}' "$(curl -sS --max-time 20 "$BASE/healthz")"
expect "GET /readyz without a key: the database answers, at the library's version" 200 - "$BASE/readyz"
# an extension older than the library (as before ALTER EXTENSION ... UPDATE)
sql -U postgres -d "$DB" -c "UPDATE pg_extension SET extversion = '0.5.0' WHERE extname = 'lance_namespace'"
expect "GET /readyz with the extension at another version than the library's" 503 - "$BASE/readyz"
sql -U postgres -d "$DB" -c "UPDATE pg_extension SET extversion = '$(sql -U postgres -d "$DB" -c "SELECT lance_library_version()")' WHERE extname = 'lance_namespace'"
expect "GET /readyz once the versions agree again" 200 - "$BASE/readyz"

# Every answer carries X-Request-Id: the client's own when sane; the access
# log's line and the database's log lines of the request carry it
# (application_name lance_gateway/<id>, which %a in log_line_prefix shows).
# Parameters are not logged: a request's headers hold its key.
sql -U postgres -d "$DB" <<'SQL' >/dev/null
ALTER SYSTEM SET log_line_prefix = '%m [%p] %a ';
ALTER SYSTEM SET log_min_duration_statement = 0;
ALTER SYSTEM SET log_parameter_max_length = 0;
SELECT pg_reload_conf();
SQL
# request_id <curl args...>: the X-Request-Id the answer carries
request_id() {
	curl -sS --max-time 20 -o /dev/null -D - "$@" | tr -d '\r' | sed -n 's/^[Xx]-[Rr]equest-[Ii]d: //p'
}
TRACE="trace-$RANDOM$RANDOM-x"
check "a sane id of the client's is answered back" "$TRACE" \
	"$(request_id -H "x-api-key: $KEY" -H "x-request-id: $TRACE" "$URL/namespace/gw/list")"
for _ in $(seq 600); do grep -qF "\"request_id\":\"$TRACE\"" "$LOG" && break; sleep 0.1; done
check "the access log's line of that request carries it" "GET /v1/namespace/gw/list 200 key=$KEY_ID ListNamespaces" \
	"$(access_log_fields "$LOG" | awk -v id="$TRACE" '$9 == id { print $2, $3, $4, $6, $7 }')"
for _ in $(seq 100); do grep -qF "lance_gateway/$TRACE " "$PGDATA_DIR/server.log" && break; sleep 0.1; done
if grep -F "lance_gateway/$TRACE " "$PGDATA_DIR/server.log" | grep "lance_rest" >/dev/null; then
	pass "the database's log line of its lance_rest call carries it (application_name lance_gateway/$TRACE)"
else
	fail "the database's log line of its lance_rest call carries it" "$(tail -n 5 "$PGDATA_DIR/server.log")"
fi
check "between requests the connections' application_name is lance_gateway again" 0 \
	"$(sql -U postgres -d "$DB" -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'lance_gateway' AND state = 'idle' AND application_name <> 'lance_gateway'")"
BAD_IDS=("has space" "$(printf 'x%.0s' {1..129})" $'tab\there' $'caf\xc3\xa9')
for bad in "${BAD_IDS[@]}"; do
	got="$(request_id -H "x-api-key: $KEY" -H "x-request-id: $bad" "$URL/namespace/gw/list")"
	if [[ "$got" =~ ^[0-9a-f]{32}$ ]]; then
		pass "an id that is not sane (${bad:0:12}...) is replaced by a fresh one ($got)"
	else
		fail "an id that is not sane (${bad:0:12}...) is replaced by a fresh one" "got: $got"
	fi
done
check "an id of 128 characters is kept" "$(printf 'y%.0s' {1..128})" \
	"$(request_id -H "x-api-key: $KEY" -H "x-request-id: $(printf 'y%.0s' {1..128})" "$URL/namespace/gw/list")"
# an id with quotes is printable, kept, and writes no JSON field of its own
QUOTED='q","status":200,"key_id":"'"$KEY_ID"
check "an id with quotes is kept" "$QUOTED" \
	"$(request_id -H "x-request-id: $QUOTED" "$URL/namespace/gw%24quoted/list")"
for _ in $(seq 600); do grep -q 'gw.quoted' "$LOG" && break; sleep 0.1; done
check "and stays inside the log's request_id" "$QUOTED 401 -" \
	"$(grep 'gw.quoted' "$LOG" | jq -r '"\(.request_id) \(.status) \(.key_id)"')"
FRESH="$(request_id -X POST -H "x-api-key: $KEY" -H 'content-type: application/json' -d '{}' "$URL/namespace/gw%24traced/create")"
check "a change without an id of the client's: the change log keeps the one answered" "$FRESH" \
	"$(sql -U postgres -d "$DB" -c "SELECT headers ->> 'x-request-id' FROM lance_catalog.change WHERE objects = '{gw\$traced}'")"
check "errors and refusals carry an id too (401, 404, 413)" "3" \
	"$( (request_id "$URL/namespace/gw/list"; request_id "$BASE/nowhere"
		head -c $((9 * 1024 * 1024)) /dev/zero | request_id -X POST -H "x-api-key: $KEY" \
			-H 'content-type: application/json' --data-binary @- "$URL/namespace/gw%24big2/create") |
		grep -cE '^[0-9a-f]{32}$')"
check "/healthz and /readyz carry an id" "2" \
	"$( (request_id "$BASE/healthz"; request_id "$BASE/readyz") | grep -cE '^[0-9a-f]{32}$')"
sql -U postgres -d "$DB" <<'SQL' >/dev/null
ALTER SYSTEM RESET log_line_prefix;
ALTER SYSTEM RESET log_min_duration_statement;
ALTER SYSTEM RESET log_parameter_max_length;
SELECT pg_reload_conf();
SQL
if ! grep -qF -e "${KEY:17}" -e "${OTHER:17}" "$PGDATA_DIR/server.log"; then
	pass "no key's secret part in the server log, statements logged"
else
	fail "no key's secret part in the server log, statements logged"
fi

# ---------------------------------------------------------------------------
# query: a secret in the query string reaches no log
# ---------------------------------------------------------------------------
say "secrets in the query string"
# A key in the query string is never taken (the catalog reads keys from
# headers alone), and neither it nor the value of a parameter named like a
# secret may reach a log, whatever becomes of the request: nginx's error.log
# line of a 413 quotes the request line, query and all, and so does every
# line logged in a request's context (the Lua code's, limit_conn's); the
# call of lance_rest passes the query string, which a server that logs its
# statements logs with the call's parameters.  The gateway refuses such a
# query string (400, code 13) before anything logs it.  Each fate below is
# met with ?x-api-key=lnk_<random> and with ?token=<random>, without a key
# in the headers, while the server logs every statement with its
# parameters: a body over 8 MB (413), a request line longer than nginx's
# buffers (414), a malformed one (400), no key in the headers (401), a
# header that never ends and a body that never comes (timeouts, 15 s).
Q_ID="$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
Q_SECRET="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
Q_TOKEN="tok$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
Q_QUERIES=("x-api-key=lnk_${Q_ID}_$Q_SECRET" "token=$Q_TOKEN")
sql -U postgres -d "$DB" <<'SQL' >/dev/null
ALTER SYSTEM SET log_min_duration_statement = 0;
ALTER SYSTEM SET log_parameter_max_length = -1;
SELECT pg_reload_conf();
SQL
# q_logged <marker>: true once the server log has the parameters of a
# statement that hold <marker> (a request's path)
q_logged() { grep -F "$1" "$PGDATA_DIR/server.log" | grep -F 'DETAIL:  parameters: ' >/dev/null; }
# q_probe <marker>: a request without a key whose path holds <marker>
q_probe() { curl -sS -o /dev/null --max-time 20 "$URL/namespace/$1/list" 2>/dev/null || true; }
for _ in $(seq 100); do q_probe qprobe1; q_logged qprobe1 && break; sleep 0.1; done
if q_logged qprobe1; then
	pass "the server logs every statement with its parameters"
else
	fail "the server logs every statement with its parameters" "$(tail -n 5 "$PGDATA_DIR/server.log")"
fi
# q_hold <request head>: send it on a connection of its own and keep that
# open, sending nothing more, until the gateway closes it (at most 30 s)
Q_HELD=()
q_hold() {
	# shellcheck disable=SC2016 # expanded by that shell
	timeout 30 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "%s" "$2" >&3 && cat <&3 >/dev/null' \
		q_hold "$HTTP_PORT" "$1" >/dev/null 2>&1 &
	Q_HELD+=($!)
}
BEFORE="$(wc -l <"$LOG")"
Q_FATES=()
for q in "${Q_QUERIES[@]}"; do
	Q_FATES+=("9 MB body: $(head -c $((9 * 1024 * 1024)) /dev/zero | curl -sS -o /dev/null --max-time 20 -w '%{http_code}' \
		-X POST -H 'content-type: application/json' --data-binary @- "$URL/namespace/gw%24qbig/create?$q" 2>&1)")
	Q_FATES+=("long URI: $(curl -sS -o /dev/null --max-time 20 -w '%{http_code}' \
		"$URL/namespace/gw/list?$q&pad=$(printf 'p%.0s' {1..9000})" 2>&1)")
	Q_FATES+=("malformed: $( (exec 3<>"/dev/tcp/127.0.0.1/$HTTP_PORT" &&
		printf 'GET /v1/namespace/gw/list?%s HTTP/1.1 junk\r\nHost: 127.0.0.1\r\n\r\n' "$q" >&3 &&
		timeout 20 head -n 1 <&3) 2>&1 | tr -d '\r' || true)")
	Q_FATES+=("no key: $(curl -sS -o /dev/null --max-time 20 -w '%{http_code}' "$URL/namespace/gw/list?$q" 2>&1)")
	q_hold "$(printf 'GET /v1/namespace/gw/list?%s HTTP/1.1\r\nHost: 127.0.0.1\r\nx-slow: 1\r\n' "$q")"
	q_hold "$(printf 'POST /v1/namespace/gw%%24qslow/create?%s HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{' "$q")"
done
say "the answers: $(printf '%s; ' "${Q_FATES[@]}")"
check "no key in the headers, a key in the query string: 400, code 13, not taken" "400 13" \
	"$(curl -sS -o "$WORK/q.nokey" --max-time 20 -w '%{http_code}' "$URL/namespace/gw/list?${Q_QUERIES[0]}" 2>&1) $(sed -n 's/^{"code":\([0-9]*\),.*/\1/p' "$WORK/q.nokey")"
# the held connections end once the gateway cuts them off (15 s), each
# logged as a line (the cap only ends a hang)
wait "${Q_HELD[@]}" 2>/dev/null || true
for _ in $(seq 600); do (($(wc -l <"$LOG") >= BEFORE + 13)) && break; sleep 0.1; done
check "each of the 13 requests has its line in the access log" 13 "$(($(wc -l <"$LOG") - BEFORE))"
for _ in $(seq 100); do q_probe qprobe2; q_logged qprobe2 && break; sleep 0.1; done
for where in "$LOG" "$HTTP_PREFIX/error.log" "$PGDATA_DIR/server.log"; do
	if ! grep -qF -e "$Q_SECRET" -e "$Q_TOKEN" "$where"; then
		pass "no secret of the query strings in ${where##*/}"
	else
		fail "no secret of the query strings in ${where##*/}" "$(grep -F -e "$Q_SECRET" -e "$Q_TOKEN" "$where" | head -n 3)"
	fi
done
sql -U postgres -d "$DB" <<'SQL' >/dev/null
ALTER SYSTEM RESET log_min_duration_statement;
ALTER SYSTEM RESET log_parameter_max_length;
SELECT pg_reload_conf();
SQL
# what else is refused: a parameter named like a secret in any case, or
# percent-encoded letters, digits, '-' and '_' (which would spell one past
# the patterns); page_token, the spec's paging, and %24 pass
for q in "X-Api-Key=abc" "access_token=abc" "a=1&Client_Secret=abc" "password" "auth=x" "signature=x" \
	"x%2Dapi%2Dkey=abc" "%74oken=abc" "a=%6Cnk_x" "q=LNK_abc" "a=1;x-api-key=abc" "%256Cnk_x" "pwd=x"; do
	expect "a query string ?$q" 400 13 "$URL/namespace/gw/list?$q"
done
expect "a query string ?page_token=...&delimiter=%24 is served" 200 - -H "x-api-key: $KEY" \
	"$URL/namespace/gw/list?page_token=gw0&delimiter=%24"
# vend_credentials is the spec's, taken from the query string too
expect "a query string ?vend_credentials=false is served" 200 - -H "x-api-key: $KEY" -X POST \
	-H 'content-type: application/json' -d '{}' "$URL/namespace/gw/describe?vend_credentials=false"
# A key in the path (a client that put it where a name goes): refused the
# same way, and the access log shows no key's shape, whatever the path.
P_SECRET="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
expect "a path holding a key's shape" 400 13 "$URL/namespace/lnk_${Q_ID}_$P_SECRET/list"
for _ in $(seq 100); do grep -qF "lnk_****" "$LOG" && break; sleep 0.1; done
if ! grep -qF "$P_SECRET" "$LOG" "$HTTP_PREFIX/error.log"; then
	pass "no key of the path in access.log or error.log"
else
	fail "no key of the path in access.log or error.log" "$(grep -F "$P_SECRET" "$LOG" "$HTTP_PREFIX/error.log" | head -n 3)"
fi

# /metrics: Prometheus's text format, for an administrator's key alone (the
# database decides: GET /v1/stats is lance_stats(), an administrator's);
# parsed by prometheus_client's own parser.
sql -U postgres -d "$DB" -c "CREATE ROLE gw_reader" >/dev/null
READER_KEY="$(create_api_key gw_reader "${PSQL_ARGS[@]}")"
expect "GET /metrics without a key" 401 16 "$BASE/metrics"
expect "GET /metrics with a key that is not an administrator's" 403 15 -H "x-api-key: $READER_KEY" "$BASE/metrics"
expect "GET /metrics with an administrator's key" 200 - -H "x-api-key: $KEY" "$BASE/metrics"
# scrape: the samples, one a line: "<name> <label=value,...> <value>"
scrape() {
	curl -sS --max-time 20 -H "x-api-key: $KEY" "$BASE/metrics" >"$WORK/metrics.txt" || return 1
	/usr/bin/python3 - "$WORK/metrics.txt" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
with open(sys.argv[1]) as f:
    text = f.read()
for family in text_string_to_metric_families(text):
    for s in family.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        print(f"{family.type} {s.name} {labels or '-'} {s.value:g}")
PY
}
# sample <scrape> <name> <labels>: the value, 0 when absent
sample() { awk -v n="$2" -v l="$3" '$2 == n && $3 == l { v = $4 } END { print v + 0 }' <<<"$1"; }
if BEFORE="$(scrape)"; then pass "the scrape parses"; else fail "the scrape parses" "$(head -c 600 "$WORK/metrics.txt")"; fi
# three namespaces made (200), two refused without a key (401, code 16)
for i in 1 2 3; do
	curl -sS -o /dev/null --max-time 20 -X POST -H "x-api-key: $KEY" -H 'content-type: application/json' -d '{}' \
		"$URL/namespace/gw%24metered$i/create"
done
for i in 1 2; do
	curl -sS -o /dev/null --max-time 20 -X POST -H 'content-type: application/json' -d '{}' \
		"$URL/namespace/gw%24unmetered$i/create"
done
# counted in the log phase, after the answer: scrape until all five are in (the bound only guards against a hang)
for _ in $(seq 100); do
	AFTER="$(scrape)"
	(($(sample "$AFTER" lance_requests_total operation=CreateNamespace,status=401) - \
		$(sample "$BEFORE" lance_requests_total operation=CreateNamespace,status=401) >= 2)) && break
	sleep 0.1
done
delta() { echo $(($(sample "$AFTER" "$1" "$2") - $(sample "$BEFORE" "$1" "$2"))); }
check "lance_requests_total by operation and status: 3 CreateNamespace 200, 2 401" "3 2" \
	"$(delta lance_requests_total operation=CreateNamespace,status=200) $(delta lance_requests_total operation=CreateNamespace,status=401)"
check "lance_request_duration_seconds: a histogram, 5 more CreateNamespace in +Inf and _count" "histogram 5 5" \
	"$(awk '$2 == "lance_request_duration_seconds_count" { print $1; exit }' <<<"$AFTER") $(delta lance_request_duration_seconds_bucket le=+Inf,operation=CreateNamespace) $(delta lance_request_duration_seconds_count operation=CreateNamespace)"
check "each of the 5 counted once, in a bucket as long as it took: le=30 and le=+Inf both 5 more" "5 5" \
	"$(delta lance_request_duration_seconds_bucket le=30,operation=CreateNamespace) $(delta lance_request_duration_seconds_bucket le=+Inf,operation=CreateNamespace)"
check "its buckets never decrease with le" "" \
	"$(awk '$2 == "lance_request_duration_seconds_bucket" { split($3, a, ","); sub(/^le=/, "", a[1]); v = ($4 + 0);
		if (a[2] in last && v < last[a[2]]) print "decreases: " $0; last[a[2]] = v }' <<<"$AFTER")"
check "lance_errors_total by Lance code: 2 more code 16" 2 "$(delta lance_errors_total code=16)"
check "the database connections' gauges are there" "gauge gauge" \
	"$(awk '$2 == "lance_db_connections_in_use" && $3 == "pool=primary" { a = $1 } $2 == "lance_db_connections_waiting" && $3 == "pool=primary" { b = $1 } END { print a, b }' <<<"$AFTER")"
if ! grep -qF -e "${KEY:17}" -e "${READER_KEY:17}" "$WORK/metrics.txt"; then
	pass "no key in the metrics"
else
	fail "no key in the metrics"
fi

# A role with a request limit (lance_set_role_limits: 1 a second, bursts of
# 2): of 12 requests sent at once (one curl, one connection), most are 429
# with code 21 and Retry-After, counted as "rate"; another role's key is
# not held back.  Counted, not timed: 12 requests in a row on one
# connection take well under the 4 s that would let 4 more through.
sql -U postgres -d "$DB" >/dev/null <<'SQL'
CREATE ROLE gw_limited;
SELECT lance_grant('{"id": ["gw"], "role": "gw_limited", "privilege": "read"}');
SELECT lance_set_role_limits('{"role": "gw_limited", "requests_per_second": 1, "burst": 2}');
SQL
LIMITED_KEY="$(create_api_key gw_limited "${PSQL_ARGS[@]}")"
BEFORE="$(scrape)"
limited_urls=()
for i in $(seq 12); do limited_urls+=(-o "$WORK/limited$i" "$URL/namespace/gw/list"); done
statuses="$(curl -sS --max-time 60 -w '%{http_code} %header{retry-after}\n' \
	-H "x-api-key: $LIMITED_KEY" "${limited_urls[@]}" 2>&1 || true)"
refused="$(grep -c '^429 1$' <<<"$statuses" || true)"
if ((refused >= 7 && refused <= 10)) && [[ "$(grep -c '^200 $' <<<"$statuses" || true)" == $((12 - refused)) ]]; then
	pass "a role limited to 1 a second, bursts of 2: $refused of 12 rapid requests 429 with Retry-After: 1, the rest 200"
else
	fail "a role limited to 1 a second, bursts of 2: most of 12 rapid requests 429 with Retry-After, the rest 200" "$statuses"
fi
first_refused="$(awk '$1 == 429 { print NR; exit }' <<<"$statuses")"
check "a refused one's body: code 21, naming the limit" \
	'{"code":21,"error":"role \"gw_limited\" is over its limit of 1 requests a second (bursts of 2)","detail":"Wait 1 s and try again, or ask an administrator to raise the limit (lance_set_role_limits)."}' \
	"$(cat "$WORK/limited${first_refused:-none}" 2>&1)"
expect "another role's key meanwhile" 200 - -H "x-api-key: $READER_KEY" "$URL/namespace/%24/list"
for _ in $(seq 100); do
	AFTER="$(scrape)"
	(($(delta lance_throttled_total reason=rate) >= refused)) && break
	sleep 0.1
done
check "lance_throttled_total{reason=\"rate\"} counts them" "$refused" "$(delta lance_throttled_total reason=rate)"
sql -U postgres -d "$DB" -c "SELECT lance_set_role_limits('{\"role\": \"gw_limited\", \"requests_per_second\": null}')" >/dev/null
expect "the limit removed: the role's key is served" 200 - -H "x-api-key: $LIMITED_KEY" "$URL/namespace/gw/list"

# Tables in the way: a table an administrator registered at namespace gw's
# folder is around every folder the catalog chooses there.  A writer's
# DeclareTable through the gateway is 400, code 13, saying what to do and
# naming no other table; the server log names the table in the way (the
# administrator's to move).
sql -U postgres -d "$DB" >/dev/null <<SQL
CREATE ROLE gw_writer;
SELECT lance_grant('{"id": ["gw"], "role": "gw_writer", "privilege": "write"}');
SELECT lance_register_table('{"id": ["gw", "in_the_way"], "location": "$TABLES/gw"}');
SQL
WRITER_KEY="$(create_api_key gw_writer "${PSQL_ARGS[@]}")"
answer="$(curl_status -X POST -H "x-api-key: $WRITER_KEY" -H 'content-type: application/json' -d '{}' \
	"$URL/table/gw%24blocked/declare")"
if [[ "$answer" == "400 {\"code\":13,"*"ask an administrator to move the table in the way"* && "$answer" != *in_the_way* ]]; then
	pass "a writer's DeclareTable in the way of a table: 400, code 13, saying what to do, naming no table"
else
	fail "a writer's DeclareTable in the way of a table: 400, code 13, saying what to do, naming no table" "$answer"
fi
for _ in $(seq 100); do
	grep -F 'lance_namespace: table "gw$in_the_way" is in the way of table "gw$blocked"' "$PGDATA_DIR/server.log" >/dev/null && break
	sleep 0.1
done
if grep -F 'lance_namespace: table "gw$in_the_way" is in the way of table "gw$blocked"' "$PGDATA_DIR/server.log" >/dev/null; then
	pass "the server log names the table in the way"
else
	fail "the server log names the table in the way" "$(tail -n 5 "$PGDATA_DIR/server.log")"
fi
sql -U postgres -d "$DB" -c "SELECT lance_deregister_table('{\"id\": [\"gw\", \"in_the_way\"]}')" >/dev/null

# /metrics when the database cannot answer: a key the database authorized
# for it a moment ago still reads the metrics (for 60 s), one it never
# authorized or refused since (revoked) is 503, none at all 401 at once.
NEVER_KEY="$(create_api_key lance_admin "${PSQL_ARGS[@]}")"
REVOKED_KEY="$(create_api_key lance_admin "${PSQL_ARGS[@]}")"
expect "GET /metrics with a key about to be revoked" 200 - -H "x-api-key: $REVOKED_KEY" "$BASE/metrics"
sql -U postgres -d "$DB" -v id="${REVOKED_KEY:0:16}" <<<"SELECT lance_revoke_api_key(:'id');" >/dev/null
expect "GET /metrics with that key once revoked" 401 16 -H "x-api-key: $REVOKED_KEY" "$BASE/metrics"
# The authorization kept serves only while the database gives no answer:
# an error it answers (a header that is not valid UTF-8: 22021) is the
# answer, even for a key authorized a moment ago and revoked since.
BADBYTE_KEY="$(create_api_key lance_admin "${PSQL_ARGS[@]}")"
expect "GET /metrics with another key about to be revoked" 200 - -H "x-api-key: $BADBYTE_KEY" "$BASE/metrics"
sql -U postgres -d "$DB" -v id="${BADBYTE_KEY:0:16}" <<<"SELECT lance_revoke_api_key(:'id');" >/dev/null
expect "GET /metrics with that key once revoked and a header not valid UTF-8: the database's error, not the authorization kept" \
	400 13 -H "x-api-key: $BADBYTE_KEY" -H $'x-junk: \xff' "$BASE/metrics"
expect "GET /metrics with an administrator's key, just before the database stops" 200 - \
	-H "x-api-key: $KEY" "$BASE/metrics"

# the database down: not ready, still alive; ready again once it is back
stop_clusters "$PGDATA_DIR"
expect "GET /metrics without a key, the database stopped" 401 16 "$BASE/metrics"
if AFTER="$(scrape)" && [[ "$(awk '$2 == "lance_db_connections_in_use" && $3 == "pool=primary" { print $1 }' <<<"$AFTER")" == gauge ]]
then
	pass "GET /metrics with the key authorized a moment ago, the database stopped: 200, and it parses"
else
	fail "GET /metrics with the key authorized a moment ago, the database stopped: 200, and it parses" \
		"$(head -c 600 "$WORK/metrics.txt")"
fi
expect "the same key as a bearer token" 200 - -H "Authorization: Bearer $KEY" -H 'x-request-id: metrics-down' \
	"$BASE/metrics"
for _ in $(seq 600); do grep -q '"request_id":"metrics-down"' "$HTTP_PREFIX/access.log" && break; sleep 0.1; done
check "its access log line names the key the database authorized" "200 $KEY_ID" \
	"$(grep '"request_id":"metrics-down"' "$HTTP_PREFIX/access.log" | jq -r '"\(.status) \(.key_id)"')"
expect "GET /metrics with an administrator's key it never authorized, the database stopped" 503 17 \
	-H "x-api-key: $NEVER_KEY" "$BASE/metrics"
expect "GET /metrics with the key it refused once revoked, the database stopped" 503 17 \
	-H "x-api-key: $REVOKED_KEY" "$BASE/metrics"
# a request the gateway would answer 503, whose error.log line (the Lua
# code's, with the request line) would quote its query: refused first
expect "a secret in the query string, the database stopped: 400, code 13" 400 13 -H "x-api-key: $KEY" \
	"$URL/namespace/gw/list?token=$Q_TOKEN"
if ! grep -qF "$Q_TOKEN" "$HTTP_PREFIX/error.log"; then
	pass "and error.log does not quote it"
else
	fail "and error.log does not quote it" "$(grep -F "$Q_TOKEN" "$HTTP_PREFIX/error.log" | head -n 3)"
fi
expect "GET /readyz with the database stopped" 503 - "$BASE/readyz"
check "its body names no host, role or error text" \
	'{"status":"not ready","reason":"the catalog database cannot be reached"}' "$(curl -sS --max-time 20 "$BASE/readyz")"
expect "GET /healthz with the database stopped" 200 - "$BASE/healthz"
# a request then: 503/17 naming the case and the request's id, never what
# libpq said (hosts, sockets, roles); the error log has that
answer="$(curl -sS --max-time 40 -H "x-api-key: $KEY" -H 'x-request-id: down-1' "$URL/namespace/gw/list")"
check "a request with the database stopped: 503's text names the case and the request, nothing of the connection" \
	'{"code":17,"error":"the catalog database is unavailable (request down-1; the gateway'"'"'s error.log has more)"}' "$answer"
# (libpq's message spans lines: the log is read as one)
if tr '\n' ' ' <"$HTTP_PREFIX/error.log" | grep -E "unavailable: [^[]*${SOCK//./\\.}/[^[]*\(request down-1\)" >/dev/null; then
	pass "the error log has what went wrong, with the request's id"
else
	fail "the error log has what went wrong, with the request's id" "$(tail -n 3 "$HTTP_PREFIX/error.log")"
fi
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
expect "GET /readyz once the database is back" 200 - "$BASE/readyz"

# ---------------------------------------------------------------------------
# schema: the extension made anew in another schema
# ---------------------------------------------------------------------------
say "the extension dropped and made anew in another schema"
# One transaction drops the extension, makes it in schema ln_moved and plants
# a lance_rest in its old schema (public), where each worker still looks for
# it: each call checks, before the function runs, that the extension is in
# the schema it names (the GUARD of gateway/lance_replicas.lua), so the
# planted function never answers (its 298), not even the first request.
# moved_status: the status of a request without a key (401 from the extension)
moved_status() { curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$URL/namespace/gw/list" 2>/dev/null || true; }
sql -U postgres -d "$DB" <<'SQL' >/dev/null
BEGIN;
SET LOCAL lance_namespace.allow_drop_extension = on;
DROP EXTENSION lance_namespace CASCADE;
CREATE SCHEMA ln_moved;
GRANT USAGE ON SCHEMA ln_moved TO PUBLIC;
CREATE EXTENSION lance_namespace SCHEMA ln_moved;
CREATE FUNCTION public.lance_rest(method text, path text, query text, body text, headers jsonb,
    OUT status integer, OUT response_headers jsonb, OUT response_body text, OUT key_id text)
    LANGUAGE sql AS $$ SELECT 298, '{"content-type": "application/json"}'::jsonb, '{"planted": true}', NULL::text $$;
COMMIT;
SQL
check "the function planted in the old schema never answers: the extension's 401 in ln_moved, from the first request on" \
	"401 401 401 401 401 401 401 401 401 401" "$(for _ in $(seq 10); do moved_status; echo; done | tr '\n' ' ' | sed 's/ $//')"
# A schema whose name holds "$" is refused (the query texts sent through a
# pooler would take "$1" in it for a parameter): 503 with code 17, and the
# error log says why.
sql -U postgres -d "$DB" <<'SQL' >/dev/null
BEGIN;
SET LOCAL lance_namespace.allow_drop_extension = on;
DROP EXTENSION lance_namespace CASCADE;
CREATE SCHEMA "ln$1";
GRANT USAGE ON SCHEMA "ln$1" TO PUBLIC;
CREATE EXTENSION lance_namespace SCHEMA "ln$1";
COMMIT;
SQL
for _ in $(seq 150); do [[ "$(moved_status)" == 503 ]] && break; sleep 0.1; done
expect "the extension in a schema whose name holds \"\$\": 503" 503 17 "$URL/namespace/gw/list"
if grep -qF 'whose name holds a "$": the gateway does not call it' "$HTTP_PREFIX/error.log"; then
	pass "the error log says why"
else
	fail "the error log says why" "$(tail -n 3 "$HTTP_PREFIX/error.log")"
fi

printf 'lance_namespace: gateway test: %d checks, %d failed\n' "$CHECKS" "$FAILS"
((FAILS == 0))
