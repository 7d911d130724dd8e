--
-- versions: the table version operations (CreateTableVersion,
-- ListTableVersions, DescribeTableVersion, BatchDeleteTableVersions) and
-- the version argument of DescribeTable and TableExists, on tables at
-- s3:// locations, whose versions are pure catalog records (the catalog
-- does not manage their manifests: see managed).
--
-- timestamp_millis is the version's creation time; it is never printed.
-- pg_temp.show() replaces each one with "recent" after checking that it is
-- an integer number of milliseconds within an hour of now, and with
-- "IMPLAUSIBLE ..." otherwise, so that a bad value shows as a difference.
--
\set VERBOSITY default

-- No root location and no managed folders, whatever the server's configuration.
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '';

\i test/sql/show.sql

-- The number of version records before this test, to prove at the end
-- that everything it made is gone.
SELECT count(*) AS versions_before FROM lance_catalog.version \gset

-- Fixtures: a registered table, a declared table, a table that never gets
-- a version.
SELECT lance_create_namespace('{"id": ["vs"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_register_table('{"id": ["vs", "t"], "location": "s3://bucket/vs/t.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_declare_table('{"id": ["vs", "d"], "location": "s3://bucket/vs/d.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_register_table('{"id": ["vs", "empty"], "location": "s3://bucket/vs/empty.lance"}') - 'transaction_id' AS lance_register_table;

-- s3:// tables are not managed by the catalog.
SELECT lance_describe_table('{"id": ["vs", "t"]}') -> 'managed_versioning' AS managed;

--
-- CreateTableVersion stores every field it is given and returns it.
--

-- All fields: version, manifest_path, manifest_size, e_tag, metadata are
-- returned as given (the path is not rewritten for an s3:// table), and
-- timestamp_millis is the creation time: exactly the transaction's now().
SELECT r - 'version' - 'transaction_id' AS rest,
       (r -> 'version') - 'timestamp_millis' AS version,
       (r #>> '{version,timestamp_millis}')::bigint
           = (extract(epoch FROM now()) * 1000)::bigint AS timestamp_is_now
FROM lance_create_table_version('{"id": ["vs", "t"], "version": 1, "manifest_path": "bucket/vs/t.lance/_versions/18446744073709551614.manifest-aaa", "manifest_size": 436, "e_tag": "etag-1", "metadata": {"writer": "regress", "k": "v"}, "naming_scheme": "V2"}') AS r;
-- DescribeTableVersion reads back what was stored.
SELECT pg_temp.show(lance_describe_table_version('{"id": ["vs", "t"], "version": 1}'));

-- Only the required fields: no manifest_size, e_tag or metadata in the
-- answer; timestamp_millis is always there.
SELECT pg_temp.show(lance_create_table_version('{"id": ["vs", "t"], "version": 2, "manifest_path": "bucket/vs/t.lance/_versions/2.manifest"}'));

-- naming_scheme V1, v2 (any case), v_1 (snake_case form) are accepted; null
-- is the same as absent.
SELECT pg_temp.show(lance_create_table_version('{"id": ["vs", "t"], "version": 3, "manifest_path": "bucket/vs/t.lance/_versions/3.manifest", "naming_scheme": "V1"}'));
SELECT pg_temp.show(lance_create_table_version('{"id": ["vs", "t"], "version": 4, "manifest_path": "bucket/vs/t.lance/_versions/4.manifest", "naming_scheme": "v2"}'));
SELECT pg_temp.show(lance_create_table_version('{"id": ["vs", "t"], "version": 5, "manifest_path": "bucket/vs/t.lance/_versions/5.manifest", "naming_scheme": "v_1", "e_tag": null, "metadata": null}'));
-- The naming scheme is recorded per version.
SELECT version, naming_scheme
FROM lance_catalog.version v JOIN lance_catalog.object o ON o.id = v.table_id
WHERE o.name = 't' AND o.location = 's3://bucket/vs/t.lance'
ORDER BY version;

-- An unknown naming_scheme, or one that is not a string, is LN013.
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 6, "manifest_path": "m", "naming_scheme": "V3"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 6, "manifest_path": "m", "naming_scheme": 2}') - 'transaction_id' AS lance_create_table_version;

--
-- A version that exists is LN014 ConcurrentModification, and the stored
-- version is left as it was.
--
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 1, "manifest_path": "bucket/vs/t.lance/_versions/other.manifest"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_describe_table_version('{"id": ["vs", "t"], "version": 1}') #>> '{version,manifest_path}' AS manifest_path;

--
-- branch: absent, "" and "main" are main; any other branch does not exist
-- (LN022 TableBranchNotFound) in every version operation.
--
SELECT pg_temp.show(lance_create_table_version('{"id": ["vs", "t"], "version": 6, "manifest_path": "bucket/vs/t.lance/_versions/6.manifest", "branch": "main"}'));
SELECT pg_temp.show(lance_create_table_version('{"id": ["vs", "t"], "version": 7, "manifest_path": "bucket/vs/t.lance/_versions/7.manifest", "branch": ""}'));
-- main is one branch: version 6 made on "main" is a duplicate on "" and absent.
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 6, "manifest_path": "x"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 7, "manifest_path": "x", "branch": "main"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_describe_table_version('{"id": ["vs", "t"], "version": 7, "branch": "main"}') #>> '{version,manifest_path}' AS manifest_path;
SELECT lance_describe_table_version('{"id": ["vs", "t"], "version": 6, "branch": ""}') #>> '{version,manifest_path}' AS manifest_path;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"], "branch": "main"}'), '$.versions[*].version') AS versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"], "branch": ""}'), '$.versions[*].version') AS versions;
-- Another branch: LN022.
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 8, "manifest_path": "x", "branch": "dev"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_list_table_versions('{"id": ["vs", "t"], "branch": "dev"}');
SELECT lance_describe_table_version('{"id": ["vs", "t"], "branch": "dev"}');
SELECT lance_describe_table_version('{"id": ["vs", "t"], "version": 1, "branch": "dev"}');
SELECT lance_batch_delete_table_versions('{"id": ["vs", "t"], "branch": "dev", "ranges": [{"start_version": 0, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_describe_table('{"id": ["vs", "t"], "version": 1, "branch": "dev"}');
SELECT lance_table_exists('{"id": ["vs", "t"], "version": 1, "branch": "dev"}');
-- branch must be a string.
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 8, "manifest_path": "x", "branch": 1}') - 'transaction_id' AS lance_create_table_version;
-- Nothing was made by the refused calls.
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"]}'), '$.versions[*].version') AS versions;

--
-- A declared table stops being "only declared" with its first version.
--

-- Before: is_only_declared is true, and ListTables leaves it out with
-- include_declared false.
SELECT lance_describe_table('{"id": ["vs", "d"], "check_declared": true}');
SELECT lance_list_tables('{"id": ["vs"], "include_declared": false}');
SELECT lance_list_tables('{"id": ["vs"]}');
SELECT lance_list_table_versions('{"id": ["vs", "d"]}');
-- Its first version.
SELECT pg_temp.show(lance_create_table_version('{"id": ["vs", "d"], "version": 1, "manifest_path": "bucket/vs/d.lance/_versions/18446744073709551614.manifest-bbb", "manifest_size": 10, "naming_scheme": "V2"}'));
-- After: is_only_declared is false, and ListTables includes it either way.
SELECT lance_describe_table('{"id": ["vs", "d"], "check_declared": true}');
SELECT lance_list_tables('{"id": ["vs"], "include_declared": false}');
SELECT lance_list_all_tables('{"include_declared": false}') -> 'tables' ? 'vs$d' AS listed_with_data;

--
-- ListTableVersions: ascending by default, descending on request, pages of
-- `limit` versions.  Table vs$t has versions 1 to 7.
--

-- Ascending, every field of each version (one version a row); no page
-- token, as fewer than the default limit remain.
SELECT pg_temp.show(v) AS version
FROM jsonb_array_elements(lance_list_table_versions('{"id": ["vs", "t"]}') -> 'versions') AS v;
SELECT lance_list_table_versions('{"id": ["vs", "t"]}') - 'versions' AS rest;
-- "descending": false is the default order.
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"], "descending": false}'), '$.versions[*].version') AS versions;
-- Descending: newest first.
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"], "descending": true}'), '$.versions[*].version') AS versions;
-- Lance's look-up of the latest version: the latest, alone.
SELECT pg_temp.show(lance_list_table_versions('{"id": ["vs", "t"], "descending": true, "limit": 1}') - 'page_token') AS latest;
-- limit 0: an empty page and no page token.
SELECT lance_list_table_versions('{"id": ["vs", "t"], "limit": 0}');
-- A table with no versions: an empty list and no page token.
SELECT lance_list_table_versions('{"id": ["vs", "empty"]}');
SELECT lance_list_table_versions('{"id": ["vs", "empty"], "descending": true, "limit": 1}');

-- Paging ascending with limit 3: every full page carries a page token,
-- passed back as it came (it is opaque, so it is not printed); the last,
-- partial page has none.
SELECT jsonb_path_query_array(r, '$.versions[*].version') AS versions, r ? 'page_token' AS has_token
FROM lance_list_table_versions('{"id": ["vs", "t"], "limit": 3}') AS r;
SELECT lance_list_table_versions('{"id": ["vs", "t"], "limit": 3}') ->> 'page_token' AS token \gset
SELECT jsonb_path_query_array(r, '$.versions[*].version') AS versions, r ? 'page_token' AS has_token
FROM lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'limit', 3, 'page_token', :'token')) AS r;
SELECT lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'limit', 3, 'page_token', :'token')) ->> 'page_token' AS token \gset
SELECT jsonb_path_query_array(r, '$.versions[*].version') AS versions, r ? 'page_token' AS has_token
FROM lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'limit', 3, 'page_token', :'token')) AS r;

