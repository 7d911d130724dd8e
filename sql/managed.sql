--
-- managed: managed versioning on local storage.  For a table below one of
-- the folders in lance_namespace.local_roots the catalog answers
-- managed_versioning true, and CreateTableVersion does what the reference
-- catalog does: it puts the staging manifest the writer made at the
-- version's final name (a flushed hard link, or a copy where the file
-- system cannot link) and answers that name.  The final manifest exists
-- only while the version does: it goes when the transaction (or
-- savepoint) that made it rolls back, and the staging file goes when the
-- version commits.
--
-- This test plays the Lance writer: it writes staging manifests with
-- server-side COPY and sends their paths in Lance's form, an object store
-- path without the leading slash.  Everything lives under
-- /tmp/lance_namespace_regress, made here with psql's \! (as the client's
-- user) and opened to the server's user.
--
-- timestamp_millis is never printed: pg_temp.show() replaces each one with
-- "recent" after checking that it is an integer number of milliseconds
-- within an hour of now (with "IMPLAUSIBLE ..." otherwise).
--
\set VERBOSITY default

-- The folders: tables t, v1, nov (no _versions folder) and lnk (whose
-- _versions is a symbolic link out of the table) below the root, and a
-- folder outside it.
\! rm -rf /tmp/lance_namespace_regress
\! mkdir -p /tmp/lance_namespace_regress/root/ns/t.lance/_versions /tmp/lance_namespace_regress/root/ns/v1.lance/_versions /tmp/lance_namespace_regress/root/ns/nov.lance /tmp/lance_namespace_regress/root/ns/lnk.lance /tmp/lance_namespace_regress/outside/o.lance/_versions
\! ln -s /tmp/lance_namespace_regress/outside/o.lance/_versions /tmp/lance_namespace_regress/root/ns/lnk.lance/_versions
\! chmod -R 777 /tmp/lance_namespace_regress

-- Load the library first, so that its settings exist (and are checked)
-- when they are set.
LOAD 'lance_namespace';
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '/tmp/lance_namespace_regress/root';

\i test/sql/show.sql

-- The files in a folder, as the server sees them, in byte order.
CREATE FUNCTION pg_temp.ls(folder text) RETURNS text[]
LANGUAGE sql AS $$
    SELECT coalesce(array_agg(f ORDER BY f COLLATE "C"), '{}') FROM pg_ls_dir(folder) AS f
$$;

-- The version numbers of a table, ascending.
CREATE FUNCTION pg_temp.versions(id jsonb) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_path_query_array(lance_list_table_versions(jsonb_build_object('id', id)),
                                  '$.versions[*].version')
$$;

--
-- lance_namespace.local_roots takes absolute folders only; a refused value
-- leaves the setting as it was.
--
SET lance_namespace.local_roots = 'relative/root';
SET lance_namespace.local_roots = '/tmp/lance_namespace_regress/root, relative/root';
SHOW lance_namespace.local_roots;

--
-- managed_versioning: true for a table strictly below a root, false
-- anywhere else.
--
SELECT lance_create_namespace('{"id": ["mg"]}') - 'transaction_id' AS lance_create_namespace;

