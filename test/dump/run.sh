#!/usr/bin/env bash
# Reliability test: dump, restore and upgrade.
#
# Dump and restore: a database is seeded through the API (namespaces with
# properties, registered, declared and managed local tables, versions on
# main and on a branch, a tag, a rename, a queued drop, an altered
# transaction, so a change log of every kind), GRANT/REVOKE EXECUTE on some
# lance_ functions and privileges on the catalog for a role, and attempts
# through lance_rest to create names that are not valid UTF-8 (which must
# be refused: a stored invalid name makes pg_restore fail).  Then pg_dump -Fc
# and pg_restore into a fresh database must succeed without errors, and the
# restored database must hold the same lance_catalog rows (row by row), the
# same sequence positions, the same privileges, and work: the same answers,
# the next version, a new namespace, the change log continuing.
#
# Upgrade: CREATE EXTENSION lance_namespace VERSION '0.1.0', the same seed,
# ALTER EXTENSION lance_namespace UPDATE; then extversion must be the
# default_version of lance_namespace.control, every row of the catalog
# intact (the columns 0.1.0 had), the privileges intact and the API working.
# When the default version is 0.1.0 the update is a no-op and this passes.
#
# Runs as root (server processes as the postgres OS user) or as postgres.
# Prints its figures and exits 0 only when every check passes.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try for the server (default 54451)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

WORK=""
PGDATA_DIR=""
SHOW_LOGS=1 # the server's log helps when set-up fails, not when a check does
START_SECONDS=$SECONDS

