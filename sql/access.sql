--
-- Access control: callers are roles; read, write and manage on namespaces
-- (inherited below) and tables; API keys for REST; callers need only
-- EXECUTE, never rights on the catalog's tables.
--
SET lance_namespace.local_roots = '';
SET lance_namespace.root = '';

CREATE ROLE regress_ln_none;
CREATE ROLE regress_ln_reader;
CREATE ROLE regress_ln_writer;
CREATE ROLE regress_ln_manager;
CREATE ROLE regress_ln_admin IN ROLE lance_admin;
-- the gateway's pattern: a login role that owns nothing
CREATE ROLE regress_ln_gateway NOINHERIT;

SELECT lance_create_namespace('{"id": ["acl"]}') - 'transaction_id' AS created;
SELECT lance_create_namespace('{"id": ["acl", "sub"]}') - 'transaction_id' AS created;
SELECT lance_create_namespace('{"id": ["acl_other"]}') - 'transaction_id' AS created;
SELECT lance_register_table('{"id": ["acl", "t"], "location": "s3://b/acl/t"}') - 'transaction_id' AS registered;
SELECT lance_register_table('{"id": ["acl", "sub", "deep"], "location": "s3://b/acl/deep"}') - 'transaction_id' AS registered;
SELECT lance_register_table('{"id": ["acl_other", "o"], "location": "s3://b/other/o"}') - 'transaction_id' AS registered;
SELECT lance_create_table_version('{"id": ["acl", "t"], "version": 1, "manifest_path": "m/1"}') #> '{version,version}' AS version;

SELECT lance_grant('{"id": ["acl"], "role": "regress_ln_reader", "privilege": "read"}') - 'transaction_id' AS granted;
SELECT lance_grant('{"id": ["acl"], "role": "regress_ln_writer", "privilege": "write"}') - 'transaction_id' AS granted;
SELECT lance_grant('{"id": ["acl"], "role": "regress_ln_manager", "privilege": "manage"}') - 'transaction_id' AS granted;
-- granting again changes nothing and logs nothing
SELECT lance_grant('{"id": ["acl"], "role": "regress_ln_reader", "privilege": "read"}') AS again;
SELECT g AS grants_on_acl
  FROM jsonb_array_elements(lance_list_grants('{"id": ["acl"]}') -> 'grants') g
 WHERE g ->> 'role' <> current_user;
-- each grant is an entry of the change log, by whom and what
SELECT operation, objects, properties, role::text = current_user AS by_me
  FROM lance_catalog.change WHERE operation IN ('Grant', 'Revoke') AND objects[1] LIKE 'acl%' ORDER BY seq;
-- the creator (this superuser session) holds manage on what it made
SELECT g ->> 'privilege' AS creator_holds
  FROM jsonb_array_elements(lance_list_grants('{"id": ["acl", "t"]}') -> 'grants') g
 WHERE g ->> 'role' = current_user;

--
-- The database boundary: callers hold no rights on the catalog's tables, so
-- they cannot write the catalog, forge the log, queue a drop or read keys.
--
SET ROLE regress_ln_manager;
INSERT INTO lance_catalog.change (operation, objects, versions, namespaces, status, drop_location)
VALUES ('DropTable', '{x}', '{NULL}', '{}', 'Queued', '/');
UPDATE lance_catalog.change SET role = 'postgres';
DELETE FROM lance_catalog.object WHERE id <> 0;
INSERT INTO lance_catalog.grant (object_id, role, privilege) VALUES (0, 'regress_ln_manager', 'manage');
SELECT * FROM lance_catalog.api_key;
SELECT * FROM lance_catalog.object;
-- what only administrators may run
SELECT lance_process_drops();
SELECT lance_sweep_leftovers();
SELECT lance_create_api_key('regress_ln_manager');
SELECT * FROM lance_list_api_keys();
RESET ROLE;

