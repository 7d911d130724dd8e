# shellcheck shell=bash
# shellcheck disable=SC2153 # PORT is run.sh's
# Sourced by test/serving/run.sh.  Reads on a hot standby, with
# read-your-writes (LN_DATABASE_READ_URL, LN_READ_MAX_LAG).  The test
# cluster is the primary; a streaming standby of it has its replay paused,
# so that what a request sees tells where it ran: a namespace made after the
# pause exists on the primary and not (yet) on the standby.
#
#   routing   a read by a key that wrote nothing goes to the standby (404 for
#             the new namespace), for each kind of read route (GET and POST,
#             namespaces, tables, versions, transactions); writes go to the
#             primary (200, where a standby would answer 503)
#   ryw       the key that just made the namespace reads it (200: its read
#             went to the primary, the standby has not replayed its write);
#             once the standby has replayed past its write, its reads go to
#             the standby again; a change without a key whose header names
#             another key's id (where lance_rest reads no key) is remembered
#             for requests without a key, not for that id; a change the
#             database refuses with an error is not remembered for the key
#             id its header names
#   lag       a gateway with LN_READ_MAX_LAG=1 skips the paused standby once
#             it lags more than 1 s (the same read turns 200), and a standby
#             cut off from its primary once the primary has moved on
#   down      with the standby stopped, reads still succeed; with the
#             primary stopped before a gateway's first request, its reads
#             are served by the standby (the schema looked up there)
# shellcheck source=test/serving/replication.sh
source "$SERVING_DIR/replication.sh"

R60_STANDBY="$WORK/standby60"
R60_PORT="$(find_free_port $((PORT + 10)))"
CLUSTERS+=("$R60_STANDBY")
repl_standby "$SOCK" "$PORT" "$R60_STANDBY" "$R60_PORT" "$SOCK" serving_s60
repl_wait_streaming "$SOCK" "$PORT" serving_s60
R60_READ_URL="postgresql:///$DB?host=$SOCK&port=$R60_PORT&user=lance_gateway"
# a second key, that writes nothing through the gateway
R60_OTHER="$(create_api_key lance_admin -h "$SOCK" -p "$PORT" -U postgres -d "$DB")"
# and 5 more, each for one change
R60_KEYS=()
for i in 1 2 3 4 5; do R60_KEYS+=("$(create_api_key lance_admin -h "$SOCK" -p "$PORT" -U postgres -d "$DB")"); done
repl_wait_replay "$SOCK" "$PORT" "$SOCK" "$R60_PORT"

# r60 <key> <method> <path> [body]: the status of one request through GW.
r60() {
	local key="$1" method="$2" path="$3" body="${4:-}" args
	args=(-sS --max-time 30 -o /dev/null -w '%{http_code}' -X "$method" -H "x-api-key: $key")
	[[ -n "$body" ]] && args+=(-H 'content-type: application/json' --data-binary "$body")
	curl "${args[@]}" "$GW$path" 2>/dev/null || printf '000'
}
# r60_describe <key> <namespace under ns>: DescribeNamespace's status.
r60_describe() { r60 "$1" POST "/v1/namespace/ns%24$2/describe"; }

# The primary down before a gateway's first request: its workers learn the
# extension's schema from the standby, and reads are served there (the
# first may come before a check has found the standby up: a bounded number
# of tries, 0.1 s apart, as wait_for's elsewhere: the checks come every
# 0.5 s, the margin is for a loaded machine).
repl_stop "$PGDATA_DIR" fast
gw_up primary_down LN_DATABASE_READ_URL="$R60_READ_URL" LN_READ_MAX_LAG=60 || return 0
for _ in $(seq 300); do [[ "$(r60 "$R60_OTHER" GET /v1/namespace/ns/list)" == 200 ]] && break; sleep 0.1; done
check "the primary down from the gateway's start: reads are served by the standby, 5 in a row" \
	"200 200 200 200 200" "$(for _ in 1 2 3 4 5; do r60 "$R60_OTHER" GET /v1/namespace/ns/list; echo; done | tr '\n' ' ' | sed 's/ $//')"
gw_down
repl_start "$PGDATA_DIR" "$PORT" "$SOCK"
repl_wait_streaming "$SOCK" "$PORT" serving_s60

gw_up reads LN_DATABASE_READ_URL="$R60_READ_URL" LN_READ_MAX_LAG=60 || return 0
R60_GW="$GW" R60_GW_PREFIX="$GW_PREFIX"

