--
-- adopt: the catalog of record, and drops that wait for the commit.
--
-- A catalog restored from a dump into another database names the live
-- catalog's folders and objects.  lance_catalog.identity holds the identity
-- (system identifier, database oid) the catalog was installed in; a restore
-- adds the restored database's next to the dumped one.  A catalog whose rows
-- name more than one identity, or another database, is a copy: it removes no
-- data, and its commits to managed tables (and tags, branches) answer LN015
-- naming lance_adopt_storage(), until an administrator runs that.  Here a
-- row of another database stands for the restored one (test/dump restores
-- for real).  A session asks once whether its catalog is the one of record,
-- so each change of the rows is followed by \c.
--
-- Then: lance_process_drops() called in a function that fails afterwards
-- leaves the drop's entry Queued and its files in place: the removals wait
-- for the commit.
--
\set VERBOSITY terse

\! rm -rf /tmp/lance_namespace_adopt
\! mkdir -p /tmp/lance_namespace_adopt/root/ns/t.lance/_versions && chmod -R 777 /tmp/lance_namespace_adopt

-- An error's SQLSTATE and message.
CREATE FUNCTION public.adopt_answer(fn text, request jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    state text;
    message text;
BEGIN
    EXECUTE pg_catalog.format('SELECT %I($1)', fn) USING request;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
    RETURN state || ' ' || message;
END
$$;
CREATE FUNCTION public.adopt_present(path text) RETURNS boolean
LANGUAGE sql AS $$ SELECT (pg_stat_file(path, true)).size IS NOT NULL $$;
-- A field of an undo step's record (storage_spool.c): a 4-byte length
-- (little-endian, as on this machine; 0xffffffff: none) and its bytes.
CREATE FUNCTION public.adopt_field(t text) RETURNS bytea
LANGUAGE sql AS $$
    SELECT CASE WHEN t IS NULL THEN '\xffffffff'::bytea
                ELSE decode(lpad(to_hex(octet_length(t)), 2, '0') || '000000', 'hex') || convert_to(t, 'UTF8') END
$$;

LOAD 'lance_namespace';
SET lance_namespace.local_roots = '/tmp/lance_namespace_adopt/root';
SET lance_namespace.root = '/tmp/lance_namespace_adopt/root/auto';

-- A fresh catalog records where it was installed: this database, this cluster.
SELECT count(*) AS identities,
       bool_and(system_identifier = (SELECT system_identifier FROM pg_control_system())) AS this_cluster,
       bool_and(database_oid = (SELECT oid FROM pg_database WHERE datname = current_database())) AS this_database,
       string_agg(recorded_how, ',') AS how
  FROM lance_catalog.identity;

SELECT lance_create_namespace('{"id": ["ad"]}') ? 'transaction_id' AS created;
SELECT lance_declare_table('{"id": ["ad", "t"], "location": "/tmp/lance_namespace_adopt/root/ns/t.lance"}') -> 'managed_versioning' AS managed;
COPY (SELECT 'manifest one') TO '/tmp/lance_namespace_adopt/root/ns/t.lance/_versions/18446744073709551614.manifest-a';
SELECT lance_create_table_version('{"id": ["ad", "t"], "version": 1, "manifest_path": "tmp/lance_namespace_adopt/root/ns/t.lance/_versions/18446744073709551614.manifest-a"}') #>> '{version,version}' AS committed;
-- a table at a location the catalog chose (lance_namespace.root): its drop queues its folder
SELECT lance_declare_table('{"id": ["ad", "gone"]}') ->> 'location' AS gone_location \gset
\setenv GONE :gone_location
\! mkdir -p "$GONE" && echo rows > "$GONE/data" && chmod -R 777 /tmp/lance_namespace_adopt

--
-- The catalog becomes a copy: its rows name another database too.
--
INSERT INTO lance_catalog.identity (system_identifier, database_oid, recorded_how)
SELECT system_identifier, 4294967295, 'install' FROM pg_control_system();
\c
SET lance_namespace.local_roots = '/tmp/lance_namespace_adopt/root';
SET lance_namespace.root = '/tmp/lance_namespace_adopt/root/auto';
\set VERBOSITY terse

-- Reads and catalog-only changes work; commits to managed tables and tags
-- answer LN015 and write nothing (branches too: test/dump).
SELECT lance_list_table_versions('{"id": ["ad", "t"]}') #>> '{versions,0,version}' AS listed;
COPY (SELECT 'manifest two') TO '/tmp/lance_namespace_adopt/root/ns/t.lance/_versions/18446744073709551613.manifest-b';
SELECT adopt_answer('lance_create_table_version', '{"id": ["ad", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_adopt/root/ns/t.lance/_versions/18446744073709551613.manifest-b"}');
SELECT adopt_answer('lance_batch_create_table_versions', '{"entries": [{"id": ["ad", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_adopt/root/ns/t.lance/_versions/18446744073709551613.manifest-b"}]}');
SELECT adopt_answer('lance_batch_commit_tables', '{"operations": [{"create_table_version": {"id": ["ad", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_adopt/root/ns/t.lance/_versions/18446744073709551613.manifest-b"}}]}');
SELECT adopt_answer('lance_create_table_tag', '{"id": ["ad", "t"], "tag": "v1", "version": 1}');
SELECT pg_ls_dir('/tmp/lance_namespace_adopt/root/ns/t.lance') AS t_folder ORDER BY 1;
SELECT pg_ls_dir('/tmp/lance_namespace_adopt/root/ns/t.lance/_versions') AS versions_folder ORDER BY 1;
SELECT lance_list_table_versions('{"id": ["ad", "t"]}') -> 'versions' @? '$[*] ? (@.version == 2)' AS has_version_2;

-- A drop is queued and stays so: lance_process_drops() removes nothing (and
-- warns), nor does lance_sweep_leftovers() touch the folders.
SELECT lance_drop_table('{"id": ["ad", "gone"]}') ->> 'transaction_id' AS gone_tx \gset
SELECT lance_process_drops() AS processed;
SELECT status FROM lance_catalog.change WHERE transaction_id = :'gone_tx';
SELECT adopt_present(:'gone_location' || '/data') AS data_present;
-- Nor does it do the undo of the live catalog's rollbacks: a step copied
-- with the catalog (here: put back a set-aside original) stays, and so do
-- its files.
COPY (SELECT 'set aside') TO '/tmp/lance_namespace_adopt/root/ns/kept.aside';
INSERT INTO lance_catalog.storage_undo (spool, transaction_id, action, location, path, step)
VALUES ('adopt.spool#0', '1', 'put back', '/tmp/lance_namespace_adopt/root',
        '/tmp/lance_namespace_adopt/root/ns/kept',
        adopt_field('p') || adopt_field('l') || adopt_field('/tmp/lance_namespace_adopt/root') ||
        adopt_field('/tmp/lance_namespace_adopt/root/ns/kept') ||
        adopt_field('/tmp/lance_namespace_adopt/root/ns/kept.aside') ||
        adopt_field(NULL) || adopt_field('-1') || adopt_field('0:0') || adopt_field(NULL) ||
        adopt_field('0') || adopt_field(NULL) || adopt_field('1'));
SELECT lance_sweep_leftovers() AS swept;
SELECT attempts FROM lance_catalog.storage_undo WHERE spool = 'adopt.spool#0';
SELECT adopt_present('/tmp/lance_namespace_adopt/root/ns/kept.aside') AS aside_present,
       adopt_present('/tmp/lance_namespace_adopt/root/ns/kept') AS original_present;

-- Only administrators adopt the storage.
CREATE ROLE regress_ln_adopter;
SET ROLE regress_ln_adopter;
SELECT lance_adopt_storage();
RESET ROLE;
DROP ROLE regress_ln_adopter;

-- An adoption rolled back leaves the catalog a copy, even for the session
-- that saw it.
BEGIN;
SELECT lance_adopt_storage() ?& ARRAY['system_identifier', 'database_oid'] AS adopted;
SELECT lance_create_table_tag('{"id": ["ad", "t"], "tag": "v1", "version": 1}') ? 'transaction_id' AS tagged;
ROLLBACK;
SELECT lance_process_drops() AS processed;
SELECT adopt_answer('lance_create_table_tag', '{"id": ["ad", "t"], "tag": "v1", "version": 1}');

-- lance_adopt_storage() records this database alone; the drop proceeds and
-- commits write again.
SELECT a ->> 'system_identifier' = (SELECT system_identifier::text FROM pg_control_system()) AS this_cluster,
       a ->> 'database_oid' = (SELECT oid::text FROM pg_database WHERE datname = current_database()) AS this_database
  FROM lance_adopt_storage() a;
SELECT count(*) AS identities, string_agg(recorded_how, ',') AS how, string_agg(recorded_by::text, ',') = current_user AS by_me
  FROM lance_catalog.identity;
SELECT lance_process_drops() AS processed;
SELECT status FROM lance_catalog.change WHERE transaction_id = :'gone_tx';
SELECT adopt_present(:'gone_location') AS folder_present;
-- the undo step is done now: the original is back
SELECT lance_sweep_leftovers() AS swept;
SELECT count(*) AS steps_left FROM lance_catalog.storage_undo;
SELECT adopt_present('/tmp/lance_namespace_adopt/root/ns/kept.aside') AS aside_present,
       adopt_present('/tmp/lance_namespace_adopt/root/ns/kept') AS original_present;
SELECT lance_create_table_version('{"id": ["ad", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_adopt/root/ns/t.lance/_versions/18446744073709551613.manifest-b"}') #>> '{version,version}' AS committed;
SELECT lance_create_table_tag('{"id": ["ad", "t"], "tag": "v1", "version": 1}') ? 'transaction_id' AS tagged;

--
-- Drops wait for the commit: a function that calls lance_process_drops()
-- and then fails leaves the entry Queued and the files in place; one that
-- succeeds removes them when its transaction commits.
--
SELECT lance_declare_table('{"id": ["ad", "later"]}') ->> 'location' AS later_location \gset
\setenv LATER :later_location
\! mkdir -p "$LATER" && echo rows > "$LATER/data" && chmod -R 777 /tmp/lance_namespace_adopt
SELECT lance_drop_table('{"id": ["ad", "later"]}') ->> 'transaction_id' AS later_tx \gset
CREATE FUNCTION public.adopt_drops_then(fail boolean) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer := lance_process_drops();
BEGIN
    IF fail THEN
        RAISE EXCEPTION 'failed after % drops', n;
    END IF;
    RETURN n;
END
$$;
SELECT adopt_drops_then(true);
SELECT status, properties = jsonb_build_object('location', :'later_location') AS properties_as_queued
  FROM lance_catalog.change WHERE transaction_id = :'later_tx';
SELECT adopt_present(:'later_location' || '/data') AS data_present;
-- nor does a statement that fails after the call
SELECT lance_process_drops() / 0 AS fails;
SELECT status FROM lance_catalog.change WHERE transaction_id = :'later_tx';
SELECT adopt_present(:'later_location' || '/data') AS data_present;
-- the same function, succeeding
SELECT adopt_drops_then(false);
SELECT status, properties = jsonb_build_object('location', :'later_location') AS properties
  FROM lance_catalog.change WHERE transaction_id = :'later_tx';
SELECT adopt_present(:'later_location') AS folder_present;

SELECT lance_drop_namespace('{"id": ["ad"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
DROP FUNCTION adopt_answer(text, jsonb), adopt_present(text), adopt_field(text), adopt_drops_then(boolean);
\! rm -rf /tmp/lance_namespace_adopt

-- The drop round and the sweep check what the catalog records after they
-- waited for locks: under REPEATABLE READ those checks would read a
-- snapshot taken before the waits, so they refuse to run.
SET default_transaction_isolation = 'repeatable read';
SELECT lance_process_drops();
SELECT lance_sweep_leftovers();
RESET default_transaction_isolation;
