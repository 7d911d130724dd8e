--
-- changes: the commit log.  Every call that changes the catalog records one
-- entry in lance_catalog.change in the caller's transaction (operation, the
-- objects and versions it touched, the namespaces above them, role, time,
-- context, status), and its response carries the entry's transaction_id
-- (an array for DropNamespace).  lance_changes(after, max_entries) reads the
-- log in commit order; DescribeTransaction and AlterTransaction read and
-- change an entry's status and properties; DropTable queues the data of
-- local tables, which lance_process_drops() removes.
--
-- Entry numbers depend on what ran before in this database, so they are
-- never printed as they are: the sequence's position is taken first
-- (start_seq), and an entry is shown as n = seq - start.  Transaction ids
-- are fresh UUIDs: pg_temp.shown() replaces each one in a response by
-- "entry n" after checking its form and that exactly one entry has it
-- (else "IMPLAUSIBLE ..." or "NO ENTRY ...").  The role is shown as "me"
-- when it is the role running the test.
--
\set VERBOSITY default

LOAD 'lance_namespace';
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '';

CREATE TEMP TABLE start_seq AS
SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS start FROM lance_catalog.change_seq;
SELECT start FROM start_seq \gset

-- The log since the start, numbers relative to it.
CREATE TEMP VIEW log AS
SELECT c.seq - s.start AS n, c.operation, c.objects, c.versions, c.namespaces,
       CASE WHEN c.role = current_user THEN 'me' ELSE c.role::text END AS role,
       c.status, c.properties, c.context
  FROM lance_catalog.change c, start_seq s
 WHERE c.seq > s.start;

-- A response with each transaction id replaced by the entry it names, and
-- each timestamp_millis by "recent" once checked.
CREATE FUNCTION pg_temp.tid(v jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    k bigint;
BEGIN
    IF jsonb_typeof(v) <> 'string'
       OR v #>> '{}' !~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' THEN
        RETURN to_jsonb('IMPLAUSIBLE ' || v::text);
    END IF;
    SELECT min(c.seq - s.start), count(*) INTO n, k
      FROM lance_catalog.change c, start_seq s
     WHERE c.transaction_id = (v #>> '{}')::uuid;
    IF k <> 1 THEN
        RETURN to_jsonb('NO ENTRY ' || v::text);
    END IF;
    RETURN to_jsonb('entry ' || n);
END
$$;

CREATE FUNCTION pg_temp.shown(j jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    k text;
    v jsonb;
    result jsonb;
    now_ms numeric := extract(epoch FROM clock_timestamp()) * 1000;
BEGIN
    CASE jsonb_typeof(j)
    WHEN 'object' THEN
        result := '{}';
        FOR k, v IN SELECT * FROM jsonb_each(j) LOOP
            IF k = 'timestamp_millis' THEN
                IF jsonb_typeof(v) = 'number' AND abs(v::numeric - now_ms) < 3600 * 1000 THEN
                    v := '"recent"';
                ELSE
                    v := to_jsonb('IMPLAUSIBLE ' || v::text);
                END IF;
            ELSIF k = 'transaction_id' THEN
                IF jsonb_typeof(v) = 'array' THEN
                    SELECT coalesce(jsonb_agg(pg_temp.tid(e) ORDER BY i), '[]')
                      INTO v FROM jsonb_array_elements(v) WITH ORDINALITY AS a(e, i);
                ELSE
                    v := pg_temp.tid(v);
                END IF;
            ELSE
                v := pg_temp.shown(v);
            END IF;
            result := result || jsonb_build_object(k, v);
        END LOOP;
        RETURN result;
    WHEN 'array' THEN
        SELECT coalesce(jsonb_agg(pg_temp.shown(e) ORDER BY i), '[]')
          INTO result FROM jsonb_array_elements(j) WITH ORDINALITY AS a(e, i);
        RETURN result;
    ELSE
        RETURN j;
    END CASE;
END
$$;

--
-- Every mutating operation records one entry; its response names it.
--

-- context is recorded as given
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch"], "properties": {"owner": "ml"}, "context": {"request": "r1", "header.x-trace": "abc"}}'));
-- ExistOk of an existing namespace changes nothing: no entry, no transaction_id
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch"], "mode": "ExistOk"}'));
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch", "sub"]}'));
-- Overwrite replaces the properties: a change
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch", "sub"], "mode": "Overwrite", "properties": {"v": "2"}}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch", "sub", "reg"], "location": "s3://bucket/ch/reg.lance"}'));
SELECT pg_temp.shown(lance_declare_table('{"id": ["ch", "dec"], "location": "s3://bucket/ch/dec.lance"}'));
-- a rename touches the old and the new id
SELECT pg_temp.shown(lance_rename_table('{"id": ["ch", "dec"], "new_table_name": "moved", "new_namespace_id": ["ch", "sub"]}'));
SELECT pg_temp.shown(lance_create_table_version('{"id": ["ch", "sub", "reg"], "version": 1, "manifest_path": "reg/1"}'));
-- a batch is one entry with one object per version
SELECT pg_temp.shown(lance_batch_create_table_versions('{"entries": [
    {"id": ["ch", "sub", "reg"], "version": 3, "manifest_path": "reg/3"},
    {"id": ["ch", "sub", "moved"], "version": 1, "manifest_path": "moved/1"},
    {"id": ["ch", "sub", "reg"], "version": 2, "manifest_path": "reg/2"}]}'));
SELECT pg_temp.shown(lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["ch", "bc"], "location": "s3://bucket/ch/bc.lance"}},
    {"create_table_version": {"id": ["ch", "sub", "reg"], "version": 4, "manifest_path": "reg/4"}},
    {"delete_table_versions": {"id": ["ch", "sub", "reg"], "ranges": [{"start_version": 1, "end_version": 2}]}}]}'));
