--
-- lance_stats(): the catalog's size, its queues, the background worker's
-- rounds, the stores' errors and who holds the change feed back.  Without
-- shared_preload_libraries (as here) there are no rounds and no store
-- errors; test/worker covers those.  Other tests leave objects behind, so
-- counts are compared with a baseline.
--
SET lance_namespace.local_roots = '';
SET lance_namespace.root = '';

CREATE ROLE regress_stats_admin IN ROLE lance_admin;
CREATE ROLE regress_stats_user;

-- an administrator's call only
SET ROLE regress_stats_user;
SELECT lance_stats();
RESET ROLE;

-- every part is there
SELECT jsonb_object_keys(lance_stats()) AS part ORDER BY 1;
SELECT jsonb_object_keys(lance_stats() -> 'counts') AS count ORDER BY 1;
SELECT lance_stats() -> 'worker' AS worker;
SELECT lance_stats() -> 'not_counted' AS not_counted, lance_stats() -> 'estimated' AS estimated;

SELECT (c ->> 'namespaces')::int AS ns0, (c ->> 'tables')::int AS t0, (c ->> 'versions')::int AS v0,
       (c ->> 'branches')::int AS b0, (c ->> 'grants')::int AS g0, (c ->> 'api_keys')::int AS k0,
       (c ->> 'changes')::int AS c0, (c ->> 'storage_settings')::int AS s0
  FROM (SELECT lance_stats() -> 'counts' AS c) x \gset
SELECT (lance_stats() -> 'drop_queue' ->> 'failed')::int AS f0 \gset

-- two namespaces, a table with a version and a branch's version, a grant (and
-- the creator's manage on the three objects), a key and a storage setting, made
-- by an administrator that is no superuser
SET ROLE regress_stats_admin;
SELECT lance_create_namespace('{"id": ["st_a"]}') ->> 'transaction_id' IS NOT NULL AS made;
SELECT lance_create_namespace('{"id": ["st_a", "b"]}') ->> 'transaction_id' IS NOT NULL AS made;
SELECT lance_register_table('{"id": ["st_a", "t"], "location": "/nowhere/st_t"}') ->> 'location' AS registered;
SELECT lance_create_table_version('{"id": ["st_a", "t"], "version": 2, "manifest_path": "/nowhere/st_t/_versions/2.manifest"}') -> 'version' ->> 'version' AS v;
SELECT lance_grant('{"id": ["st_a"], "role": "regress_stats_user", "privilege": "read"}') IS NOT NULL AS granted;
SELECT lance_create_api_key('regress_stats_user') LIKE 'lnk_%' AS key_made;
SELECT lance_set_storage('{"location": "s3://st-bucket/p", "options": {"aws_access_key_id": "a", "aws_secret_access_key": "b"}}') ->> 'location' AS setting;
RESET ROLE;
-- a branch's version, as a fork of main records it
INSERT INTO lance_catalog.version (table_id, branch, version, manifest_path)
SELECT id, 'dev', 2, '/nowhere/st_t/_versions/2.manifest' FROM lance_catalog.object WHERE name = 't' AND parent_id = (SELECT id FROM lance_catalog.object WHERE name = 'st_a');

SET ROLE regress_stats_admin;
SELECT (c ->> 'namespaces')::int - :ns0 AS namespaces, (c ->> 'tables')::int - :t0 AS tables,
       (c ->> 'versions')::int - :v0 AS versions, (c ->> 'branches')::int - :b0 AS branches,
       (c ->> 'grants')::int - :g0 AS grants, (c ->> 'api_keys')::int - :k0 AS api_keys,
       (c ->> 'changes')::int - :c0 AS changes, (c ->> 'storage_settings')::int - :s0 AS settings
  FROM (SELECT lance_stats() -> 'counts' AS c) x;
-- the setting is listed, with no errors (nothing reached its store)
SELECT s FROM jsonb_array_elements(lance_stats() -> 'storage') s WHERE s ->> 'location' = 's3://st-bucket/p';
RESET ROLE;

-- the drop queue: a queued drop's age, and a drop the processor failed
-- (made so by hand: the drop processor needs a local root)
UPDATE lance_catalog.change SET status = 'Queued', made_at = now() - interval '1 hour'
 WHERE seq = (SELECT max(seq) FROM lance_catalog.change WHERE operation = 'CreateNamespace');
UPDATE lance_catalog.change SET status = 'Failed', drop_failed = true
 WHERE seq = (SELECT min(seq) FROM lance_catalog.change WHERE operation = 'CreateNamespace' AND 'st_a' = ANY (namespaces));
SELECT (q ->> 'queued')::int >= 1 AS queued, (q ->> 'failed')::int - :f0 AS failed,
       (q ->> 'oldest_queued_seconds')::int >= 3600 AS an_hour_old
  FROM (SELECT lance_stats() -> 'drop_queue' AS q) x;