# With replay paused, a namespace made on the primary (through SQL: no key
# wrote it) is on the primary alone.  Each worker checks the standby every
# 0.5 s: the read of the other key turns 404 once the gateway sends reads
# there (bounded wait for the first check; until then reads go to the
# primary, which answers 200).
repl_pause "$SOCK" "$R60_PORT"
sql -c "SELECT lance_create_namespace('{\"id\": [\"ns\", \"r60probe\"]}') IS NOT NULL" >/dev/null
if wait_for 100 answers 404 r60_describe "$R60_OTHER" r60probe; then
	pass "a read goes to the standby: a namespace the standby has not replayed is 404 through the gateway"
else
	fail "a read goes to the standby: a namespace the standby has not replayed is 404 through the gateway" \
		"DescribeNamespace answers $(r60_describe "$R60_OTHER" r60probe) (200: it ran on the primary)"
fi

# Every kind of read route goes to the standby: a namespace and a table the
# standby has not replayed are missing there (404), or absent from a listing,
# while each request succeeds on the primary (checked there through SQL).
# GET routes are also sent as POST, which lance_rest takes on every route.
sql >/dev/null <<'SQL'
SELECT lance_create_namespace('{"id": ["ns", "r60n"]}');
SELECT lance_register_table('{"id": ["ns", "r60n", "t"], "location": "s3://serving/r60n_t.lance"}');
SELECT lance_create_table_version('{"id": ["ns", "r60n", "t"], "version": 1, "manifest_path": "serving/r60n_t.lance/_versions/1.manifest"}');
SQL
R60_TX="$(sql -c "SELECT transaction_id FROM lance_catalog.change WHERE 'ns\$r60n\$t' = ANY (objects) ORDER BY seq DESC LIMIT 1")"
r60_routes=(
	"GET /v1/namespace/ns%24r60n/list" "POST /v1/namespace/ns%24r60n/list" "POST /v1/namespace/ns%24r60n/describe"
	"POST /v1/namespace/ns%24r60n/exists" "GET /v1/namespace/ns%24r60n/table/list"
	"POST /v1/namespace/ns%24r60n/table/list" "POST /v1/table/ns%24r60n%24t/describe"
	"POST /v1/table/ns%24r60n%24t/exists" "POST /v1/table/ns%24r60n%24t/version/list"
	"POST /v1/table/ns%24r60n%24t/version/describe" "POST /v1/transaction/$R60_TX/describe"
)
r60_wrong=()
for r in "${r60_routes[@]}"; do
	primary_status="$(sql -c "SELECT status FROM lance_rest('${r%% *}', '${r#* }', NULL, NULL, jsonb_build_object('x-api-key', '$R60_OTHER'))")"
	standby_status="$(r60 "$R60_OTHER" "${r%% *}" "${r#* }")"
	[[ "$primary_status" == 20[04] && "$standby_status" == 404 ]] ||
		r60_wrong+=("$r: $primary_status on the primary, $standby_status through the gateway")
done
r60_all="$(curl -sS --max-time 30 -H "x-api-key: $R60_OTHER" "$GW/v1/table?delimiter=." 2>&1)"
r60_all_primary="$(sql -c "SELECT response_body FROM lance_rest('GET', '/v1/table', 'delimiter=.', NULL, jsonb_build_object('x-api-key', '$R60_OTHER'))")"
[[ "$r60_all_primary" == *"r60n"* && "$r60_all" == *'"tables"'* && "$r60_all" != *"r60n"* ]] ||
	r60_wrong+=("GET /v1/table lists on the primary: $r60_all_primary; through the gateway: $r60_all")
pass_if_none "each read route (${#r60_routes[@]} and ListAllTables) goes to the standby" "${r60_wrong[@]}"

check "a write goes to the primary: CreateNamespace through the gateway" 200 \
	"$(r60 "$KEY" POST /v1/namespace/ns%24r60a/create '{}')"
check "read-your-writes: the key that made it reads it at once (on the primary)" 200 "$(r60_describe "$KEY" r60a)"
r60_list="$(curl -sS --max-time 30 -H "x-api-key: $KEY" "$GW/v1/namespace/ns/list" 2>&1)"
if [[ "$r60_list" == *'"r60a"'* ]]; then
	pass "read-your-writes: and lists it"
else
	fail "read-your-writes: and lists it" "$r60_list"
fi
# Each worker keeps its own entries of the keys' changes and reads every
# worker's: 5 keys (made before the pause: the standby knows them) each make
# a namespace and read it, each request on a connection of its own, which
# either worker may take (the kernel decides): the read finds the change
# whichever worker took it.
r60_ryw=()
for i in "${!R60_KEYS[@]}"; do
	status="$(r60 "${R60_KEYS[$i]}" POST "/v1/namespace/ns%24r60k$i/create" '{}') $(r60_describe "${R60_KEYS[$i]}" "r60k$i")"
	[[ "$status" == "200 200" ]] || r60_ryw+=("key $i: $status")
done
pass_if_none "read-your-writes: 5 more keys each read the namespace they just made" "${r60_ryw[@]}"
check "another key's read of one still goes to the standby (not replayed: 404)" 404 "$(r60_describe "$R60_OTHER" r60k0)"
check "another key's read of it still goes to the standby (not replayed: 404)" 404 "$(r60_describe "$R60_OTHER" r60a)"
# A change the database refuses with an error (a header that is not valid
# UTF-8: 22021, answered 400) changed nothing: the key id its header names
# (anybody can make one up) is not remembered, and that key's reads still
# go to the standby.
check "a change refused by the database (a header not valid UTF-8), naming another key's id: 400" 400 \
	"$(curl -sS --max-time 30 -o /dev/null -w '%{http_code}' -X POST -H "x-api-key: ${R60_OTHER:0:16}_x" \
		-H $'x-junk: \xff' -H 'content-type: application/json' -d '{}' "$GW/v1/namespace/ns%24r60u/create" 2>/dev/null)"
check "the key it named still reads on the standby (not replayed: 404)" 404 "$(r60_describe "$R60_OTHER" r60a)"
check "the standby has not replayed it" 0 \
	"$(repl_psql "$SOCK" "$R60_PORT" -d "$DB" -c "SELECT count(*) FROM lance_catalog.object WHERE name = 'r60a'")"

# LN_READ_MAX_LAG: the paused standby has received WAL it has not replayed,
# so its lag grows with the age of the last commit it replayed.  A gateway
# that allows 1 s sends the other key's read to the primary once it is past
# (a bounded number of tries, 0.1 s apart); the first gateway, which allows
# 60 s, still sends it to the standby.
gw_up lag LN_DATABASE_READ_URL="$R60_READ_URL" LN_READ_MAX_LAG=1 || return 0
if wait_for 100 answers 200 r60_describe "$R60_OTHER" r60a; then
	pass "LN_READ_MAX_LAG=1: the standby lagging past it is skipped (the read runs on the primary)"
else
	fail "LN_READ_MAX_LAG=1: the standby lagging past it is skipped (the read runs on the primary)" \
		"DescribeNamespace still answers $(r60_describe "$R60_OTHER" r60a)"
fi
gw_down
GW="$R60_GW" GW_PREFIX="$R60_GW_PREFIX"
check "LN_READ_MAX_LAG=60: the same read still goes to the standby" 404 "$(r60_describe "$R60_OTHER" r60a)"

# Once the standby has replayed past the key's write, the key's reads go to
# the standby again: pause once more, make a namespace through SQL, and the
# key that wrote before reads 404 (the standby's state).
repl_resume "$SOCK" "$R60_PORT"
repl_wait_replay "$SOCK" "$PORT" "$SOCK" "$R60_PORT"
repl_pause "$SOCK" "$R60_PORT"
sql -c "SELECT lance_create_namespace('{\"id\": [\"ns\", \"r60b\"]}') IS NOT NULL" >/dev/null
if wait_for 100 answers 404 r60_describe "$KEY" r60b; then
	pass "read-your-writes: once the standby has replayed past the key's write, its reads go there again"
else
	fail "read-your-writes: once the standby has replayed past the key's write, its reads go there again" \
		"DescribeNamespace answers $(r60_describe "$KEY" r60b)"
fi
check "and the write is there: the key reads its namespace on the standby" 200 "$(r60_describe "$KEY" r60a)"

# Read-your-writes remembers the key the database authenticated, never an id
# merely sent: a change made without a key (lance_namespace.anonymous_role)
# whose Authorization header names another key's id where lance_rest reads
# no key ("Bearer" and a tab) is remembered for requests without a key, and
# that key's reads still go to the standby.  (An id anybody can make up
# must not take the dict's room, nor send a real key's reads elsewhere.)
# The gateway samples the primary's WAL position before the standby is
# paused past it (it checks the standby once it has taken a sample): one
# without a sample that the paused standby has replayed finds it lagging
# past any bound.
repl_resume "$SOCK" "$R60_PORT"
sql -c "ALTER DATABASE $DB SET lance_namespace.anonymous_role = 'lance_admin'" >/dev/null
r60_since="$(repl_psql "$SOCK" "$R60_PORT" -d postgres -c "SELECT pg_catalog.now()")"
gw_up anonymous LN_DATABASE_READ_URL="$R60_READ_URL" LN_READ_MAX_LAG=60 || return 0
wait_for 100 answers t repl_psql "$SOCK" "$R60_PORT" -d postgres -c "SELECT count(*) > 0 FROM pg_stat_activity
	WHERE usename = 'lance_gateway' AND backend_start > '$r60_since'" ||
	fail "the gateway of anonymous changes checks the standby"
repl_wait_replay "$SOCK" "$PORT" "$SOCK" "$R60_PORT"
repl_pause "$SOCK" "$R60_PORT"
sql -c "SELECT lance_create_namespace('{\"id\": [\"ns\", \"r60f\"]}') IS NOT NULL" >/dev/null
wait_for 100 answers 404 r60_describe "$R60_OTHER" r60f ||
	fail "the gateway of anonymous changes reads on the standby" "$(r60_describe "$R60_OTHER" r60f)"
check "a change without a key, its Authorization naming another key's id after \"Bearer\" and a tab: 200" 200 \
	"$(curl -sS --max-time 30 -o /dev/null -w '%{http_code}' -X POST -H $'Authorization: Bearer\t'"${R60_OTHER:0:16}_junk" \
		-H 'content-type: application/json' -d '{}' "$GW/v1/namespace/ns%24r60e/create" 2>/dev/null)"
check "the key it named still reads on the standby (404: not replayed)" 404 "$(r60_describe "$R60_OTHER" r60f)"
check "a request without a key reads the change made without a key (on the primary)" 200 \
	"$(curl -sS --max-time 30 -o /dev/null -w '%{http_code}' -X POST "$GW/v1/namespace/ns%24r60e/describe" 2>/dev/null)"
sql -c "ALTER DATABASE $DB RESET lance_namespace.anonymous_role" >/dev/null
gw_down
GW="$R60_GW" GW_PREFIX="$R60_GW_PREFIX"

# A standby cut off from its primary (no primary_conninfo) has replayed all
# it received, so its own figure says no lag while the primary moves on: the
# gateway measures the lag against the primary's WAL too.  With
# LN_READ_MAX_LAG=1 it skips that standby once the primary has written
# something the standby lacks; with 60 it still reads there.
repl_resume "$SOCK" "$R60_PORT"
repl_wait_replay "$SOCK" "$PORT" "$SOCK" "$R60_PORT"
repl_psql "$SOCK" "$R60_PORT" -d postgres >/dev/null <<'SQL'
ALTER SYSTEM SET primary_conninfo = '';
SELECT pg_catalog.pg_reload_conf();
SQL
wait_for 300 answers 0 sql -c "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'serving_s60'" ||
	fail "the standby stops streaming when its primary_conninfo is emptied"
sql -c "SELECT lance_create_namespace('{\"id\": [\"ns\", \"r60d\"]}') IS NOT NULL" >/dev/null
gw_up lag2 LN_DATABASE_READ_URL="$R60_READ_URL" LN_READ_MAX_LAG=1 || return 0
if wait_for 100 answers 200 r60_describe "$R60_OTHER" r60d; then
	pass "LN_READ_MAX_LAG=1: a standby cut off from its primary is skipped once the primary moved on"
else
	fail "LN_READ_MAX_LAG=1: a standby cut off from its primary is skipped once the primary moved on" \
		"DescribeNamespace still answers $(r60_describe "$R60_OTHER" r60d)"
fi
gw_down
GW="$R60_GW" GW_PREFIX="$R60_GW_PREFIX"
check "LN_READ_MAX_LAG=60: the cut-off standby still serves reads" 404 "$(r60_describe "$R60_OTHER" r60d)"

# The standby stops: reads go to the primary, each succeeds (the first may
# reach the standby before a check notices: it is sent again to the primary).
repl_stop "$R60_STANDBY" fast
r60_down=()
for i in 1 2 3 4 5 6 7 8 9 10; do
	status="$(r60_describe "$R60_OTHER" r60b)"
	[[ "$status" == 200 ]] || r60_down+=("read $i: $status")
done
pass_if_none "standby down: 10 reads in a row answer 200 (from the primary)" "${r60_down[@]}"
check "standby down: writes still succeed" 200 "$(r60 "$KEY" POST /v1/namespace/ns%24r60c/create '{}')"
gw_down
