--
-- refs: tags and branches (ListTableTags, GetTableTagVersion,
-- CreateTableTag, UpdateTableTag, DeleteTableTag, ListTableBranches,
-- CreateTableBranch, DeleteTableBranch), the tag argument of DescribeTable,
-- the branch argument of the version operations, and the refusal to delete
-- tagged versions.
--
-- For a table below lance_namespace.local_roots the catalog keeps tags and
-- branches where Lance keeps them, in Lance's own format:
--   <table>/_refs/tags/<name>.json      {"branch", "version", "createdAt",
--                                        "updatedAt", "manifestSize", "metadata"}
--   <table>/_refs/branches/<name>.json  {"parentBranch", "identifier":
--                                        {"version_mapping": [[v, "uuid"]]},
--                                        "parentVersion", "createAt",
--                                        "manifestSize", "metadata"}
-- ('/' in a branch name is written %2F), and a branch's manifests go to
-- <table>/tree/<branch>/_versions/.  Every change is undone when the
-- transaction or savepoint rolls back.  Tables elsewhere answer LN000.
--
-- This test plays the Lance writer (staging manifests written with
-- server-side COPY, sent as object store paths without the leading slash)
-- and, where it says so, Lance itself (ref files written by hand).
-- Everything lives under /tmp/lance_namespace_refs, made here with psql's
-- \! and opened to the server's user.
--
-- Nothing that changes from run to run is printed: pg_temp.show() replaces
--   timestamp_millis (ms), createAt (s), createdAt/updatedAt (RFC 3339)
--     with "recent" when they are within an hour of now (a timestamp that
--     is not stays as it is, so a wrong one shows as a difference),
--   transaction_id with "uuid" and a branch identifier's 32-hex-digit ids
--     with "hex32", after checking their form.
--
\set VERBOSITY default

\! rm -rf /tmp/lance_namespace_refs
\! mkdir -p /tmp/lance_namespace_refs/root/ns/t.lance/_versions /tmp/lance_namespace_refs/outside/o.lance/_versions
\! chmod -R 777 /tmp/lance_namespace_refs

LOAD 'lance_namespace';
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '/tmp/lance_namespace_refs/root';

\i test/sql/show.sql

-- Every file and folder below a folder, as the server sees them: a map
-- from the path relative to it to the file's content ("" for a folder; the
-- SHA-256 of a file that is not text, such as a real Lance manifest).
CREATE FUNCTION pg_temp.tree(dir text, rel text DEFAULT '') RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    f text;
    p text;
    result jsonb := '{}';
BEGIN
    FOR f IN SELECT x FROM pg_ls_dir(dir || rel, true, false) AS x LOOP
        p := rel || '/' || f;
        IF (pg_stat_file(dir || p)).isdir THEN
            result := result || jsonb_build_object(p || '/', '') || pg_temp.tree(dir, p);
        ELSE
            result := result || jsonb_build_object(p, CASE
                WHEN position('\x00'::bytea IN pg_read_binary_file(dir || p)) > 0
                THEN 'sha256:' || encode(sha256(pg_read_binary_file(dir || p)), 'hex')
                ELSE pg_read_file(dir || p) END);
        END IF;
    END LOOP;
    RETURN result;
END
$$;

-- The paths of that map in byte order: what is in the folder.  The
-- server's process id and a random number in the names of temporary and
-- set-aside files are shown as "*".
CREATE FUNCTION pg_temp.ls(dir text) RETURNS text[]
LANGUAGE sql AS $$
    SELECT coalesce(array_agg(regexp_replace(k, '\.(tmp|deleted)-x\d+-[0-9a-f]{8}', '.\1-*', 'g')
                              ORDER BY k COLLATE "C"), '{}')
      FROM jsonb_object_keys(pg_temp.tree(dir)) AS k
$$;

-- Runs one operation and answers its response (masked by show()), or its
-- SQLSTATE and message: a refusal that does not end the transaction.
CREATE FUNCTION pg_temp.try(op text, request jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    response jsonb;
BEGIN
    EXECUTE format('SELECT %I($1)', op) INTO response USING request;
    RETURN pg_temp.show(response)::text;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- The table t's folder, all of it (refs, manifests and branch trees).
CREATE FUNCTION pg_temp.t_files() RETURNS jsonb
LANGUAGE sql AS $$ SELECT pg_temp.tree('/tmp/lance_namespace_refs/root/ns/t.lance') $$;

-- A ref file of table t as JSON ('/' in a name is %2F in the file name),
-- masked by show(); NULL when there is none.
CREATE FUNCTION pg_temp.ref(kind text, name text) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT pg_temp.show(pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/' || kind || '/'
                                     || replace(name, '/', '%2F') || '.json', 0, 1000000, true)::jsonb)
$$;

