#!/usr/bin/env bash
# Reliability test: a streaming hot standby.
#
# Starts a primary, seeds it through the API (namespaces, declared and
# registered tables, versions on main and on a branch of a managed local
# table, a tag, a queued drop, an altered transaction), takes a
# pg_basebackup -R and starts it as a hot standby on another port, waits for
# replay, and then on the standby:
#
#   reads   every read operation, through SQL and through lance_rest, must
#           answer exactly what the primary answers;
#   writes  every write operation, through SQL, must fail with SQLSTATE
#           LN017 and a JSON DETAIL with code 17 (ServiceUnavailable), and
#           through lance_rest with status 503 and a body with code 17 -
#           never a raw PostgreSQL read-only error - and must leave the
#           table folders as they were.  Each write request is also run on
#           the primary in a rolled-back transaction, to prove that it is a
#           request that would succeed there (the 17 hides no other error).
#   feed    lance_changes() on the standby either refuses with LN017 or
#           never returns entry N+1 while entry N is still in flight on the
#           primary (an open transaction there), and returns both once N
#           commits.
#
# Runs as root (server processes as the postgres OS user) or as postgres.
# Prints its figures and exits 0 only when every check passes.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try for the two servers (default 54401)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

WORK=""
PRIMARY=""
STANDBY=""
HOLD_PID=""
SHOW_LOGS=1 # the servers' logs help when set-up fails, not when a check does
START_SECONDS=$SECONDS

cleanup() {
	local rc=$?
	trap - EXIT
	# finish the clean-up even when the output has gone (a closed pipe)
	trap '' PIPE
	set +e
	# closing the held session's input ends it (its transaction rolls back)
	exec 7>&-
	if [[ -n "$HOLD_PID" ]]; then
		kill "$HOLD_PID" 2>/dev/null || true
		wait "$HOLD_PID" 2>/dev/null || true
	fi
	# the standby first: it would only retry its primary meanwhile
	stop_clusters "$STANDBY" "$PRIMARY"
	if ((rc != 0 && SHOW_LOGS)) && [[ -n "$WORK" ]]; then
		for f in "$PRIMARY/server.log" "$STANDBY/server.log"; do
			[[ -f "$f" ]] && { echo "==== tail of $f"; tail -n 15 "$f"; }
		done
	fi
	remove_work_dir
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 141' PIPE

unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD PGHOST PGPORT PGUSER

new_work_dir
PRIMARY="$PGDATA_DIR"
# pg_basebackup makes it; its socket goes in SOCK too, under its own port
STANDBY="$WORK/standby"
PPORT="$(find_free_port "${LN_TEST_PORT:-54401}")"

PSQL=("$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -U postgres -h "$SOCK" -d lance)
P() { "${PSQL[@]}" -p "$PPORT" "$@"; }
S() { "${PSQL[@]}" -p "$SPORT" "$@"; }

# A SQL literal for a string, or NULL for the word NULL.
q() {
	if [[ "$1" == NULL ]]; then printf 'NULL'; else printf "'%s'" "${1//\'/\'\'}"; fi
}

# ---------------------------------------------------------------------------
# Primary
# ---------------------------------------------------------------------------
init_cluster "$PRIMARY" test
printf '%s\n' 'local   replication   all   trust' | as_postgres tee -a "$PRIMARY/pg_hba.conf" >/dev/null
printf '%s\n' 'wal_level = replica' 'max_wal_senders = 5' 'hot_standby = on' \
	'wal_writer_delay = 10ms' | as_postgres tee -a "$PRIMARY/postgresql.conf" >/dev/null
start_cluster "$PRIMARY" "$PPORT" "$SOCK"
make_postgres_dir "$TABLES" 755

"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -U postgres -h "$SOCK" -p "$PPORT" -d postgres \
	-c 'CREATE DATABASE lance'
P <<SQL
CREATE EXTENSION lance_namespace;
ALTER DATABASE lance SET lance_namespace.local_roots = $(q "$TABLES");
ALTER DATABASE lance SET lance_namespace.root = $(q "$TABLES/auto");
-- lance_rest without an API key acts as this superuser (the checks compare
-- answers, not rights); KEY and GONE test keys on the standby
ALTER DATABASE lance SET lance_namespace.anonymous_role = postgres;
SQL
KEY="$(P -c "SELECT lance_create_api_key('lance_admin')")"
GONE="$(P -c "SELECT lance_create_api_key('lance_admin')")"
P -c "SELECT lance_revoke_api_key('${GONE:0:16}')" >/dev/null

# Manifest names (V2: 20-digit 2^64-1-version) for versions 1..5.
V2=(x 18446744073709551614 18446744073709551613 18446744073709551612 18446744073709551611 18446744073709551610)
M="$TABLES/sb/m.lance"         # a managed table: tags, branches, manifests
MP="${M#/}"                    # as a Lance client sends it, no leading slash
# stage <dir relative to the table> <version> <tag>: a staging manifest, as a Lance writer leaves
# it; a real Lance manifest, since branches fork from them (test/fixtures/lance.manifest)
stage() {
	as_postgres bash -c "mkdir -p '$M/$1' && cat >'$M/$1/${V2[$2]}.manifest-$3'" <"$ROOT/test/fixtures/lance.manifest"
}
as_postgres mkdir -p "$M/_versions" "$TABLES/sb/gone.lance/data"
as_postgres bash -c "echo rows >'$TABLES/sb/gone.lance/data/0.lance'"
stage _versions 1 s1
stage _versions 2 s2
stage _versions 3 s3

say "seeding the primary through the API"
P >/dev/null <<SQL
SELECT lance_create_namespace('{"id": ["sb"], "properties": {"owner": "ml", "tier": "gold"}}');
SELECT lance_create_namespace('{"id": ["sb", "inner"], "properties": {"k": "v"}}');
SELECT lance_create_namespace('{"id": ["sb", "empty"]}');
SELECT lance_register_table('{"id": ["sb", "reg"], "location": "s3://bucket/sb/reg.lance", "properties": {"p": "1"}}');
SELECT lance_declare_table('{"id": ["sb", "decl"], "location": "s3://bucket/sb/decl.lance"}');
SELECT lance_declare_table('{"id": ["sb", "inner", "auto"]}');
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["sb", "reg"], "version": 1, "manifest_path": "bucket/sb/reg.lance/_versions/1.manifest", "manifest_size": 11},
    {"id": ["sb", "reg"], "version": 2, "manifest_path": "bucket/sb/reg.lance/_versions/2.manifest", "e_tag": "e2"}]}');