-- Paging descending with limit 2: 7 6, 5 4, 3 2, then 1 alone.
SELECT jsonb_path_query_array(r, '$.versions[*].version') AS versions, r ? 'page_token' AS has_token
FROM lance_list_table_versions('{"id": ["vs", "t"], "descending": true, "limit": 2}') AS r;
SELECT lance_list_table_versions('{"id": ["vs", "t"], "descending": true, "limit": 2}') ->> 'page_token' AS token \gset
SELECT jsonb_path_query_array(r, '$.versions[*].version') AS versions, r ? 'page_token' AS has_token
FROM lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'descending', true, 'limit', 2, 'page_token', :'token')) AS r;
SELECT lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'descending', true, 'limit', 2, 'page_token', :'token')) ->> 'page_token' AS token \gset
SELECT jsonb_path_query_array(r, '$.versions[*].version') AS versions, r ? 'page_token' AS has_token
FROM lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'descending', true, 'limit', 2, 'page_token', :'token')) AS r;
SELECT lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'descending', true, 'limit', 2, 'page_token', :'token')) ->> 'page_token' AS token \gset
SELECT jsonb_path_query_array(r, '$.versions[*].version') AS versions, r ? 'page_token' AS has_token
FROM lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'descending', true, 'limit', 2, 'page_token', :'token')) AS r;