--
-- Every operation of the registry against roles without its privilege:
-- one that cannot read answers not-found (nothing leaks), one that can read
-- but lacks the privilege answers LN015, and a batch touching one object
-- the caller may not write fails whole with LN015.  Each call runs as the
-- role, in a transaction rolled back afterwards.
--
CREATE FUNCTION pg_temp.answer_as(role text, fn text, request jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    state text;
BEGIN
    EXECUTE pg_catalog.format('SET LOCAL ROLE %I', role);
    EXECUTE pg_catalog.format('SELECT %I($1)', fn) USING request;
    -- undo what the call did, so that every call finds the same catalog
    RAISE EXCEPTION 'done' USING ERRCODE = 'ZX001';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
    RETURN CASE state WHEN 'ZX001' THEN 'ok' ELSE state END;
END
$$;
-- A request naming the objects above: the namespace acl, its table t, a new
-- name in it, and a batch touching acl$t and acl_other$o.
CREATE FUNCTION pg_temp.request_for(op text, path text, tx text) RETURNS jsonb
LANGUAGE sql AS $$
SELECT jsonb_build_object(
    'id', CASE
        WHEN op = 'CreateNamespace' THEN '["acl", "new_ns"]'::jsonb
        WHEN op IN ('DeclareTable', 'RegisterTable', 'CreateTable') THEN '["acl", "new_t"]'
        WHEN path LIKE '/v1/namespace/%' THEN '["acl"]'
        WHEN path LIKE '/v1/transaction/%' THEN jsonb_build_array(tx)
        ELSE '["acl", "t"]' END,
    'location', 's3://b/acl/new_t', 'manifest_path', 'm/2', 'new_table_name', 't_renamed',
    'version', CASE WHEN op = 'CreateTableVersion' THEN 2 ELSE 1 END)
 || CASE WHEN op LIKE '%Tag%' THEN '{"tag": "v1"}'::jsonb
         WHEN op LIKE '%Branch' THEN '{"name": "br"}'::jsonb ELSE '{}' END
 || jsonb_build_object(
    'ranges', '[{"start_version": 1, "end_version": 2}]'::jsonb,
    'entries', '[{"id": ["acl", "t"], "version": 3, "manifest_path": "m/3"},
                 {"id": ["acl_other", "o"], "version": 1, "manifest_path": "o/1"}]'::jsonb,
    'operations', '[{"create_table_version": {"id": ["acl", "t"], "version": 4, "manifest_path": "m/4"}},
                    {"create_table_version": {"id": ["acl_other", "o"], "version": 2, "manifest_path": "o/2"}}]'::jsonb,
    'actions', '[{"setPropertyAction": {"key": "k", "value": "v"}}]'::jsonb)
$$;
SELECT lance_create_namespace('{"id": ["acl_tx"]}') ->> 'transaction_id' AS tx \gset

SELECT o.operation_id, o.privilege,
       pg_temp.answer_as('regress_ln_none', o.sql_function, r.request) AS no_grant,
       pg_temp.answer_as('regress_ln_reader', o.sql_function, r.request) AS read,
       pg_temp.answer_as('regress_ln_writer', o.sql_function, r.request) AS write,
       pg_temp.answer_as('regress_ln_manager', o.sql_function, r.request) AS manage,
       pg_temp.answer_as('regress_ln_admin', o.sql_function, r.request) AS admin
  FROM lance_operations() o,
       LATERAL (SELECT pg_temp.request_for(o.operation_id, o.http_path, :'tx') AS request) r
 WHERE o.served
 ORDER BY o.privilege, o.operation_id;

--
-- Listings leave out what the caller cannot read, and what it cannot read
-- does not exist for it: describing it answers not-found, as for a name
-- nobody uses.  A grant on a table lets the role find it (ListAllTables)
-- and describe it; the namespaces above it stay unseen, listed or described.
--
CREATE ROLE regress_ln_one_table;
SELECT lance_grant('{"id": ["acl", "sub", "deep"], "role": "regress_ln_one_table", "privilege": "read"}') ->> 'changed' AS granted;
SET ROLE regress_ln_one_table;
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_list_all_tables('{}');
SELECT lance_list_tables('{"id": ["acl", "sub"]}');
SELECT lance_describe_table('{"id": ["acl", "sub", "deep"]}') ->> 'location' AS readable;
SELECT lance_describe_table('{"id": ["acl", "t"]}');
SELECT lance_describe_table('{"id": ["acl", "no_such_table"]}');
SELECT lance_describe_namespace('{"id": ["acl"]}');
SELECT lance_describe_namespace('{"id": ["no_such_namespace"]}');
SELECT lance_list_tables('{"id": ["acl"]}');
SELECT lance_list_tables('{"id": ["acl_other"]}');
-- the root exists for every caller: making something in it without write
-- on it is code 15, not a root that "does not exist"
SELECT lance_create_namespace('{"id": ["acl_top"]}');
SELECT lance_declare_table('{"id": ["acl_top_table"]}');
RESET ROLE;
SET ROLE regress_ln_reader;
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_list_namespaces('{"id": ["acl"]}');
SELECT lance_list_all_tables('{}');
RESET ROLE;