-- Below the root: true, in DeclareTable's and DescribeTable's answers.
SELECT lance_declare_table('{"id": ["mg", "t"], "location": "/tmp/lance_namespace_regress/root/ns/t.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_describe_table('{"id": ["mg", "t"]}');
SELECT lance_declare_table('{"id": ["mg", "v1"], "location": "/tmp/lance_namespace_regress/root/ns/v1.lance"}') -> 'managed_versioning' AS managed;
SELECT lance_declare_table('{"id": ["mg", "nov"], "location": "/tmp/lance_namespace_regress/root/ns/nov.lance"}') -> 'managed_versioning' AS managed;
SELECT lance_declare_table('{"id": ["mg", "lnk"], "location": "/tmp/lance_namespace_regress/root/ns/lnk.lance"}') -> 'managed_versioning' AS managed;
-- A file:// URI below the root is managed too (registered tables as well).
SELECT lance_register_table('{"id": ["mg", "uri"], "location": "file:///tmp/lance_namespace_regress/root/ns/uri.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_describe_table('{"id": ["mg", "uri"]}') -> 'managed_versioning' AS managed;
-- Outside the root, an object store, the root itself, a folder whose name
-- merely starts like the root, and a path that climbs out with "..": false.
SELECT lance_declare_table('{"id": ["mg", "out"], "location": "/tmp/lance_namespace_regress/outside/o.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_describe_table('{"id": ["mg", "out"]}') -> 'managed_versioning' AS managed;
SELECT lance_declare_table('{"id": ["mg", "s3"], "location": "s3://bucket/mg/s3.lance"}') -> 'managed_versioning' AS managed;
SELECT lance_declare_table('{"id": ["mg", "itself"], "location": "/tmp/lance_namespace_regress/root"}') -> 'managed_versioning' AS managed;
SELECT lance_declare_table('{"id": ["mg", "prefix"], "location": "/tmp/lance_namespace_regress/rootx/p.lance"}') -> 'managed_versioning' AS managed;
SELECT lance_declare_table('{"id": ["mg", "climb"], "location": "/tmp/lance_namespace_regress/root/../outside/c.lance"}') -> 'managed_versioning' AS managed;
-- The answer follows the setting: without roots nothing is managed.
SET lance_namespace.local_roots = '';
SELECT lance_describe_table('{"id": ["mg", "t"]}') -> 'managed_versioning' AS managed;
SET lance_namespace.local_roots = '/tmp/lance_namespace_regress/elsewhere, /tmp/lance_namespace_regress/root/';
SELECT lance_describe_table('{"id": ["mg", "t"]}') -> 'managed_versioning' AS managed;
SET lance_namespace.local_roots = '/tmp/lance_namespace_regress/root';

--
-- A commit with the V2 naming scheme: the staging manifest is put at
-- _versions/{2^64 - 1 - version, 20 digits}.manifest, and that name comes
-- back in the form it was sent (no leading slash); manifest_size is the
-- file's real size (13 bytes: "manifest one" and a newline), whatever the
-- request said.
--
COPY (SELECT 'manifest one') TO '/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest-abc';
BEGIN;
SELECT pg_temp.show(lance_create_table_version('{"id": ["mg", "t"], "version": 1, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest-abc", "manifest_size": 999, "e_tag": "etag-1", "naming_scheme": "V2"}'));
-- Before the commit both files are there, with the same content.
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SELECT pg_read_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest') AS final,
       pg_read_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest')
           = pg_read_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest-abc') AS same_as_staging,
       (pg_stat_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest')).size AS size;
-- Not a copy: the final name is a second link to the staging file, which
-- the catalog flushed (Lance does not), so no byte is written twice.
\! stat -c 'final manifest: %h links' /tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest
COMMIT;
-- After the commit the staging file is gone and the final one stays.
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
\! stat -c 'final manifest: %h links' /tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest
SELECT pg_read_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest') AS final;
-- The catalog records the final name and the real size.
SELECT pg_temp.show(lance_describe_table_version('{"id": ["mg", "t"], "version": 1}'));
SELECT pg_temp.show(lance_list_table_versions('{"id": ["mg", "t"], "descending": true, "limit": 1}') - 'page_token');
-- The table is no longer only declared.
SELECT lance_describe_table('{"id": ["mg", "t"], "check_declared": true}') -> 'is_only_declared' AS is_only_declared;

--
-- The V1 naming scheme: _versions/{version}.manifest.
--
COPY (SELECT 'manifest v1') TO '/tmp/lance_namespace_regress/root/ns/v1.lance/_versions/1.manifest-xyz';
SELECT pg_temp.show(lance_create_table_version('{"id": ["mg", "v1"], "version": 1, "manifest_path": "tmp/lance_namespace_regress/root/ns/v1.lance/_versions/1.manifest-xyz", "naming_scheme": "V1"}'));
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/v1.lance/_versions');
SELECT pg_read_file('/tmp/lance_namespace_regress/root/ns/v1.lance/_versions/1.manifest') AS final;

--
-- ROLLBACK removes the final manifest and keeps the staging file, so that
-- the disk never shows a version the catalog does not have.
--
COPY (SELECT 'manifest two') TO '/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551613.manifest-def';
BEGIN;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551613.manifest-def"}') #>> '{version,manifest_path}' AS manifest_path;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
ROLLBACK;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SELECT pg_temp.versions('["mg", "t"]') AS versions;

--
-- Savepoints: one rolled back removes the manifest made in it, one
-- released keeps it; a released savepoint inside one rolled back is rolled
-- back with it.
--
BEGIN;
SAVEPOINT s1;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551613.manifest-def"}') #>> '{version,manifest_path}' AS manifest_path;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
ROLLBACK TO SAVEPOINT s1;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SAVEPOINT outer_sp;
SAVEPOINT inner_sp;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551613.manifest-def"}') #>> '{version,manifest_path}' AS manifest_path;
RELEASE SAVEPOINT inner_sp;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
ROLLBACK TO SAVEPOINT outer_sp;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SAVEPOINT s2;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551613.manifest-def"}') #>> '{version,manifest_path}' AS manifest_path;
RELEASE SAVEPOINT s2;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
COMMIT;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SELECT pg_read_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551613.manifest') AS final;
SELECT pg_temp.versions('["mg", "t"]') AS versions;

--
-- A batch whose last operation fails removes the manifests its earlier
-- operations made.  The operations run in table order, so the versions of
-- mg$t and mg$v1 are made before the declaration of mg$z fails.
--
SELECT lance_register_table('{"id": ["mg", "z"], "location": "s3://bucket/mg/z.lance"}') ->> 'location' AS z;
COPY (SELECT 'manifest three') TO '/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551612.manifest-ghi';
COPY (SELECT 'manifest v1 two') TO '/tmp/lance_namespace_regress/root/ns/v1.lance/_versions/2.manifest-uvw';
SELECT lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["mg", "t"], "version": 3, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551612.manifest-ghi"}},
    {"create_table_version": {"id": ["mg", "v1"], "version": 2, "manifest_path": "tmp/lance_namespace_regress/root/ns/v1.lance/_versions/2.manifest-uvw", "naming_scheme": "V1"}},
    {"declare_table": {"id": ["mg", "z"], "location": "s3://bucket/mg/z2.lance"}}
]}') - 'transaction_id' AS lance_batch_commit_tables;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/v1.lance/_versions');
SELECT pg_temp.versions('["mg", "t"]') AS t, pg_temp.versions('["mg", "v1"]') AS v1;
-- The same batch without the failing operation commits both versions.
SELECT pg_temp.show(lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["mg", "t"], "version": 3, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551612.manifest-ghi"}},
    {"create_table_version": {"id": ["mg", "v1"], "version": 2, "manifest_path": "tmp/lance_namespace_regress/root/ns/v1.lance/_versions/2.manifest-uvw", "naming_scheme": "V1"}}
]}'));
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/v1.lance/_versions');
-- BatchCreateTableVersions whose last entry is refused writes nothing.
COPY (SELECT 'manifest four') TO '/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-jkl';
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-jkl"},
    {"id": ["mg", "t"], "version": 5, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551610.manifest-missing"}
]}') - 'transaction_id' AS lance_batch_create_table_versions;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SELECT pg_temp.versions('["mg", "t"]') AS versions;