-- A page that is exactly full carries a token even when nothing follows;
-- the page after it is empty and has none.
SELECT jsonb_path_query_array(r, '$.versions[*].version') AS versions, r ? 'page_token' AS has_token
FROM lance_list_table_versions('{"id": ["vs", "t"], "limit": 7}') AS r;
SELECT lance_list_table_versions('{"id": ["vs", "t"], "limit": 7}') ->> 'page_token' AS token \gset
SELECT lance_list_table_versions(jsonb_build_object('id', '["vs", "t"]'::jsonb, 'limit', 7, 'page_token', :'token'));
-- An empty page_token (or null) starts from the beginning.
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"], "limit": 2, "page_token": ""}'), '$.versions[*].version') AS versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"], "limit": 2, "page_token": null}'), '$.versions[*].version') AS versions;

-- ListTableVersions errors: a page token this catalog did not make, a
-- negative limit, a missing table or namespace.
SELECT lance_list_table_versions('{"id": ["vs", "t"], "page_token": "abc"}');
SELECT lance_list_table_versions('{"id": ["vs", "t"], "page_token": "-1"}');
SELECT lance_list_table_versions('{"id": ["vs", "t"], "limit": -1}');
SELECT lance_list_table_versions('{"id": ["vs", "t"], "descending": "yes"}');
SELECT lance_list_table_versions('{"id": ["vs", "missing"]}');
SELECT lance_list_table_versions('{"id": ["vs_missing", "t"]}');
SELECT lance_list_table_versions('{"id": []}');
SELECT lance_list_table_versions('{}');