-- deleting no version changes nothing
SELECT pg_temp.shown(lance_batch_delete_table_versions('{"id": ["ch", "sub", "reg"], "ranges": [{"start_version": 100, "end_version": 200}]}'));
SELECT pg_temp.shown(lance_batch_delete_table_versions('{"id": ["ch", "sub", "reg"], "ranges": [{"start_version": 2, "end_version": 4}]}'));
SELECT pg_temp.shown(lance_deregister_table('{"id": ["ch", "sub", "moved"]}'));
-- DropTable of a table that is not under lance_namespace.local_roots: the
-- entry goes, the answer carries the location to clean up, status Succeeded
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch", "bc"]}'));
-- DropNamespace Skip of a missing namespace changes nothing
SELECT pg_temp.shown(lance_drop_namespace('{"id": ["ch", "nope"], "mode": "Skip"}'));
-- a failed call records nothing
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch"]}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch", "nope", "t"], "location": "s3://bucket/x"}'));
SELECT pg_temp.shown(lance_create_table_version('{"id": ["ch", "sub", "reg"], "version": 4, "manifest_path": "again"}'));
-- reading changes nothing: no transaction_id
SELECT pg_temp.shown(lance_describe_namespace('{"id": ["ch"]}'));
SELECT pg_temp.shown(lance_list_tables('{"id": ["ch", "sub"]}'));
SELECT pg_temp.shown(lance_describe_table('{"id": ["ch", "sub", "reg"]}'));
SELECT pg_temp.shown(lance_list_table_versions('{"id": ["ch", "sub", "reg"]}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch", "sub", "reg"]}'));
-- DropNamespace answers transaction_id as an array
SELECT pg_temp.shown(lance_drop_namespace('{"id": ["ch", "sub"]}'));
SELECT pg_temp.shown(lance_drop_namespace('{"id": ["ch"], "behavior": "Cascade"}'));

-- One entry per change, numbered without gaps so far.
SELECT n, operation, objects, versions, namespaces, role, status, properties, context FROM log ORDER BY n;
SELECT count(*) = max(n) AS no_gaps FROM log;

-- Each entry has its own UUID, and made_at is the time of its transaction.
SELECT count(DISTINCT c.transaction_id) = count(*) AS distinct_ids,
       bool_and(c.made_at BETWEEN now() - interval '1 hour' AND now()) AS made_recently
  FROM lance_catalog.change c, start_seq s WHERE c.seq > s.start;

-- The transaction_id of a response is the one in the log.
SELECT lance_create_namespace('{"id": ["ch_tid"]}') ->> 'transaction_id' AS tid \gset
SELECT c.seq - s.start AS n, c.operation, c.objects
  FROM lance_catalog.change c, start_seq s WHERE c.transaction_id = :'tid';
SELECT lance_drop_namespace('{"id": ["ch_tid"]}') -> 'transaction_id' AS tids \gset
SELECT jsonb_typeof(:'tids'::jsonb) AS type, jsonb_array_length(:'tids'::jsonb) AS length;
SELECT c.seq - s.start AS n, c.operation, c.objects
  FROM lance_catalog.change c, start_seq s WHERE c.transaction_id = (:'tids'::jsonb ->> 0)::uuid;

--
-- Entries are written in the caller's transaction: a rolled back
-- transaction or savepoint leaves none, though its number is used up.
--

BEGIN;
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_rb"]}'));
SELECT n, operation, objects FROM log WHERE 'ch_rb' = ANY (objects);
ROLLBACK;
SELECT count(*) AS rolled_back_entries FROM log WHERE 'ch_rb' = ANY (objects);

BEGIN;
SAVEPOINT a;
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_sp"]}'));
ROLLBACK TO SAVEPOINT a;
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_kept"]}'));
-- a failed call inside the transaction, undone by its savepoint
SAVEPOINT b;
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_kept"]}'));
ROLLBACK TO SAVEPOINT b;
-- two calls in one transaction: two entries, each with its own id
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_kept", "x"]}'));
COMMIT;
-- ch_rb's and ch_sp's numbers are used up: gaps in the log
SELECT n, operation, objects FROM log
 WHERE n > (SELECT n FROM log WHERE objects = '{ch_tid}' AND operation = 'DropNamespace')
 ORDER BY n;

--
-- lance_changes(after, max_entries): the log in commit order, page by page.
-- A reader asks again for everything after the last entry it got; the
-- numbers of rolled back work are skipped.
--

SELECT seq - :start AS n, operation, objects FROM lance_changes(:start, 4);
SELECT max(seq) AS last FROM lance_changes(:start, 4) \gset
SELECT seq - :start AS n, operation, objects FROM lance_changes(:last, 4);

-- Following pages to the end returns each entry exactly once, in order.
CREATE FUNCTION pg_temp.pages(after bigint, page_size integer)
RETURNS TABLE (page integer, n bigint, operation text)
LANGUAGE plpgsql AS $$
DECLARE
    p integer := 0;
    got integer;
    e lance_catalog.change;
BEGIN
    LOOP
        p := p + 1;
        got := 0;
        FOR e IN SELECT * FROM lance_changes(after, page_size) LOOP
            page := p;
            n := e.seq - (SELECT start FROM start_seq);
            operation := e.operation;
            RETURN NEXT;
            got := got + 1;
            after := e.seq;
        END LOOP;
        EXIT WHEN got = 0;
    END LOOP;
END
$$;
SELECT page, array_agg(n ORDER BY n) AS entries FROM pg_temp.pages(:start, 7) GROUP BY page ORDER BY page;
SELECT array_agg(n) = (SELECT array_agg(n ORDER BY n) FROM log) AS every_entry_once
  FROM pg_temp.pages(:start, 3);
