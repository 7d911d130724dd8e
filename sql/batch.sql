--
-- batch: BatchCreateTableVersions and BatchCommitTables on tables at s3://
-- locations (pure catalog records).  Both are all or nothing, answer in
-- request order, and name the failing element in their error message.
--
-- timestamp_millis is never printed: pg_temp.show() replaces each one with
-- "recent" after checking that it is an integer number of milliseconds
-- within an hour of now (with "IMPLAUSIBLE ..." otherwise).
--
\set VERBOSITY default

-- No root location and no managed folders, whatever the server's configuration.
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '';

\i test/sql/show.sql

-- The version numbers of a table, ascending.
CREATE FUNCTION pg_temp.versions(id jsonb) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_path_query_array(lance_list_table_versions(jsonb_build_object('id', id)),
                                  '$.versions[*].version')
$$;

-- Fixtures: namespace bt with registered tables a and b and a declared
-- table c.
SELECT lance_create_namespace('{"id": ["bt"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_register_table('{"id": ["bt", "a"], "location": "s3://bucket/bt/a.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["bt", "b"], "location": "s3://bucket/bt/b.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_declare_table('{"id": ["bt", "c"], "location": "s3://bucket/bt/c.lance"}') - 'transaction_id' AS lance_declare_table;

------------------------------------------------------------------------------
-- BatchCreateTableVersions
------------------------------------------------------------------------------

--
-- The answer lists the versions in request order, whatever the order of
-- tables and versions in the request (the catalog works in its own order).
--
SELECT n - 1 AS entry, pg_temp.show(v) AS version
FROM jsonb_array_elements(lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "b"], "version": 2, "manifest_path": "bucket/bt/b.lance/_versions/b2.manifest", "manifest_size": 22},
    {"id": ["bt", "a"], "version": 1, "manifest_path": "bucket/bt/a.lance/_versions/a1.manifest", "e_tag": "a1", "naming_scheme": "V1"},
    {"id": ["bt", "c"], "version": 1, "manifest_path": "bucket/bt/c.lance/_versions/c1.manifest", "metadata": {"m": "c1"}},
    {"id": ["bt", "b"], "version": 1, "manifest_path": "bucket/bt/b.lance/_versions/b1.manifest"},
    {"id": ["bt", "a"], "version": 2, "manifest_path": "bucket/bt/a.lance/_versions/a2.manifest", "naming_scheme": "v2"}
]}') -> 'versions') WITH ORDINALITY AS e(v, n)
ORDER BY n;
-- Each table got its versions, with the fields of its entries.
SELECT pg_temp.show(lance_list_table_versions('{"id": ["bt", "a"]}'));
SELECT pg_temp.show(lance_list_table_versions('{"id": ["bt", "b"]}'));
SELECT pg_temp.show(lance_list_table_versions('{"id": ["bt", "c"]}'));
-- The declared table c has data now.
SELECT lance_describe_table('{"id": ["bt", "c"], "check_declared": true}') -> 'is_only_declared' AS is_only_declared;
SELECT lance_list_tables('{"id": ["bt"], "include_declared": false}');

-- An empty entries array creates nothing and answers an empty list.
SELECT lance_batch_create_table_versions('{"entries": []}') - 'transaction_id' AS lance_batch_create_table_versions;

--
-- All or nothing: when the third entry fails, the first two are not
-- created, and the message names entries[2].
--

-- A version that exists: LN014.
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt", "a"], "version": 1, "manifest_path": "a1-again"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
-- Two entries for one version of one table in the same batch: LN014 on the
-- later one.
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3-twice"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
-- A table that does not exist: LN004.
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt", "missing"], "version": 1, "manifest_path": "m1"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
-- A namespace that does not exist: LN001.
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt_missing", "a"], "version": 1, "manifest_path": "m1"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
-- A branch that does not exist: LN022.
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt", "a"], "version": 4, "manifest_path": "a4", "branch": "dev"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
-- Bad fields: LN013, naming the entry.
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt", "a"], "version": 4}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt", "a"], "manifest_path": "a4"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt", "a"], "version": -4, "manifest_path": "a4"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"id": ["bt", "a"], "version": 4, "manifest_path": "a4", "naming_scheme": "V9"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    {"version": 4, "manifest_path": "a4"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"},
    "a4"
]}') - 'transaction_id' AS lance_batch_create_table_versions;
-- None of the failed batches left a version behind.
SELECT pg_temp.versions('["bt", "a"]') AS a, pg_temp.versions('["bt", "b"]') AS b;