--
-- Writers: what they make is theirs to manage; a batch touching one object
-- they may not write fails whole and changes nothing.
--
SET ROLE regress_ln_writer;
SELECT lance_declare_table('{"id": ["acl", "mine"], "location": "s3://b/acl/mine"}') ->> 'location' AS declared;
SELECT lance_list_grants('{"id": ["acl", "mine"]}') -> 'grants' AS grants;
SELECT lance_drop_table('{"id": ["acl", "t"]}');
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["acl", "t"], "version": 7, "manifest_path": "m/7"},
    {"id": ["acl_other", "o"], "version": 7, "manifest_path": "o/7"}]}');
SELECT lance_describe_table_version('{"id": ["acl", "t"], "version": 7}');
SELECT lance_grant('{"id": ["acl"], "role": "regress_ln_none", "privilege": "read"}');
SELECT lance_grant('{"id": ["acl", "mine"], "role": "regress_ln_none", "privilege": "read"}') ->> 'changed' AS granted_on_mine;
-- replacing what it may not manage, however the mode is spelled
SELECT lance_register_table('{"id": ["acl", "t"], "location": "s3://evil/t", "mode": "Overwrite"}');
SELECT lance_register_table('{"id": ["acl", "t"], "location": "s3://evil/t", "mode": "over_write"}');
SELECT lance_create_namespace('{"id": ["acl", "sub"], "mode": "OVERWRITE_", "properties": {"location": "/evil"}}');
SELECT lance_describe_table('{"id": ["acl", "t"]}') ->> 'location' AS still;
SELECT lance_drop_table('{"id": ["acl", "mine"]}') ->> 'location' AS dropped_mine;
RESET ROLE;
-- grants on what is gone went with it
SELECT count(*) AS grants_left FROM lance_catalog.grant g
  JOIN lance_catalog.object o ON o.id = g.object_id WHERE o.name = 'mine';

-- A rename makes a name in a namespace: write on it, even the table's own.
SELECT lance_grant('{"id": ["acl", "t"], "role": "regress_ln_reader", "privilege": "manage"}') ->> 'changed' AS granted;
SET ROLE regress_ln_reader;
SELECT lance_rename_table('{"id": ["acl", "t"], "new_table_name": "t2"}');
RESET ROLE;
SELECT lance_revoke('{"id": ["acl", "t"], "role": "regress_ln_reader", "privilege": "manage"}') ->> 'changed' AS revoked;

-- Bad grant requests: LN013.
SELECT lance_grant('{"id": ["acl"], "role": "regress_ln_none", "privilege": "own"}');
SELECT lance_grant('{"id": ["acl"], "role": "regress_no_such_role", "privilege": "read"}');
SELECT lance_grant('{"id": ["acl"], "privilege": "read"}');
SELECT lance_grant('{"role": "regress_ln_none", "privilege": "read"}');
SELECT lance_revoke('{"id": ["acl"], "role": "regress_ln_manager", "privilege": "manage"}') - 'transaction_id' AS revoked;
SELECT lance_revoke('{"id": ["acl"], "role": "regress_ln_manager", "privilege": "manage"}') AS revoked_again;
SET ROLE regress_ln_manager;
SELECT lance_describe_namespace('{"id": ["acl"]}');
RESET ROLE;

