# shellcheck shell=bash
# shellcheck disable=SC2153 # PORT is run.sh's
# Sourced by test/serving/run.sh.  The gateway through PgBouncer (Debian's)
# in transaction pooling mode: each transaction may run on another server
# connection, and the gateway's 8 connections share 2 of the server's.  The
# requests of a client session (create a namespace, declare a table, create
# its versions, list, describe) answer as without the pooler, and so do 40
# concurrent reads; a statement_timeout the gateway sets for one request
# stays in its transaction (no server connection keeps it).
# shellcheck source=test/serving/replication.sh
source "$SERVING_DIR/replication.sh"

B80_DIR="$WORK/pgbouncer80"
B80_PORT="$(find_free_port 6500)"
repl_bouncer "$B80_DIR" "$B80_PORT" "$SOCK" "$PORT" "$DB" lance_gateway postgres
# b80 <method> <path> [body]: "<status> <body>" of one request with KEY.
b80() {
	local method="$1" path="$2" body="${3:-}" args out
	args=(-sS --max-time 30 -w '\n%{http_code}' -X "$method" -H "x-api-key: $KEY")
	[[ -n "$body" ]] && args+=(-H 'content-type: application/json' --data-binary "$body")
	out="$(curl "${args[@]}" "$GW$path" 2>&1)" || out=$'curl failed\n000'
	printf '%s %s' "${out##*$'\n'}" "${out%$'\n'*}"
}
# b80_check <label> <status> <body substring> <method> <path> [body]
b80_check() {
	local label="$1" status="$2" want="$3" answer
	shift 3
	answer="$(b80 "$@")"
	if [[ "$answer" == "$status "* && "$answer" == *"$want"* ]]; then
		pass "through PgBouncer ($b80_via): $label"
	else
		fail "through PgBouncer ($b80_via): $label (expected $status with $want)" "$answer"
	fi
}

# Twice: over PgBouncer's TCP port (the gateway's calls go through libpq
# in threads) and over its Unix socket (the workers speak to it themselves,
# gateway/lance_db_wire.lua); either finds out the pooler keeps no
# prepared statement and says so once in its error.log.
b80_version="$(pgbouncer --version 2>/dev/null | head -n 1)"
b80_keeps_prepared=0
if [[ "$b80_version" =~ ([0-9]+)\.([0-9]+) ]] &&
	((BASH_REMATCH[1] > 1 || (BASH_REMATCH[1] == 1 && BASH_REMATCH[2] >= 21))); then
	b80_keeps_prepared=1
fi
for b80_via in tcp unix; do
	if [[ "$b80_via" == tcp ]]; then
		b80_url="postgresql://lance_gateway@127.0.0.1:$B80_PORT/$DB"
	else
		b80_url="postgresql:///$DB?host=$B80_DIR&port=$B80_PORT&user=lance_gateway"
	fi
	b80_ns="pgb_$b80_via"
	gw_up "pgbouncer-$b80_via" LN_DATABASE_URL="$b80_url" LN_GATEWAY_CONNECTIONS=8 || break
	b80_check "CreateNamespace" 200 '"properties"' POST "/v1/namespace/ns%24$b80_ns/create" '{"properties": {"via": "pgbouncer"}}'
	b80_check "DeclareTable" 200 "\"location\":\"s3://serving/$b80_ns.lance\"" POST "/v1/table/ns%24$b80_ns%24t/declare" \
		"{\"location\": \"s3://serving/$b80_ns.lance\"}"
	for v in 1 2 3; do
		b80_check "CreateTableVersion $v" 200 "\"version\":$v" POST "/v1/table/ns%24$b80_ns%24t/version/create" \
			"{\"version\": $v, \"manifest_path\": \"serving/$b80_ns.lance/_versions/$v.manifest\"}"
	done
	b80_check "ListNamespaces" 200 "\"$b80_ns\"" GET /v1/namespace/ns/list
	b80_check "ListTables" 200 '"t"' GET "/v1/namespace/ns%24$b80_ns/table/list"
	b80_check "DescribeNamespace" 200 '"via":"pgbouncer"' POST "/v1/namespace/ns%24$b80_ns/describe"
	b80_check "DescribeTable" 200 "\"location\":\"s3://serving/$b80_ns.lance\"" POST "/v1/table/ns%24$b80_ns%24t/describe"
	b80_check "DescribeTableVersion: the latest" 200 '"version":3' POST "/v1/table/ns%24$b80_ns%24t/version/describe"
	b80_check "ListTableVersions" 200 '"version":2' POST "/v1/table/ns%24$b80_ns%24t/version/list"
	b80_check "a duplicate CreateNamespace is 409" 409 '"code":2' POST "/v1/namespace/ns%24$b80_ns/create" '{}'

	b80_out="$WORK/pgbouncer80.out"
	: >"$b80_out"
	b80_pids=()
	for i in $(seq 40); do
		{ b80 POST "/v1/table/ns%24$b80_ns%24t/describe" | cut -d' ' -f1 >>"$b80_out"; } &
		b80_pids+=($!)
	done
	for pid in "${b80_pids[@]}"; do wait "$pid" || true; done
	check "through PgBouncer ($b80_via): 40 concurrent DescribeTable all answer 200" "40" "$(grep -c '^200$' "$b80_out")"

	# The pooler really pooled: PgBouncer's server connections for the gateway
	# (its admin console, SHOW SERVERS) are at most its pool of 2, whatever the
	# gateway holds.
	b80_servers="$("$PG_BIN/psql" -X -q -At -F ' ' -h 127.0.0.1 -p "$B80_PORT" -U postgres -d pgbouncer -c 'SHOW SERVERS' |
		awk -v db="$DB" '$2 == "lance_gateway" && $3 == db' | wc -l)"
	if ((b80_servers >= 1 && b80_servers <= 2)); then
		pass "($b80_via) the gateway's requests ran on PgBouncer's pool ($b80_servers server connections)"
	else
		fail "($b80_via) the gateway's requests ran on PgBouncer's pool (1 or 2 server connections)" "got $b80_servers"
	fi
	# The request's statement_timeout was its transaction's (set_config local):
	# a later transaction on the same server connections has the default.
	check "($b80_via) no statement_timeout left on the pooled server connections" 0 \
		"$("$PG_BIN/psql" -X -q -At -h 127.0.0.1 -p "$B80_PORT" -U lance_gateway -d "$DB" -c 'SHOW statement_timeout')"
	# (PgBouncer 1.21 and later keep them by default: nothing to find there)
	if ((b80_keeps_prepared)); then
		pass "through PgBouncer ($b80_via): $b80_version keeps prepared statements itself"
	elif grep -q 'does not keep prepared statements' "$GW_PREFIX/error.log"; then
		pass "through PgBouncer ($b80_via): the gateway found it keeps no prepared statement"
	else
		fail "through PgBouncer ($b80_via): the gateway found it keeps no prepared statement" \
			"$(tail -n 5 "$GW_PREFIX/error.log")"
	fi
	if [[ "$b80_via" == unix ]]; then
		b80_libpq=no
		grep -q 'is reached through libpq' "$GW_PREFIX/error.log" && b80_libpq=yes
		check "through PgBouncer (unix): the workers spoke to it themselves, libpq was not needed" no "$b80_libpq"
	fi
	gw_down
done
repl_cleanup