-- entries is required and must be an array: LN013.
SELECT lance_batch_create_table_versions('{}') - 'transaction_id' AS lance_batch_create_table_versions;
SELECT lance_batch_create_table_versions('{"entries": null}') - 'transaction_id' AS lance_batch_create_table_versions;
SELECT lance_batch_create_table_versions('{"entries": {"id": ["bt", "a"]}}') - 'transaction_id' AS lance_batch_create_table_versions;

-- A batch inside a transaction that rolls back leaves nothing.
BEGIN;
SELECT jsonb_array_length(lance_batch_create_table_versions('{"entries": [
    {"id": ["bt", "a"], "version": 3, "manifest_path": "a3"},
    {"id": ["bt", "b"], "version": 3, "manifest_path": "b3"}
]}') -> 'versions') AS created;
SELECT pg_temp.versions('["bt", "a"]') AS a, pg_temp.versions('["bt", "b"]') AS b;
ROLLBACK;
SELECT pg_temp.versions('["bt", "a"]') AS a, pg_temp.versions('["bt", "b"]') AS b;

------------------------------------------------------------------------------
-- BatchCommitTables
------------------------------------------------------------------------------

-- Fixtures: namespace bc with table x (versions 1 and 2) and table old.
SELECT lance_create_namespace('{"id": ["bc"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_register_table('{"id": ["bc", "x"], "location": "s3://bucket/bc/x.lance", "properties": {"k": "x"}}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["bc", "old"], "location": "s3://bucket/bc/old.lance", "properties": {"k": "old"}}') - 'transaction_id' AS lance_register_table;
SELECT jsonb_array_length(lance_batch_create_table_versions('{"entries": [
    {"id": ["bc", "x"], "version": 1, "manifest_path": "x1"},
    {"id": ["bc", "x"], "version": 2, "manifest_path": "x2"}
]}') -> 'versions') AS created;

--
-- All four kinds of operation in one batch; the results come in request
-- order, each under the key of its kind.
--
SELECT n - 1 AS operation, pg_temp.show(r) AS result
FROM jsonb_array_elements(lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "new"], "location": "s3://bucket/bc/new.lance", "properties": {"k": "new"}}},
    {"create_table_version": {"id": ["bc", "x"], "version": 3, "manifest_path": "x3", "manifest_size": 3, "e_tag": "e3", "metadata": {"m": "3"}, "naming_scheme": "V2"}},
    {"delete_table_versions": {"id": ["bc", "x"], "ranges": [{"start_version": 1, "end_version": 2}]}},
    {"deregister_table": {"id": ["bc", "old"]}}
]}') -> 'results') WITH ORDINALITY AS e(r, n)
ORDER BY n;
-- The whole batch took effect.
SELECT lance_describe_table('{"id": ["bc", "new"], "check_declared": true}');
SELECT pg_temp.versions('["bc", "x"]') AS x;
SELECT lance_table_exists('{"id": ["bc", "old"]}');
SELECT lance_list_tables('{"id": ["bc"]}');