-- The version numbers of table t on a branch (NULL: main), ascending.
CREATE FUNCTION pg_temp.versions(branch text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_path_query_array(
        lance_list_table_versions(jsonb_build_object('id', '["rf", "t"]'::jsonb, 'branch', branch)),
        '$.versions[*].version')
$$;

--
-- Fixtures: table rf$t below the root with versions 1, 2 and 3, whose
-- manifests are 3, 8 and 15 bytes long; rf$s3 at an s3:// location and
-- rf$out at a local folder outside the root, neither managed.
--
SELECT lance_create_namespace('{"id": ["rf"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_declare_table('{"id": ["rf", "t"], "location": "/tmp/lance_namespace_refs/root/ns/t.lance"}') ->> 'managed_versioning' AS managed;
-- Versions branches fork from are real Lance manifests: a branch's first
-- manifest is its fork point's, rewritten (test/fixtures/lance.manifest was
-- written by the official client).
\! cp test/fixtures/lance.manifest /tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551614.manifest-s1
COPY (SELECT 'main v2') TO '/tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551613.manifest-s2';
\! cp test/fixtures/lance.manifest /tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551612.manifest-s3
SELECT jsonb_path_query_array(lance_batch_create_table_versions('{"entries": [
    {"id": ["rf", "t"], "version": 1, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551614.manifest-s1"},
    {"id": ["rf", "t"], "version": 2, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551613.manifest-s2"},
    {"id": ["rf", "t"], "version": 3, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551612.manifest-s3"}]}'),
    '$.versions[*].manifest_size') AS manifest_sizes;
SELECT lance_register_table('{"id": ["rf", "s3"], "location": "s3://bucket/rf/s3.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["rf", "out"], "location": "/tmp/lance_namespace_refs/outside/o.lance"}') - 'transaction_id' AS lance_register_table;
-- No refs yet: empty lists, and no _refs folder.
SELECT lance_list_table_tags('{"id": ["rf", "t"]}');
SELECT lance_list_table_branches('{"id": ["rf", "t"]}');
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance');

--
-- CreateTableTag writes _refs/tags/<tag>.json in Lance's format: branch
-- null for main, manifestSize the size the catalog records for the
-- version, createdAt = updatedAt, empty metadata.  The answer carries a
-- transaction_id.
--
SELECT pg_temp.show(lance_create_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 1}'));
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');
-- the folders and files the catalog makes are the server's OS user's alone
\! stat -c '%n %a' /tmp/lance_namespace_refs/root/ns/t.lance/_refs /tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags /tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/v1.json | sed 's|.*/t.lance/||'
SELECT pg_temp.ref('tags', 'v1');
-- The file as text, times masked: pretty-printed, in Lance's key order.
SELECT regexp_replace(pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/v1.json'),
                      '"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"', '"<time>"', 'g') AS v1_json;
SELECT (pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/v1.json')::jsonb ->> 'createdAt')
     = (pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/v1.json')::jsonb ->> 'updatedAt') AS created_is_updated;
-- manifestSize is the catalog's manifest_size of the version (and the file's size).
SELECT (pg_temp.ref('tags', 'v1') -> 'manifestSize')
     = (lance_describe_table_version('{"id": ["rf", "t"], "version": 1}') #> '{version,manifest_size}') AS same_size,
       (pg_stat_file('/tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551614.manifest')).size AS file_size;
-- A tag on version 3; "branch": "main" (and "") name main: branch null.
SELECT pg_temp.show(lance_create_table_tag('{"id": ["rf", "t"], "tag": "release-3", "version": 3, "branch": "main"}'));
SELECT pg_temp.ref('tags', 'release-3');
SELECT pg_temp.show(lance_create_table_tag('{"id": ["rf", "t"], "tag": "two_0.a", "version": 2, "branch": ""}'));
SELECT pg_temp.ref('tags', 'two_0.a');

SELECT pg_temp.t_files() AS files_before \gset
-- A tag that exists: LN009, and the file is untouched.
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 2}') - 'transaction_id' AS lance_create_table_tag;
-- A version the catalog does not record: LN011, no file.
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "v9", "version": 9}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "v0", "version": 0}') - 'transaction_id' AS lance_create_table_tag;
-- Names Lance refuses: LN013.
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": ".hidden", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "a..b", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "x.lock", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "a/b", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "../../escape", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "a b", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "ref@{1}", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
-- Missing fields: LN013 naming them; a missing table: LN004; an unknown branch: LN022.
SELECT lance_create_table_tag('{"id": ["rf", "t"], "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "nov"}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": 5, "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "nope"], "tag": "x", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "x", "version": 1, "branch": "nope"}') - 'transaction_id' AS lance_create_table_tag;
-- None of them changed a file.
SELECT pg_temp.t_files() = :'files_before' AS unchanged;

--
-- ListTableTags: every tag, by name, with the spec's TagContents (branch
-- absent for main); pages of `limit` tags whose page_token is the last
-- name sent.
--
SELECT lance_list_table_tags('{"id": ["rf", "t"]}');
SELECT lance_list_table_tags('{"id": ["rf", "t"], "limit": 2}');
SELECT lance_list_table_tags('{"id": ["rf", "t"], "limit": 2, "page_token": "two_0.a"}');
SELECT lance_list_table_tags('{"id": ["rf", "t"], "limit": 1, "page_token": "release-3"}');
SELECT lance_list_table_tags('{"id": ["rf", "t"], "limit": 3}');
SELECT lance_list_table_tags('{"id": ["rf", "t"], "page_token": "v1"}');
SELECT lance_list_table_tags('{"id": ["rf", "t"], "limit": 0}');
SELECT lance_list_table_tags('{"id": ["rf", "t"], "limit": -1}');
SELECT lance_list_table_tags('{"id": ["rf", "nope"]}');

--
-- GetTableTagVersion: the version, and no branch for main.
--
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "v1"}');
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "release-3"}');
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "missing"}');
SELECT lance_get_table_tag_version('{"id": ["rf", "t"]}');
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "a/../b"}');