cleanup() {
	local rc=$?
	trap - EXIT
	# finish the clean-up even when the output has gone (a closed pipe)
	trap '' PIPE
	set +e
	# the test server, and the pg_upgrade check's clusters
	stop_clusters "$PGDATA_DIR" "${OLD_DATA:-}" "${NEW_DATA:-}"
	if ((rc != 0 && SHOW_LOGS)) && [[ -f "$PGDATA_DIR/server.log" ]]; then
		echo "==== tail of $PGDATA_DIR/server.log"
		tail -n 20 "$PGDATA_DIR/server.log"
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
PORT="$(find_free_port "${LN_TEST_PORT:-54451}")"

init_cluster "$PGDATA_DIR" test
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK"
make_postgres_dir "$TABLES" 755

# shellcheck source=test/dump/catalog.sh
source "$(dirname "${BASH_SOURCE[0]}")/catalog.sh"

D postgres -c "CREATE ROLE $ROLE NOLOGIN"
D postgres -c "CREATE ROLE $DEFAULTS_ROLE NOLOGIN"

# ---------------------------------------------------------------------------
# Dump and restore
# ---------------------------------------------------------------------------
say "dump and restore"
D postgres -c 'CREATE DATABASE src'
D src -c 'CREATE EXTENSION lance_namespace'
seed src

# Names that are not valid UTF-8, through the REST path: must be refused.
# Each attempt: path|query|body; a name, a location or a new name that is
# not valid UTF-8 once percent-decoded, in the path or in the query.
for attempt in \
	'/v1/namespace/%FF%FE/create||' \
	'/v1/namespace/prod%24ok%C3%28/create||{"properties": {"k": "v"}}' \
	'/v1/namespace/prod%24%ED%A0%80/create||' \
	'/v1/table/prod%24t%C0%AF/register||{"location": "s3://bucket/bad.lance"}' \
	'/v1/table/prod%24t%FF/declare||{"location": "s3://bucket/bad2.lance"}' \
	'/v1/table/prod%24bad3/register|location=s3://bucket/%FF.lance|' \
	'/v1/table/prod%24labels/rename|new_table_name=%FE%FF|' \
	'/v1/namespace/prod%FFx%24y/create|delimiter=%FF|'; do
	IFS='|' read -r path query body <<<"$attempt"
	label="$path${query:+?$query}"
	[[ -n "$query" ]] && query="$(q "$query")" || query=NULL
	[[ -n "$body" ]] && body="$(q "$body")" || body=NULL
	out="$(D src -F ' ' -c "SELECT status, response_body FROM lance_rest('POST', $(q "$path"), $query, $body, NULL)" 2>&1)" || true
	status="${out%% *}"
	if [[ "$status" =~ ^[0-9]+$ ]] && ((status >= 400 && status < 500)); then
		pass "REST $label refused: $out"
	else
		fail "REST $label with invalid UTF-8: expected a 4xx refusal, got" "$out"
	fi
done
invalid="$(D src <<'SQL'
CREATE FUNCTION pg_temp.valid_utf8(t text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM convert_from(convert_to(t, 'UTF8'), 'UTF8'); RETURN true;
EXCEPTION WHEN OTHERS THEN RETURN false; END $$;
SELECT string_agg(what, '; ') FROM (
    SELECT 'object ' || id || ' (' || kind || ')' AS what FROM lance_catalog.object
     WHERE NOT pg_temp.valid_utf8(name || coalesce(location, '') || properties::text)
    UNION ALL
    SELECT 'change ' || seq || ' (' || operation || ')' FROM lance_catalog.change
     WHERE NOT pg_temp.valid_utf8(array_to_string(objects, '|') || array_to_string(namespaces, '|')
                                  || context::text || headers::text || properties::text)) x;
SQL
)"
if [[ -z "$invalid" ]]; then
	pass "no catalog row holds invalid UTF-8"
else
	fail "catalog rows hold invalid UTF-8 (stored through lance_rest)" "$invalid"
fi

declare -A SRC_ROWS
for kt in "${KEYS[@]}"; do SRC_ROWS[${kt%%:*}]="$(rows_of src "${kt%%:*}" "${kt#*:}")"; done
SRC_SEQ="$(sequences_of src)"
SRC_PRIV="$(privileges_of src)"
SRC_ANSWERS="$(answers_of src)"

rc=0
"$PG_BIN/pg_dump" -Fc -U postgres -h "$SOCK" -p "$PORT" -f "$WORK/src.dump" src 2>"$WORK/dump.log" || rc=$?
if ((rc == 0)); then
	pass "pg_dump -Fc ($(stat -c %s "$WORK/src.dump") bytes)"
else
	fail "pg_dump failed" "$(cat "$WORK/dump.log")"
fi
D postgres -c 'CREATE DATABASE dst'
D dst <<SQL
ALTER DATABASE dst SET lance_namespace.local_roots = $(q "$TABLES");
ALTER DATABASE dst SET lance_namespace.root = $(q "$TABLES/src/auto");
ALTER DATABASE dst SET lance_namespace.anonymous_role = 'postgres';
SQL
rc=0
"$PG_BIN/pg_restore" -U postgres -h "$SOCK" -p "$PORT" -d dst "$WORK/src.dump" >"$WORK/restore.log" 2>&1 || rc=$?
if ((rc == 0)) && ! grep -q 'error' "$WORK/restore.log"; then
	pass "pg_restore into a fresh database"
else
	mapfile -t lines < <(grep -i 'error\|detail\|context' "$WORK/restore.log" | head -n 8)
	fail "pg_restore failed (exit $rc)" "${lines[@]}"
fi

ROWS_COMPARED=0
for kt in "${KEYS[@]}"; do
	t="${kt%%:*}"
	dst_rows="$(rows_of dst "$t" "${kt#*:}" 2>&1)" || true
	n="$(grep -c . <<<"${SRC_ROWS[$t]}" || true)"
	ROWS_COMPARED=$((ROWS_COMPARED + n))
	same "restored lance_catalog.$t: $n rows, row by row" "${SRC_ROWS[$t]}" "$dst_rows"
done
same "restored sequence positions" "$SRC_SEQ" "$(sequences_of dst 2>&1)"
same "restored privileges (function ACLs, has_function_privilege, catalog grants)" "$SRC_PRIV" "$(privileges_of dst 2>&1)"
same "restored catalog answers the read API as the original" "$SRC_ANSWERS" "$(answers_of dst 2>&1)"
check_works dst "restored catalog"

# ---------------------------------------------------------------------------
# A restored copy is not the catalog of record: restored into a second
# database with the live one's settings (a check of the backup, a staging
# copy), it names the live tables' folders.  A drop there and
# lance_process_drops() leave the live data; commits to managed tables, tags
# and branches answer LN015 naming lance_adopt_storage() and write nothing;
# so does a CREATE DATABASE ... TEMPLATE copy.  Once the live catalog is
# retired (its database dropped, the data left), lance_adopt_storage() in
# the copy makes its drops proceed and its commits write.
# ---------------------------------------------------------------------------
say "a restored copy is not the catalog of record"
D postgres -c 'CREATE DATABASE live'
D live -c 'CREATE EXTENSION lance_namespace'
settings live
# live_table <database> <name>: declare a table at a folder the catalog
# chooses (its drop removes it); prints its folder
live_table() {
	D "$1" -c "SELECT lance_declare_table('{\"id\": [\"n\", \"$2\"]}') ->> 'location'"
}
D live -c "SELECT lance_create_namespace('{\"id\": [\"n\"]}')" >/dev/null
KEPT="$(live_table live kept)"
OTHER="$(live_table live other)"
GONE="$(live_table live gone)"
for t in "$KEPT" "$OTHER" "$GONE"; do
	as_postgres mkdir -p "$t/_versions" "$t/data"
	as_postgres bash -c "echo rows >'$t/data/0.lance'"
	for v in 1 2; do
		as_postgres bash -c "cat >'$t/_versions/${V2[$v]}.manifest-s$v'" <"$ROOT/test/fixtures/lance.manifest"
	done
done
for t in kept other; do
	dir="$KEPT"
	[[ "$t" == other ]] && dir="$OTHER"
	D live -c "SELECT lance_create_table_version(jsonb_build_object('id', '[\"n\", \"$t\"]'::jsonb, 'version', 1,
	               'manifest_path', $(q "${dir#/}/_versions/${V2[1]}.manifest-s1")))" >/dev/null
done
D live -c "SELECT lance_create_table_tag('{\"id\": [\"n\", \"kept\"], \"tag\": \"t1\", \"version\": 1}')" >/dev/null
"$PG_BIN/pg_dump" -Fc -U postgres -h "$SOCK" -p "$PORT" -f "$WORK/live.dump" live 2>"$WORK/dump_live.log"
D postgres -c 'CREATE DATABASE copy'
# set up as the live one: the same local roots and root (database settings are not in the dump)
D copy <<SQL
ALTER DATABASE copy SET lance_namespace.local_roots = $(q "$TABLES");
ALTER DATABASE copy SET lance_namespace.root = $(q "$TABLES/live/auto");
SQL
rc=0
"$PG_BIN/pg_restore" -U postgres -h "$SOCK" -p "$PORT" -d copy "$WORK/live.dump" >"$WORK/restore_copy.log" 2>&1 || rc=$?
if ((rc == 0)) && ! grep -q 'error' "$WORK/restore_copy.log"; then
	pass "pg_restore of the live catalog into a second database"
else
	fail "pg_restore into the copy failed (exit $rc)" "$(head -n 8 "$WORK/restore_copy.log")"
fi
same "the copy holds two identities (the live database's, dumped, and its own)" "2 t" \
	"$(D copy -F ' ' -c "SELECT count(DISTINCT (system_identifier, database_oid)),
	                            bool_or(database_oid = (SELECT oid FROM pg_database WHERE datname = 'live'))
	                       FROM lance_catalog.identity")"
# files(): the live tables' files, one per line
files() { as_postgres find "$KEPT" "$OTHER" "$GONE" -type f | LC_ALL=C sort; }
LIVE_FILES="$(files)"
out="$(D copy 2>"$WORK/copy_drops.err" <<'SQL'
SELECT lance_drop_table('{"id": ["n", "kept"]}') ? 'transaction_id';
SELECT lance_process_drops();
SELECT status FROM lance_catalog.change WHERE operation = 'DropTable';
SELECT lance_sweep_leftovers();
SQL
)" || true
same "a drop in the copy stays queued: lance_process_drops() and lance_sweep_leftovers() there do nothing" \
	"t