--
-- The change feed shows a caller the entries it made and those on objects
-- it can read; the log records who made each.
--
SELECT max(seq) AS feed_start FROM lance_catalog.change \gset
SELECT lance_create_table_version('{"id": ["acl", "t"], "version": 2, "manifest_path": "m/2"}') ? 'transaction_id' AS acl_change;
SELECT lance_create_table_version('{"id": ["acl_other", "o"], "version": 1, "manifest_path": "o/1"}') ? 'transaction_id' AS other_change;
SET ROLE regress_ln_writer;
SELECT lance_create_table_version('{"id": ["acl", "t"], "version": 3, "manifest_path": "m/3"}') ? 'transaction_id' AS writer_change;
RESET ROLE;
-- one entry on acl$t and acl_other$o: the reader may not see acl_other's name
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["acl", "t"], "version": 4, "manifest_path": "m/4"},
    {"id": ["acl_other", "o"], "version": 2, "manifest_path": "o/2"}]}') ? 'transaction_id' AS mixed_change;
SET ROLE regress_ln_reader;
SELECT operation, objects, versions, role = current_user AS by_me,
       role::text IN ('regress_ln_writer', 'regress_ln_reader') AS by_role
  FROM lance_changes(:feed_start, 100) ORDER BY seq;
RESET ROLE;
SET ROLE regress_ln_none;
-- no entry, and the last row carries only the position the reader scanned to
SELECT count(*) FILTER (WHERE operation IS NOT NULL) AS entries_seen,
       count(*) FILTER (WHERE operation IS NULL AND objects IS NULL AND role IS NULL
                          AND seq IS NOT NULL) AS position_rows
  FROM lance_changes(:feed_start, 100);
RESET ROLE;
SELECT operation, objects, role::text = current_user AS by_superuser FROM lance_changes(:feed_start, 100) ORDER BY seq;
-- a non-administrator cannot queue a folder for removal through its own entries
SET ROLE regress_ln_writer;
SELECT lance_alter_transaction(jsonb_build_object('id', jsonb_build_array(
    (SELECT transaction_id::text FROM lance_changes(:feed_start, 100) WHERE role = current_user)),
    'actions', '[{"setStatusAction": {"status": "Queued"}}]'::jsonb));
-- nor rewrite what its own entries say happened: a committed entry's
-- status is final (LN019); a note beside it is the caller's to add
DO $$
BEGIN
    PERFORM lance_alter_transaction(jsonb_build_object('id', jsonb_build_array(
        (SELECT transaction_id::text FROM lance_changes(0, 100000) WHERE role = current_user LIMIT 1)),
        'actions', '[{"setStatusAction": {"status": "Failed"}}]'::jsonb));
    RAISE NOTICE 'own entry set Failed';
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'own entry: %', SQLSTATE;
END
$$;
SELECT lance_alter_transaction(jsonb_build_object('id', jsonb_build_array(
    (SELECT transaction_id::text FROM lance_changes(:feed_start, 100) WHERE role = current_user)),
    'actions', '[{"setPropertyAction": {"key": "note", "value": "mine"}}]'::jsonb)) AS own_entry;
RESET ROLE;

-- Reading the feed costs one look-up per entry, those the reader may not
-- see included (they are no gaps): 600 entries, every other one hidden
-- from the reader, are checked 600 times (187,521 times when hidden entries
-- counted as gaps).  Counted, not timed: valgrind (test/memory) runs it 20
-- to 50 times slower.
SELECT max(seq) AS feed_start FROM lance_catalog.change \gset
SELECT count(lance_create_table_version(jsonb_build_object(
           'id', CASE WHEN v % 2 = 0 THEN '["acl", "t"]' ELSE '["acl_other", "o"]' END::jsonb,
           'version', v, 'manifest_path', 'm/' || v))) AS entries
  FROM generate_series(100, 699) v;
SET track_functions = 'all';
SELECT pg_stat_reset_single_function_counters('lance_catalog.may_read_change(bigint[], bigint[], regrole, name)'::regprocedure);
SET ROLE regress_ln_reader;
SELECT count(*) FILTER (WHERE operation IS NOT NULL) AS seen, min(versions[1]) AS first,
       max(versions[1]) AS last,
       bool_and(objects = '{acl$t}') FILTER (WHERE operation IS NOT NULL) AS only_readable,
       count(*) FILTER (WHERE operation IS NULL) AS position_rows
  FROM lance_changes(:feed_start, 1000);