--
-- UpdateTableTag points a tag at another version: createdAt stays,
-- updatedAt moves, manifestSize follows the version.
--
SELECT pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/v1.json')::jsonb AS v1_before \gset
SELECT pg_temp.show(lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 2}'));
SELECT pg_temp.ref('tags', 'v1');
SELECT f ->> 'createdAt' = :'v1_before'::jsonb ->> 'createdAt' AS created_kept,
       (f ->> 'updatedAt')::timestamptz > (:'v1_before'::jsonb ->> 'updatedAt')::timestamptz AS updated_later
  FROM (SELECT pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/v1.json')::jsonb AS f) AS x;
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "v1"}');
SELECT pg_temp.t_files() AS files_before \gset
-- A tag that does not exist: LN008; a version that does not: LN011.  No file changes.
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "missing", "version": 1}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 7}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1"}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1.lock", "version": 1}') - 'transaction_id' AS lance_update_table_tag;
SELECT pg_temp.t_files() = :'files_before' AS unchanged;

--
-- DeleteTableTag removes the file; a tag that does not exist is LN008.
--
SELECT pg_temp.show(lance_create_table_tag('{"id": ["rf", "t"], "tag": "doomed", "version": 1}'));
SELECT pg_temp.show(lance_delete_table_tag('{"id": ["rf", "t"], "tag": "doomed"}'));
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "doomed"}') - 'transaction_id' AS lance_delete_table_tag;
SELECT lance_delete_table_tag('{"id": ["rf", "t"]}') - 'transaction_id' AS lance_delete_table_tag;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "x.lock"}') - 'transaction_id' AS lance_delete_table_tag;

--
-- Transactions: ROLLBACK undoes a create, an update and a delete (also
-- several of them on one tag), leaving the files exactly as they were
-- (no temporary or set-aside file either).
--
SELECT pg_temp.t_files() AS files_before \gset
BEGIN;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "fresh", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "fresh", "version": 3}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 3}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 1}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "release-3"}') - 'transaction_id' AS lance_delete_table_tag;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "release-3", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "two_0.a"}') - 'transaction_id' AS lance_delete_table_tag;
-- Inside the transaction the changes are on disk.
SELECT lance_list_table_tags('{"id": ["rf", "t"]}');
ROLLBACK;
SELECT pg_temp.t_files() = :'files_before' AS unchanged;
SELECT lance_list_table_tags('{"id": ["rf", "t"]}');

-- ROLLBACK TO SAVEPOINT undoes what was done after the savepoint only;
-- RELEASE keeps it (until the transaction itself rolls back).
BEGIN;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "kept", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT pg_temp.t_files() AS files_at_savepoint \gset
SAVEPOINT s1;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "fresh", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "kept", "version": 2}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 3}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "release-3"}') - 'transaction_id' AS lance_delete_table_tag;
ROLLBACK TO SAVEPOINT s1;
SELECT pg_temp.t_files() = :'files_at_savepoint' AS back_to_savepoint;
SELECT lance_list_table_tags('{"id": ["rf", "t"]}');
-- A failed call inside a savepoint leaves nothing either.
SAVEPOINT s2;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
ROLLBACK TO SAVEPOINT s2;
SELECT pg_temp.t_files() = :'files_at_savepoint' AS back_to_savepoint;
-- A released savepoint inside one rolled back goes with it.
SAVEPOINT outer_sp;
SAVEPOINT inner_sp;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "kept"}') - 'transaction_id' AS lance_delete_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 1}') - 'transaction_id' AS lance_update_table_tag;
RELEASE SAVEPOINT inner_sp;
ROLLBACK TO SAVEPOINT outer_sp;
SELECT pg_temp.t_files() = :'files_at_savepoint' AS back_to_savepoint;
-- Released savepoints are kept by COMMIT.
SAVEPOINT s3;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "kept", "version": 3}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "two_0.a"}') - 'transaction_id' AS lance_delete_table_tag;
RELEASE SAVEPOINT s3;
COMMIT;
SELECT lance_list_table_tags('{"id": ["rf", "t"]}');
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');
SELECT pg_temp.ref('tags', 'kept');
-- A whole transaction rolled back after its savepoints were released.
SELECT pg_temp.t_files() AS files_before \gset
BEGIN;
SAVEPOINT s1;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "kept"}') - 'transaction_id' AS lance_delete_table_tag;
RELEASE SAVEPOINT s1;
SAVEPOINT s2;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "kept", "version": 2}') - 'transaction_id' AS lance_create_table_tag;
RELEASE SAVEPOINT s2;
ROLLBACK;
SELECT pg_temp.t_files() = :'files_before' AS unchanged;

--
-- A tag Lance wrote (here by hand, with nanoseconds and metadata, and an
-- older one with only version and manifestSize) is listed and usable;
-- updating it keeps its createdAt and metadata.  Files that are not
-- <name>.json are not tags.
--
COPY (SELECT '{"branch": null, "version": 2, "createdAt": "2024-05-01T10:00:00.123456789Z", "updatedAt": "2024-05-02T11:00:00Z", "manifestSize": 8, "metadata": {"owner": "lance"}}')
  TO '/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/by-lance.json';
COPY (SELECT '{"version": 1, "manifestSize": 3}')
  TO '/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/old-lance.json';