-- the numbers passed over are those of the rolled back ch_rb and ch_sp
SELECT array_agg(k ORDER BY k) AS skipped
  FROM generate_series(1, (SELECT max(n) FROM log)) AS k
 WHERE k NOT IN (SELECT n FROM pg_temp.pages(:start, 7));

-- Defaults: everything after 0, at most 1000 entries.
SELECT count(*) = (SELECT count(*) FROM log) AS all_after_start FROM lance_changes(:start);
SELECT count(*) >= (SELECT count(*) FROM log) AS from_the_beginning FROM lance_changes();
SELECT count(*) AS none FROM lance_changes(:start, 0);
SELECT count(*) AS none_after_the_end FROM lance_changes(:start + 1000000, 10);

-- Reading needs a fresh snapshot per look-up: only READ COMMITTED.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM lance_changes(:start, 10);
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) FROM lance_changes(:start, 10);
ROLLBACK;
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT count(*) = (SELECT count(*) FROM log) AS read_committed_works FROM lance_changes(:start, 1000);
COMMIT;

--
-- "What changed in namespace X since yesterday, by whom": one query on
-- lance_catalog.change.  namespaces holds every namespace above the
-- objects, so changes in child namespaces count too; role says who.
--

-- The writer needs no rights on the catalog's tables: write on the two
-- namespaces is all.
CREATE ROLE regress_lance_changes_writer;
-- (the log only for this test's display helper, and never to write)
GRANT USAGE ON SCHEMA lance_catalog TO regress_lance_changes_writer;
GRANT SELECT ON lance_catalog.change TO regress_lance_changes_writer;
GRANT SELECT ON start_seq TO regress_lance_changes_writer;

SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_sales"]}'));
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_hr"]}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_sales", "old"], "location": "s3://bucket/sales/old.lance"}'));
SELECT lance_grant('{"id": ["ch_sales"], "role": "regress_lance_changes_writer", "privilege": "write"}') - 'transaction_id' AS granted;
SELECT lance_grant('{"id": ["ch_hr"], "role": "regress_lance_changes_writer", "privilege": "write"}') - 'transaction_id' AS granted;
SET ROLE regress_lance_changes_writer;
SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_sales", "eu"]}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_sales", "eu", "orders"], "location": "s3://bucket/sales/eu/orders.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_hr", "people"], "location": "s3://bucket/hr/people.lance"}'));
RESET ROLE;
SELECT pg_temp.shown(lance_create_table_version('{"id": ["ch_sales", "eu", "orders"], "version": 1, "manifest_path": "orders/1"}'));
-- the registration of "old" happened two days ago
UPDATE lance_catalog.change SET made_at = made_at - interval '2 days'
 WHERE seq > :start AND operation = 'RegisterTable' AND objects = '{ch_sales$old}'
RETURNING seq - :start AS n, operation, objects;

-- (shown stably: seq relative to the start, made_at left out, the test's
-- own role as "me"; entries 23, 26 and 29 are in ch_hr, 24 is too old)
SELECT c.seq - :start AS n,
       CASE WHEN c.role = current_user THEN 'me' ELSE c.role::text END AS by_whom,
       c.operation, c.objects, c.versions
  FROM lance_catalog.change c
 WHERE 'ch_sales' = ANY (c.namespaces)
   AND c.made_at > now() - interval '1 day'
 ORDER BY c.seq;
-- by whom, in short
SELECT CASE WHEN c.role = current_user THEN 'me' ELSE c.role::text END AS by_whom,
       count(*) AS changes, array_agg(c.operation ORDER BY c.seq) AS operations
  FROM lance_catalog.change c
 WHERE 'ch_sales' = ANY (c.namespaces)
   AND c.made_at > now() - interval '1 day'
 GROUP BY c.role ORDER BY 1;

SELECT lance_drop_namespace('{"id": ["ch_sales"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ch_hr"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
DROP OWNED BY regress_lance_changes_writer;
DROP ROLE regress_lance_changes_writer;

--
-- DescribeTransaction and AlterTransaction: the status and properties of an
-- entry, named by its transaction id.
--

SELECT lance_create_namespace('{"id": ["ch_tx"]}') ->> 'transaction_id' AS tx \gset
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'tx')));
-- the id in upper case names the same entry
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(upper(:'tx'))));

-- AlterTransaction on one id: its response, or its SQLSTATE and message
-- with the id shown as <tx>.
CREATE FUNCTION pg_temp.alter_tx(id text, actions jsonb) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN lance_alter_transaction(jsonb_build_object('id', jsonb_build_array(id), 'actions', actions))::text;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || replace(SQLERRM, id, '<tx>');
END
$$;