RESET ROLE;
-- one check per entry, each entry once
SELECT pg_stat_force_next_flush();
SELECT calls AS entries_checked FROM pg_stat_user_functions WHERE funcname = 'may_read_change';
RESET track_functions;

--
-- API keys: lance_rest acts as the key's role.  Without a key (and no
-- anonymous role) it answers 401 with code 16.  The key is the authority:
-- the calling role (the gateway's, a member of no role) needs nothing more.
--
SELECT lance_create_api_key('regress_ln_reader') AS reader_key \gset
SELECT lance_create_api_key('regress_no_such_role');
SELECT :'reader_key' ~ '^lnk_[0-9a-f]{12}_[0-9a-f]{64}$' AS key_format;
SELECT role, created_by::text = current_user AS by_me, id = substr(:'reader_key', 1, 16) AS id_is_prefix
  FROM lance_list_api_keys();
-- only the hash is kept
SELECT count(*) AS keys_stored_in_clear FROM lance_catalog.api_key
 WHERE position(substr(:'reader_key', 18) IN (id || role::text || encode(key_hash, 'hex'))) > 0;

SET ROLE regress_ln_gateway;
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL, NULL);
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
                                             '{"x-api-key": "lnk_000000000000_00"}');
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
                                             jsonb_build_object('x-api-key', :'reader_key'));
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
                                             jsonb_build_object('authorization', 'Bearer ' || :'reader_key'));
-- a read-only key cannot commit, and what it cannot read is not there
SELECT status, response_body FROM lance_rest('POST', '/v1/table/acl%24t/version/create', NULL,
                                             '{"version": 9, "manifest_path": "m/9"}',
                                             jsonb_build_object('x-api-key', :'reader_key'));
SELECT status, response_body FROM lance_rest('POST', '/v1/table/acl_other%24o/describe', NULL, '{}',
                                             jsonb_build_object('x-api-key', :'reader_key'));
RESET ROLE;
-- an anonymous role, when an administrator sets one
SET lance_namespace.anonymous_role = 'regress_ln_reader';
SET ROLE regress_ln_gateway;
SELECT status, response_body::jsonb -> 'namespaces' AS namespaces FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL, NULL);
RESET ROLE;
RESET lance_namespace.anonymous_role;
-- a revoked key is refused
SELECT lance_revoke_api_key(substr(:'reader_key', 1, 16)) AS revoked;
SELECT lance_revoke_api_key(substr(:'reader_key', 1, 16)) AS revoked_again;
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
                                             jsonb_build_object('x-api-key', :'reader_key'));
-- a key that expires works until then, and then answers 401 with code 16
-- saying it expired; lance_list_api_keys shows when, and when it was last
-- used, which a request notes at most once a minute
SELECT lance_create_api_key('regress_ln_reader', '1 hour') AS hour_key \gset
SELECT lance_create_api_key('regress_ln_reader', NULL) AS forever_key \gset
SELECT lance_create_api_key('regress_ln_reader', '-1 minute');
SELECT id = substr(:'hour_key', 1, 16) AS hour_key, expires_at - created_at AS valid_for,
       last_used_at IS NULL AS unused
  FROM lance_list_api_keys() WHERE id IN (substr(:'hour_key', 1, 16), substr(:'forever_key', 1, 16))
 ORDER BY expires_at NULLS LAST;
SET ROLE regress_ln_gateway;
SELECT status FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
                              jsonb_build_object('x-api-key', :'hour_key'));
RESET ROLE;
SELECT last_used_at = created_at AS unused, last_used_at IS NOT NULL AS used
  FROM lance_list_api_keys() WHERE id = substr(:'hour_key', 1, 16);
SELECT xmin AS noted FROM lance_catalog.api_key WHERE id = substr(:'hour_key', 1, 16) \gset
SET ROLE regress_ln_gateway;
SELECT status FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
                              jsonb_build_object('x-api-key', :'hour_key'));