--
-- Operations on one table run in request order: a table declared and given
-- its first version in one batch ...
--
SELECT pg_temp.show(lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "fresh"], "location": "s3://bucket/bc/fresh.lance"}},
    {"create_table_version": {"id": ["bc", "fresh"], "version": 1, "manifest_path": "fresh1"}}
]}'));
-- ... exists with that version, and is no longer only declared.
SELECT pg_temp.versions('["bc", "fresh"]') AS fresh;
SELECT lance_describe_table('{"id": ["bc", "fresh"], "check_declared": true}') -> 'is_only_declared' AS is_only_declared;
-- A version created and deleted in one batch is gone.
SELECT lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["bc", "fresh"], "version": 2, "manifest_path": "fresh2"}},
    {"delete_table_versions": {"id": ["bc", "fresh"], "ranges": [{"start_version": 2, "end_version": 3}]}}
]}') -> 'results' -> 1 AS delete_result;
SELECT pg_temp.versions('["bc", "fresh"]') AS fresh;
-- A table deregistered and declared again in one batch: a new entry with no
-- versions.
SELECT lance_batch_commit_tables('{"operations": [
    {"deregister_table": {"id": ["bc", "fresh"]}},
    {"declare_table": {"id": ["bc", "fresh"], "location": "s3://bucket/bc/fresh2.lance"}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT pg_temp.versions('["bc", "fresh"]') AS fresh;
-- In the other order, a version of a table not yet declared: LN004, and
-- nothing is declared.
SELECT lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["bc", "later"], "version": 1, "manifest_path": "later1"}},
    {"declare_table": {"id": ["bc", "later"], "location": "s3://bucket/bc/later.lance"}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_table_exists('{"id": ["bc", "later"]}');

-- An empty batch does nothing and answers an empty list.
SELECT lance_batch_commit_tables('{"operations": []}') - 'transaction_id' AS lance_batch_commit_tables;

--
-- All or nothing: when one operation fails, nothing of the batch is left,
-- and the message names the operation and its kind.
--

-- Declaring a table that exists (LN005) as the last of four operations.
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {"create_table_version": {"id": ["bc", "x"], "version": 4, "manifest_path": "x4"}},
    {"delete_table_versions": {"id": ["bc", "x"], "ranges": [{"start_version": 0, "end_version": -1}]}},
    {"declare_table": {"id": ["bc", "x"], "location": "s3://bucket/bc/x-again.lance"}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
-- A failure in the middle: a duplicate version (LN014).
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {"create_table_version": {"id": ["bc", "x"], "version": 2, "manifest_path": "x2-again"}},
    {"deregister_table": {"id": ["bc", "new"]}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
-- Deregistering a table that does not exist (LN004).
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {"deregister_table": {"id": ["bc", "new"]}},
    {"deregister_table": {"id": ["bc", "missing"]}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
-- Deleting versions of a table in a namespace that does not exist (LN001).
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {"delete_table_versions": {"id": ["bc_missing", "x"], "ranges": []}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
-- Two operations on one version of one table (LN014 on the second).
SELECT lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["bc", "x"], "version": 5, "manifest_path": "x5"}},
    {"create_table_version": {"id": ["bc", "x"], "version": 5, "manifest_path": "x5-twice"}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
-- Nothing of the failed batches is left: no table y, x keeps versions 2
-- and 3 only, new is still there.
SELECT lance_table_exists('{"id": ["bc", "y"]}');
SELECT pg_temp.versions('["bc", "x"]') AS x;
SELECT lance_list_tables('{"id": ["bc"]}');

--
-- Malformed batches: LN013.
--

-- An operation must set exactly one kind: none, or two.
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"},
     "deregister_table": {"id": ["bc", "new"]}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
-- An unknown kind is not a kind (and null is absent).
SELECT lance_batch_commit_tables('{"operations": [
    {"rename_table": {"id": ["bc", "x"], "new_table_name": "z"}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": null}
]}') - 'transaction_id' AS lance_batch_commit_tables;
-- A kind's request must be an object, with its own required fields.
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": ["bc", "y"]}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {"deregister_table": {}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {"create_table_version": {"id": ["bc", "x"], "version": 6}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {"delete_table_versions": {"id": ["bc", "x"]}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "y"], "location": "s3://bucket/bc/y.lance"}},
    {"delete_table_versions": {"id": ["bc", "x"], "ranges": [{"start_version": "0", "end_version": -1}]}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
-- operations is required and must be an array of objects.
SELECT lance_batch_commit_tables('{}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_batch_commit_tables('{"operations": {"declare_table": {"id": ["bc", "y"]}}}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT lance_batch_commit_tables('{"operations": ["declare_table"]}') - 'transaction_id' AS lance_batch_commit_tables;
-- Still no table y.
SELECT lance_table_exists('{"id": ["bc", "y"]}');

--
-- Inside a caller's transaction, a batch commits and rolls back with it,
-- and with its savepoints.
--
BEGIN;
SELECT lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "t1"], "location": "s3://bucket/bc/t1.lance"}}
]}') #>> '{results,0,declare_table,location}' AS declared;
SAVEPOINT s1;
SELECT jsonb_array_length(lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["bc", "t1"], "version": 1, "manifest_path": "t1-1"}},
    {"declare_table": {"id": ["bc", "t2"], "location": "s3://bucket/bc/t2.lance"}},
    {"deregister_table": {"id": ["bc", "new"]}}
]}') -> 'results') AS done;
SELECT pg_temp.versions('["bc", "t1"]') AS t1, lance_list_tables('{"id": ["bc"]}') AS tables;
-- Rolled back to s1: the second batch is undone, the first stays.
ROLLBACK TO SAVEPOINT s1;
SELECT pg_temp.versions('["bc", "t1"]') AS t1, lance_list_tables('{"id": ["bc"]}') AS tables;
-- A failing batch after a savepoint: rolling back to it keeps the work
-- before it, and the transaction goes on.
SAVEPOINT s2;
SELECT lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["bc", "t1"], "version": 1, "manifest_path": "t1-1"}},
    {"declare_table": {"id": ["bc", "t1"], "location": "s3://bucket/bc/t1.lance"}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
ROLLBACK TO SAVEPOINT s2;
SELECT pg_temp.versions('["bc", "t1"]') AS t1;
-- A batch in a savepoint that is released stays.
SAVEPOINT s3;
SELECT lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["bc", "t1"], "version": 1, "manifest_path": "t1-1"}}
]}') #> '{results,0,create_table_version,version,version}' AS created;
RELEASE SAVEPOINT s3;
COMMIT;
SELECT pg_temp.versions('["bc", "t1"]') AS t1;
SELECT lance_describe_table('{"id": ["bc", "t1"], "check_declared": true}') -> 'is_only_declared' AS is_only_declared;
SELECT lance_list_tables('{"id": ["bc"]}');

