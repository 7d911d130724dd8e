#!/usr/bin/env bash
# A catalog that another PostgreSQL release holds (database src, seeded by
# test/dump/catalog.sh's seed: test/versions/run.sh makes it on PostgreSQL
# 15), moved to this machine's release as PostgreSQL advises for a new major
# version: this release's pg_dumpall --globals-only (the roles) and pg_dump,
# restored into a fresh database of a fresh cluster here.  It must hold every
# namespace, table, version, grant, API key and storage setting, row by row,
# its tags and branches (which its tables' folders keep) must answer as
# before, and it must work: the read API answers as the original, the key
# and the grants act as they did, a new version, namespace and table, the
# change log going on, and once lance_adopt_storage() makes it the catalog
# of record, a commit to its managed table.
#
# Runs as root.  Prints "  ok    <check>" / "  FAIL  <check>" per check;
# exits 0 only when every check passed.
#
# Environment:
#   LN_RESTORE_FROM    host:port of the server that holds src (reached as
#                      postgres without a password)
#   LN_RESTORE_TABLES  the folder of the seed's tables (its TABLES), at the
#                      same path here and writable by this postgres user
#   LN_TEST_PORT       first port to try for this server (default 54581)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

[[ "${LN_RESTORE_FROM:-}" =~ ^([^:]+):([0-9]+)$ ]] || die "LN_RESTORE_FROM must be host:port, got '${LN_RESTORE_FROM:-}'"
SRC_HOST="${BASH_REMATCH[1]}"
SRC_PORT="${BASH_REMATCH[2]}"
[[ -d "${LN_RESTORE_TABLES:-}" ]] || die "LN_RESTORE_TABLES must name the seed's tables folder, got '${LN_RESTORE_TABLES:-}'"

