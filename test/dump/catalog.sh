# shellcheck shell=bash
# shellcheck disable=SC2034,SC2054 # its variables are for the scripts that source it; table:key lists hold commas
# The catalog test/dump seeds and the views of it that a dump and restore
# must keep, shared with test/versions (a catalog dumped from PostgreSQL 15
# and restored into a newer release).  Sourced after scripts/common.sh and
# test/lib.sh, never executed.  D <database> reaches a database of the test
# server at SOCK and PORT; a script may define its own D after sourcing.
# The seed writes its managed table's manifests below TABLES.

# the role the seed grants to
ROLE=ln_dump_reader

# D <database> [psql args]: psql on one database of the test server.
D() {
	local db="$1"
	shift
	"$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -U postgres -h "$SOCK" -p "$PORT" -d "$db" "$@"
}
q() { printf "'%s'" "${1//\'/\'\'}"; }

# same <label> <expected> <actual>: pass when equal and no error, else show both.
same() {
	if [[ "$2" == "$3" && "$2" != *ERROR:* ]]; then
		pass "$1"
	else
		fail "$1" "expected: $(head -c 600 <<<"$2")" "actual:   $(head -c 600 <<<"$3")" \
			"first difference: $(diff <(echo "$2") <(echo "$3") | grep '^[<>]' | head -n 4 | tr '\n' ' ')"
	fi
}

# a role the database's default privileges give everything made from now on
DEFAULTS_ROLE=ln_dump_defaults
# a role default privileges set after an install give functions made from then on
LATE_ROLE=ln_dump_late

# Manifest names (V2: 20-digit 2^64-1-version) for versions 1..4.
V2=(x 18446744073709551614 18446744073709551613 18446744073709551612 18446744073709551611)

# seed <database>: the catalog content, through the API, with a managed
# table in a folder of the database's own under the local root.
seed() {
	local db="$1" m="$TABLES/$1/m.lance" mp
	mp="${m#/}"
	local v
	as_postgres mkdir -p "$m/_versions" "$m/tree/dev/_versions" "$TABLES/$db/gone.lance/data"
	as_postgres bash -c "echo rows >'$TABLES/$db/gone.lance/data/0.lance'"
	# real Lance manifests, since branches fork from them (test/fixtures/lance.manifest)
	for v in 1 2 3; do
		as_postgres bash -c "cat >'$m/_versions/${V2[$v]}.manifest-s$v'" <"$ROOT/test/fixtures/lance.manifest"
	done
	as_postgres bash -c "cat >'$m/tree/dev/_versions/${V2[4]}.manifest-b4'" <"$ROOT/test/fixtures/lance.manifest"
	settings "$db"
	D "$db" >/dev/null <<SQL
SELECT lance_create_api_key(current_user) AS key \gset
SELECT lance_set_storage('{"location": "s3://dump-bucket/tables", "options": {"aws_endpoint": "https://store.example:9000", "aws_access_key_id": "AKDUMP", "aws_secret_access_key": "dump secret", "region": "eu-west-1"}}');
SELECT lance_create_namespace('{"id": ["prod"], "properties": {"owner": "ml", "tier": "gold", "location": "s3://bucket/prod"}}');
SELECT lance_create_namespace('{"id": ["prod", "vision"], "properties": {"team": "cv"}}');
SELECT lance_create_namespace('{"id": ["données"], "properties": {"note": "é ü 日本"}}');
SELECT lance_create_namespace('{"id": ["a b"]}');
SELECT lance_create_namespace('{"id": ["a b", "c.d"]}');
SELECT lance_create_namespace('{"id": ["tmp"]}');
SELECT lance_drop_namespace('{"id": ["tmp"]}');
SELECT lance_register_table('{"id": ["prod", "labels"], "location": "s3://bucket/labels.lance", "properties": {"p": "1"}}');
SELECT lance_declare_table('{"id": ["prod", "vision", "images"]}');
SELECT lance_declare_table('{"id": ["données", "tableau"], "location": "gs://b/t.lance"}');
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["prod", "labels"], "version": 1, "manifest_path": "bucket/labels.lance/_versions/1.manifest", "manifest_size": 11},
    {"id": ["prod", "labels"], "version": 2, "manifest_path": "bucket/labels.lance/_versions/2.manifest", "e_tag": "e2", "metadata": {"k": "v"}}]}');
SELECT lance_create_table_version('{"id": ["données", "tableau"], "version": 1, "manifest_path": "b/t.lance/_versions/1.manifest"}');
SELECT lance_declare_table(jsonb_build_object('id', '["prod", "m"]'::jsonb, 'location', $(q "$m")));
SELECT lance_create_table_version(jsonb_build_object('id', '["prod", "m"]'::jsonb, 'version', v,
       'manifest_path', $(q "$mp/_versions/")
           || (ARRAY['${V2[1]}', '${V2[2]}', '${V2[3]}'])[v] || '.manifest-s' || v))
  FROM generate_series(1, 3) v;