COPY (SELECT 'not a tag') TO '/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/notes.txt';
SELECT lance_list_table_tags('{"id": ["rf", "t"]}');
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "by-lance"}');
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "old-lance"}');
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "by-lance"}') -> 'version' AS version;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "by-lance", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT pg_temp.show(lance_update_table_tag('{"id": ["rf", "t"], "tag": "by-lance", "version": 3}'));
SELECT pg_temp.ref('tags', 'by-lance');
SELECT pg_temp.show(lance_update_table_tag('{"id": ["rf", "t"], "tag": "old-lance", "version": 3}'));
SELECT pg_temp.ref('tags', 'old-lance');
SELECT pg_temp.show(lance_delete_table_tag('{"id": ["rf", "t"], "tag": "old-lance"}'));
-- A tag file naming a version the catalog does not record: answered as it
-- is; DescribeTable by it finds no such version (LN011).
COPY (SELECT '{"branch": null, "version": 99, "manifestSize": 1}')
  TO '/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags/stale.json';
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "stale"}');
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "stale"}');
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "stale"}') - 'transaction_id' AS lance_delete_table_tag;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');

--
-- DescribeTable with a tag answers the tagged version; a tag with a
-- version or a branch is LN013; a missing tag LN008.
--
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "v1"}');
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "kept"}') -> 'version' AS version;
SELECT lance_describe_table('{"id": ["rf", "t"], "version": 1}') -> 'version' AS version;
SELECT lance_describe_table('{"id": ["rf", "t"]}') -> 'version' AS version;
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "v1", "version": 2}');
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "v1", "branch": "main"}');
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "missing"}');
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "x.lock"}');

--
-- BatchDeleteTableVersions refuses (LN019) a range holding a tagged
-- version and deletes nothing, not even other ranges; untagged versions
-- go.  Tags now: v1 -> 2, kept -> 3, by-lance -> 3, release-3 -> 3.
--
COPY (SELECT 'main version 4!') TO '/tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551611.manifest-s4';
\! cp test/fixtures/lance.manifest /tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551610.manifest-s5
SELECT lance_create_table_version('{"id": ["rf", "t"], "version": 4, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551611.manifest-s4"}') #> '{version,version}' AS version;
SELECT lance_create_table_version('{"id": ["rf", "t"], "version": 5, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551610.manifest-s5"}') #> '{version,version}' AS version;
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "ranges": [{"start_version": 2, "end_version": 3}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "ranges": [{"start_version": 5, "end_version": -1}, {"start_version": 0, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT pg_temp.versions() AS versions;
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "ranges": [{"start_version": 4, "end_version": 5}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT pg_temp.versions() AS versions;
-- Once the tag moves, its old version can go.
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "v1", "version": 1}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "ranges": [{"start_version": 2, "end_version": 3}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT pg_temp.versions() AS versions;

--
-- CreateTableBranch forks a branch; the default is main's latest version
-- (now 5).  The branch file is Lance's, with an identifier whose
-- version_mapping holds (fork version, new id); the catalog records the
-- fork point as the branch's first version, pointing at the source's
-- manifest.
--
SELECT pg_temp.show(lance_create_table_branch('{"id": ["rf", "t"], "name": "b1"}'));
SELECT pg_temp.ref('branches', 'b1');
-- The file as text, times and ids masked.
SELECT regexp_replace(regexp_replace(pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/branches/b1.json'),
                      '"createAt": \d+', '"createAt": <secs>'), '"[0-9a-f]{32}"', '"<hex32>"') AS b1_json;
SELECT pg_temp.show(lance_list_table_versions('{"id": ["rf", "t"], "branch": "b1"}'));
SELECT (pg_temp.ref('branches', 'b1') -> 'manifestSize')
     = (lance_describe_table_version('{"id": ["rf", "t"], "version": 5}') #> '{version,manifest_size}') AS same_size;
-- From a chosen version of main.
SELECT pg_temp.show(lance_create_table_branch('{"id": ["rf", "t"], "name": "b2", "from_version": 1, "from_branch": "main"}'));
SELECT pg_temp.ref('branches', 'b2');
SELECT pg_temp.versions('b2') AS b2, pg_temp.versions() AS main;
-- Each branch has an identifier of its own.
SELECT pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/branches/b1.json')::jsonb #> '{identifier,version_mapping,0,1}'
    <> pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/branches/b2.json')::jsonb #> '{identifier,version_mapping,0,1}' AS distinct_ids;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');

-- Committing the version after the fork point on the branch: the staging
-- manifest is in tree/b1/_versions, and so is the final one.  Main does
-- not change.
\! mkdir -p /tmp/lance_namespace_refs/root/ns/t.lance/tree/b1/_versions && chmod -R 777 /tmp/lance_namespace_refs/root/ns/t.lance/tree
\! cp test/fixtures/lance.manifest /tmp/lance_namespace_refs/root/ns/t.lance/tree/b1/_versions/18446744073709551609.manifest-b6
SELECT pg_temp.show(lance_create_table_version('{"id": ["rf", "t"], "branch": "b1", "version": 6, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/tree/b1/_versions/18446744073709551609.manifest-b6"}'));
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/tree');
SELECT pg_temp.versions('b1') AS b1, pg_temp.versions() AS main;
SELECT pg_temp.show(lance_list_table_versions('{"id": ["rf", "t"], "branch": "b1", "descending": true, "limit": 1}'));
SELECT pg_temp.show(lance_describe_table_version('{"id": ["rf", "t"], "branch": "b1"}'));
SELECT lance_describe_table('{"id": ["rf", "t"], "branch": "b1", "version": 6}') -> 'version' AS version;
-- The fork point is taken: LN014.  A branch manifest outside its own
-- tree/<branch>/_versions is refused: LN013.
COPY (SELECT 'again') TO '/tmp/lance_namespace_refs/root/ns/t.lance/tree/b1/_versions/18446744073709551610.manifest-b5';
SELECT lance_create_table_version('{"id": ["rf", "t"], "branch": "b1", "version": 5, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/tree/b1/_versions/18446744073709551610.manifest-b5"}') - 'transaction_id' AS lance_create_table_version;
COPY (SELECT 'on main') TO '/tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551608.manifest-b7';
SELECT lance_create_table_version('{"id": ["rf", "t"], "branch": "b1", "version": 7, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551608.manifest-b7"}') - 'transaction_id' AS lance_create_table_version;
\! rm -f /tmp/lance_namespace_refs/root/ns/t.lance/tree/b1/_versions/18446744073709551610.manifest-b5 /tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551608.manifest-b7

-- A nested branch forks from b1 (its latest, 6): parentBranch b1, and its
-- identifier extends b1's with (6, new id).  The '/' of its name is %2F
-- in the file name and a folder in tree/.
SELECT pg_temp.show(lance_create_table_branch('{"id": ["rf", "t"], "name": "feature/x", "from_branch": "b1"}'));
SELECT pg_temp.ref('branches', 'feature/x');
SELECT (pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/branches/feature%2Fx.json')::jsonb #> '{identifier,version_mapping,0}')
     = (pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/branches/b1.json')::jsonb #> '{identifier,version_mapping,0}') AS extends_b1;
SELECT pg_temp.show(lance_list_table_versions('{"id": ["rf", "t"], "branch": "feature/x"}'));
\! mkdir -p /tmp/lance_namespace_refs/root/ns/t.lance/tree/feature/x/_versions && chmod -R 777 /tmp/lance_namespace_refs/root/ns/t.lance/tree
COPY (SELECT 'feature/x v7') TO '/tmp/lance_namespace_refs/root/ns/t.lance/tree/feature/x/_versions/18446744073709551608.manifest-f7';
SELECT lance_create_table_version('{"id": ["rf", "t"], "branch": "feature/x", "version": 7, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/tree/feature/x/_versions/18446744073709551608.manifest-f7"}') #>> '{version,manifest_path}' AS manifest_path;
SELECT pg_temp.versions('feature/x') AS feature_x, pg_temp.versions('b1') AS b1;
-- From a chosen version of b1, the fork point on b1 itself.
SELECT pg_temp.show(lance_create_table_branch('{"id": ["rf", "t"], "name": "b1-at-5", "from_branch": "b1", "from_version": 5}'));
SELECT pg_temp.ref('branches', 'b1-at-5');

SELECT pg_temp.t_files() AS files_before \gset
-- A branch that exists: LN023.
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "b1"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "feature/x", "from_version": 1}') - 'transaction_id' AS lance_create_table_branch;
-- A source branch or version that does not exist: LN013.
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "b3", "from_branch": "nope"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "b3", "from_version": 99}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "b3", "from_version": 2}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "b3", "from_branch": "b1", "from_version": 1}') - 'transaction_id' AS lance_create_table_branch;
-- Names Lance refuses: LN013.
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "main"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "a..b"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "x.lock"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "/a"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "a/"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "a//b"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "../x"}') - 'transaction_id' AS lance_create_table_branch;
-- a segment that begins with '.': "a/./b" is "a/b" to an object store
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "a/./b"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "a/.b"}') - 'transaction_id' AS lance_create_table_branch;
-- names the crash sweep would take for its own leftovers
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "x.deleted-x12-0123abcd"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "x.tmp-x12-0123abcd", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "a\\b"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "bad segment"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": ""}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"]}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "nope"], "name": "b3"}') - 'transaction_id' AS lance_create_table_branch;
-- None of them changed a file, nor the catalog.
SELECT pg_temp.t_files() = :'files_before' AS unchanged;
SELECT lance_list_table_versions('{"id": ["rf", "t"], "branch": "b3"}');