--
-- Refusals: each is LN013 before anything on disk changes.  A decoy file
-- outside the table, and a symbolic link to it inside _versions.
--
COPY (SELECT 'not a manifest') TO '/tmp/lance_namespace_regress/outside/secret';
COPY (SELECT 'not a manifest') TO '/tmp/lance_namespace_regress/outside/o.lance/_versions/18446744073709551611.manifest-abc';
\! ln -s /tmp/lance_namespace_regress/outside/secret /tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-link
\! mkdir /tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-dir
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions') AS before \gset

-- A staging path outside the table's _versions folder: in another table,
-- in the table's own folder, in a folder below _versions, in the
-- _versions folder of another managed table.
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/outside/o.lance/_versions/18446744073709551611.manifest-abc"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/18446744073709551611.manifest-abc"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-dir/x"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/v1.lance/_versions/1.manifest"}') - 'transaction_id' AS lance_create_table_version;
-- A path with "..", ".", or an empty component, even one that would lead
-- back into the folder; a path that names the folder itself.
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/../_versions/18446744073709551611.manifest-jkl"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/../../../../outside/secret"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/./_versions/18446744073709551611.manifest-jkl"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance//_versions/18446744073709551611.manifest-jkl"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/"}') - 'transaction_id' AS lance_create_table_version;
-- A staging path that is a committed version's final manifest: once the
-- version commits the staging file is removed, which would delete that
-- version's manifest.  Refused, and the manifests stay.
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "v1"], "version": 3, "manifest_path": "tmp/lance_namespace_regress/root/ns/v1.lance/_versions/1.manifest", "naming_scheme": "V1"}') - 'transaction_id' AS lance_create_table_version;
SELECT (pg_stat_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest')).size > 0 AS t_v1_kept,
       (pg_stat_file('/tmp/lance_namespace_regress/root/ns/v1.lance/_versions/1.manifest')).size > 0 AS v1_v1_kept;
-- A staging file that is a symbolic link, or a folder.
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-link"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-dir"}') - 'transaction_id' AS lance_create_table_version;
-- A staging file that does not exist.
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-nope"}') - 'transaction_id' AS lance_create_table_version;
-- A table with no _versions folder, and one whose _versions folder is a
-- symbolic link out of the table.
SELECT lance_create_table_version('{"id": ["mg", "nov"], "version": 1, "manifest_path": "tmp/lance_namespace_regress/root/ns/nov.lance/_versions/18446744073709551614.manifest-abc"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_create_table_version('{"id": ["mg", "lnk"], "version": 1, "manifest_path": "tmp/lance_namespace_regress/root/ns/lnk.lance/_versions/18446744073709551611.manifest-abc"}') - 'transaction_id' AS lance_create_table_version;
-- A version that exists (LN014) leaves its manifest alone.
COPY (SELECT 'manifest one, again') TO '/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest-again';
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 1, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest-again"}') - 'transaction_id' AS lance_create_table_version;
SELECT pg_read_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest') AS final;
-- Nothing changed on disk (but for the staging file made for the LN014
-- case), nor in the catalog.
SELECT array_remove(pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions'), '18446744073709551614.manifest-again') = :'before' AS unchanged;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/outside/o.lance/_versions');
SELECT pg_read_file('/tmp/lance_namespace_regress/outside/secret') AS secret;
SELECT pg_temp.versions('["mg", "t"]') AS t, pg_temp.versions('["mg", "nov"]') AS nov, pg_temp.versions('["mg", "lnk"]') AS lnk;
\! rm -rf /tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-link /tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-dir /tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551614.manifest-again

--
-- An orphan: a file at a version's final name that the catalog does not
-- record (left by a writer that crashed, here written by COPY) is replaced
-- by the next writer of that version.
--
COPY (SELECT 'orphan of a crashed writer') TO '/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest';
SELECT pg_temp.show(lance_create_table_version('{"id": ["mg", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest-jkl"}'));
SELECT pg_read_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551611.manifest') AS final;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');