0
Queued
0" "$out"
same "lance_process_drops() in the copy says why, naming lance_adopt_storage()" \
	"WARNING:  lance_namespace: 1 queued drops keep their data: this catalog is a copy, not the catalog of record for its tables' storage
HINT:  If this catalog is to own its tables' storage from now on (the one it was copied from no longer does), an administrator runs lance_adopt_storage() here." \
	"$(cat "$WORK/copy_drops.err")"
same "the live tables' files are all there after the copy's drop" "$LIVE_FILES" "$(files)"
same "the live catalog still lists the dropped table's version and tag" "1 t1" \
	"$(D live -c "SELECT (lance_list_table_versions('{\"id\": [\"n\", \"kept\"]}') #>> '{versions,0,version}') || ' ' ||
	                     (SELECT string_agg(k, ',') FROM jsonb_object_keys(lance_list_table_tags('{\"id\": [\"n\", \"kept\"]}') -> 'tags') k)")"
# copy_write <database> <function> <request>: the error of a write, or "ok"
copy_write() {
	local out
	out="$(D "$1" -v VERBOSITY=verbose -c "SELECT $2($(q "$3"))" 2>&1)" && { echo ok; return; }
	sed -n 's/^ERROR:  \(LN[0-9]*\): .*\(lance_adopt_storage()\).*/\1 \2/p' <<<"$out" | head -n 1
	grep -q '^ERROR:  LN015' <<<"$out" || echo "$out" | head -n 1
}
V2_OTHER="${OTHER#/}/_versions/${V2[2]}.manifest-s2"
for db in copy tcopy; do
	if [[ "$db" == tcopy ]]; then
		# a file-level copy of the live database: the same rows, another database
		D postgres -c 'CREATE DATABASE tcopy TEMPLATE live'
		D tcopy -c "ALTER DATABASE tcopy SET lance_namespace.local_roots = $(q "$TABLES")"
	fi
	for w in "lance_create_table_version|{\"id\": [\"n\", \"other\"], \"version\": 2, \"manifest_path\": \"$V2_OTHER\"}" \
		"lance_batch_commit_tables|{\"operations\": [{\"create_table_version\": {\"id\": [\"n\", \"other\"], \"version\": 2, \"manifest_path\": \"$V2_OTHER\"}}]}" \
		'lance_create_table_tag|{"id": ["n", "other"], "tag": "t2", "version": 1}' \
		'lance_create_table_branch|{"id": ["n", "other"], "name": "dev"}' \
		'lance_delete_table_tag|{"id": ["n", "kept"], "tag": "t1"}'; do
		[[ "$db" == tcopy || "$w" != lance_delete_table_tag* ]] || continue # kept is dropped in copy
		same "$db: ${w%%|*} answers 15 naming lance_adopt_storage()" "LN015 lance_adopt_storage()" \
			"$(copy_write "$db" "${w%%|*}" "${w#*|}")"
	done
done
same "the live tables' files are unchanged after the copies' writes" "$LIVE_FILES" "$(files)"
# The live catalog is the one of record: its own drop removes the data.
D live -c "SELECT lance_drop_table('{\"id\": [\"n\", \"gone\"]}')" >/dev/null
out="$(D live -c 'SELECT lance_process_drops()' 2>&1) $(as_postgres test -e "$GONE" && echo present || echo removed)"
same "the live catalog's own drop removes its data" "1 removed" "$out"
# Retire the live catalog (the data stays); the copy adopts the storage.
D postgres -c 'DROP DATABASE live' -c 'DROP DATABASE tcopy'
same "lance_adopt_storage() is for administrators" "permission denied for function lance_adopt_storage" \
	"$(D copy -c "SET ROLE $ROLE" -c 'SELECT lance_adopt_storage()' 2>&1 | head -n 1 | sed 's/^ERROR:  //')"
out="$(D copy -c "SELECT lance_adopt_storage() ? 'database_oid'" -c 'SELECT lance_process_drops()' \
	-c "SELECT status FROM lance_catalog.change WHERE operation = 'DropTable'" 2>&1)"
out+=" $(as_postgres test -e "$KEPT" && echo present || echo removed)"
out+=" $(D copy -c "SELECT lance_create_table_version(jsonb_build_object('id', '[\"n\", \"other\"]'::jsonb,
	'version', 2, 'manifest_path', $(q "$V2_OTHER"))) #>> '{version,version}'" 2>&1)"
same "after lance_adopt_storage() the copy's drop proceeds and its commits write" "t
1
Succeeded removed 2" "$out"

# ---------------------------------------------------------------------------
# Upgrade from 0.1.0 to the current default version
# ---------------------------------------------------------------------------
say "upgrade from 0.1.0"
CONTROL_VERSION="$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$ROOT/lance_namespace.control")"
[[ -n "$CONTROL_VERSION" ]] || die "no default_version in $ROOT/lance_namespace.control"
D postgres -c 'CREATE DATABASE upg'
default_privileges upg
D upg -c "CREATE EXTENSION lance_namespace VERSION '0.1.0'"
same "installed extension's default version is the control file's" "$CONTROL_VERSION" \
	"$(D upg -c "SELECT default_version FROM pg_available_extensions WHERE name = 'lance_namespace'")"
# The library serves only a catalog of its own version: an older one answers
# code 17 and what to do, and is seeded with the rows of src (the columns
# 0.1.0 has) rather than through the API.
settings upg
same "a 0.1.0 catalog answers code 17 until it is updated" \
	"LN017 the catalog is at version 0.1.0, the installed library needs $CONTROL_VERSION" \
	"$(D upg -v VERBOSITY=verbose -c "SELECT lance_list_namespaces('{\"id\": []}')" 2>&1 | head -n 1 | sed 's/^ERROR:  //; s/: / /')"
declare -A COLS UPG_ROWS
for kt in "${OLD_KEYS[@]}"; do
	t="${kt%%:*}"
	COLS[$t]="$(columns_of upg "$t")"
	D src -c "\\copy (SELECT ${COLS[$t]} FROM lance_catalog.$t x $([[ $t == object ]] && echo 'WHERE x.id <> 0') ORDER BY ${kt#*:}) TO STDOUT" |
		D upg -c "\\copy lance_catalog.$t (${COLS[$t]//x./}) FROM STDIN"
	UPG_ROWS[$t]="$(rows_of upg "$t" "${kt#*:}" "${COLS[$t]}")"
done
D upg -c "SELECT setval('lance_catalog.object_id_seq', (SELECT max(id) FROM lance_catalog.object))" \
	-c "SELECT setval('lance_catalog.change_seq', (SELECT max(seq) FROM lance_catalog.change))" >/dev/null
seed_privileges upg
UPG_SEQ="$(sequences_of upg)"
UPG_PRIV="$(privileges_of upg | grep -v '^function \|^schema ')" # 0.1.0's functions may be replaced
UPG_FPRIV="$(privileges_of upg | grep '^function ')"
rc=0
out="$(D upg -c 'ALTER EXTENSION lance_namespace UPDATE' 2>&1)" || rc=$?
if ((rc == 0)); then
	pass "ALTER EXTENSION lance_namespace UPDATE${out:+ ($out)}"
else
	fail "ALTER EXTENSION lance_namespace UPDATE failed" "$out"
fi
same "extversion after the update is default_version of lance_namespace.control" "$CONTROL_VERSION" \
	"$(D upg -c "SELECT extversion FROM pg_extension WHERE extname = 'lance_namespace'")"
for kt in "${OLD_KEYS[@]}"; do
	t="${kt%%:*}"
	n="$(grep -c . <<<"${UPG_ROWS[$t]}" || true)"
	ROWS_COMPARED=$((ROWS_COMPARED + n))
	same "lance_catalog.$t after the update: $n rows intact" "${UPG_ROWS[$t]}" \
		"$(rows_of upg "$t" "${kt#*:}" "${COLS[$t]}" 2>&1)"
done
same "sequence positions after the update" "$UPG_SEQ" "$(sequences_of upg 2>&1)"
# Since 0.3.0 the API runs as the catalog's owner and callers need no
# rights on its tables: the update takes every grant on them (0.2.0 told
# DBAs to grant them), and all may use the schema and read the change log's
# filtered view.
same "function privileges after the update (has_function_privilege)" \
	"$(grep '^has_function_privilege' <<<"$UPG_PRIV")" \
	"$(privileges_of upg 2>&1 | grep '^has_function_privilege')"
same "no role but the owner holds rights on the catalog's tables after the update" \
	"lance_catalog.visible_change PUBLIC SELECT" \
	"$(D upg -c "SELECT c.oid::regclass::text || ' ' || coalesce(r.rolname, 'PUBLIC') || ' ' || a.privilege_type
	               FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
	              WHERE c.relnamespace = 'lance_catalog'::regnamespace AND a.grantee <> c.relowner ORDER BY 1")"
same "schema lance_catalog: USAGE for PUBLIC after the update" "t" \
	"$(D upg -c "SELECT has_schema_privilege('$ROLE', 'lance_catalog', 'USAGE') AND (SELECT nspacl::text LIKE '%=U/%' FROM pg_namespace WHERE nspname = 'lance_catalog')")"
# every function 0.1.0 had that still exists keeps its ACL, but for the
# administrators' functions, which 0.3.0 took from PUBLIC on purpose
after_fpriv="$(privileges_of upg 2>&1 | grep '^function ')"
kept="$(comm -12 <(sort <<<"$UPG_FPRIV" | cut -d' ' -f2) <(sort <<<"$after_fpriv" | cut -d' ' -f2) |
	grep -v '^lance_process_drops()$\|^lance_sweep_leftovers()$')"
same "function ACLs after the update ($(grep -c . <<<"$kept") functions kept)" \
	"$(grep -F -f <(sed 's/^/function /; s/$/ /' <<<"$kept") <<<"$UPG_FPRIV" | sort)" \
	"$(grep -F -f <(sed 's/^/function /; s/$/ /' <<<"$kept") <<<"$after_fpriv" | sort)"
# the update makes lance_rest anew: the grants on it stay the
# administrator's (seed_privileges', and DEFAULTS_ROLE's from the default
# privileges in force when 0.1.0 made it), which a dump of the updated
# database carries
same "a dump of the updated database keeps the grants on lance_rest" \
	"$(printf '%s\n' "GRANT ALL ON FUNCTION public.lance_rest TO $DEFAULTS_ROLE;" "GRANT ALL ON FUNCTION public.lance_rest TO $ROLE;" \
		"REVOKE ALL ON FUNCTION public.lance_rest FROM PUBLIC;" | sort)" \
	"$("$PG_BIN/pg_dump" -s -U postgres -h "$SOCK" -p "$PORT" upg 2>/dev/null |
		sed -n 's/^\(REVOKE\|GRANT\) \(.*\) ON FUNCTION public\.lance_rest(.*) \(FROM\|TO\) \(.*\)$/\1 \2 ON FUNCTION public.lance_rest \3 \4/p' | sort)"
same "lance_process_drops() is for administrators after the update" "f t" \
	"$(D upg -c "SELECT has_function_privilege('$ROLE', 'lance_process_drops()', 'EXECUTE'), has_function_privilege('lance_admin', 'lance_process_drops()', 'EXECUTE')" | tr '|' ' ')"
D postgres -c 'CREATE DATABASE fresh'
default_privileges fresh
D fresh -c 'CREATE EXTENSION lance_namespace'
same "the updated extension's objects are those of a fresh CREATE EXTENSION ($(schema_of fresh | grep -c .) objects)" \
	"$(schema_of fresh 2>&1)" "$(schema_of upg 2>&1)"
# the update leaves the rights on lance_catalog's relations and functions a
# fresh install leaves, under default privileges for another role
same "the updated catalog's ACLs are those of a fresh CREATE EXTENSION ($(catalog_acls_of fresh | grep -c .) objects)" \
	"$(catalog_acls_of fresh 2>&1)" "$(catalog_acls_of upg 2>&1)"
# (reading the filtered view is everyone's)
same "default privileges give $DEFAULTS_ROLE no rights on a fresh catalog's tables" \
	"lance_catalog.visible_change SELECT" "$(defaults_role_rights_of fresh 2>&1)"
same "default privileges give $DEFAULTS_ROLE no rights on an updated catalog's tables" \
	"lance_catalog.visible_change SELECT" "$(defaults_role_rights_of upg 2>&1)"

# A user's view over the change log's filtered view survives the update
# from 0.4.0 (which replaces the filtered view) and reads it afterwards.
D postgres -c 'CREATE DATABASE feedview' >/dev/null
D feedview -c "CREATE EXTENSION lance_namespace VERSION '0.4.0'" \
	-c 'CREATE VIEW public.my_feed AS SELECT seq, operation, objects FROM lance_catalog.visible_change' >/dev/null
rc=0
out="$(D feedview -c 'ALTER EXTENSION lance_namespace UPDATE' 2>&1)" || rc=$?
same "the update from 0.4.0 with a user's view over lance_catalog.visible_change" "0 " "$rc $out"
settings feedview
D feedview -c "SELECT lance_create_namespace('{\"id\": [\"f\"]}')" >/dev/null 2>&1 || true
same "the user's view reads the change log after the update" "CreateNamespace {f}" \
	"$(D feedview -F ' ' -c 'SELECT operation, objects FROM public.my_feed ORDER BY seq' 2>&1)"
# The update to 0.6.0 keeps what a setting made before hands out: its own
# keys (catalog_keys); a setting made after it without "vend" hands out no
# key.  (The row is written as 0.5.0's lance_set_storage wrote it: this
# library refuses to run on the 0.5.0 schema.)
# The functions the update makes anew keep their privileges exactly: a
# grant an administrator made stays, and the default privileges of the role
# running the update (here for LATE_ROLE, set after the install) add none.
D postgres -c 'CREATE DATABASE vendupg' >/dev/null
D postgres -c "CREATE ROLE $LATE_ROLE NOLOGIN" >/dev/null
D vendupg -c "CREATE EXTENSION lance_namespace VERSION '0.5.0'" \
	-c "INSERT INTO lance_catalog.storage (location, options) VALUES ('s3://old-bucket/t', '{\"aws_access_key_id\": \"AKOLD\", \"aws_secret_access_key\": \"old secret\"}')" \
	-c "GRANT EXECUTE ON FUNCTION lance_list_api_keys() TO $ROLE" \
	-c "REVOKE EXECUTE ON FUNCTION lance_rest(text, text, text, text, jsonb) FROM PUBLIC" \
	-c "ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON FUNCTIONS TO $LATE_ROLE" \
	-c 'ALTER EXTENSION lance_namespace UPDATE' >/dev/null
same "the functions made anew keep their grants, and no default privilege is added" \
	"t f f | f f f" \
	"$(D vendupg -c "SELECT string_agg(concat_ws(' ', has_function_privilege('$ROLE', f, 'EXECUTE'),
	                                         has_function_privilege('$LATE_ROLE', f, 'EXECUTE'),
	                                         has_function_privilege('public', f, 'EXECUTE')), ' | ' ORDER BY f)
	                   FROM unnest(ARRAY['lance_list_api_keys()', 'lance_rest(text, text, text, text, jsonb)']) f" 2>&1)"
# (lance_list_api_keys' initial privileges are a fresh install's by the
# same role, which its default privileges give LATE_ROLE: the dump revokes
# that, so a restore keeps the function's privileges as they are here.)
same "a dump of that database carries the grant on lance_list_api_keys and the revoke on lance_rest" \
	"$(printf '%s\n' "GRANT ALL ON FUNCTION public.lance_list_api_keys TO $ROLE;" \
		"REVOKE ALL ON FUNCTION public.lance_list_api_keys FROM $LATE_ROLE;" "REVOKE ALL ON FUNCTION public.lance_rest FROM PUBLIC;")" \
	"$("$PG_BIN/pg_dump" -s -U postgres -h "$SOCK" -p "$PORT" vendupg 2>/dev/null |
		sed -n 's/^\(REVOKE\|GRANT\) \(.*\) ON FUNCTION public\.\(lance_rest\|lance_list_api_keys\)(.*) \(FROM\|TO\) \(.*\)$/\1 \2 ON FUNCTION public.\3 \4 \5/p' | sort)"