--
-- ListTableBranches: the spec's BranchContents (parentBranch absent for
-- main), by name, in pages.
--
SELECT pg_temp.show(lance_list_table_branches('{"id": ["rf", "t"]}'));
SELECT pg_temp.show(lance_list_table_branches('{"id": ["rf", "t"], "limit": 2}'));
SELECT pg_temp.show(lance_list_table_branches('{"id": ["rf", "t"], "limit": 2, "page_token": "b2"}'));
SELECT lance_list_table_branches('{"id": ["rf", "t"], "limit": 0}');

--
-- Tags on branch versions: the file names the branch, manifestSize is the
-- branch version's; GetTableTagVersion answers the branch, DescribeTable
-- with the tag the version.
--
SELECT pg_temp.show(lance_create_table_tag('{"id": ["rf", "t"], "tag": "on-b1", "version": 6, "branch": "b1"}'));
SELECT pg_temp.ref('tags', 'on-b1');
SELECT (pg_temp.ref('tags', 'on-b1') -> 'manifestSize')
     = (lance_describe_table_version('{"id": ["rf", "t"], "branch": "b1", "version": 6}') #> '{version,manifest_size}') AS same_size;
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "on-b1"}');
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "on-b1"}') -> 'version' AS version;
SELECT lance_list_table_tags('{"id": ["rf", "t"], "page_token": "kept", "limit": 1}');
-- On the fork point of b2 (version 1, recorded on b2).
SELECT pg_temp.show(lance_create_table_tag('{"id": ["rf", "t"], "tag": "on-b2", "version": 1, "branch": "b2"}'));
SELECT pg_temp.ref('tags', 'on-b2');
-- A version b2 does not have (main has 3), a branch that does not exist.
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "x", "version": 3, "branch": "b2"}') - 'transaction_id' AS lance_create_table_tag;
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "on-b2", "version": 6, "branch": "nope"}') - 'transaction_id' AS lance_update_table_tag;
-- Update moves a tag between branches.
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "on-b2", "version": 7, "branch": "feature/x"}') - 'transaction_id' AS lance_update_table_tag;
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "on-b2"}');
-- A tag on a branch version stops that branch version's deletion, not
-- main's version of the same number.
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "branch": "b1", "ranges": [{"start_version": 6, "end_version": 7}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "branch": "feature/x", "ranges": [{"start_version": 0, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT pg_temp.versions('b1') AS b1, pg_temp.versions('feature/x') AS feature_x;

--
-- DeleteTableBranch is refused (LN019) while a branch forks from it or a
-- tag points at it; a branch that does not exist is LN022.
--
SELECT pg_temp.t_files() AS files_before \gset
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "b1"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "feature/x"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "nope"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "main"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT lance_delete_table_branch('{"id": ["rf", "t"]}') - 'transaction_id' AS lance_delete_table_branch;
SELECT pg_temp.t_files() = :'files_before' AS unchanged;
-- Otherwise it removes the branch file, the branch's versions and its
-- tree/<branch> folder.  The files stay where they are until COMMIT, so that
-- no reader of the table sees a deletion that may roll back, while the
-- transaction itself no longer finds the branch; ROLLBACK (and ROLLBACK TO
-- SAVEPOINT) leave everything as it was.
SELECT lance_update_table_tag('{"id": ["rf", "t"], "tag": "on-b2", "version": 1, "branch": "b2"}') - 'transaction_id' AS lance_update_table_tag;
SELECT pg_temp.t_files() AS files_before \gset
BEGIN;
SELECT pg_temp.show(lance_delete_table_branch('{"id": ["rf", "t"], "name": "feature/x"}'));
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/tree');
SELECT pg_temp.try('lance_list_table_versions', '{"id": ["rf", "t"], "branch": "feature/x"}') AS feature_x;
ROLLBACK;
SELECT pg_temp.t_files() = :'files_before' AS unchanged;
SELECT pg_temp.versions('feature/x') AS feature_x;
-- A tag made in an open transaction is written next to its final name and
-- appears under it only at COMMIT; the transaction itself sees it at once.
BEGIN;
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "pending", "version": 1}') - 'transaction_id' AS lance_create_table_tag;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags');
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "pending"}');
SELECT lance_list_table_tags('{"id": ["rf", "t"]}') -> 'tags' ? 'pending' AS listed;
COMMIT;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags');
BEGIN;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "pending"}') - 'transaction_id' AS lance_delete_table_tag;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags');
SELECT lance_list_table_tags('{"id": ["rf", "t"]}') -> 'tags' ? 'pending' AS listed;
COMMIT;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/tags');
BEGIN;
SAVEPOINT s1;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "feature/x"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "b1-at-5"}') - 'transaction_id' AS lance_delete_table_branch;
ROLLBACK TO SAVEPOINT s1;
SELECT pg_temp.t_files() = :'files_before' AS unchanged;
SELECT pg_temp.versions('feature/x') AS feature_x, pg_temp.versions('b1-at-5') AS b1_at_5;
COMMIT;
-- For real.
SELECT pg_temp.show(lance_delete_table_branch('{"id": ["rf", "t"], "name": "feature/x"}'));
SELECT pg_temp.show(lance_delete_table_branch('{"id": ["rf", "t"], "name": "b1-at-5"}'));
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/tree');
SELECT lance_list_table_versions('{"id": ["rf", "t"], "branch": "feature/x"}');
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "feature/x"}') - 'transaction_id' AS lance_delete_table_branch;
-- b1 has no branch forking from it now, but tag on-b1 points at it.
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "b1"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "on-b1"}') - 'transaction_id' AS lance_delete_table_tag;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "b1"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/tree');
SELECT lance_list_table_versions('{"id": ["rf", "t"], "branch": "b1"}');
SELECT pg_temp.versions() AS main;
-- A branch made again after its deletion starts afresh.
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "b1", "from_version": 3}') - 'transaction_id' AS lance_create_table_branch;
SELECT pg_temp.versions('b1') AS b1;
-- A branch creation rolled back leaves no file and no version.
SELECT pg_temp.t_files() AS files_before \gset
BEGIN;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "b-tmp"}') - 'transaction_id' AS lance_create_table_branch;
SELECT pg_temp.versions('b-tmp') AS b_tmp;
ROLLBACK;
SELECT pg_temp.t_files() = :'files_before' AS unchanged;
SELECT lance_list_table_versions('{"id": ["rf", "t"], "branch": "b-tmp"}');
BEGIN;
SAVEPOINT s1;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "b-tmp"}') - 'transaction_id' AS lance_create_table_branch;
ROLLBACK TO SAVEPOINT s1;
SELECT pg_temp.try('lance_list_table_versions', '{"id": ["rf", "t"], "branch": "b-tmp"}') AS b_tmp;
COMMIT;
SELECT pg_temp.t_files() = :'files_before' AS unchanged;