SELECT lance_create_table_tag('{"id": ["prod", "m"], "tag": "v1", "version": 1}');
SELECT lance_create_table_branch('{"id": ["prod", "m"], "name": "dev"}');
SELECT lance_create_table_version(jsonb_build_object('id', '["prod", "m"]'::jsonb, 'branch', 'dev', 'version', 4,
       'manifest_path', $(q "$mp/tree/dev/_versions/${V2[4]}.manifest-b4")));
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["prod", "bc"], "location": "s3://bucket/bc.lance"}},
    {"create_table_version": {"id": ["prod", "labels"], "version": 3, "manifest_path": "bucket/labels.lance/_versions/3.manifest"}}]}');
SELECT lance_batch_delete_table_versions('{"id": ["prod", "labels"], "ranges": [{"start_version": 1, "end_version": 2}]}');
SELECT lance_register_table('{"id": ["prod", "old"], "location": "s3://bucket/old.lance"}');
SELECT lance_rename_table('{"id": ["prod", "old"], "new_table_name": "renamed", "new_namespace_id": ["prod", "vision"]}');
SELECT lance_declare_table(jsonb_build_object('id', '["prod", "gone"]'::jsonb, 'location', $(q "$TABLES/$db/gone.lance")));
SELECT lance_drop_table('{"id": ["prod", "gone"]}');
SELECT lance_deregister_table('{"id": ["prod", "bc"]}');
SELECT status FROM lance_rest('POST', '/v1/namespace/prod%24rest/create', NULL, '{"properties": {"via": "rest"}}',
                              jsonb_build_object('x-api-key', :'key', 'X-Trace-Id', 't-1'));
SELECT lance_grant('{"id": ["prod"], "role": "$ROLE", "privilege": "read"}');
SELECT lance_grant('{"id": ["prod", "labels"], "role": "$ROLE", "privilege": "write"}');
SELECT lance_alter_transaction(jsonb_build_object('id', jsonb_build_array(
       (SELECT transaction_id::text FROM lance_catalog.change ORDER BY seq LIMIT 1)),
       'actions', '[{"setPropertyAction": {"key": "reviewed", "value": "yes"}}]'::jsonb));
-- a failed call: a gap in the change numbers
SELECT status FROM lance_rest('POST', '/v1/table/batch-commit', NULL,
  '{"operations": [{"declare_table": {"id": ["prod", "x"], "location": "s3://b/x"}}, {"deregister_table": {"id": ["prod", "missing"]}}]}', NULL);
SQL
	seed_privileges "$db"
}

# settings <database>: where its tables go; REST requests without a key act
# as the superuser (the tests call lance_rest as the gateway would).
settings() {
	D "$1" <<SQL
ALTER DATABASE "$1" SET lance_namespace.local_roots = $(q "$TABLES");
ALTER DATABASE "$1" SET lance_namespace.root = $(q "$TABLES/$1/auto");
ALTER DATABASE "$1" SET lance_namespace.anonymous_role = 'postgres';
SQL
}