settings vendupg
D vendupg >/dev/null <<'SQL'
SELECT lance_set_storage('{"location": "s3://new-bucket/t", "options": {"aws_access_key_id": "AKNEW", "aws_secret_access_key": "new secret"}}');
SELECT lance_create_namespace('{"id": ["v"]}');
SELECT lance_register_table('{"id": ["v", "old"], "location": "s3://old-bucket/t/old.lance"}');
SELECT lance_register_table('{"id": ["v", "new"], "location": "s3://new-bucket/t/new.lance"}');
SQL
same "the update keeps a setting's keys going to callers (catalog_keys); a new setting vends none" \
	"s3://new-bucket/t none s3://old-bucket/t catalog_keys|old secret||" \
	"$(D vendupg -c "SELECT string_agg(location || ' ' || (vend ->> 'mode'), ' ' ORDER BY location) FROM lance_catalog.storage" \
		-c "SELECT lance_describe_table('{\"id\": [\"v\", \"old\"]}') -> 'storage_options' ->> 'aws_secret_access_key'" \
		-c "SELECT lance_describe_table('{\"id\": [\"v\", \"new\"]}') -> 'storage_options' ->> 'aws_secret_access_key'" | tr '\n' '|')"

# the same rows as src: the read API answers as src's, but for the change
# feed's drop_location, which 0.1.0 did not keep
same "the read API answers after the update as the original" \
	"$(grep -v '^\[{"seq"' <<<"$SRC_ANSWERS")" "$(answers_of upg 2>&1 | grep -v '^\[{"seq"')"