--
-- DescribeTableVersion.
--

-- With a version: that version.
SELECT pg_temp.show(lance_describe_table_version('{"id": ["vs", "t"], "version": 3}'));
-- Without one: the latest.
SELECT pg_temp.show(lance_describe_table_version('{"id": ["vs", "t"]}'));
SELECT pg_temp.show(lance_describe_table_version('{"id": ["vs", "t"], "version": null}'));
-- A version that does not exist: LN011.
SELECT lance_describe_table_version('{"id": ["vs", "t"], "version": 99}');
-- A table with no versions: LN011 with or without a version.
SELECT lance_describe_table_version('{"id": ["vs", "empty"]}');
SELECT lance_describe_table_version('{"id": ["vs", "empty"], "version": 1}');
-- A missing table is LN004, a missing namespace LN001, a bad version LN013.
SELECT lance_describe_table_version('{"id": ["vs", "missing"], "version": 1}');
SELECT lance_describe_table_version('{"id": ["vs_missing", "t"]}');
SELECT lance_describe_table_version('{"id": ["vs", "t"], "version": -1}');
SELECT lance_describe_table_version('{"id": ["vs", "t"], "version": "1"}');

--
-- DescribeTable and TableExists with a version: ok if the version exists,
-- LN011 if not.
--
SELECT lance_describe_table('{"id": ["vs", "t"], "version": 2}');
SELECT lance_describe_table('{"id": ["vs", "t"], "version": 2, "check_declared": true, "with_table_uri": true}');
SELECT lance_table_exists('{"id": ["vs", "t"], "version": 2}');
SELECT lance_describe_table('{"id": ["vs", "t"], "version": 99}');
SELECT lance_table_exists('{"id": ["vs", "t"], "version": 99}');
SELECT lance_describe_table('{"id": ["vs", "empty"], "version": 1}');
SELECT lance_table_exists('{"id": ["vs", "empty"], "version": 1}');
-- Without a version, a table with no versions exists and describes.
SELECT lance_table_exists('{"id": ["vs", "empty"]}');
SELECT lance_describe_table('{"id": ["vs", "empty"]}');

--
-- CreateTableVersion errors.
--