# seed_privileges <database>: grants on the functions and the catalog's
# tables, which dump and restore (and an update) must keep.
seed_privileges() {
	D "$1" >/dev/null <<SQL
GRANT EXECUTE ON FUNCTION lance_describe_table(jsonb), lance_list_namespaces(jsonb) TO $ROLE;
REVOKE EXECUTE ON FUNCTION lance_drop_table(jsonb), lance_drop_namespace(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_drop_table(jsonb) TO $ROLE;
-- lance_rest for the gateway's role alone: the update to 0.6.0 makes it anew
REVOKE EXECUTE ON FUNCTION lance_rest(text, text, text, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_rest(text, text, text, text, jsonb) TO $ROLE;
GRANT USAGE ON SCHEMA lance_catalog TO $ROLE;
GRANT SELECT ON lance_catalog.object, lance_catalog.version TO $ROLE;
GRANT SELECT, INSERT ON lance_catalog.change TO $ROLE;
GRANT USAGE ON SEQUENCE lance_catalog.change_seq TO $ROLE;
SQL
}

# The catalog's rows, one per line, in key order, of the given columns (all
# by default).  Not the root namespace (id 0): CREATE EXTENSION makes it, so
# pg_dump leaves it out and its created_at is the restoring database's.
rows_of() {
	local db="$1" table="$2" key="$3" cols="${4:-x.*}" where=""
	[[ "$table" == object ]] && where="WHERE x.id <> 0"
	D "$db" -c "SELECT ROW($cols)::text FROM lance_catalog.$table x $where ORDER BY $key"
}
columns_of() {
	D "$1" -c "SELECT string_agg('x.' || quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
	           WHERE attrelid = 'lance_catalog.$2'::regclass AND attnum > 0 AND NOT attisdropped"
}
# shellcheck disable=SC2054 # table:key columns, the key comma-separated
KEYS=(object:id version:table_id,branch,version change:seq grant:object_id,role,privilege api_key:id storage:location)
# the tables 0.1.0 has
OLD_KEYS=(object:id version:table_id,branch,version change:seq)
sequences_of() {
	D "$1" -c "SELECT 'object_id_seq ' || last_value || ' ' || is_called FROM lance_catalog.object_id_seq" \
		-c "SELECT 'change_seq ' || last_value || ' ' || is_called FROM lance_catalog.change_seq"
}
# default_privileges <database>: the owner's default privileges give
# DEFAULTS_ROLE everything it makes (as a DBA's ALTER DEFAULT PRIVILEGES for
# an application's role would); the catalog must not keep them.
default_privileges() {
	D "$1" -c "ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO $DEFAULTS_ROLE" \
		-c "ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO $DEFAULTS_ROLE" \
		-c "ALTER DEFAULT PRIVILEGES GRANT ALL ON FUNCTIONS TO $DEFAULTS_ROLE" >/dev/null
}
# The ACL of every relation, sequence and function in lance_catalog.
catalog_acls_of() {
	D "$1" <<'SQL'
SELECT 'relation ' || c.oid::regclass::text || ' ' || c.relkind::text || ' ' || coalesce(c.relacl::text, 'default')
  FROM pg_class c WHERE c.relnamespace = 'lance_catalog'::regnamespace AND c.relkind IN ('r', 'S', 'v', 'p', 'm')
UNION ALL
SELECT 'function ' || p.oid::regprocedure::text || ' ' || coalesce(p.proacl::text, 'default')
  FROM pg_proc p WHERE p.pronamespace = 'lance_catalog'::regnamespace
ORDER BY 1;
SQL
}
# What DEFAULTS_ROLE may do with lance_catalog's tables, views and sequences.
defaults_role_rights_of() {
	D "$1" -c "SELECT c.oid::regclass::text || ' ' || p
	             FROM pg_class c, unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
	            WHERE c.relnamespace = 'lance_catalog'::regnamespace AND c.relkind IN ('r', 'v', 'p', 'm')
	              AND has_table_privilege('$DEFAULTS_ROLE', c.oid, p)
	           UNION ALL
	           SELECT c.oid::regclass::text || ' ' || p
	             FROM pg_class c, unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) p
	            WHERE c.relnamespace = 'lance_catalog'::regnamespace AND c.relkind = 'S'
	              AND has_sequence_privilege('$DEFAULTS_ROLE', c.oid, p)
	           ORDER BY 1"
}
# Every privilege that matters: the API functions, the catalog's schema, tables and sequences.
privileges_of() {
	D "$1" <<SQL
SELECT 'function ' || p.oid::regprocedure::text || ' ' || coalesce(p.proacl::text, 'default')
  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'lance_namespace' ORDER BY 1;
SELECT 'schema lance_catalog ' || coalesce(nspacl::text, 'default') FROM pg_namespace WHERE nspname = 'lance_catalog';
SELECT 'relation ' || c.oid::regclass::text || ' ' || coalesce(c.relacl::text, 'default')
  FROM pg_class c WHERE c.relnamespace = 'lance_catalog'::regnamespace AND c.relkind IN ('r', 'S') ORDER BY 1;
SELECT 'has_function_privilege ' || f || ' ' || has_function_privilege('$ROLE', f, 'EXECUTE')
  FROM unnest(ARRAY['lance_describe_table(jsonb)', 'lance_list_namespaces(jsonb)', 'lance_drop_table(jsonb)',
                    'lance_drop_namespace(jsonb)', 'lance_create_namespace(jsonb)',
                    'lance_rest(text, text, text, text, jsonb)']) f;
SELECT 'has_table_privilege ' || t || ' ' || p || ' ' || has_table_privilege('$ROLE', t, p)
  FROM unnest(ARRAY['lance_catalog.object', 'lance_catalog.version', 'lance_catalog.change']) t,
       unnest(ARRAY['SELECT', 'INSERT', 'DELETE']) p ORDER BY 1;
SQL
}
# The extension's objects as a fresh CREATE EXTENSION of the current version
# makes them: functions, the catalog's columns, constraints and indexes, the
# tables and conditions pg_dump keeps.  An upgraded database must match.
schema_of() {
	D "$1" <<'SQL'
WITH members AS (SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
                  WHERE e.extname = 'lance_namespace' AND d.deptype = 'e')
SELECT 'function ' || p.oid::regprocedure::text || ' returns ' || pg_get_function_result(p.oid)
       || ' ' || p.provolatile::text || p.proisstrict::text || p.prosecdef::text || ' ' || p.prolang::regproc::text
       || ' ' || md5(p.prosrc || coalesce(p.probin, ''))
  FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
UNION ALL
SELECT 'relation ' || c.oid::regclass::text || ' ' || c.relkind::text
  FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
UNION ALL
SELECT 'column ' || a.attrelid::regclass::text || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '')
       || coalesce(' collate ' || co.collname, '') || CASE WHEN a.attidentity <> '' THEN ' identity ' || a.attidentity::text ELSE '' END
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
  LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0 AND co.collname <> 'default'
 WHERE c.relnamespace = 'lance_catalog'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint WHERE connamespace = 'lance_catalog'::regnamespace
UNION ALL
SELECT 'index ' || pg_get_indexdef(indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relnamespace = 'lance_catalog'::regnamespace
UNION ALL
SELECT 'config ' || cfg::regclass::text || ' ' || coalesce(cond, '')
  FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS u(cfg, cond) WHERE e.extname = 'lance_namespace'
ORDER BY 1;
SQL
}
# Answers of the read API that must not change (no time-dependent values).
answers_of() {
	D "$1" <<'SQL'
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_list_namespaces('{"id": ["prod"]}');
SELECT lance_describe_namespace('{"id": ["prod"]}');
SELECT lance_describe_namespace('{"id": ["données"]}');
SELECT lance_list_all_tables('{}');
SELECT lance_list_tables('{"id": ["prod", "vision"]}');
SELECT lance_describe_table('{"id": ["prod", "labels"], "with_table_uri": true, "check_declared": true}');
SELECT lance_describe_table('{"id": ["prod", "vision", "images"], "check_declared": true}');
SELECT lance_describe_table('{"id": ["prod", "m"], "tag": "v1"}');
SELECT lance_list_table_versions('{"id": ["prod", "labels"]}');
SELECT lance_list_table_versions('{"id": ["prod", "m"]}');
SELECT lance_list_table_versions('{"id": ["prod", "m"], "branch": "dev"}');
SELECT lance_describe_table_version('{"id": ["prod", "m"], "branch": "dev"}');
SELECT lance_list_table_branches('{"id": ["prod", "m"]}');
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(
       (SELECT transaction_id::text FROM lance_catalog.change ORDER BY seq LIMIT 1))));