-- The same in a transaction that rolls back as a whole: nothing stays.
BEGIN;
SELECT jsonb_array_length(lance_batch_commit_tables('{"operations": [
    {"declare_table": {"id": ["bc", "t3"], "location": "s3://bucket/bc/t3.lance"}},
    {"create_table_version": {"id": ["bc", "t3"], "version": 1, "manifest_path": "t3-1"}},
    {"deregister_table": {"id": ["bc", "t1"]}}
]}') -> 'results') AS done;
ROLLBACK;
SELECT lance_list_tables('{"id": ["bc"]}');
SELECT pg_temp.versions('["bc", "t1"]') AS t1;

-- Many large batches in one statement: every response is whole (each entry
-- answers its own table and version), not memory another call reused.
SELECT count(*) AS tables
FROM (SELECT lance_register_table(jsonb_build_object('id', jsonb_build_array('bl', 't' || i),
                                                     'location', 's3://bucket/bl/t' || i))
        FROM (SELECT lance_create_namespace('{"id": ["bl"]}')) AS ns, generate_series(1, 60) AS i) AS r;
SELECT bool_and(v -> 'versions' @> jsonb_build_array(jsonb_build_object('version', n))
                AND jsonb_array_length(v -> 'versions') = 60
                AND (SELECT bool_and(e ->> 'manifest_path' = 'bl/m' || n)
                       FROM jsonb_array_elements(v -> 'versions') AS e)) AS all_whole,
       count(*) AS batches
FROM (SELECT n, lance_batch_create_table_versions(
                   (SELECT jsonb_build_object('entries', jsonb_agg(jsonb_build_object(
                               'id', jsonb_build_array('bl', 't' || i), 'version', n,
                               'manifest_path', 'bl/m' || n))) FROM generate_series(1, 60) AS i)) AS v
        FROM generate_series(1, 40) AS n) AS b;
SELECT lance_drop_namespace('{"id": ["bl"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;

-- Clean up.
SELECT lance_drop_namespace('{"id": ["bt"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["bc"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
DROP FUNCTION pg_temp.show(jsonb);
DROP FUNCTION pg_temp.versions(jsonb);
RESET lance_namespace.root;
RESET lance_namespace.local_roots;