# the update gives every entry its identities: an id per object, the root
# first in each object's namespaces, the role that has the entry's name
same "the update gives every change log entry its object ids and role OID" "0 t" \
	"$(D upg -c "SELECT count(*) FROM lance_catalog.change WHERE cardinality(object_ids) <> cardinality(objects) OR namespace_ids[1] <> 0 OR role_id::text <> role::text" -c "SELECT bool_and(c.object_ids[1] = o.id) FROM lance_catalog.change c JOIN lance_catalog.object o ON o.parent_id = 0 AND o.name = 'prod' WHERE c.objects = '{prod}'" | tr '\n' ' ' | sed 's/ $//')"
check_works upg "updated catalog"

# The update to 0.6.0 takes the credential-like entries out of the context
# of older entries (the log never meant to keep them), and leaves the rest,
# the headers lance_rest recorded as "header.<name>" included: they cannot
# be told from a caller's.  The new headers column is empty for them.
D postgres -c 'CREATE DATABASE scrub' >/dev/null
D scrub -c "CREATE EXTENSION lance_namespace VERSION '0.5.0'" \
	-c "INSERT INTO lance_catalog.change (operation, objects, versions, namespaces, context)
	    VALUES ('CreateNamespace', '{a}', '{NULL}', '{}', '{\"header.x-request-id\": \"r\", \"header.authorization\": \"Bearer s\", \"api_key\": \"k\", \"Session\": \"s\", \"job\": \"j\"}'),
	           ('CreateNamespace', '{b}', '{NULL}', '{}', '{\"job\": \"k\"}')" >/dev/null