RESET ROLE;
SELECT xmin = :'noted' AS not_written_again FROM lance_catalog.api_key WHERE id = substr(:'hour_key', 1, 16);
UPDATE lance_catalog.api_key SET expires_at = now() - interval '1 second' WHERE id = substr(:'hour_key', 1, 16);
SET ROLE regress_ln_gateway;
SELECT status, response_body, key_id IS NULL AS logged_as_none
  FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL, jsonb_build_object('x-api-key', :'hour_key'));
RESET ROLE;
SELECT lance_revoke_api_key(:'hour_key') AND lance_revoke_api_key(:'forever_key') AS revoked;
-- an administrator that is no superuser manages keys, but not a superuser's
SET ROLE regress_ln_admin;
SELECT lance_create_api_key('regress_ln_writer') AS writer_key \gset
SELECT :'writer_key' ~ '^lnk_' AS made;
SELECT lance_create_api_key('postgres');
SELECT count(*) AS keys FROM lance_list_api_keys();
RESET ROLE;
-- a key's id with another secret, and the key of a role dropped since: refused
CREATE ROLE regress_ln_gone;
SELECT lance_create_api_key('regress_ln_gone') AS gone_key \gset
DROP ROLE regress_ln_gone;
SET ROLE regress_ln_gateway;
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
       jsonb_build_object('x-api-key', left(:'writer_key', 17)
                          || translate(substr(:'writer_key', 18), '0123456789abcdef', '123456789abcdef0')));
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
                                             jsonb_build_object('x-api-key', :'gone_key'));
SELECT status FROM lance_rest('GET', '/v1/namespace/acl/list', NULL, NULL,
                              jsonb_build_object('x-api-key', :'writer_key'));
RESET ROLE;
SELECT lance_revoke_api_key(:'gone_key') AS revoked;

--
-- Drops: the catalog removes only folders it chose.  A table registered at
-- a folder (any folder a writer names) is dropped from the catalog, and its
-- folder stays; lance_process_drops() has nothing to do for it.
--
\! rm -rf /tmp/lance_namespace_access && mkdir -p /tmp/lance_namespace_access/root/team/someone_elses && echo data > /tmp/lance_namespace_access/root/team/someone_elses/file && chmod -R 777 /tmp/lance_namespace_access
SET lance_namespace.local_roots = '/tmp/lance_namespace_access/root';
SET lance_namespace.root = '/tmp/lance_namespace_access/root';
-- a writer places no table at a folder of its choice there (the catalog
-- chooses), nor lets the catalog's choice land in another table's folder
SET ROLE regress_ln_writer;
SELECT lance_register_table('{"id": ["acl", "mine2"], "location": "/tmp/lance_namespace_access/root/team/free"}');
-- however the file URI is spelled, as Lance reads it
SELECT lance_register_table('{"id": ["acl", "mine2"], "location": "FILE:///tmp/lance_namespace_access/root/team/free"}');
SELECT lance_register_table('{"id": ["acl", "mine2"], "location": "file:/tmp/lance_namespace_access/root/team/free"}');
SELECT lance_register_table('{"id": ["acl", "mine2"], "location": "file://localhost/tmp/lance_namespace_access/root/team/free"}');
SELECT lance_declare_table('{"id": ["acl", "mine2"], "location": "file:///tmp/lance_namespace_access/root/acl/../team/someone_elses/x"}');
SELECT lance_declare_table('{"id": ["acl", "derived"]}') ->> 'location' LIKE '/tmp/lance_namespace_access/root/acl/derived%' AS derived;
RESET ROLE;
-- an administrator may; a table registered at a folder is dropped from the
-- catalog, and its folder stays
SELECT lance_register_table('{"id": ["acl", "grab"], "location": "/tmp/lance_namespace_access/root/team/someone_elses"}') ->> 'location' AS registered;
SELECT lance_register_table('{"id": ["acl", "nest"], "location": "/tmp/lance_namespace_access/root/acl/nest.lance"}') ->> 'location' AS registered;
SET ROLE regress_ln_writer;
-- a namespace named like that table's folder: the catalog's choice would be inside it
SELECT lance_create_namespace('{"id": ["acl", "nest.lance"]}') - 'transaction_id' AS created;
SELECT pg_temp.answer_as('regress_ln_writer', 'lance_declare_table', '{"id": ["acl", "nest.lance", "t"]}') AS declared;
-- a namespace whose tables would go inside it: a location below the local roots is an
-- administrator's to give (15), so the writer's tables never get there
SELECT lance_create_namespace('{"id": ["acl", "nest_ns"], "properties": {"location": "/tmp/lance_namespace_access/root/team/someone_elses"}}') - 'transaction_id' AS created;
SELECT lance_drop_table('{"id": ["acl", "derived"]}') ->> 'location' LIKE '/tmp/lance_namespace_access/root/acl/derived%' AS dropped;
RESET ROLE;
SELECT lance_drop_table('{"id": ["acl", "grab"]}') ->> 'location' AS dropped;
RESET ROLE;
SELECT objects, status FROM lance_catalog.change WHERE operation = 'DropTable' AND objects[1] IN ('acl$grab', 'acl$derived') ORDER BY seq;
SELECT lance_process_drops() >= 1 AS processed;
\! cat /tmp/lance_namespace_access/root/team/someone_elses/file
RESET lance_namespace.local_roots;
RESET lance_namespace.root;