--
-- The final name itself as manifest_path is accepted: the file is taken as
-- it is, and stays after the commit.
--
COPY (SELECT 'manifest five, written in place') TO '/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551610.manifest';
SELECT pg_temp.show(lance_create_table_version('{"id": ["mg", "t"], "version": 5, "manifest_path": "tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551610.manifest", "naming_scheme": "V2"}'));
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');
SELECT pg_read_file('/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551610.manifest') AS final;

--
-- A path sent with a leading slash comes back with one.
--
COPY (SELECT 'manifest six') TO '/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551609.manifest-mno';
SELECT lance_create_table_version('{"id": ["mg", "t"], "version": 6, "manifest_path": "/tmp/lance_namespace_regress/root/ns/t.lance/_versions/18446744073709551609.manifest-mno"}') #>> '{version,manifest_path}' AS manifest_path;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');

--
-- BatchDeleteTableVersions deletes version records, not manifests.
--
SELECT lance_batch_delete_table_versions('{"id": ["mg", "t"], "ranges": [{"start_version": 6, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT pg_temp.versions('["mg", "t"]') AS versions;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t.lance/_versions');

--
-- Lance sends folder names as they are on disk, not percent-encoded: a
-- folder named "t 2%41.lance" arrives as such.
--
\! mkdir -p '/tmp/lance_namespace_regress/root/ns/t 2%41.lance/_versions' && chmod -R 777 /tmp/lance_namespace_regress
SELECT lance_declare_table('{"id": ["mg", "pct"], "location": "/tmp/lance_namespace_regress/root/ns/t 2%41.lance"}') ->> 'managed_versioning' AS managed;
COPY (SELECT 'manifest pct') TO '/tmp/lance_namespace_regress/root/ns/t 2%41.lance/_versions/18446744073709551614.manifest-pq';
SELECT lance_create_table_version('{"id": ["mg", "pct"], "version": 1, "manifest_path": "tmp/lance_namespace_regress/root/ns/t 2%41.lance/_versions/18446744073709551614.manifest-pq"}') #>> '{version,manifest_path}' AS manifest_path;
SELECT pg_temp.ls('/tmp/lance_namespace_regress/root/ns/t 2%41.lance/_versions');