rc=0
out="$(D scrub -c 'ALTER EXTENSION lance_namespace UPDATE' 2>&1)" || rc=$?
same "the update from 0.5.0 of a log whose context holds credentials" "0 " "$rc $out"
same "the update drops the credential-like context entries of older entries, and only them" \
	'{a}|{"job": "j", "header.x-request-id": "r"}|{}
{b}|{"job": "k"}|{}' \
	"$(D scrub -c 'SELECT objects, context, headers FROM lance_catalog.change ORDER BY seq' 2>&1)"

# ---------------------------------------------------------------------------
# Install and update with a hostile public schema: a role with CREATE on
# the schema the extension goes in plants operators that match the
# scripts' comparisons more closely than pg_catalog's; the superuser who
# runs CREATE EXTENSION or ALTER EXTENSION UPDATE must never call them.
# ---------------------------------------------------------------------------
say "install and update with a hostile public schema"
D postgres -c "CREATE ROLE ln_dump_hostile" >/dev/null
for v in "" 0.2.0; do
	db="hostile${v//./}"
	D postgres -c "CREATE DATABASE $db" >/dev/null
	D "$db" >/dev/null <<'SQL'
GRANT CREATE ON SCHEMA public TO ln_dump_hostile;
SET ROLE ln_dump_hostile;
CREATE FUNCTION public.hijack_oid_regnamespace(oid, regnamespace) RETURNS boolean
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE ln_dump_hostile SUPERUSER; RETURN false; END $$;
CREATE FUNCTION public.hijack_oid_int(oid, integer) RETURNS boolean
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE ln_dump_hostile SUPERUSER; RETURN false; END $$;
CREATE FUNCTION public.hijack_char_text("char", text) RETURNS boolean
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE ln_dump_hostile SUPERUSER; RETURN false; END $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regnamespace, FUNCTION = public.hijack_oid_regnamespace);
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = integer, FUNCTION = public.hijack_oid_int);
CREATE OPERATOR public.= (LEFTARG = "char", RIGHTARG = text, FUNCTION = public.hijack_char_text);
-- an unqualified nextval('...') with an untyped argument would take this
CREATE FUNCTION public.nextval(text) RETURNS bigint
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE ln_dump_hostile SUPERUSER; RETURN pg_catalog.nextval($1::regclass); END $$;
RESET ROLE;
SQL
	if [[ -z "$v" ]]; then
		D "$db" -c 'CREATE EXTENSION lance_namespace' >/dev/null
	else
		D "$db" -c "CREATE EXTENSION lance_namespace VERSION '$v'" -c 'ALTER EXTENSION lance_namespace UPDATE' >/dev/null
	fi
	# the catalog's owner writes the change log (its seq default) on every change
	D "$db" -c "SELECT lance_create_namespace('{\"id\": [\"h\"]}')" >/dev/null 2>&1 || true
	same "${v:+update from $v, }install with a hostile public: the hostile role stays no superuser" "f" \
		"$(D "$db" -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'ln_dump_hostile'")"
	D "$db" -c 'SET lance_namespace.allow_drop_extension = on' -c 'DROP EXTENSION lance_namespace' >/dev/null
	D postgres -c "ALTER ROLE ln_dump_hostile NOSUPERUSER" >/dev/null