--
-- A branch that exists only on storage (its file written by hand, as
-- Lance writes it): listed, and accepted by the version operations.
--
COPY (SELECT '{"parentBranch": null, "identifier": {"version_mapping": [[3, "0123456789abcdef0123456789abcdef"]]}, "parentVersion": 3, "createAt": 1714557600, "manifestSize": 15, "metadata": {}}')
  TO '/tmp/lance_namespace_refs/root/ns/t.lance/_refs/branches/by-lance.json';
SELECT pg_temp.show(lance_list_table_branches('{"id": ["rf", "t"]}'));
SELECT lance_list_table_versions('{"id": ["rf", "t"], "branch": "by-lance"}');
SELECT lance_describe_table('{"id": ["rf", "t"], "branch": "by-lance"}') - 'transaction_id' AS lance_describe_table;
SELECT lance_describe_table_version('{"id": ["rf", "t"], "branch": "by-lance"}');
\! mkdir -p /tmp/lance_namespace_refs/root/ns/t.lance/tree/by-lance/_versions && chmod -R 777 /tmp/lance_namespace_refs/root/ns/t.lance/tree
\! cp test/fixtures/lance.manifest /tmp/lance_namespace_refs/root/ns/t.lance/tree/by-lance/_versions/18446744073709551611.manifest-l4
SELECT pg_temp.show(lance_create_table_version('{"id": ["rf", "t"], "branch": "by-lance", "version": 4, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/tree/by-lance/_versions/18446744073709551611.manifest-l4"}'));
SELECT pg_temp.show(lance_describe_table_version('{"id": ["rf", "t"], "branch": "by-lance"}'));
SELECT pg_temp.show(lance_create_table_tag('{"id": ["rf", "t"], "tag": "on-lance", "version": 4, "branch": "by-lance"}'));
SELECT pg_temp.show(lance_create_table_branch('{"id": ["rf", "t"], "name": "from-lance", "from_branch": "by-lance"}'));
SELECT pg_temp.ref('branches', 'from-lance');
SELECT pg_read_file('/tmp/lance_namespace_refs/root/ns/t.lance/_refs/branches/from-lance.json')::jsonb #> '{identifier,version_mapping,0}' AS first_mapping;
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "branch": "by-lance", "ranges": [{"start_version": 4, "end_version": 5}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "from-lance"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT lance_delete_table_tag('{"id": ["rf", "t"], "tag": "on-lance"}') - 'transaction_id' AS lance_delete_table_tag;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "by-lance"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/_refs');
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/tree');

--
-- Lance commits a new branch's first version before it writes the branch
-- file: a branch folder with a _versions folder is a branch already.
--
\! mkdir -p /tmp/lance_namespace_refs/root/ns/t.lance/tree/early/_versions && chmod -R 777 /tmp/lance_namespace_refs/root/ns/t.lance/tree
COPY (SELECT 'early v3') TO '/tmp/lance_namespace_refs/root/ns/t.lance/tree/early/_versions/18446744073709551612.manifest-e3';
SELECT pg_temp.show(lance_create_table_version('{"id": ["rf", "t"], "branch": "early", "version": 3, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/tree/early/_versions/18446744073709551612.manifest-e3"}'));
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["rf", "t"], "branch": "early"}'), '$.versions[*].version') AS early_versions;
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "branch": "early", "ranges": [{"start_version": 0, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
\! rm -rf /tmp/lance_namespace_refs/root/ns/t.lance/tree/early

--
-- Branch "a/b" lives inside branch "a"'s folder (tree/a/b): deleting "a"
-- keeps that folder, as Lance does.  A tag name may not end with '.'.
--
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "a"}') - 'transaction_id' AS lance_create_table_branch;
SELECT lance_create_table_branch('{"id": ["rf", "t"], "name": "a/b"}') - 'transaction_id' AS lance_create_table_branch;
\! mkdir -p /tmp/lance_namespace_refs/root/ns/t.lance/tree/a/b/_versions && chmod -R 777 /tmp/lance_namespace_refs/root/ns/t.lance/tree
COPY (SELECT 'a/b v6') TO '/tmp/lance_namespace_refs/root/ns/t.lance/tree/a/b/_versions/18446744073709551609.manifest-ab';
SELECT pg_temp.show(lance_create_table_version('{"id": ["rf", "t"], "branch": "a/b", "version": 6, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/tree/a/b/_versions/18446744073709551609.manifest-ab"}'));
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "a"}') - 'transaction_id' AS lance_delete_table_branch;
SELECT pg_temp.ls('/tmp/lance_namespace_refs/root/ns/t.lance/tree/a/b/_versions');
SELECT jsonb_path_query_array(lance_list_table_versions('{"id": ["rf", "t"], "branch": "a/b"}'), '$.versions[*].version') AS a_b_versions;
SELECT lance_delete_table_branch('{"id": ["rf", "t"], "name": "a/b"}') - 'transaction_id' AS lance_delete_table_branch;
\! rm -rf /tmp/lance_namespace_refs/root/ns/t.lance/tree/a
SELECT lance_create_table_tag('{"id": ["rf", "t"], "tag": "x.", "version": 1}');