-- version and manifest_path are required: LN013.
SELECT lance_create_table_version('{"id": ["vs", "t"], "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": null, "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 20}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 20, "manifest_path": ""}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 20, "manifest_path": 5}') - 'transaction_id' AS lance_create_table_version;
-- version must be a non-negative integer: LN013.
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": -1, "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 1.5, "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": "20", "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
-- Other fields of the wrong type: LN013.
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 20, "manifest_path": "m", "manifest_size": -1}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 20, "manifest_path": "m", "e_tag": 1}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs", "t"], "version": 20, "manifest_path": "m", "metadata": {"k": 1}}') - 'transaction_id' AS lance_create_table_version;
-- id is required and must name a table: LN013.
SELECT lance_create_table_version('{"version": 20, "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": [], "version": 20, "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
-- A missing table is LN004, a missing namespace LN001.
SELECT lance_create_table_version('{"id": ["vs", "missing"], "version": 1, "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["vs_missing", "t"], "version": 1, "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
-- A namespace is not a table.
SELECT lance_create_namespace('{"id": ["vs", "sub"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_table_version('{"id": ["vs", "sub"], "version": 1, "manifest_path": "m"}') - 'transaction_id' AS lance_create_table_version;
-- None of them made a version.
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"]}'), '$.versions[*].version') AS versions;

-- Version 0 is a valid version number.
SELECT pg_temp.show(lance_create_table_version('{"id": ["vs", "empty"], "version": 0, "manifest_path": "bucket/vs/empty.lance/_versions/0.manifest", "naming_scheme": "V1"}'));
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "empty"]}'), '$.versions[*].version') AS versions;

--
-- BatchDeleteTableVersions: ranges are start-inclusive and end-exclusive,
-- end_version -1 runs through the latest, missing versions are skipped and
-- deleted_count counts what was deleted.  Table vs$del gets versions 1..12.
--
SELECT lance_register_table('{"id": ["vs", "del"], "location": "s3://bucket/vs/del.lance"}') - 'transaction_id' AS lance_register_table;
SELECT count(*) AS created
FROM generate_series(1, 12) AS v,
     lance_create_table_version(jsonb_build_object('id', '["vs", "del"]'::jsonb, 'version', v, 'manifest_path', format('bucket/vs/del.lance/_versions/%s.manifest', v)));

-- [2, 4) deletes 2 and 3.
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 2, "end_version": 4}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "del"]}'), '$.versions[*].version') AS versions;
-- Several ranges in one call: [5, 6) and [7, 9) delete 5, 7 and 8.
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 5, "end_version": 6}, {"start_version": 7, "end_version": 9}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "del"]}'), '$.versions[*].version') AS versions;
-- Missing versions are skipped: [1, 5) now holds 1 and 4 only.
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 1, "end_version": 5}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "del"]}'), '$.versions[*].version') AS versions;
-- Empty ranges (end = start, end < start), a range whose versions are all
-- gone, and no ranges at all delete nothing.
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 6, "end_version": 6}, {"start_version": 9, "end_version": 6}, {"start_version": 2, "end_version": 4}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": []}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "del"]}'), '$.versions[*].version') AS versions;
-- Overlapping ranges count each version once: 6 and 9.
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 6, "end_version": 8}, {"start_version": 6, "end_version": 10}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "del"]}'), '$.versions[*].version') AS versions;
-- end_version -1: through the latest, inclusive (11 and 12).
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 11, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "del"]}'), '$.versions[*].version') AS versions;
-- The latest is now the newest remaining version.
SELECT lance_describe_table_version('{"id": ["vs", "del"]}') #> '{version,version}' AS latest;
SELECT lance_list_table_versions('{"id": ["vs", "del"], "descending": true, "limit": 1}') #> '{versions,0,version}' AS latest;
-- A deleted version is gone (LN011), and its number can be used again.
SELECT lance_describe_table_version('{"id": ["vs", "del"], "version": 12}');
SELECT lance_create_table_version('{"id": ["vs", "del"], "version": 12, "manifest_path": "bucket/vs/del.lance/_versions/12-again.manifest"}') #>> '{version,manifest_path}' AS manifest_path;
-- As in the reference implementation, any negative end_version is unbounded.
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 12, "end_version": -5}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "del"]}'), '$.versions[*].version') AS versions;
-- {start_version: 0, end_version: -1} deletes every version.
SELECT lance_create_table_version('{"id": ["vs", "del"], "version": 20, "manifest_path": "bucket/vs/del.lance/_versions/20.manifest"}') #> '{version,version}' AS created;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 0, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_list_table_versions('{"id": ["vs", "del"]}');
SELECT lance_describe_table_version('{"id": ["vs", "del"]}');
-- Deleting from a table with no versions deletes nothing.
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 0, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
-- Only the named table's versions are deleted: vs$t still has 1..7.
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t"]}'), '$.versions[*].version') AS versions;