-- Two entries on one managed folder would overwrite each other's manifests:
-- a second table at the same folder, however spelled, is refused.
SELECT lance_register_table('{"id": ["mg", "twin"], "location": "file:///tmp/lance_namespace_regress/root/ns/t.lance/"}');
SELECT lance_register_table('{"id": ["mg", "t"], "location": "/tmp/lance_namespace_regress/root/ns/t.lance", "mode": "Overwrite"}') - 'transaction_id' AS lance_register_table;

-- Declaring a table that exists is LN005 whatever the location: the
-- operation's own precondition comes before the location check, so a table
-- declared again at its own folder is not told that the folder is another
-- table's.  The same inside a BatchCommitTables.
SELECT lance_declare_table('{"id": ["mg", "t"], "location": "/tmp/lance_namespace_regress/root/ns/t.lance"}');
SELECT lance_batch_commit_tables('{"operations": [{"declare_table": {"id": ["mg", "t"], "location": "/tmp/lance_namespace_regress/root/ns/t.lance"}}]}');
-- A new name at another table's folder is still refused (LN013).
SELECT lance_declare_table('{"id": ["mg", "twin"], "location": "/tmp/lance_namespace_regress/root/ns/t.lance"}');
SELECT lance_batch_commit_tables('{"operations": [{"declare_table": {"id": ["mg", "twin"], "location": "/tmp/lance_namespace_regress/root/ns/t.lance"}}]}');

-- Clean up.
SELECT lance_drop_namespace('{"id": ["mg"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
\! rm -rf /tmp/lance_namespace_regress
DROP FUNCTION pg_temp.show(jsonb);
DROP FUNCTION pg_temp.ls(text);
DROP FUNCTION pg_temp.versions(jsonb);
RESET lance_namespace.root;
RESET lance_namespace.local_roots;