-- setStatusAction: the entry committed (Succeeded), and that status is
-- final, for an administrator too: LN019 naming it, the entry unchanged.
-- Statuses are case-insensitive, and setting the one it has is no change.
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {"status": "Failed"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {"status": "canceled"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {"status": "Running"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {"status": "QUEUED"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {"status": "succeeded"}}]');
-- setPropertyAction: Overwrite by default, on a new key and on a set one
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "a", "value": "1"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "a", "value": "2"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "a", "value": "3", "mode": "Overwrite"}}]');
-- Skip keeps a set key, and sets a new one
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "a", "value": "4", "mode": "Skip"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "b", "value": "1", "mode": "skip"}}]');
-- Fail sets a new key, and refuses a set one
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "c", "value": "1", "mode": "Fail"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "c", "value": "2", "mode": "Fail"}}]');
-- unsetPropertyAction: Skip by default (a missing key is fine), Fail refuses a missing key
SELECT pg_temp.alter_tx(:'tx', '[{"unsetPropertyAction": {"key": "b"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"unsetPropertyAction": {"key": "b"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"unsetPropertyAction": {"key": "b", "mode": "Skip"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"unsetPropertyAction": {"key": "c", "mode": "Fail"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"unsetPropertyAction": {"key": "c", "mode": "fail"}}]');
-- several actions apply in order
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {"status": "Succeeded"}},
                                 {"setPropertyAction": {"key": "d", "value": "1"}},
                                 {"setPropertyAction": {"key": "d", "value": "2"}},
                                 {"setPropertyAction": {"key": "e", "value": "1"}},
                                 {"unsetPropertyAction": {"key": "e"}},
                                 {"setStatusAction": {"status": "Succeeded"}}]');
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'tx')));
-- all or nothing: a failing action leaves the entry as it was
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "y", "value": "1"}},
                                 {"setPropertyAction": {"key": "z", "value": "1"}},
                                 {"unsetPropertyAction": {"key": "a"}},
                                 {"unsetPropertyAction": {"key": "missing", "mode": "Fail"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "y", "value": "1"}},
                                 {"setPropertyAction": {"key": "a", "value": "9", "mode": "Fail"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "y", "value": "1"}},
                                 {"setStatusAction": {"status": "Done"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "y", "value": "1"}},
                                 {"setStatusAction": {"status": "Failed"}}]');
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'tx')));
-- inside a transaction, too: rolling back undoes the change
BEGIN;
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "y", "value": "1"}}]');
ROLLBACK;
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'tx')));
-- the log holds what AlterTransaction did; it records no entry of its own
SELECT n, operation, objects, status, properties FROM log WHERE 'ch_tx' = ANY (objects);
SELECT count(*) AS entries_after_ch_tx FROM log
 WHERE n > (SELECT n FROM log WHERE 'ch_tx' = ANY (objects));

-- Errors.
-- an unknown id, and ids that are no UUID: LN010
SELECT lance_describe_transaction('{"id": ["00000000-0000-4000-8000-000000000000"]}');
SELECT pg_temp.alter_tx('00000000-0000-4000-8000-000000000000', '[{"setStatusAction": {"status": "Failed"}}]');
SELECT lance_describe_transaction('{"id": ["not-a-uuid"]}');
SELECT lance_describe_transaction('{"id": ["00000000-0000-4000-8000-00000000000g"]}');
SELECT pg_temp.alter_tx('42', '[{"setStatusAction": {"status": "Failed"}}]');
-- no id, or not exactly one name: LN013
SELECT lance_describe_transaction('{}');
SELECT lance_describe_transaction('{"id": []}');
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array('ch_tx', :'tx')));
-- a bad status or mode: LN013
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {"status": "Done"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "a", "value": "1", "mode": "Replace"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "new", "value": "1", "mode": "Replace"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"unsetPropertyAction": {"key": "a", "mode": "Overwrite"}}]');
-- missing or empty actions, and malformed ones: LN013
SELECT lance_alter_transaction(jsonb_build_object('id', jsonb_build_array(:'tx')));
SELECT pg_temp.alter_tx(:'tx', NULL);
SELECT pg_temp.alter_tx(:'tx', '[]');
SELECT pg_temp.alter_tx(:'tx', '[{}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {"status": "Failed"}, "unsetPropertyAction": {"key": "a"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setStatusAction": {}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "a"}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"setPropertyAction": {"key": "a", "value": 1}}]');
SELECT pg_temp.alter_tx(:'tx', '[{"unsetPropertyAction": {"mode": "Skip"}}]');
SELECT pg_temp.alter_tx(:'tx', '{"setStatusAction": {"status": "Failed"}}');
-- none of them changed the entry
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'tx')));
SELECT lance_drop_namespace('{"id": ["ch_tx"]}') - 'transaction_id' AS lance_drop_namespace;

--
-- DropTable of a table under lance_namespace.local_roots: the entry goes in
-- the caller's transaction, and the data is queued: the log entry is Queued
-- with the location.  lance_process_drops(), outside any transaction
-- block, removes the folder (never following a symbolic link, never leaving
-- the root) and moves the entry to Succeeded, or to Failed with a reason.
--

\! rm -rf /tmp/lance_namespace_changes
\! mkdir -p /tmp/lance_namespace_changes/root/ns/t.lance/_versions /tmp/lance_namespace_changes/root/ns/t.lance/data /tmp/lance_namespace_changes/root/ns/again.lance /tmp/lance_namespace_changes/root/ns/links.lance/sub /tmp/lance_namespace_changes/root/ns/late.lance /tmp/lance_namespace_changes/root/ns/canceled.lance /tmp/lance_namespace_changes/outside/target /tmp/lance_namespace_changes/outside/o.lance /tmp/lance_namespace_changes/outside/sym.lance
\! echo manifest > /tmp/lance_namespace_changes/root/ns/t.lance/_versions/1.manifest; echo rows > /tmp/lance_namespace_changes/root/ns/t.lance/data/0.lance; echo again > /tmp/lance_namespace_changes/root/ns/again.lance/data; echo late > /tmp/lance_namespace_changes/root/ns/late.lance/data; echo canceled > /tmp/lance_namespace_changes/root/ns/canceled.lance/data
\! echo target > /tmp/lance_namespace_changes/outside/target/file; echo outside > /tmp/lance_namespace_changes/outside/o.lance/data; echo sym > /tmp/lance_namespace_changes/outside/sym.lance/data
\! ln -s /tmp/lance_namespace_changes/outside/target /tmp/lance_namespace_changes/root/ns/links.lance/dir_link
\! ln -s /tmp/lance_namespace_changes/outside/target/file /tmp/lance_namespace_changes/root/ns/links.lance/sub/file_link
\! mkdir -p /tmp/lance_namespace_changes/root/ns/sym.lance /tmp/lance_namespace_changes/root/ns/ext && ln -s /tmp/lance_namespace_changes/outside/sym.lance /tmp/lance_namespace_changes/root/ns/ext/linked.lance
\! chmod -R 777 /tmp/lance_namespace_changes
SET lance_namespace.local_roots = '/tmp/lance_namespace_changes/root';