--
-- A role with CREATE on public cannot catch the catalog's statements,
-- which run as the catalog's owner with search_path pg_catalog.
--
CREATE ROLE regress_ln_evil;
GRANT CREATE ON SCHEMA public TO regress_ln_evil;
SELECT lance_grant('{"id": ["acl"], "role": "regress_ln_evil", "privilege": "write"}') ->> 'changed' AS granted;
SET ROLE regress_ln_evil;
CREATE FUNCTION public.pg_has_role(oid, oid, text) RETURNS boolean
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE regress_ln_evil SUPERUSER; RETURN true; END $$;
CREATE FUNCTION public.sha256(bytea) RETURNS bytea
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE regress_ln_evil SUPERUSER; RETURN $1; END $$;
CREATE FUNCTION public.evil_eq(oid, integer) RETURNS boolean
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE regress_ln_evil SUPERUSER; RETURN true; END $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = integer, FUNCTION = public.evil_eq);
CREATE FUNCTION public.jsonb_object(text[], text[]) RETURNS jsonb
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE regress_ln_evil SUPERUSER; RETURN '{}'; END $$;
SET search_path = public, pg_catalog;
SELECT lance_create_namespace('{"id": ["acl", "evil"], "properties": {"a": "b"}}') - 'transaction_id' AS created;
SELECT lance_list_namespaces('{"id": ["acl"]}');
SELECT lance_list_all_tables('{}') -> 'tables' AS tables;
SELECT lance_declare_table('{"id": ["acl", "evil", "t"], "location": "s3://b/evil"}') ->> 'location' AS declared;
SELECT count(*) >= 0 AS feed_read FROM lance_changes(0, 10);
CREATE FUNCTION public.evil_ne(text, text) RETURNS boolean
    LANGUAGE plpgsql AS $$ BEGIN ALTER ROLE regress_ln_evil SUPERUSER; RETURN true; END $$;
CREATE OPERATOR public.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = public.evil_ne);
RESET ROLE;
RESET search_path;
-- a superuser's first read of the feed in a session with that schema first
\c -
SET search_path = public, pg_catalog;
SELECT count(*) >= 0 AS feed_read_by_superuser FROM lance_changes(0, 10);
RESET search_path;
SELECT rolsuper AS evil_became_superuser FROM pg_roles WHERE rolname = 'regress_ln_evil';

--
-- Clean up.
--
SELECT lance_drop_namespace('{"id": ["acl"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_drop_namespace('{"id": ["acl_other"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_drop_namespace('{"id": ["acl_tx"]}') ? 'transaction_id' AS dropped;
DROP OWNED BY regress_ln_evil;
DROP ROLE regress_ln_none, regress_ln_reader, regress_ln_writer, regress_ln_manager, regress_ln_admin,
    regress_ln_gateway, regress_ln_one_table, regress_ln_evil;
-- a key whose role is gone is no key: DROP ROLE removed it with the role
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/%24/list', NULL, NULL,
                                             jsonb_build_object('x-api-key', :'writer_key'));
SELECT lance_revoke_api_key(:'writer_key') AS revoked;
SELECT count(*) AS keys_left FROM lance_list_api_keys();