SELECT lance_declare_table(jsonb_build_object('id', '["sb", "inner", "m"]'::jsonb, 'location', $(q "$M")));
SELECT lance_create_table_version(jsonb_build_object('id', '["sb", "inner", "m"]'::jsonb, 'version', 1,
       'manifest_path', $(q "$MP/_versions/${V2[1]}.manifest-s1")));
SELECT status FROM lance_rest('POST', '/v1/table/sb%24inner%24m/version/create', NULL,
       jsonb_build_object('version', 2, 'manifest_path', $(q "$MP/_versions/${V2[2]}.manifest-s2"))::text, NULL);
SELECT lance_create_table_version(jsonb_build_object('id', '["sb", "inner", "m"]'::jsonb, 'version', 3,
       'manifest_path', $(q "$MP/_versions/${V2[3]}.manifest-s3"), 'metadata', '{"writer": "test"}'::jsonb));
SELECT lance_create_table_tag('{"id": ["sb", "inner", "m"], "tag": "v1", "version": 1}');
SELECT lance_create_table_branch('{"id": ["sb", "inner", "m"], "name": "dev"}');
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["sb", "bc"], "location": "s3://bucket/sb/bc.lance"}},
    {"create_table_version": {"id": ["sb", "reg"], "version": 3, "manifest_path": "bucket/sb/reg.lance/_versions/3.manifest"}}]}');
SELECT lance_register_table('{"id": ["sb", "old"], "location": "s3://bucket/sb/old.lance"}');
SELECT lance_rename_table('{"id": ["sb", "old"], "new_table_name": "renamed", "new_namespace_id": ["sb", "inner"]}');
SELECT lance_declare_table(jsonb_build_object('id', '["sb", "gone"]'::jsonb, 'location', $(q "$TABLES/sb/gone.lance")));
-- as if the catalog had chosen its folder: only such a drop queues removing it
UPDATE lance_catalog.object SET location_derived = true WHERE location = $(q "$TABLES/sb/gone.lance");
SELECT lance_drop_table('{"id": ["sb", "gone"]}');
SELECT lance_alter_transaction(jsonb_build_object('id', jsonb_build_array(
       (SELECT transaction_id::text FROM lance_catalog.change ORDER BY seq LIMIT 1)),
       'actions', '[{"setPropertyAction": {"key": "reviewed", "value": "yes"}}]'::jsonb));
SQL
# a version on the branch, its manifest below tree/dev
stage tree/dev/_versions 4 b4
P >/dev/null <<SQL
SELECT lance_create_table_version(jsonb_build_object('id', '["sb", "inner", "m"]'::jsonb, 'branch', 'dev', 'version', 4,
       'manifest_path', $(q "$MP/tree/dev/_versions/${V2[4]}.manifest-b4")));
SQL
# staging manifests the write attempts below name (never committed)
stage _versions 4 w4
stage tree/dev/_versions 5 w5
TX1="$(P -c 'SELECT transaction_id FROM lance_catalog.change ORDER BY seq LIMIT 1')"
TXD="$(P -c "SELECT transaction_id FROM lance_catalog.change WHERE status = 'Queued' ORDER BY seq LIMIT 1")"
[[ -n "$TX1" && -n "$TXD" ]] || die "seed incomplete: no change entries"
say "seeded: $(P -c "SELECT count(*) FILTER (WHERE kind = 'namespace') || ' namespaces, ' || count(*) FILTER (WHERE kind = 'table') || ' tables' FROM lance_catalog.object WHERE id <> 0"), $(P -c 'SELECT count(*) FROM lance_catalog.version') versions, $(P -c 'SELECT count(*) FROM lance_catalog.change') change entries"

# ---------------------------------------------------------------------------
# Standby
# ---------------------------------------------------------------------------
SPORT="$(find_free_port $((PPORT + 1)))"
say "taking a base backup for the standby"
as_postgres "$PG_BIN/pg_basebackup" -h "$SOCK" -p "$PPORT" -U postgres -D "$STANDBY" -R \
	-X stream -c fast --no-sync >/dev/null 2>"$WORK/basebackup.log" || {
	cat "$WORK/basebackup.log" >&2
	die "pg_basebackup failed"
}
start_cluster "$STANDBY" "$SPORT" "$SOCK"
[[ "$(S -c 'SELECT pg_is_in_recovery()')" == t ]] || die "the standby is not in recovery"