--
-- Version operations with a branch that does not exist: LN022.
--
COPY (SELECT 'ghost') TO '/tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551608.manifest-g';
SELECT lance_list_table_versions('{"id": ["rf", "t"], "branch": "ghost"}');
SELECT lance_describe_table_version('{"id": ["rf", "t"], "branch": "ghost"}');
SELECT lance_describe_table_version('{"id": ["rf", "t"], "branch": "ghost", "version": 1}');
SELECT lance_create_table_version('{"id": ["rf", "t"], "branch": "ghost", "version": 7, "manifest_path": "tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551608.manifest-g"}') - 'transaction_id' AS lance_create_table_version;
SELECT lance_batch_delete_table_versions('{"id": ["rf", "t"], "branch": "ghost", "ranges": [{"start_version": 0, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
SELECT lance_describe_table('{"id": ["rf", "t"], "branch": "ghost"}');
SELECT lance_describe_table('{"id": ["rf", "t"], "branch": "ghost", "version": 1}');
SELECT lance_table_exists('{"id": ["rf", "t"], "branch": "ghost"}');
SELECT pg_temp.versions() AS main;
\! rm -f /tmp/lance_namespace_refs/root/ns/t.lance/_versions/18446744073709551608.manifest-g

--
-- Tables not below lance_namespace.local_roots (an s3:// location, a
-- local folder outside the roots): their tags and branches live with their
-- data, so every tag and branch operation is LN000 saying so.  DescribeTable
-- with a tag finds no tag (LN008); with a branch no branch (LN022).
--
SELECT lance_create_table_version('{"id": ["rf", "s3"], "version": 1, "manifest_path": "bucket/rf/s3.lance/_versions/1.manifest"}') #> '{version,version}' AS version;
SELECT lance_list_table_tags('{"id": ["rf", "s3"]}');
SELECT op, pg_temp.try(op, request::jsonb) AS result
  FROM (VALUES ('lance_get_table_tag_version', '{"id": ["rf", "s3"], "tag": "v1"}'),
               ('lance_create_table_tag', '{"id": ["rf", "s3"], "tag": "v1", "version": 1}'),
               ('lance_update_table_tag', '{"id": ["rf", "s3"], "tag": "v1", "version": 1}'),
               ('lance_delete_table_tag', '{"id": ["rf", "s3"], "tag": "v1"}'),
               ('lance_list_table_branches', '{"id": ["rf", "s3"]}'),
               ('lance_create_table_branch', '{"id": ["rf", "s3"], "name": "b1"}'),
               ('lance_delete_table_branch', '{"id": ["rf", "s3"], "name": "b1"}'),
               ('lance_list_table_tags', '{"id": ["rf", "out"]}'),
               ('lance_get_table_tag_version', '{"id": ["rf", "out"], "tag": "v1"}'),
               ('lance_create_table_tag', '{"id": ["rf", "out"], "tag": "v1", "version": 1}'),
               ('lance_update_table_tag', '{"id": ["rf", "out"], "tag": "v1", "version": 1}'),
               ('lance_delete_table_tag', '{"id": ["rf", "out"], "tag": "v1"}'),
               ('lance_list_table_branches', '{"id": ["rf", "out"]}'),
               ('lance_create_table_branch', '{"id": ["rf", "out"], "name": "b1"}'),
               ('lance_delete_table_branch', '{"id": ["rf", "out"], "name": "b1"}')) AS r(op, request);
SELECT lance_describe_table('{"id": ["rf", "s3"], "tag": "v1"}');
SELECT lance_describe_table('{"id": ["rf", "s3"], "branch": "b1"}');
SELECT lance_list_table_versions('{"id": ["rf", "s3"], "branch": "b1"}');
-- Tagged-version protection does not apply there: the versions go.
SELECT lance_batch_delete_table_versions('{"id": ["rf", "s3"], "ranges": [{"start_version": 0, "end_version": -1}]}') - 'transaction_id' AS lance_batch_delete_table_versions;
-- A table that becomes unmanaged (the roots change) has no refs for the catalog.
SET lance_namespace.local_roots = '';
SELECT lance_list_table_tags('{"id": ["rf", "t"]}');
SELECT lance_describe_table('{"id": ["rf", "t"], "tag": "v1"}');
SET lance_namespace.local_roots = '/tmp/lance_namespace_refs/root';
SELECT lance_get_table_tag_version('{"id": ["rf", "t"], "tag": "v1"}');

--
-- A symbolic link inside a table's folder is never followed: with _refs
-- pointing elsewhere, a tag is refused and nothing is written there.
--
\! mkdir -p /tmp/lance_namespace_refs/root/ns/lk.lance/_versions /tmp/lance_namespace_refs/elsewhere && ln -s /tmp/lance_namespace_refs/elsewhere /tmp/lance_namespace_refs/root/ns/lk.lance/_refs && chmod -R 777 /tmp/lance_namespace_refs
SELECT lance_declare_table('{"id": ["rf", "lk"], "location": "/tmp/lance_namespace_refs/root/ns/lk.lance"}') ->> 'managed_versioning' AS managed;
\! cp test/fixtures/lance.manifest /tmp/lance_namespace_refs/root/ns/lk.lance/_versions/18446744073709551614.manifest-k
SELECT lance_create_table_version('{"id": ["rf", "lk"], "version": 1, "manifest_path": "tmp/lance_namespace_refs/root/ns/lk.lance/_versions/18446744073709551614.manifest-k"}') #>> '{version,version}' AS version;
SELECT lance_create_table_tag('{"id": ["rf", "lk"], "tag": "t1", "version": 1}');
SELECT lance_create_table_branch('{"id": ["rf", "lk"], "name": "b1"}');
SELECT pg_temp.ls('/tmp/lance_namespace_refs/elsewhere') AS elsewhere;

-- Clean up.
SELECT lance_drop_namespace('{"id": ["rf"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
\! rm -rf /tmp/lance_namespace_refs
DROP FUNCTION pg_temp.versions(text);
DROP FUNCTION pg_temp.ref(text, text);
DROP FUNCTION pg_temp.t_files();
DROP FUNCTION pg_temp.try(text, jsonb);
DROP FUNCTION pg_temp.ls(text);
DROP FUNCTION pg_temp.tree(text, text);
DROP FUNCTION pg_temp.show(jsonb);
RESET lance_namespace.root;
RESET lance_namespace.local_roots;