SELECT status || ' ' || response_body FROM lance_rest('POST', '/v1/table/prod%24vision%24renamed/describe', NULL, NULL, NULL);
-- (without the members 0.5.0 added, the entries' identities: checked apart after the update)
SELECT json_agg(to_jsonb(c) - '{object_ids,namespace_ids,role_id}'::text[] ORDER BY c.seq) FROM lance_changes() c;
SQL
}
# The catalog works: the next version, a new namespace, the log continues.
check_works() {
	local db="$1" what="$2" out rc=0
	out="$(D "$db" <<'SQL' 2>&1
SELECT max(seq) AS seq_before FROM lance_catalog.change \gset
SELECT (lance_create_table_version('{"id": ["prod", "labels"], "version": 4, "manifest_path": "bucket/labels.lance/_versions/4.manifest"}')
        #>> '{version,version}') = '4';
SELECT lance_describe_table_version('{"id": ["prod", "labels"]}') #>> '{version,version}' = '4';
SELECT lance_create_namespace('{"id": ["after"], "properties": {"x": "y"}}') ? 'transaction_id';
SELECT lance_declare_table('{"id": ["after", "t"], "location": "s3://bucket/after/t.lance"}') ->> 'location' = 's3://bucket/after/t.lance';
SELECT lance_describe_table('{"id": ["after", "t"], "check_declared": true}') ->> 'is_only_declared' = 'true';
SELECT array_agg(operation ORDER BY seq) = '{CreateTableVersion,CreateNamespace,DeclareTable}' FROM lance_changes(:seq_before) c;
SELECT (SELECT count(*) FROM lance_catalog.change) = (SELECT count(*) FROM lance_changes());
SELECT status = 200 FROM lance_rest('POST', '/v1/table/prod%24labels/version/describe', NULL, '{"version": 4}', NULL);
SQL
)" || rc=$?
	if ((rc == 0)) && [[ "$(sort -u <<<"$out")" == t ]]; then
		pass "$what: next version, new namespace and table, change log continues, REST"
	else
		fail "$what: the catalog does not work" "$(tr '\n' ' ' <<<"$out")"
	fi
}