-- Whatever earlier tests left queued is worked off first, so that the
-- counts below are this test's own.
SELECT lance_process_drops() >= 0 AS earlier_drops_processed;

-- Which of the folders are there: pg_temp.present(path).
CREATE FUNCTION pg_temp.present(path text) RETURNS boolean
LANGUAGE sql AS $$ SELECT (pg_stat_file(path, true)).size IS NOT NULL $$;
CREATE FUNCTION pg_temp.folders() RETURNS TABLE (folder text, present boolean)
LANGUAGE sql AS $$
    SELECT f, pg_temp.present('/tmp/lance_namespace_changes/' || f)
      FROM unnest(ARRAY['root', 'root/ns/t.lance', 'root/ns/t.lance/_versions/1.manifest',
                        'root/ns/again.lance/data', 'root/ns/links.lance',
                        'root/ns/late.lance/data', 'root/ns/sym.lance',
                        'outside/target/file', 'outside/o.lance/data',
                        'outside/sym.lance/data']) AS f
$$;

SELECT pg_temp.shown(lance_create_namespace('{"id": ["ch_local"]}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "t"], "location": "/tmp/lance_namespace_changes/root/ns/t.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "again"], "location": "/tmp/lance_namespace_changes/root/ns/again.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "links"], "location": "file:///tmp/lance_namespace_changes/root/ns/links.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "late"], "location": "/tmp/lance_namespace_changes/root/ns/late.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "canceled"], "location": "/tmp/lance_namespace_changes/root/ns/canceled.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "sym"], "location": "/tmp/lance_namespace_changes/root/ns/sym.lance"}'));
-- A location below the root that is a link (or passes through one) is
-- refused: the folder it names is elsewhere, and two spellings of one
-- folder could not be told apart.
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "linked"], "location": "/tmp/lance_namespace_changes/root/ns/ext/linked.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "linked"], "location": "/tmp/lance_namespace_changes/root/ns/ext/linked.lance/sub"}'));
-- Any spelling of another table's folder is that folder.
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "respelled"], "location": "/tmp/lance_namespace_changes/root/ns/ext/../t.lance/"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "outside"], "location": "/tmp/lance_namespace_changes/outside/o.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "dotdot"], "location": "/tmp/lance_namespace_changes/root/../outside/o.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "root"], "location": "/tmp/lance_namespace_changes/root"}'));
SELECT pg_temp.shown(lance_declare_table('{"id": ["ch_local", "never_written"], "location": "/tmp/lance_namespace_changes/root/ns/never_written.lance"}'));

-- The catalog removes only folders it chose (DeclareTable without a
-- location); these tables stand for such tables, at every kind of folder the
-- remover must handle safely.
UPDATE lance_catalog.object SET location_derived = true
 WHERE kind = 'table' AND parent_id = (SELECT id FROM lance_catalog.object WHERE parent_id = 0 AND name = 'ch_local');

-- A drop in a rolled back transaction queues nothing.
BEGIN;
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "t"]}'));
ROLLBACK;
SELECT lance_table_exists('{"id": ["ch_local", "t"]}');

-- The drops: the local ones are Queued, with their location.
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "t"]}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "again"]}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "links"]}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "sym"]}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "never_written"]}'));
-- not below the root (outside it, through "..", or the root itself): the
-- caller cleans up; Succeeded at once, nothing queued
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "outside"]}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "dotdot"]}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "root"]}'));
SELECT n, operation, objects, status, properties FROM log
 WHERE operation = 'DropTable' AND objects[1] LIKE 'ch\_local$%' ORDER BY n;
-- the entries are gone, the data is still there
SELECT pg_temp.shown(lance_list_tables('{"id": ["ch_local"]}'));
SELECT * FROM pg_temp.folders();

-- "again.lance" is registered again before the drop is processed: its data
-- belongs to the new table now.
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "again2"], "location": "/tmp/lance_namespace_changes/root/ns/again.lance"}'));

-- Not inside a transaction block.
BEGIN;
SELECT lance_process_drops();
ROLLBACK;
SELECT n, status FROM log WHERE status = 'Queued' ORDER BY n;

-- Without local_roots a local folder cannot be checked: the drops stay
-- queued (rather than fail for good), and those of S3 tables would go on.
SET lance_namespace.local_roots = '';
SELECT lance_process_drops() AS processed;
SELECT n, status FROM log WHERE status = 'Queued' ORDER BY n;
SET lance_namespace.local_roots = '/tmp/lance_namespace_changes/root';

-- sym.lance is swapped for a link to a folder outside after its drop: its
-- removal removes the link and leaves the target alone.
\! rm -rf /tmp/lance_namespace_changes/root/ns/sym.lance && ln -s /tmp/lance_namespace_changes/outside/sym.lance /tmp/lance_namespace_changes/root/ns/sym.lance
SELECT lance_process_drops() AS processed;
SELECT n, operation, objects, status, properties FROM log
 WHERE operation = 'DropTable' AND objects[1] LIKE 'ch\_local$%' ORDER BY n;
SELECT * FROM pg_temp.folders();
-- the links were removed, not followed: their targets are intact
SELECT rtrim(pg_read_file('/tmp/lance_namespace_changes/outside/target/file'), E'\n') AS target_file,
       rtrim(pg_read_file('/tmp/lance_namespace_changes/outside/sym.lance/data'), E'\n') AS sym_target;