# Wait until the standby has replayed everything the primary has written:
# up to its insert position (with synchronous_commit off, as in this test
# cluster, a commit's record may not be written yet when it returns, and
# pg_current_wal_lsn() is only the write position).
wait_replay() {
	local lsn i
	lsn="$(P -c 'SELECT pg_current_wal_insert_lsn()')"
	# the cap (120 s) only guards against a hang, with a margin for a loaded machine
	for ((i = 0; i < 1200; i++)); do
		[[ "$(S -c "SELECT coalesce(pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn, false)")" == t ]] && return 0
		sleep 0.1
	done
	die "the standby did not replay up to $lsn in 120 s"
}
wait_replay
say "standby on port $SPORT replayed the primary (port $PPORT)"

# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------
READS=0 READS_FAILED=0 WRITES=0 WRITES_FAILED=0 OTHER=0 OTHER_FAILED=0
FEED_RESULT="not run"
READ_FUNCS="" WRITE_FUNCS=""
sqlstate_of() { sed -n 's/^\(psql:[^ ]* \)\{0,1\}ERROR:  \([0-9A-Z]\{5\}\): .*/\2/p' <<<"$1" | head -n 1; }
message_of() { sed -n 's/^\(psql:[^ ]* \)\{0,1\}ERROR:  \(.*\)/\2/p' <<<"$1" | head -n 1; }
detail_of() { sed -n 's/^DETAIL:  //p' <<<"$1" | head -n 1; }
# True when a DETAIL is the spec's ErrorResponse with code 17.
is_code_17() { [[ "$1" =~ ^\{.*\"code\":\ ?17[,}] && "$1" == *\} ]]; }
funcs_of() { { grep -o 'lance_[a-z_]*(' <<<"$1" || true; } | tr -d '(' | tr '\n' ' '; }

# batch <P|S> [wrap]: run each statement of BATCH_SQL in one session (one
# connection instead of one per statement), in autocommit, or with wrap in a
# transaction of its own that is rolled back.  BATCH_OUT[i] is the output of
# statement i: its rows, or "ERROR <SQLSTATE> <message>".
batch() {
	local server="$1" wrap="${2:-}" i script="" out line idx=0
	for i in "${!BATCH_SQL[@]}"; do
		script+="\\echo @@$i"$'\n'
		[[ -n "$wrap" ]] && script+="BEGIN;"$'\n'
		script+="${BATCH_SQL[$i]};"$'\n'"\\if :ERROR"$'\n'"\\echo ERROR :LAST_ERROR_SQLSTATE :LAST_ERROR_MESSAGE"$'\n'"\\endif"$'\n'
		[[ -n "$wrap" ]] && script+="ROLLBACK;"$'\n'
	done
	BATCH_OUT=()
	out="$("$server" -v ON_ERROR_STOP=0 <<<"$script" 2>/dev/null)" || true
	while IFS= read -r line; do
		if [[ "$line" =~ ^@@([0-9]+)$ ]]; then
			idx=${BASH_REMATCH[1]}
			BATCH_OUT[idx]=""
		else
			BATCH_OUT[idx]+="${BATCH_OUT[idx]:+$'\n'}$line"
		fi
	done <<<"$out"
}

# check_read <label> <expect> <sql>: queue a read; run_reads runs the queue
# on both servers and requires the same answer from both.
# expect: ok (the primary answers), the SQLSTATE the primary raises, or feed
# (as ok, but the standby may refuse with LN017), or a number: the status
# lance_rest answers on the primary.
RQ_LABEL=() RQ_EXPECT=() RQ_SQL=()
check_read() {
	RQ_LABEL+=("$1")
	RQ_EXPECT+=("$2")
	RQ_SQL+=("$3")
	READ_FUNCS+=" $(funcs_of "$3")"
}
run_reads() {
	local i op os label expect
	local -a pout sout
	BATCH_SQL=("${RQ_SQL[@]}")
	batch P
	pout=("${BATCH_OUT[@]}")
	batch S
	sout=("${BATCH_OUT[@]}")
	for i in "${!RQ_SQL[@]}"; do
		label="${RQ_LABEL[$i]}" expect="${RQ_EXPECT[$i]}" op="${pout[$i]-}" os="${sout[$i]-}"
		READS=$((READS + 1))
		if [[ "$expect" == ok || "$expect" == feed ]] && [[ -z "$op" || "$op" == ERROR* ]]; then
			READS_FAILED=$((READS_FAILED + 1))
			fail "read $label: the primary fails (test seed problem)" "${op:-(no output)}"
			continue
		elif [[ "$expect" == LN* && "$op" != "ERROR $expect "* ]]; then
			READS_FAILED=$((READS_FAILED + 1))
			fail "read $label: the primary does not raise $expect (test seed problem)" "$op"
			continue
		elif [[ "$expect" =~ ^[0-9]+$ && "$op" != "$expect|"* ]]; then
			READS_FAILED=$((READS_FAILED + 1))
			fail "read $label: the primary does not answer status $expect (test seed problem)" "$op"
			continue
		fi
		if [[ "$expect" == feed && "$os" == "ERROR LN017 "* ]]; then
			pass "read $label (refused on the standby with LN017)"
		elif [[ "$op" == "$os" ]]; then
			pass "read $label"
		else
			READS_FAILED=$((READS_FAILED + 1))
			fail "read $label: the standby answers differently" "primary: ${op:0:400}" "standby: ${os:0:400}"
		fi
	done
	RQ_LABEL=() RQ_EXPECT=() RQ_SQL=()
}

# check_rest_read <label> <status> <method> <path> [query] [body] [headers]
check_rest_read() {
	local label="$1" status="$2" method="$3" path="$4" query="${5:-NULL}" body="${6:-NULL}" headers="${7:-NULL}"
	check_read "REST $label" "$status" \
		"SELECT status, response_headers, response_body FROM lance_rest($(q "$method"), $(q "$path"), $(q "$query"), $(q "$body"), $(q "$headers"))"
}

# check_write_sql <label> <sql> [nocontrol]: one connection each, as a
# client calls it, so that the DETAIL can be checked.
check_write_sql() {
	local label="$1" sql="$2" out rc=0 state detail
	WRITES=$((WRITES + 1))
	WRITE_FUNCS+=" $(funcs_of "$sql")"
	out="$(S <<<"$sql" 2>&1)" || rc=$?
	state="$(sqlstate_of "$out")"
	detail="$(detail_of "$out")"
	if ((rc == 0)); then
		WRITES_FAILED=$((WRITES_FAILED + 1))
		fail "write $label: succeeded on the standby" "$out"
	elif [[ "$state" != LN017 ]]; then
		WRITES_FAILED=$((WRITES_FAILED + 1))
		fail "write $label: SQLSTATE $state, expected LN017" "$(message_of "$out")" "DETAIL: ${detail:-(none)}"
	elif ! is_code_17 "$detail"; then
		WRITES_FAILED=$((WRITES_FAILED + 1))
		fail "write $label: LN017 but DETAIL is not a JSON body with code 17" "DETAIL: ${detail:-(none)}"
	else
		pass "write $label -> LN017 $detail"
	fi
	if [[ "${3:-}" != nocontrol ]]; then
		CONTROL_LABEL+=("$label")
		CONTROL_SQL+=("$sql")
	fi
}

# check_write_rest <label> <path> [body]: queued; run_rest_writes runs them.
WQ_LABEL=() WQ_SQL=()
check_write_rest() {
	local label="$1" path="$2" body="${3:-NULL}"
	WQ_LABEL+=("REST $label")
	WQ_SQL+=("SELECT status, response_body FROM lance_rest('POST', $(q "$path"), NULL, $(q "$body"), NULL)")
}
run_rest_writes() {
	local i out label
	BATCH_SQL=("${WQ_SQL[@]}")
	batch S
	for i in "${!WQ_SQL[@]}"; do
		label="${WQ_LABEL[$i]}" out="${BATCH_OUT[$i]-}"
		WRITES=$((WRITES + 1))
		if [[ "$out" == ERROR* || -z "$out" ]]; then
			WRITES_FAILED=$((WRITES_FAILED + 1))
			fail "write $label: lance_rest raised an error on the standby" "${out:-(no output)}"
		elif [[ "$out" != "503|"* ]] || ! is_code_17 "${out#*|}"; then
			WRITES_FAILED=$((WRITES_FAILED + 1))
			fail "write $label: expected status 503 with code 17" "got: $out"
		else
			pass "write $label -> ${out/|/ }"
		fi
		CONTROL_LABEL+=("$label")
		CONTROL_SQL+=("${WQ_SQL[$i]}")
	done
}

# Every file below the table folders, as path, size and modification time.
folder_state() { (cd "$TABLES" && find . -type f -printf '%p %s %T@\n' -o -type d -printf '%p/\n' | sort); }

say "reads on the standby, compared with the primary"
R=(check_read)
"${R[@]}" "ListNamespaces root" ok "SELECT lance_list_namespaces('{\"id\": []}')"
"${R[@]}" "ListNamespaces sb (paged)" ok "SELECT lance_list_namespaces('{\"id\": [\"sb\"], \"limit\": 1}')"
"${R[@]}" "DescribeNamespace" ok "SELECT lance_describe_namespace('{\"id\": [\"sb\"]}')"
"${R[@]}" "NamespaceExists" ok "SELECT lance_namespace_exists('{\"id\": [\"sb\", \"inner\"]}')"
"${R[@]}" "NamespaceExists missing" LN001 "SELECT lance_namespace_exists('{\"id\": [\"sb\", \"nope\"]}')"
"${R[@]}" "ListTables" ok "SELECT lance_list_tables('{\"id\": [\"sb\"]}')"
"${R[@]}" "ListTables include_declared false" ok "SELECT lance_list_tables('{\"id\": [\"sb\"], \"include_declared\": false}')"
"${R[@]}" "ListAllTables" ok "SELECT lance_list_all_tables('{}')"
"${R[@]}" "ListAllTables delimiter, paged" ok "SELECT lance_list_all_tables('{\"delimiter\": \".\", \"limit\": 2}')"
"${R[@]}" "DescribeTable registered" ok "SELECT lance_describe_table('{\"id\": [\"sb\", \"reg\"], \"with_table_uri\": true, \"check_declared\": true}')"
"${R[@]}" "DescribeTable declared" ok "SELECT lance_describe_table('{\"id\": [\"sb\", \"inner\", \"auto\"], \"with_table_uri\": true, \"check_declared\": true, \"load_detailed_metadata\": true}')"
"${R[@]}" "DescribeTable managed" ok "SELECT lance_describe_table('{\"id\": [\"sb\", \"inner\", \"m\"], \"with_table_uri\": true, \"check_declared\": true}')"
"${R[@]}" "DescribeTable version" ok "SELECT lance_describe_table('{\"id\": [\"sb\", \"inner\", \"m\"], \"version\": 2}')"
"${R[@]}" "DescribeTable tag" ok "SELECT lance_describe_table('{\"id\": [\"sb\", \"inner\", \"m\"], \"tag\": \"v1\"}')"
"${R[@]}" "DescribeTable renamed" ok "SELECT lance_describe_table('{\"id\": [\"sb\", \"inner\", \"renamed\"]}')"
"${R[@]}" "DescribeTable dropped" LN004 "SELECT lance_describe_table('{\"id\": [\"sb\", \"gone\"]}')"
"${R[@]}" "TableExists" ok "SELECT lance_table_exists('{\"id\": [\"sb\", \"reg\"]}')"
"${R[@]}" "TableExists version" ok "SELECT lance_table_exists('{\"id\": [\"sb\", \"reg\"], \"version\": 3}')"
"${R[@]}" "TableExists missing" LN004 "SELECT lance_table_exists('{\"id\": [\"sb\", \"old\"]}')"
"${R[@]}" "ListTableVersions" ok "SELECT lance_list_table_versions('{\"id\": [\"sb\", \"reg\"]}')"
"${R[@]}" "ListTableVersions latest" ok "SELECT lance_list_table_versions('{\"id\": [\"sb\", \"inner\", \"m\"], \"descending\": true, \"limit\": 1}')"
"${R[@]}" "ListTableVersions branch" ok "SELECT lance_list_table_versions('{\"id\": [\"sb\", \"inner\", \"m\"], \"branch\": \"dev\"}')"
"${R[@]}" "DescribeTableVersion latest" ok "SELECT lance_describe_table_version('{\"id\": [\"sb\", \"inner\", \"m\"]}')"
"${R[@]}" "DescribeTableVersion 1" ok "SELECT lance_describe_table_version('{\"id\": [\"sb\", \"reg\"], \"version\": 1}')"
"${R[@]}" "DescribeTableVersion branch" ok "SELECT lance_describe_table_version('{\"id\": [\"sb\", \"inner\", \"m\"], \"branch\": \"dev\"}')"
"${R[@]}" "DescribeTableVersion missing" LN011 "SELECT lance_describe_table_version('{\"id\": [\"sb\", \"reg\"], \"version\": 9}')"
"${R[@]}" "ListTableTags" ok "SELECT lance_list_table_tags('{\"id\": [\"sb\", \"inner\", \"m\"]}')"
"${R[@]}" "GetTableTagVersion" ok "SELECT lance_get_table_tag_version('{\"id\": [\"sb\", \"inner\", \"m\"], \"tag\": \"v1\"}')"
"${R[@]}" "ListTableBranches" ok "SELECT lance_list_table_branches('{\"id\": [\"sb\", \"inner\", \"m\"]}')"
"${R[@]}" "DescribeTransaction" ok "SELECT lance_describe_transaction('{\"id\": [\"$TX1\"]}')"
"${R[@]}" "DescribeTransaction queued drop" ok "SELECT lance_describe_transaction('{\"id\": [\"$TXD\"]}')"
"${R[@]}" "lance_changes()" feed "SELECT json_agg(c ORDER BY c.seq) FROM lance_changes() c"
"${R[@]}" "lance_changes(3, 2)" feed "SELECT json_agg(c ORDER BY c.seq) FROM lance_changes(3, 2) c"
"${R[@]}" "Unsupported RestoreTable (LN000)" LN000 "SELECT lance_restore_table('{\"id\": [\"sb\", \"reg\"], \"version\": 1}')"
run_reads
R=(check_rest_read)
"${R[@]}" "ListNamespaces root" 200 GET /v1/namespace/%24/list 'delimiter=%24'
"${R[@]}" "ListNamespaces sb" 200 GET /v1/namespace/sb/list 'limit=1'
"${R[@]}" "DescribeNamespace" 200 POST /v1/namespace/sb/describe
"${R[@]}" "NamespaceExists" 204 POST /v1/namespace/sb%24inner/exists
"${R[@]}" "NamespaceExists missing" 404 POST /v1/namespace/sb%24nope/exists
"${R[@]}" "ListTables" 200 GET /v1/namespace/sb/table/list
"${R[@]}" "ListAllTables" 200 GET /v1/table 'delimiter=.'
"${R[@]}" "DescribeTable" 200 POST /v1/table/sb%24reg/describe 'with_table_uri=true&check_declared=true'
"${R[@]}" "DescribeTable managed" 200 POST /v1/table/sb.inner.m/describe 'delimiter=.' '{"version": 3}'
"${R[@]}" "TableExists" 204 POST /v1/table/sb%24reg/exists
"${R[@]}" "TableExists missing" 404 POST /v1/table/sb%24gone/exists
"${R[@]}" "ListTableVersions" 200 POST /v1/table/sb%24reg/version/list 'descending=true'
"${R[@]}" "DescribeTableVersion" 200 POST /v1/table/sb%24inner%24m/version/describe NULL '{"branch": "dev"}'
"${R[@]}" "ListTableTags" 200 POST /v1/table/sb%24inner%24m/tags/list
"${R[@]}" "GetTableTagVersion" 200 POST /v1/table/sb%24inner%24m/tags/version NULL '{"tag": "v1"}'
"${R[@]}" "ListTableBranches" 200 POST /v1/table/sb%24inner%24m/branches/list
"${R[@]}" "DescribeTransaction" 200 POST "/v1/transaction/$TX1/describe"
"${R[@]}" "DescribeNamespace with an API key" 200 POST /v1/namespace/sb/describe NULL NULL "{\"x-api-key\": \"$KEY\"}"
"${R[@]}" "DescribeTable with an API key as Bearer token" 200 POST /v1/table/sb%24reg/describe NULL NULL "{\"authorization\": \"Bearer $KEY\"}"
"${R[@]}" "DescribeNamespace with a revoked API key" 401 POST /v1/namespace/sb/describe NULL NULL "{\"x-api-key\": \"$GONE\"}"

run_reads

say "writes on the standby: each must answer code 17"
CONTROL_LABEL=() CONTROL_SQL=()
BEFORE="$(folder_state)"
ACT='[{"setPropertyAction": {"key": "k", "value": "v"}}]'
W=(check_write_sql)
"${W[@]}" "CreateNamespace" "SELECT lance_create_namespace('{\"id\": [\"sb\", \"new\"], \"properties\": {\"a\": \"b\"}}')"
"${W[@]}" "CreateNamespace Overwrite" "SELECT lance_create_namespace('{\"id\": [\"sb\", \"empty\"], \"mode\": \"Overwrite\", \"properties\": {\"a\": \"b\"}}')"
"${W[@]}" "DropNamespace" "SELECT lance_drop_namespace('{\"id\": [\"sb\", \"empty\"]}')"
"${W[@]}" "DropNamespace Cascade" "SELECT lance_drop_namespace('{\"id\": [\"sb\"], \"behavior\": \"Cascade\"}')"
"${W[@]}" "DeclareTable" "SELECT lance_declare_table('{\"id\": [\"sb\", \"nt\"], \"location\": \"s3://bucket/sb/nt.lance\"}')"
"${W[@]}" "DeclareTable derived location" "SELECT lance_declare_table('{\"id\": [\"sb\", \"inner\", \"nt2\"]}')"
"${W[@]}" "RegisterTable" "SELECT lance_register_table('{\"id\": [\"sb\", \"nr\"], \"location\": \"s3://bucket/sb/nr.lance\"}')"
"${W[@]}" "RegisterTable Overwrite" "SELECT lance_register_table('{\"id\": [\"sb\", \"reg\"], \"location\": \"s3://bucket/sb/reg2.lance\", \"mode\": \"Overwrite\"}')"
"${W[@]}" "DeregisterTable" "SELECT lance_deregister_table('{\"id\": [\"sb\", \"reg\"]}')"
"${W[@]}" "DropTable" "SELECT lance_drop_table('{\"id\": [\"sb\", \"decl\"]}')"
"${W[@]}" "DropTable managed" "SELECT lance_drop_table('{\"id\": [\"sb\", \"inner\", \"m\"]}')"
"${W[@]}" "RenameTable" "SELECT lance_rename_table('{\"id\": [\"sb\", \"reg\"], \"new_table_name\": \"reg2\"}')"
"${W[@]}" "CreateTableVersion" "SELECT lance_create_table_version('{\"id\": [\"sb\", \"reg\"], \"version\": 4, \"manifest_path\": \"bucket/sb/reg.lance/_versions/4.manifest\"}')"
"${W[@]}" "CreateTableVersion managed" "SELECT lance_create_table_version('{\"id\": [\"sb\", \"inner\", \"m\"], \"version\": 4, \"manifest_path\": \"$MP/_versions/${V2[4]}.manifest-w4\"}')"
"${W[@]}" "CreateTableVersion managed branch" "SELECT lance_create_table_version('{\"id\": [\"sb\", \"inner\", \"m\"], \"branch\": \"dev\", \"version\": 5, \"manifest_path\": \"$MP/tree/dev/_versions/${V2[5]}.manifest-w5\"}')"
"${W[@]}" "BatchDeleteTableVersions" "SELECT lance_batch_delete_table_versions('{\"id\": [\"sb\", \"reg\"], \"ranges\": [{\"start_version\": 1, \"end_version\": 2}]}')"
"${W[@]}" "BatchCreateTableVersions" "SELECT lance_batch_create_table_versions('{\"entries\": [{\"id\": [\"sb\", \"reg\"], \"version\": 4, \"manifest_path\": \"bucket/sb/reg.lance/_versions/4.manifest\"}, {\"id\": [\"sb\", \"bc\"], \"version\": 1, \"manifest_path\": \"bucket/sb/bc.lance/_versions/1.manifest\"}]}')"
"${W[@]}" "BatchCommitTables" "SELECT lance_batch_commit_tables('{\"operations\": [{\"declare_table\": {\"id\": [\"sb\", \"bc2\"], \"location\": \"s3://bucket/sb/bc2.lance\"}}, {\"create_table_version\": {\"id\": [\"sb\", \"reg\"], \"version\": 4, \"manifest_path\": \"bucket/sb/reg.lance/_versions/4.manifest\"}}]}')"
"${W[@]}" "CreateTableTag" "SELECT lance_create_table_tag('{\"id\": [\"sb\", \"inner\", \"m\"], \"tag\": \"t2\", \"version\": 2}')"
"${W[@]}" "UpdateTableTag" "SELECT lance_update_table_tag('{\"id\": [\"sb\", \"inner\", \"m\"], \"tag\": \"v1\", \"version\": 3}')"
"${W[@]}" "DeleteTableTag" "SELECT lance_delete_table_tag('{\"id\": [\"sb\", \"inner\", \"m\"], \"tag\": \"v1\"}')"
"${W[@]}" "CreateTableBranch" "SELECT lance_create_table_branch('{\"id\": [\"sb\", \"inner\", \"m\"], \"name\": \"feat\"}')"
"${W[@]}" "DeleteTableBranch" "SELECT lance_delete_table_branch('{\"id\": [\"sb\", \"inner\", \"m\"], \"name\": \"dev\"}')"
"${W[@]}" "AlterTransaction" "SELECT lance_alter_transaction('{\"id\": [\"$TX1\"], \"actions\": $ACT}')"
"${W[@]}" "AlterTransaction cancel drop" "SELECT lance_alter_transaction('{\"id\": [\"$TXD\"], \"actions\": [{\"setStatusAction\": {\"status\": \"Canceled\"}}]}')"
"${W[@]}" "lance_process_drops()" "SELECT lance_process_drops()" nocontrol
W=(check_write_rest)
"${W[@]}" "CreateNamespace" /v1/namespace/sb%24new/create '{"properties": {"a": "b"}}'
"${W[@]}" "DropNamespace" /v1/namespace/sb%24empty/drop
"${W[@]}" "DeclareTable" /v1/table/sb%24nt/declare '{"location": "s3://bucket/sb/nt.lance"}'
"${W[@]}" "RegisterTable" /v1/table/sb%24nr/register '{"location": "s3://bucket/sb/nr.lance"}'
"${W[@]}" "DeregisterTable" /v1/table/sb%24reg/deregister
"${W[@]}" "DropTable" /v1/table/sb%24decl/drop
"${W[@]}" "RenameTable" /v1/table/sb%24reg/rename '{"new_table_name": "reg2"}'
"${W[@]}" "CreateTableVersion" /v1/table/sb%24reg/version/create '{"version": 4, "manifest_path": "bucket/sb/reg.lance/_versions/4.manifest"}'
"${W[@]}" "CreateTableVersion managed" /v1/table/sb%24inner%24m/version/create "{\"version\": 4, \"manifest_path\": \"$MP/_versions/${V2[4]}.manifest-w4\"}"
"${W[@]}" "BatchDeleteTableVersions" /v1/table/sb%24reg/version/delete '{"ranges": [{"start_version": 1, "end_version": 2}]}'
"${W[@]}" "BatchCreateTableVersions" /v1/table/version/batch-create '{"entries": [{"id": ["sb", "reg"], "version": 4, "manifest_path": "bucket/sb/reg.lance/_versions/4.manifest"}]}'
"${W[@]}" "BatchCommitTables" /v1/table/batch-commit '{"operations": [{"declare_table": {"id": ["sb", "bc2"], "location": "s3://bucket/sb/bc2.lance"}}]}'
"${W[@]}" "CreateTableTag" /v1/table/sb%24inner%24m/tags/create '{"tag": "t2", "version": 2}'
"${W[@]}" "UpdateTableTag" /v1/table/sb%24inner%24m/tags/update '{"tag": "v1", "version": 3}'
"${W[@]}" "DeleteTableTag" /v1/table/sb%24inner%24m/tags/delete '{"tag": "v1"}'
"${W[@]}" "CreateTableBranch" /v1/table/sb%24inner%24m/branches/create '{"name": "feat"}'
"${W[@]}" "DeleteTableBranch" /v1/table/sb%24inner%24m/branches/delete '{"name": "dev"}'
"${W[@]}" "AlterTransaction" "/v1/transaction/$TX1/alter" "{\"actions\": $ACT}"
run_rest_writes

AFTER="$(folder_state)"
OTHER=$((OTHER + 1))
if [[ "$BEFORE" == "$AFTER" ]]; then
	pass "the refused writes left the table folders as they were"
else
	OTHER_FAILED=$((OTHER_FAILED + 1))
	mapfile -t changed < <(diff <(echo "$BEFORE") <(echo "$AFTER") | grep '^[<>]' | head -n 10)
	fail "the refused writes changed the table folders (< before, > after)" "${changed[@]}"
fi
# The catalog on the standby is still the primary's.
check_read "catalog rows after the refused writes" ok \
	"SELECT md5(string_agg(t, '|')) FROM (SELECT o::text t FROM lance_catalog.object o UNION ALL SELECT v::text FROM lance_catalog.version v UNION ALL SELECT c::text FROM lance_catalog.change c ORDER BY 1) x"
run_reads

# Coverage: when the extension has its operation registry (lance_operations(),
# from 0.2.0), every served operation must have been checked here, as a read
# or as a write according to whether it changes the catalog.
if [[ "$(S -c "SELECT to_regproc('lance_operations') IS NOT NULL")" == t ]]; then
	OTHER=$((OTHER + 1))
	missing=()
	while IFS='|' read -r fn changes; do
		if [[ "$changes" == t && " $WRITE_FUNCS " != *" $fn "* ]]; then
			missing+=("$fn changes the catalog and has no write check")
		elif [[ "$changes" == f && " $READ_FUNCS " != *" $fn "* ]]; then
			missing+=("$fn is a read and has no read check")
		fi
	done < <(S -F '|' -c 'SELECT sql_function, changes_catalog FROM lance_operations() WHERE served ORDER BY 1')
	if ((${#missing[@]} == 0)); then
		pass "every served operation of lance_operations() was checked"
	else
		OTHER_FAILED=$((OTHER_FAILED + 1))
		fail "operations of lance_operations() this test does not check" "${missing[@]}"
	fi
fi

say "control: each write request succeeds on the primary (rolled back)"
CONTROL_FAILED=0
BATCH_SQL=("${CONTROL_SQL[@]}")
batch P wrap
for i in "${!CONTROL_SQL[@]}"; do
	out="${BATCH_OUT[$i]-}"
	if [[ -z "$out" || "$out" == ERROR* ]] || { [[ "${CONTROL_LABEL[$i]}" == REST* ]] && [[ "$out" != 20[04]\|* ]]; }; then
		CONTROL_FAILED=$((CONTROL_FAILED + 1))
		fail "control ${CONTROL_LABEL[$i]}: the request fails on the primary too (the test's request is wrong)" "${out:0:300}"
	fi
done
OTHER=$((OTHER + 1))
if ((CONTROL_FAILED == 0)); then
	pass "all ${#CONTROL_SQL[@]} write requests succeed on the primary"
else
	OTHER_FAILED=$((OTHER_FAILED + 1))
fi

# ---------------------------------------------------------------------------
# The change feed while an entry is in flight on the primary.
# ---------------------------------------------------------------------------
say "lance_changes on the standby while entry N is in flight on the primary"
feed_check() {
	local label="$1" after="$2" must_have="$3" must_not="$4" out rc=0 seqs
	OTHER=$((OTHER + 1))
	out="$(S <<<"SELECT coalesce(string_agg(seq::text, ',' ORDER BY seq), '') FROM lance_changes($after) " 2>&1)" || rc=$?
	if ((rc != 0)); then
		if [[ "$(sqlstate_of "$out")" == LN017 ]] && is_code_17 "$(detail_of "$out")"; then
			pass "$label: refused with LN017"
			FEED_RESULT="refused with code 17"
		else
			OTHER_FAILED=$((OTHER_FAILED + 1))
			fail "$label: lance_changes failed, and not with LN017 code 17" "$(message_of "$out")"
		fi
		return
	fi
	seqs=",$out,"
	local ok=1 s
	for s in $must_have; do [[ "$seqs" == *",$s,"* ]] || ok=0; done
	for s in $must_not; do [[ "$seqs" == *",$s,"* ]] && ok=0; done
	if ((ok)); then
		pass "$label: entries after $after = [$out]"
		if [[ "$FEED_RESULT" == "not run" ]]; then FEED_RESULT="served in commit order"; fi
	else
		OTHER_FAILED=$((OTHER_FAILED + 1))
		FEED_RESULT="MISSES A COMMIT"
		fail "$label: entries after $after = [$out]; must include [${must_have:-}] and not [${must_not:-}]"
	fi
}

mkfifo "$WORK/hold.fifo"
chmod 666 "$WORK/hold.fifo"
PGAPPNAME=ln_standby_hold "${PSQL[@]}" -p "$PPORT" <"$WORK/hold.fifo" >"$WORK/hold.log" 2>&1 &
HOLD_PID=$!
exec 7>"$WORK/hold.fifo"
BASE="$(P -c 'SELECT max(seq) FROM lance_catalog.change')"
printf '%s\n' 'BEGIN;' "SELECT lance_create_namespace('{\"id\": [\"held\"]}') IS NOT NULL;" >&7
for ((i = 0; i < 1200; i++)); do # a hang guard (120 s), not a check of speed
	[[ "$(P -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ln_standby_hold' AND state = 'idle in transaction'")" == 1 ]] && break
	sleep 0.1
done
N="$(P -c 'SELECT last_value FROM lance_catalog.change_seq')"
P -c "SELECT lance_create_namespace('{\"id\": [\"after_held\"]}') IS NOT NULL" >/dev/null
N1="$(P -c "SELECT seq FROM lance_catalog.change WHERE objects = '{after_held}'")"
say "entry $N in flight on the primary, entry $N1 committed (entries up to $BASE committed before)"
OTHER=$((OTHER + 1))
if [[ "$N1" == "$((N + 1))" ]] && [[ "$(P -c "SELECT count(*) FROM lance_changes($BASE)")" == 0 ]]; then
	pass "primary: lance_changes($BASE) holds back entry $N1 while $N is in flight"
else
	OTHER_FAILED=$((OTHER_FAILED + 1))
	fail "primary: set-up of the in-flight entry did not work (N=$N, N+1=$N1) or the primary's feed returns $N1 early"
fi
wait_replay
feed_check "standby, $N in flight" "$BASE" "" "$N1"
printf '%s\n' 'COMMIT;' >&7
exec 7>&-
wait "$HOLD_PID" || true
HOLD_PID=""
wait_replay
feed_check "standby, after $N committed" "$BASE" "$N $N1" ""

# ---------------------------------------------------------------------------
# Promoted after a failover, the standby is the catalog of record (the
# primary's system identifier and database oid): its commits to managed
# tables write and its drops remove data, without lance_adopt_storage().
# ---------------------------------------------------------------------------
say "failover: the primary stops, the standby is promoted"
stop_cluster "$PRIMARY"
as_postgres "$PG_BIN/pg_ctl" -D "$STANDBY" -w -t 60 promote >/dev/null
OTHER=$((OTHER + 1))
out="$(S -c "SELECT lance_create_table_version(jsonb_build_object('id', '[\"sb\", \"inner\", \"m\"]'::jsonb,
                 'version', 4, 'manifest_path', $(q "$MP/_versions/${V2[4]}.manifest-w4"))) #>> '{version,version}'" \
	-c 'SELECT lance_process_drops()' 2>&1)"
out+=" $(as_postgres test -e "$TABLES/sb/gone.lance" && echo present || echo removed)"
if [[ "$out" == $'4\n1 removed' ]]; then
	pass "promoted standby: a managed commit writes and a queued drop removes its data"
else
	OTHER_FAILED=$((OTHER_FAILED + 1))
	fail "promoted standby: expected version 4, 1 drop processed and the folder removed" "$out"
fi

# ---------------------------------------------------------------------------
SHOW_LOGS=0
echo
say "standby test: reads checked $READS, failed $READS_FAILED; writes checked $WRITES (SQL and REST), failed $WRITES_FAILED; other checks $OTHER, failed $OTHER_FAILED; feed on the standby: $FEED_RESULT; $((SECONDS - START_SECONDS)) s"
if ((READS_FAILED + WRITES_FAILED + OTHER_FAILED > 0)); then
	say "standby test FAILED"
	exit 1
fi
say "standby test passed"