done

# pg_dump warns of the object table's circular foreign key (a namespace's
# row refers to its parent's).  The rows are restored by one COPY and the key
# is checked after the statement, so a child stored before its parent is
# restored too: a parent overwritten when its page is full moves to a later
# page, and a child made after a VACUUM fills the space freed before it.
D postgres -c "CREATE DATABASE order_src" -c "CREATE DATABASE order_dst" >/dev/null
D order_src >/dev/null <<'SQL'
CREATE EXTENSION lance_namespace;
SELECT lance_create_namespace('{"id": ["parent"]}');
SELECT count(lance_create_namespace(jsonb_build_object('id', jsonb_build_array('filler' || i)))) FROM generate_series(1, 300) i;
SELECT lance_create_namespace('{"id": ["parent"], "mode": "overwrite", "properties": {"moved": "yes"}}');
SELECT count(lance_drop_namespace(jsonb_build_object('id', jsonb_build_array('filler' || i)))) FROM generate_series(1, 60) i;
VACUUM lance_catalog.object;
SELECT lance_create_namespace('{"id": ["parent", "child"]}');
SQL
same "the child namespace is stored before its parent" "t" \
	"$(D order_src -c "SELECT c.ctid < p.ctid FROM lance_catalog.object c JOIN lance_catalog.object p ON p.id = c.parent_id WHERE c.name = 'child'")"