\! cd /tmp/lance_namespace_changes && LC_ALL=C find . | LC_ALL=C sort
-- nothing is left to do
SELECT lance_process_drops() AS processed;
-- DescribeTransaction tells the outcome of a drop
SELECT lance_drop_table('{"id": ["ch_local", "late"]}') ->> 'transaction_id' AS drop_tx \gset
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'drop_tx')));
SELECT pg_temp.present('/tmp/lance_namespace_changes/root/ns/late.lance') AS late_present;
SELECT lance_process_drops() AS processed;
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'drop_tx')));
SELECT pg_temp.present('/tmp/lance_namespace_changes/root/ns/late.lance') AS late_present;
-- the removal is done: its Succeeded is final (LN019), not to be requeued or marked Canceled
SELECT pg_temp.alter_tx(:'drop_tx', '[{"setStatusAction": {"status": "Queued"}}]');
SELECT pg_temp.alter_tx(:'drop_tx', '[{"setStatusAction": {"status": "Canceled"}}]');
-- A queued drop canceled with AlterTransaction is left alone: the data stays.
SELECT lance_drop_table('{"id": ["ch_local", "canceled"]}') ->> 'transaction_id' AS cancel_tx \gset
SELECT pg_temp.alter_tx(:'cancel_tx', '[{"setStatusAction": {"status": "Running"}}]');
SELECT pg_temp.alter_tx(:'cancel_tx', '[{"setStatusAction": {"status": "Canceled"}}]');
SELECT lance_process_drops() AS processed;
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'cancel_tx')));
SELECT rtrim(pg_read_file('/tmp/lance_namespace_changes/root/ns/canceled.lance/data'), E'\n') AS canceled_data;

-- A folder in use is never removed, however the locations are spelled: a
-- table registered inside the dropped folder, a dropped folder that a live
-- table's location names with file:// and a trailing slash, or a live table
-- around the dropped folder.  Once "around" is dropped too, its folder goes,
-- with "in.lance" inside it.
\! mkdir -p /tmp/lance_namespace_changes/root/nest/inner.lance /tmp/lance_namespace_changes/root/spelled.lance /tmp/lance_namespace_changes/root/around/in.lance && echo inner > /tmp/lance_namespace_changes/root/nest/inner.lance/data && echo spelled > /tmp/lance_namespace_changes/root/spelled.lance/data && echo in > /tmp/lance_namespace_changes/root/around/in.lance/data && chmod -R 777 /tmp/lance_namespace_changes
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "nest"], "location": "/tmp/lance_namespace_changes/root/nest"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "inner"], "location": "/tmp/lance_namespace_changes/root/nest/inner.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "spelled"], "location": "/tmp/lance_namespace_changes/root/spelled.lance"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "around"], "location": "/tmp/lance_namespace_changes/root/around"}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "in"], "location": "/tmp/lance_namespace_changes/root/around/in.lance"}'));
UPDATE lance_catalog.object SET location_derived = true
 WHERE kind = 'table' AND parent_id = (SELECT id FROM lance_catalog.object WHERE parent_id = 0 AND name = 'ch_local');
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "nest"]}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "spelled"]}'));
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "spelled2"], "location": "file:///tmp/lance_namespace_changes/root/spelled.lance/"}'));
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "in"]}'));
SELECT lance_process_drops() AS processed;
-- AlterTransaction can change what a drop shows, not what it removes
SELECT lance_drop_table('{"id": ["ch_local", "around"]}') ->> 'transaction_id' AS around_tx \gset
SELECT pg_temp.alter_tx(:'around_tx', '[{"setPropertyAction": {"key": "location", "value": "/tmp/lance_namespace_changes/root"}}]');
SELECT lance_process_drops() AS processed;
SELECT n, objects, status, properties ->> 'reason' AS reason FROM log
 WHERE operation = 'DropTable' AND objects[1] IN ('ch_local$nest', 'ch_local$spelled', 'ch_local$in', 'ch_local$around')
 ORDER BY n;
SELECT rtrim(pg_read_file('/tmp/lance_namespace_changes/root/nest/inner.lance/data'), E'\n') AS inner_data,
       rtrim(pg_read_file('/tmp/lance_namespace_changes/root/spelled.lance/data'), E'\n') AS spelled_data,
       pg_temp.present('/tmp/lance_namespace_changes/root/around') AS around_present,
       pg_temp.present('/tmp/lance_namespace_changes/root/around/in.lance') AS in_present,
       pg_temp.present('/tmp/lance_namespace_changes/root') AS root_present;
SET lance_namespace.local_roots = '/tmp/lance_namespace_changes/root';

-- A drop that ended Failed is retried once what failed it is gone:
-- lance_retry_drops() (administrators only) queues it again, and the next
-- round removes the folder.  "sym" failed above: its folder was a link; it
-- is a folder now.
\! rm /tmp/lance_namespace_changes/root/ns/sym.lance && mkdir /tmp/lance_namespace_changes/root/ns/sym.lance && echo sym > /tmp/lance_namespace_changes/root/ns/sym.lance/data && chmod -R 777 /tmp/lance_namespace_changes/root/ns/sym.lance
-- "again" failed because "again2" took its folder, which is "again2"'s
-- now.  Here "again2" stands for a table whose caller named that folder:
-- its drop leaves the folder, and no retry of "again" removes it.
UPDATE lance_catalog.object SET location_derived = false
 WHERE kind = 'table' AND name = 'again2'
   AND parent_id = (SELECT id FROM lance_catalog.object WHERE parent_id = 0 AND name = 'ch_local');