UPDATE lance_catalog.change SET status = 'Succeeded', drop_failed = false WHERE status IN ('Queued', 'Failed') AND 'st_a' = ANY (namespaces);

-- the undo queue
INSERT INTO lance_catalog.storage_undo (spool, action, location, path, step, attempts, next_attempt, taken_at)
VALUES ('st-1', 'remove', '/nowhere/st_t', '_versions/9.manifest', '\x00', 3, now() + interval '1 hour', now() - interval '1 day'),
       ('st-2', 'remove', '/nowhere/st_t', '_versions/8.manifest', '\x00', 1, now() - interval '1 minute', now());
SELECT u ->> 'steps' AS steps, u ->> 'due' AS due, u ->> 'most_attempts' AS most_attempts,
       (u ->> 'oldest_taken_at')::timestamptz < now() - interval '23 hours' AS day_old
  FROM (SELECT lance_stats() -> 'undo_queue' AS u) x;
DELETE FROM lance_catalog.storage_undo WHERE spool LIKE 'st-%';

-- the change feed: its last entry, and nobody holds it back
SELECT (f ->> 'last_seq')::bigint = (SELECT max(seq) FROM lance_catalog.change) AS last_seq,
       f -> 'held_back' AS held_back
  FROM (SELECT lance_stats() -> 'change_feed' AS f) x;

-- the statistics' rows of a table, scaled to its size: what large tables are counted by
SELECT lance_catalog.estimated_rows('lance_catalog.no_such_table') AS none;
ANALYZE lance_catalog.object;
SELECT lance_catalog.estimated_rows('lance_catalog.object') = (SELECT count(*) FROM lance_catalog.object) AS as_counted;

-- a large table is estimated, not counted: the version table as the
-- statistics would have it with five million rows (set by hand here)
UPDATE pg_class SET reltuples = 5000000, relpages = GREATEST(pg_relation_size(oid) / current_setting('block_size')::int, 1)
 WHERE oid = 'lance_catalog.version'::regclass;
SELECT lance_stats() -> 'counts' ->> 'versions' AS versions, lance_stats() -> 'counts' -> 'branches' AS branches,
       lance_stats() -> 'estimated' AS estimated, lance_stats() -> 'not_counted' AS not_counted;
ANALYZE lance_catalog.version;
SELECT lance_stats() -> 'estimated' AS estimated;

-- clean up
SET ROLE regress_stats_admin;
SELECT lance_remove_storage('{"location": "s3://st-bucket/p"}') ->> 'location' AS removed;
RESET ROLE;
SELECT lance_revoke_api_key(id) FROM lance_list_api_keys() WHERE role = 'regress_stats_user'::regrole;
SELECT lance_deregister_table('{"id": ["st_a", "t"]}') ->> 'location' AS deregistered;
SELECT lance_drop_namespace('{"id": ["st_a", "b"]}') IS NOT NULL AS dropped;
SELECT lance_drop_namespace('{"id": ["st_a"]}') IS NOT NULL AS dropped;
DROP ROLE regress_stats_user;
DROP ROLE regress_stats_admin;

-- lance_library_version(): the loaded library's version, which the
-- gateway's /readyz compares with the installed extension's; any role may
-- ask (the gateway's role holds no other right)
CREATE ROLE regress_stats_nobody;
SET ROLE regress_stats_nobody;
SELECT lance_library_version() = (SELECT extversion FROM pg_extension WHERE extname = 'lance_namespace') AS library_matches,
       lance_library_version() ~ '^[0-9]+\.[0-9]+\.[0-9]+$' AS is_a_version;
RESET ROLE;
DROP ROLE regress_stats_nobody;

-- over REST, GET /v1/stats answers lance_stats() to an administrator's key
-- alone (the gateway's /metrics asks it: the database says who may read
-- the metrics); GET only
CREATE ROLE regress_stats_admin2 IN ROLE lance_admin;
CREATE ROLE regress_stats_reader;
SELECT lance_create_api_key('regress_stats_admin2') AS admin_key \gset
SELECT lance_create_api_key('regress_stats_reader') AS reader_key \gset
SELECT status, response_body::jsonb ? 'counts' AS has_counts, key_id = left(:'admin_key', 16) AS its_key
  FROM lance_rest('GET', '/v1/stats', NULL, NULL, jsonb_build_object('x-api-key', :'admin_key'));
SELECT status, response_body::jsonb -> 'code' AS code
  FROM lance_rest('GET', '/v1/stats', NULL, NULL, jsonb_build_object('x-api-key', :'reader_key'));
SELECT status, response_body::jsonb -> 'code' AS code FROM lance_rest('GET', '/v1/stats', NULL, NULL, NULL);
SELECT status, response_body::jsonb -> 'code' AS code
  FROM lance_rest('POST', '/v1/stats', NULL, '{}', jsonb_build_object('x-api-key', :'admin_key'));
DROP ROLE regress_stats_admin2;
DROP ROLE regress_stats_reader;