-- BatchDeleteTableVersions errors: ranges is required, each range needs
-- both ends, start_version is a non-negative integer; a missing table is
-- LN004, a missing namespace LN001.
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": {"start_version": 0, "end_version": -1}}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 0}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"end_version": 3}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": -1, "end_version": 3}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [{"start_version": 0, "end_version": "3"}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "del"], "ranges": [5]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs", "missing"], "ranges": []}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["vs_missing", "del"], "ranges": []}') - 'transaction_id' AS lance_batch_delete_table_versions;

--
-- Versions belong to the table entry: a rename keeps them, a deregister
-- removes them, so that a table registered again under the same name has
-- none.
--
SELECT lance_rename_table('{"id": ["vs", "t"], "new_table_name": "t2"}') - 'transaction_id' AS lance_rename_table;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "t2"]}'), '$.versions[*].version') AS versions;
SELECT lance_rename_table('{"id": ["vs", "t2"], "new_table_name": "t"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_deregister_table('{"id": ["vs", "t"]}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_register_table('{"id": ["vs", "t"], "location": "s3://bucket/vs/t.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_list_table_versions('{"id": ["vs", "t"]}');
SELECT lance_describe_table_version('{"id": ["vs", "t"]}');
SELECT lance_describe_table('{"id": ["vs", "t"], "version": 1}');
-- The same holds for DropTable.
SELECT lance_drop_table('{"id": ["vs", "d"]}') - 'transaction_id' AS lance_drop_table;
SELECT lance_declare_table('{"id": ["vs", "d"], "location": "s3://bucket/vs/d.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_list_table_versions('{"id": ["vs", "d"]}');
SELECT lance_describe_table('{"id": ["vs", "d"], "check_declared": true}');

--
-- SQLSTATE: each error above is LN followed by its three-digit code, the
-- same code as the DETAIL's ErrorResponse.
--
\i test/sql/outcome.sql
SELECT call, pg_temp.outcome('SELECT ' || call) AS outcome
FROM (VALUES
    ($$lance_create_table_version('{"id": ["vs", "empty"], "version": 0, "manifest_path": "m"}')$$),
    ($$lance_create_table_version('{"id": ["vs", "empty"], "version": 1, "manifest_path": "m", "naming_scheme": "V3"}')$$),
    ($$lance_create_table_version('{"id": ["vs", "empty"], "version": 1, "manifest_path": "m", "branch": "dev"}')$$),
    ($$lance_create_table_version('{"id": ["vs", "missing"], "version": 1, "manifest_path": "m"}')$$),
    ($$lance_create_table_version('{"id": ["vs_missing", "t"], "version": 1, "manifest_path": "m"}')$$),
    ($$lance_describe_table_version('{"id": ["vs", "empty"], "version": 5}')$$),
    ($$lance_describe_table('{"id": ["vs", "empty"], "version": 5}')$$),
    ($$lance_table_exists('{"id": ["vs", "empty"], "version": 5}')$$),
    ($$lance_list_table_versions('{"id": ["vs", "empty"], "branch": "dev"}')$$),
    ($$lance_describe_table('{"id": ["vs", "empty"], "branch": "dev"}')$$),
    ($$lance_table_exists('{"id": ["vs", "empty"], "branch": "dev"}')$$),
    ($$lance_batch_delete_table_versions('{"id": ["vs", "empty"]}')$$)
) AS t(call);

-- The highest version number there is still sorts first when descending.
SELECT lance_register_table('{"id": ["vs", "huge"], "location": "s3://bucket/vs/huge"}') ->> 'location' AS location;
SELECT lance_create_table_version('{"id": ["vs", "huge"], "version": 5, "manifest_path": "m5"}') #>> '{version,version}' AS version;
SELECT lance_create_table_version('{"id": ["vs", "huge"], "version": 9223372036854775807, "manifest_path": "mmax"}') #>> '{version,version}' AS version;
SELECT lance_describe_table_version('{"id": ["vs", "huge"]}') #>> '{version,version}' AS latest;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "huge"], "descending": true}'), '$.versions[*].version') AS descending;
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["vs", "huge"], "descending": true, "limit": 1, "page_token": "9223372036854775807"}'), '$.versions[*].version') AS next_page;

-- The latest version is read by a direct scan of the catalog's index, a
-- version by its number by a SQL statement: both answer the same, metadata
-- of every JSON kind (the API stores strings; an administrator's UPDATE
-- may store others) and the timestamp in milliseconds, rounded half away
-- from zero as the SQL rounds it.
SELECT lance_register_table('{"id": ["vs", "same"], "location": "s3://bucket/vs/same"}') ->> 'location' AS location;
SELECT lance_create_table_version('{"id": ["vs", "same"], "version": 1, "manifest_path": "m1", "manifest_size": 12, "e_tag": "e1", "metadata": {"k": "v", "empty": ""}}') #>> '{version,version}' AS version;
UPDATE lance_catalog.version
   SET metadata = metadata || '{"n": 1.50, "b": true, "nul": null, "o": {"x": [1, "y"]}}',
       created_at = '2026-01-02 03:04:05.0675+00'
 WHERE manifest_path = 'm1';
SELECT lance_describe_table_version('{"id": ["vs", "same"]}') AS latest;
SELECT lance_describe_table_version('{"id": ["vs", "same"]}')
           = lance_describe_table_version('{"id": ["vs", "same"], "version": 1}') AS latest_same_as_by_number,
       lance_list_table_versions('{"id": ["vs", "same"], "descending": true, "limit": 1}') #> '{versions,0}'
           = lance_describe_table_version('{"id": ["vs", "same"], "version": 1}') -> 'version' AS listed_same_as_by_number;
-- A null in a map (metadata, properties) is no string: it is left out.
UPDATE lance_catalog.object SET properties = '{"p": null, "q": "r"}' WHERE name = 'same';
SELECT lance_describe_table('{"id": ["vs", "same"]}') -> 'properties' AS properties;
-- A version made earlier in the transaction is its latest; gone with a rollback.
BEGIN;
SELECT lance_create_table_version('{"id": ["vs", "same"], "version": 2, "manifest_path": "m2"}') #>> '{version,version}' AS version;
SELECT lance_describe_table_version('{"id": ["vs", "same"]}') #>> '{version,version}' AS latest_in_transaction;
ROLLBACK;
SELECT lance_describe_table_version('{"id": ["vs", "same"]}') #>> '{version,version}' AS latest_after_rollback;
-- What the command that calls the look-up did before it is seen, as a
-- statement of the catalog would see it: a version deleted in a WITH.
SELECT lance_create_table_version('{"id": ["vs", "same"], "version": 3, "manifest_path": "m3"}') #>> '{version,version}' AS version;
BEGIN;
WITH gone AS (DELETE FROM lance_catalog.version WHERE manifest_path = 'm3' RETURNING version)
SELECT gone.version AS deleted,
       lance_describe_table_version('{"id": ["vs", "same"]}') #>> '{version,version}' AS latest
  FROM gone;
ROLLBACK;

-- Clean up: dropping the namespace drops its tables and their versions.
SELECT lance_drop_namespace('{"id": ["vs"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT count(*) = :versions_before AS versions_gone FROM lance_catalog.version;
DROP FUNCTION pg_temp.show(jsonb);
DROP FUNCTION pg_temp.outcome(text);
RESET lance_namespace.root;
RESET lance_namespace.local_roots;