SELECT pg_temp.shown(lance_drop_table('{"id": ["ch_local", "again2"]}'));
SELECT objects[1] AS drop, status, properties ->> 'reason' AS reason FROM log
 WHERE operation = 'DropTable' AND objects[1] IN ('ch_local$again', 'ch_local$again2', 'ch_local$sym') ORDER BY 1;
CREATE ROLE regress_ln_retry_nobody;
SET ROLE regress_ln_retry_nobody;
SELECT lance_retry_drops();
RESET ROLE;
DROP ROLE regress_ln_retry_nobody;
SELECT lance_retry_drops() >= 1 AS requeued;
SELECT objects[1] AS drop, status FROM log
 WHERE operation = 'DropTable' AND objects[1] IN ('ch_local$again', 'ch_local$again2', 'ch_local$sym') ORDER BY 1;
SELECT lance_process_drops() >= 1 AS processed;
SELECT objects[1] AS drop, status, properties ->> 'reason' AS reason FROM log
 WHERE operation = 'DropTable' AND objects[1] IN ('ch_local$again', 'ch_local$again2', 'ch_local$sym') ORDER BY 1;
SELECT pg_temp.present('/tmp/lance_namespace_changes/root/ns/again.lance/data') AS again_present,
       pg_temp.present('/tmp/lance_namespace_changes/root/ns/sym.lance') AS sym_present;
-- A drop its maker stopped (set Failed with AlterTransaction before it was
-- processed) is no failure to retry: lance_retry_drops() leaves it Failed
-- and its data stays.
\! mkdir -p /tmp/lance_namespace_changes/root/ns/stopped.lance && echo stopped > /tmp/lance_namespace_changes/root/ns/stopped.lance/data && chmod -R 777 /tmp/lance_namespace_changes/root/ns/stopped.lance
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "stopped"], "location": "/tmp/lance_namespace_changes/root/ns/stopped.lance"}'));
UPDATE lance_catalog.object SET location_derived = true
 WHERE kind = 'table' AND name = 'stopped'
   AND parent_id = (SELECT id FROM lance_catalog.object WHERE parent_id = 0 AND name = 'ch_local');
SELECT lance_drop_table('{"id": ["ch_local", "stopped"]}') ->> 'transaction_id' AS stop_tx \gset
SELECT pg_temp.alter_tx(:'stop_tx', '[{"setStatusAction": {"status": "Failed"}}]');
SELECT lance_retry_drops() >= 0 AS retried;
SELECT lance_process_drops() >= 0 AS processed;
SELECT lance_describe_transaction(jsonb_build_object('id', jsonb_build_array(:'stop_tx')));
SELECT rtrim(pg_read_file('/tmp/lance_namespace_changes/root/ns/stopped.lance/data'), E'\n') AS stopped_data;
-- Failed is final too (LN019), but for the requeue of a failed drop, an
-- administrator's (for others Queued is LN015, sql/access.sql)
SELECT pg_temp.alter_tx(:'stop_tx', '[{"setStatusAction": {"status": "Succeeded"}}]');
SELECT pg_temp.alter_tx(:'stop_tx', '[{"setStatusAction": {"status": "Running"}}]');
BEGIN;
SELECT pg_temp.alter_tx(:'stop_tx', '[{"setStatusAction": {"status": "Queued"}}]');
ROLLBACK;
-- Setting Failed on an entry the processor failed is no change, and leaves
-- it the processor's failure: lance_retry_drops() still queues it.  (The
-- caller's setting it Failed again took it out of the retries.)
\! mkdir -p /tmp/lance_namespace_changes/root/ns/gone && chmod -R 777 /tmp/lance_namespace_changes/root/ns/gone
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "failing"], "location": "/tmp/lance_namespace_changes/root/ns/gone/failing.lance"}'));
UPDATE lance_catalog.object SET location_derived = true
 WHERE kind = 'table' AND name = 'failing'
   AND parent_id = (SELECT id FROM lance_catalog.object WHERE parent_id = 0 AND name = 'ch_local');
SELECT lance_drop_table('{"id": ["ch_local", "failing"]}') ->> 'transaction_id' AS failing_tx \gset
BEGIN;
UPDATE lance_catalog.change SET status = 'Failed', drop_failed = true WHERE transaction_id = :'failing_tx';
SELECT pg_temp.alter_tx(:'failing_tx', '[{"setStatusAction": {"status": "Failed"}}]');
SELECT status, drop_failed FROM lance_catalog.change WHERE transaction_id = :'failing_tx';
ROLLBACK;
SELECT pg_temp.alter_tx(:'failing_tx', '[{"setStatusAction": {"status": "Canceled"}}]');
-- An open drop's removal is the processor's to report: its maker may stop
-- it, not mark it done (LN015), which would leave its data for good.
CREATE ROLE regress_lance_changes_dropper;
SELECT lance_grant('{"id": ["ch_local"], "role": "regress_lance_changes_dropper", "privilege": "manage"}') ->> 'changed' AS granted;
SELECT pg_temp.shown(lance_register_table('{"id": ["ch_local", "mine"], "location": "/tmp/lance_namespace_changes/root/ns/gone/mine.lance"}'));
UPDATE lance_catalog.object SET location_derived = true
 WHERE kind = 'table' AND name = 'mine'
   AND parent_id = (SELECT id FROM lance_catalog.object WHERE parent_id = 0 AND name = 'ch_local');
SET ROLE regress_lance_changes_dropper;
SELECT lance_drop_table('{"id": ["ch_local", "mine"]}') ->> 'transaction_id' AS mine_tx \gset
SELECT set_config('regress.mine_tx', :'mine_tx', false) IS NOT NULL AS kept;
DO $$
DECLARE
    status text;