dump_log="$("$PG_BIN/pg_dump" -Fc -U postgres -h "$SOCK" -p "$PORT" -d order_src -f "$WORK/order.dump" 2>&1)"
if grep -q "circular foreign-key constraints on this table" <<<"$dump_log"; then
	pass "pg_dump warns of the object table's circular foreign key, as the README says"
else
	fail "pg_dump warns of the object table's circular foreign key, as the README says" "$dump_log"
fi
rc=0
restore_log="$("$PG_BIN/pg_restore" -U postgres -h "$SOCK" -p "$PORT" -d order_dst "$WORK/order.dump" 2>&1)" || rc=$?
same "a dump with a child stored before its parent restores" "0 " "$rc $restore_log"
same "the restored parent lists its child" '{"namespaces": ["child"]}' \
	"$(D order_dst -c "SELECT lance_list_namespaces('{\"id\": [\"parent\"]}')")"

# ---------------------------------------------------------------------------
# pg_upgrade makes a new system identifier and keeps the database's oid and
# the catalog's rows: the upgraded cluster stays the catalog of record
# without lance_adopt_storage().  (The same major version on both sides:
# what changes is the cluster, as in an upgrade.)
# ---------------------------------------------------------------------------
say "pg_upgrade keeps the catalog of record"
OLD_DATA="$WORK/old"
NEW_DATA="$WORK/new"
UPORT="$(find_free_port $((PORT + 1)))"
init_cluster "$OLD_DATA" test
start_cluster "$OLD_DATA" "$UPORT" "$SOCK"
U() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -U postgres -h "$SOCK" -p "$UPORT" -d up "$@"; }
"$PG_BIN/psql" -X -q -U postgres -h "$SOCK" -p "$UPORT" -d postgres -c 'CREATE DATABASE up'
U <<SQL >/dev/null
CREATE EXTENSION lance_namespace;
ALTER DATABASE up SET lance_namespace.local_roots = $(q "$TABLES");
ALTER DATABASE up SET lance_namespace.root = $(q "$TABLES/up/auto");
SQL
U -c "SELECT lance_create_namespace('{\"id\": [\"n\"]}')" >/dev/null
UT="$(U -c "SELECT lance_declare_table('{\"id\": [\"n\", \"t\"]}') ->> 'location'")"
UG="$(U -c "SELECT lance_declare_table('{\"id\": [\"n\", \"g\"]}') ->> 'location'")"
as_postgres mkdir -p "$UT/_versions" "$UG/data"
as_postgres bash -c "echo rows >'$UG/data/0.lance'"
for v in 1 2; do
	as_postgres bash -c "cat >'$UT/_versions/${V2[$v]}.manifest-s$v'" <"$ROOT/test/fixtures/lance.manifest"
done
U -c "SELECT lance_create_table_version(jsonb_build_object('id', '[\"n\", \"t\"]'::jsonb, 'version', 1,
          'manifest_path', $(q "${UT#/}/_versions/${V2[1]}.manifest-s1")))" >/dev/null
BEFORE="$(U -F ' ' -c "SELECT system_identifier, database_oid FROM lance_catalog.identity")"
stop_cluster "$OLD_DATA"
init_cluster "$NEW_DATA" test
make_postgres_dir "$WORK/upgrade" 755
rc=0
as_postgres bash -c "cd '$WORK/upgrade' && '$PG_BIN/pg_upgrade' -b '$PG_BIN' -B '$PG_BIN' -d '$OLD_DATA' -D '$NEW_DATA' \
	-U postgres -p $UPORT -P $UPORT -s '$SOCK'" >"$WORK/pg_upgrade.log" 2>&1 || rc=$?
if ((rc == 0)); then
	pass "pg_upgrade"
else
	fail "pg_upgrade failed (exit $rc)" "$(tail -n 8 "$WORK/pg_upgrade.log")"
fi
start_cluster "$NEW_DATA" "$UPORT" "$SOCK"
same "the upgraded cluster: a new system identifier, the same database oid and identity rows" "t t $BEFORE" \
	"$(U -F ' ' -c "SELECT (SELECT system_identifier FROM pg_control_system()) <> system_identifier,
	                       database_oid = (SELECT oid FROM pg_database WHERE datname = 'up'), system_identifier, database_oid
	                  FROM lance_catalog.identity")"
out="$(U -c "SELECT lance_create_table_version(jsonb_build_object('id', '[\"n\", \"t\"]'::jsonb, 'version', 2,
                 'manifest_path', $(q "${UT#/}/_versions/${V2[2]}.manifest-s2"))) #>> '{version,version}'" \
	-c "SELECT lance_drop_table('{\"id\": [\"n\", \"g\"]}') IS NOT NULL" -c 'SELECT lance_process_drops()' 2>&1)"
out+=" $(as_postgres test -e "$UG" && echo present || echo removed)"
same "the upgraded catalog commits to managed tables and removes dropped data" "2
t
1 removed" "$out"
stop_cluster "$NEW_DATA"

SHOW_LOGS=0
echo
say "dump test: $CHECKS checks, $FAILS failed; $ROWS_COMPARED catalog rows compared; extension 0.1.0 -> $CONTROL_VERSION; $((SECONDS - START_SECONDS)) s"
if ((FAILS > 0)); then
	say "dump test FAILED"
	exit 1
fi
say "dump test passed"