WORK=""
PGDATA_DIR=""
START_SECONDS=$SECONDS
cleanup() {
	local rc=$?
	trap - EXIT
	set +e
	stop_clusters "$PGDATA_DIR"
	if ((rc != 0)) && [[ -f "$PGDATA_DIR/server.log" ]]; then
		echo "==== tail of $PGDATA_DIR/server.log"
		tail -n 20 "$PGDATA_DIR/server.log"
	fi
	remove_work_dir
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD PGHOST PGPORT PGUSER

new_work_dir
PORT="$(find_free_port "${LN_TEST_PORT:-54581}")"
init_cluster "$PGDATA_DIR" test
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK"

# shellcheck source=test/dump/catalog.sh
source "$ROOT/test/dump/catalog.sh"
TABLES="$LN_RESTORE_TABLES"
# D <database>: src is the other release's, every other database this one's.
D() {
	local db="$1"
	shift
	if [[ "$db" == src ]]; then
		"$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -U postgres -h "$SRC_HOST" -p "$SRC_PORT" -d src "$@"
	else
		"$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -U postgres -h "$SOCK" -p "$PORT" -d "$db" "$@"
	fi
}
version_of() { D "$1" -c "SELECT current_setting('server_version_num')::int / 10000"; }
FROM_VERSION="$(version_of src)"
say "restoring a catalog from PostgreSQL $FROM_VERSION into $PG_VERSION"
check "a catalog on PostgreSQL $FROM_VERSION, restored into this machine's $PG_VERSION" "$PG_VERSION" "$(version_of postgres)"

# an API key made on the original, to use on the restored copy
KEY="$(D src -c "SELECT lance_create_api_key('$ROLE')")"
is_api_key "$KEY" || fail "an API key for $ROLE on the original" "got: ${KEY:0:20}"

declare -A SRC_ROWS
for kt in "${KEYS[@]}"; do SRC_ROWS[${kt%%:*}]="$(rows_of src "${kt%%:*}" "${kt#*:}")"; done
SRC_SEQ="$(sequences_of src)"
# 17 gives a table's owner MAINTAIN (m) besides what 15 gives
privileges_of_owner_as_15() { privileges_of "$1" | sed 's/=arwdDxtm\//=arwdDxt\//g'; }
SRC_PRIV="$(privileges_of src)"
SRC_ANSWERS="$(answers_of src)"
# what the seed's role may see and do, by its grants, through the API (the
# last, on a namespace it has no grant on, is refused)
as_role() {
	{ D "$1" 2>&1 || true; } <<SQL | sed 's/^.*ERROR: */refused: /'
SET ROLE $ROLE;
SELECT lance_list_namespaces('{"id": ["prod"]}');
SELECT lance_describe_table('{"id": ["prod", "labels"]}') ->> 'location';
SELECT lance_list_table_versions('{"id": ["prod", "m"]}');
SELECT lance_describe_namespace('{"id": ["données"]}');
SQL
}
SRC_AS_ROLE="$(as_role src)"

rc=0
"$PG_BIN/pg_dumpall" --globals-only -U postgres -h "$SRC_HOST" -p "$SRC_PORT" -f "$WORK/globals.sql" 2>"$WORK/dumpall.log" || rc=$?
"$PG_BIN/pg_dump" -Fc -U postgres -h "$SRC_HOST" -p "$SRC_PORT" -f "$WORK/src.dump" src 2>"$WORK/dump.log" || rc=$?
if ((rc == 0)); then
	pass "PostgreSQL $PG_VERSION's pg_dumpall --globals-only and pg_dump -Fc of the catalog on $FROM_VERSION"
else
	fail "pg_dumpall or pg_dump failed" "$(cat "$WORK/dumpall.log" "$WORK/dump.log")"
fi
# the roles; postgres is there already
rc=0
out="$(D postgres -v ON_ERROR_STOP=0 -f "$WORK/globals.sql" 2>&1)" || rc=$?
same "the roles restore (but postgres, which exists)" "refused: role \"postgres\" already exists" \
	"$(grep -i 'error' <<<"$out" | sed 's/^.*ERROR: */refused: /')"
D postgres -c 'CREATE DATABASE dst'
D dst <<SQL
ALTER DATABASE dst SET lance_namespace.local_roots = $(q "$TABLES");
ALTER DATABASE dst SET lance_namespace.root = $(q "$TABLES/src/auto");
ALTER DATABASE dst SET lance_namespace.anonymous_role = 'postgres';
SQL
rc=0
"$PG_BIN/pg_restore" -U postgres -h "$SOCK" -p "$PORT" -d dst "$WORK/src.dump" >"$WORK/restore.log" 2>&1 || rc=$?
if ((rc == 0)) && ! grep -qi 'error' "$WORK/restore.log"; then
	pass "pg_restore into PostgreSQL $PG_VERSION"
else
	mapfile -t lines < <(grep -i 'error\|detail\|context' "$WORK/restore.log" | head -n 8)
	fail "pg_restore into PostgreSQL $PG_VERSION failed (exit $rc)" "${lines[@]}"
fi

ROWS_COMPARED=0
for kt in "${KEYS[@]}"; do
	t="${kt%%:*}"
	n="$(grep -c . <<<"${SRC_ROWS[$t]}" || true)"
	ROWS_COMPARED=$((ROWS_COMPARED + n))
	same "restored lance_catalog.$t: $n rows, row by row" "${SRC_ROWS[$t]}" "$(rows_of dst "$t" "${kt#*:}" 2>&1)"
done
same "restored sequence positions" "$SRC_SEQ" "$(sequences_of dst 2>&1)"
same "restored privileges (function ACLs, has_function_privilege, catalog grants)" "$SRC_PRIV" \
	"$(privileges_of_owner_as_15 dst 2>&1)"
same "the restored catalog answers the read API as the original (tags and branches too)" "$SRC_ANSWERS" \
	"$(answers_of dst 2>&1)"
same "the seed's role sees and is refused what it was, by its restored grants" "$SRC_AS_ROLE" "$(as_role dst)"
same "the API key made on $FROM_VERSION works on $PG_VERSION" "200" \
	"$(D dst -c "SELECT status FROM lance_rest('GET', '/v1/namespace/prod/list', NULL, NULL,
	                                            jsonb_build_object('x-api-key', $(q "$KEY")))" 2>&1)"
same "the restored storage setting makes a table below its location managed" "true false" \
	"$(D dst -c "SELECT (lance_declare_table('{\"id\": [\"prod\", \"on_s3\"], \"location\": \"s3://dump-bucket/tables/on_s3.lance\"}') ->> 'managed_versioning')
	              || ' ' || (lance_declare_table('{\"id\": [\"prod\", \"off_s3\"], \"location\": \"s3://other-bucket/off_s3.lance\"}') ->> 'managed_versioning')" 2>&1)"
check_works dst "the restored catalog on PostgreSQL $PG_VERSION"

# The copy becomes the catalog of record (the original retired), and
# commits to the managed table: the next version's manifest, on main.
M="$TABLES/src/m.lance"
as_postgres bash -c "cat >'$M/_versions/${V2[4]}.manifest-s4'" <"$ROOT/test/fixtures/lance.manifest"
same "after lance_adopt_storage(), a commit to the restored managed table" "t
4
4 1" "$(D dst -c "SELECT lance_adopt_storage() ? 'database_oid'" \
	-c "SELECT lance_create_table_version(jsonb_build_object('id', '[\"prod\", \"m\"]'::jsonb, 'version', 4,
	        'manifest_path', $(q "${M#/}/_versions/${V2[4]}.manifest-s4"))) #>> '{version,version}'" \
	-c "SELECT (lance_describe_table_version('{\"id\": [\"prod\", \"m\"]}') #>> '{version,version}') || ' '
	           || (lance_describe_table('{\"id\": [\"prod\", \"m\"], \"tag\": \"v1\"}') ->> 'version')" 2>&1)"

echo
say "restore test: $CHECKS checks, $FAILS failed; $ROWS_COMPARED catalog rows compared; PostgreSQL $FROM_VERSION -> $PG_VERSION; $((SECONDS - START_SECONDS)) s"
((FAILS == 0))