BEGIN
    FOREACH status IN ARRAY ARRAY['Succeeded', 'Running', 'Canceled'] LOOP
        BEGIN
            PERFORM lance_alter_transaction(jsonb_build_object(
                'id', jsonb_build_array(current_setting('regress.mine_tx')),
                'actions', jsonb_build_array(jsonb_build_object('setStatusAction', jsonb_build_object('status', status)))));
            RAISE NOTICE '% by its maker: ok', status;
        EXCEPTION WHEN OTHERS THEN
            RAISE NOTICE '% by its maker: %', status, SQLSTATE;
        END;
    END LOOP;
END
$$;
RESET ROLE;
SELECT status FROM lance_catalog.change WHERE transaction_id = :'mine_tx';

SELECT lance_drop_namespace('{"id": ["ch_local"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
DROP OWNED BY regress_lance_changes_dropper;
DROP ROLE regress_lance_changes_dropper;
\! rm -rf /tmp/lance_namespace_changes
SET lance_namespace.local_roots = '';

--
-- Operations that need a new Lance manifest or index files: LN000, saying why.
--

SELECT lance_create_namespace('{"id": ["ch_un"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_register_table('{"id": ["ch_un", "t"], "location": "s3://bucket/un/t.lance"}') - 'transaction_id' AS lance_register_table;
SELECT count(*) AS entries_before FROM log \gset
SELECT lance_restore_table('{"id": ["ch_un", "t"], "version": 1}');
SELECT lance_update_table_schema_metadata('{"id": ["ch_un", "t"], "metadata": {"k": "v"}}');
SELECT lance_update_field_metadata('{"id": ["ch_un", "t"], "updates": [{"path": "a", "metadata": {"k": "v"}}]}');
SELECT lance_alter_table_add_columns('{"id": ["ch_un", "t"], "new_columns": [{"name": "c", "expression": "1"}]}');
SELECT lance_alter_table_alter_columns('{"id": ["ch_un", "t"], "alterations": [{"path": "a", "rename": "b"}]}');
SELECT lance_alter_table_drop_columns('{"id": ["ch_un", "t"], "columns": ["a"]}');
SELECT lance_create_table_index('{"id": ["ch_un", "t"], "column": "v", "index_type": "IVF_PQ"}');
SELECT lance_create_table_scalar_index('{"id": ["ch_un", "t"], "column": "a", "index_type": "BTREE"}');
SELECT lance_list_table_indices('{"id": ["ch_un", "t"]}');
SELECT lance_describe_table_index_stats('{"id": ["ch_un", "t"], "index_name": "a_idx"}');
SELECT lance_drop_table_index('{"id": ["ch_un", "t"], "index_name": "a_idx"}');
-- even for a table that does not exist, and with no request at all
SELECT lance_restore_table('{"id": ["ch_un", "nope"], "version": 1}');
SELECT lance_list_table_indices('{}');
-- they recorded nothing
SELECT count(*) = :entries_before AS nothing_recorded FROM log;
SELECT lance_drop_namespace('{"id": ["ch_un"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;

-- A drop that queued nothing (a table not under the local roots), set to
-- Queued: lance_process_drops() fails it with a reason.
-- (It crashed the server on the missing location.)
SET lance_namespace.local_roots = '/tmp/lance_namespace_changes/root';
SELECT lance_create_namespace('{"id": ["ch_requeued"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_register_table('{"id": ["ch_requeued", "t"], "location": "s3://bucket/requeued"}') - 'transaction_id' AS lance_register_table;
SELECT lance_drop_table('{"id": ["ch_requeued", "t"]}') ->> 'transaction_id' AS requeued_tx \gset
-- (AlterTransaction no longer makes a Succeeded entry Queued; a catalog
-- from before may hold one that an administrator queued so)
UPDATE lance_catalog.change SET status = 'Queued' WHERE transaction_id = :'requeued_tx';
SELECT lance_process_drops() AS processed;
SELECT status, properties FROM lance_catalog.change WHERE transaction_id = :'requeued_tx';
SELECT lance_drop_namespace('{"id": ["ch_requeued"]}') - 'transaction_id' AS lance_drop_namespace;

-- A gap of a trillion numbers (after a setval, say) costs a reader one look
-- at the lock table, not one per missing number.  Nothing counts those
-- looks from SQL, and a look per number would never end (a trillion lock
-- tries: a day even at 100 ns each), so a time limit is the point here:
-- 2 minutes, a margin that holds under valgrind (test/memory: 20 to 50 times
-- slower) on a loaded 2-core machine for a call that takes milliseconds,
-- and still a thousand times too short for a look per number.
SELECT max(seq) AS gap_start FROM lance_catalog.change \gset
SELECT setval('lance_catalog.change_seq', :gap_start + 1000000000000) > 0 AS moved;
SELECT lance_create_namespace('{"id": ["ch_far"]}') - 'transaction_id' AS lance_create_namespace;
SET statement_timeout = '2min';
SELECT operation, objects, seq - :gap_start AS after_gap FROM lance_changes(:gap_start, 10);
RESET statement_timeout;
SELECT lance_drop_namespace('{"id": ["ch_far"]}') - 'transaction_id' AS lance_drop_namespace;

-- Clean up.
DROP FUNCTION pg_temp.pages(bigint, integer);
DROP FUNCTION pg_temp.alter_tx(text, jsonb);
DROP FUNCTION pg_temp.folders();
DROP FUNCTION pg_temp.present(text);
DROP FUNCTION pg_temp.shown(jsonb);
DROP FUNCTION pg_temp.tid(jsonb);
DROP VIEW log;
DROP TABLE start_seq;
RESET lance_namespace.root;
RESET lance_namespace.local_roots;
