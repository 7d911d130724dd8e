--
-- Storage settings: S3 location prefixes and the options that reach them;
-- which tables they cover (the longest prefix), what callers are handed,
-- and who may see the secrets.  No store is reached here (test/node/s3 does).
--
SET lance_namespace.local_roots = '';
SET lance_namespace.root = '';

CREATE ROLE regress_st_admin IN ROLE lance_admin;
CREATE ROLE regress_st_reader;
CREATE ROLE regress_st_none;

-- a setting; the answer and the listing hide its secrets.  This one hands
-- callers the catalog's own keys (catalog_keys, what 0.5.0 did), which only
-- a setting that names that mode does; the next one, without "vend", none.
SELECT lance_set_storage('{"location": "s3://lake/cat/", "options": {"aws_endpoint": "http://127.0.0.1:1", "aws_region": "eu-west-1", "aws_access_key_id": "AK", "aws_secret_access_key": "SECRET-1", "aws_session_token": "TOKEN-1", "allow_http": true}, "vend": {"mode": "catalog_keys"}}') AS set;
SELECT lance_set_storage('{"location": "s3://lake/cat/deep", "options": {"aws_endpoint": "http://127.0.0.1:2", "aws_access_key_id": "AK2", "aws_secret_access_key": "SECRET-2", "allow_http": "true"}}') AS set;
-- secrets are known in any case, and for other stores too
SELECT lance_set_storage('{"location": "s3://lake/upper", "options": {"AWS_ACCESS_KEY_ID": "AK4", "AWS_SECRET_ACCESS_KEY": "SECRET-5", "azure_storage_account_key": "SECRET-6", "google_service_account_key": "SECRET-7", "aws_access_key_id": "AK4", "aws_secret_access_key": "SECRET-5"}}') -> 'options' AS hidden;
-- and the catalog reads its own options in any case, as Lance does
SELECT lance_set_storage('{"location": "s3://lake/upper", "options": {"AWS_ACCESS_KEY_ID": "AK4", "AWS_SECRET_ACCESS_KEY": "SECRET-5"}}') -> 'options' AS upper_only;
SELECT lance_remove_storage('{"location": "s3://lake/upper"}') ->> 'location' AS removed;
-- replacing one keeps one row
SELECT lance_set_storage('{"location": "s3://lake/other", "options": {"aws_access_key_id": "AK3", "aws_secret_access_key": "SECRET-3"}}') -> 'location' AS set;
SELECT lance_set_storage('{"location": "s3://lake/other", "options": {"aws_access_key_id": "AK3", "aws_secret_access_key": "SECRET-4", "aws_region": "us-west-2"}}') -> 'options' AS replaced;
SELECT jsonb_pretty(lance_list_storage()) AS settings;

-- settings the catalog cannot work with: LN013
SELECT lance_set_storage('{"location": "/tmp/x", "options": {"aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "gs://b/x", "options": {"aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "s3://Bad_Bucket/x", "options": {"aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "s3://-lake/x", "options": {}}');
SELECT lance_set_storage('{"location": "s3://la..ke/x", "options": {}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_access_key_id": "a"}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_endpoint": "http://minio:9000", "aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_endpoint": "https://minio:9000/path", "aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_endpoint": "ftp://minio", "aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_region": "us east", "aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
-- what goes into requests holds no control characters (a header could be
-- smuggled in), and an endpoint no password (it would be shown and logged)
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_access_key_id": "a\nX-Evil: 1", "aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_access_key_id": "a", "aws_secret_access_key": "b", "aws_session_token": "t\r\nX-Evil: 1"}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_endpoint": "https://user:hunter2@minio:9000"}}');
SELECT lance_set_storage('{"location": "s3://lake/x", "options": {"aws_access_key_id": ["a"], "aws_secret_access_key": "b"}}');
SELECT lance_set_storage('{"location": "s3://lake/x"}');
SELECT lance_remove_storage('{"location": "s3://lake/none"}');
-- without keys the catalog's requests go unsigned (a bucket open to anonymous access)
SELECT lance_set_storage('{"location": "s3://lake/open", "options": {"aws_region": "us-east-1"}}') AS anonymous;
SELECT lance_remove_storage('{"location": "s3://lake/open"}') ->> 'location' AS removed;

-- tables: the longest prefix applies; the prefix itself is covered too; another
-- bucket and a look-alike prefix are not
SELECT lance_create_namespace('{"id": ["st"]}') - 'transaction_id' AS created;
SELECT lance_register_table('{"id": ["st", "a"], "location": "s3://lake/cat/a.lance"}') - 'transaction_id' AS registered;
SELECT lance_register_table('{"id": ["st", "b"], "location": "s3://lake/cat/deep/b.lance"}') - 'transaction_id' AS registered;
SELECT lance_register_table('{"id": ["st", "c"], "location": "s3://lake/catalog/c.lance"}') - 'transaction_id' AS registered;
SELECT lance_register_table('{"id": ["st", "d"], "location": "s3://pond/cat/d.lance"}') - 'transaction_id' AS registered;
SELECT lance_register_table('{"id": ["st", "e"], "location": "s3://lake/cat"}') - 'transaction_id' AS registered;
SELECT t AS table, d -> 'managed_versioning' AS managed, d -> 'storage_options' ->> 'aws_endpoint' AS endpoint,
       d -> 'storage_options' ->> 'aws_secret_access_key' AS secret
  FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e']) t,
       LATERAL lance_describe_table(jsonb_build_object('id', ARRAY['st', t])) d ORDER BY t;
-- vend_credentials false: no options
SELECT lance_describe_table('{"id": ["st", "a"], "vend_credentials": false}') -> 'storage_options' AS none;
SELECT lance_describe_table('{"id": ["st", "a"], "vend_credentials": true}') -> 'storage_options' ->> 'aws_session_token' AS vended;

-- Settings are read once per call and kept in its memory: a change made
-- earlier in the transaction is seen, and so is a savepoint's rolled back.
BEGIN;
SELECT lance_describe_table('{"id": ["st", "b"]}') -> 'storage_options' ->> 'aws_endpoint' AS before;
SELECT lance_set_storage('{"location": "s3://lake/cat/deep", "options": {"aws_endpoint": "http://127.0.0.1:3", "allow_http": true, "aws_access_key_id": "AK2", "aws_secret_access_key": "SECRET-2"}}') ->> 'location' AS set;
SELECT lance_describe_table('{"id": ["st", "b"]}') -> 'storage_options' ->> 'aws_endpoint' AS changed;
SAVEPOINT s;
SELECT lance_remove_storage('{"location": "s3://lake/cat/deep"}') ->> 'location' AS removed;
SELECT lance_describe_table('{"id": ["st", "b"]}') -> 'storage_options' ->> 'aws_endpoint' AS removed_in_savepoint;
ROLLBACK TO SAVEPOINT s;
SELECT lance_describe_table('{"id": ["st", "b"]}') -> 'storage_options' ->> 'aws_endpoint' AS after_rollback_to_savepoint;
ROLLBACK;
SELECT lance_describe_table('{"id": ["st", "b"]}') -> 'storage_options' ->> 'aws_endpoint' AS after_rollback;
\i test/sql/outcome.sql
-- A setting whose options are no object (only a direct write can make one)
-- troubles the tables it covers, and no others, call after call.
SELECT lance_register_table('{"id": ["st", "bad"], "location": "s3://lake/cat/bad/t.lance"}') ? 'location' AS registered;
INSERT INTO lance_catalog.storage (location, options) VALUES ('s3://lake/cat/bad', '[1]');
SELECT pg_temp.outcome($$SELECT lance_describe_table('{"id": ["st", "bad"]}')$$) AS under_the_bad_one;
SELECT lance_describe_table('{"id": ["st", "b"]}') -> 'storage_options' ->> 'aws_endpoint' AS others;
SELECT pg_temp.outcome($$SELECT lance_describe_table('{"id": ["st", "bad"]}')$$) AS again;
SELECT lance_describe_table('{"id": ["st", "a"]}') -> 'storage_options' ->> 'aws_endpoint' AS others_again;
DELETE FROM lance_catalog.storage WHERE location = 's3://lake/cat/bad';
SELECT lance_deregister_table('{"id": ["st", "bad"]}') ? 'location' AS deregistered;
-- With more settings than it keeps in memory (a storage table of more than
-- 8 pages), the catalog probes for each folder instead: the same answers.
SELECT count(*) AS set
  FROM generate_series(1, 1500) i,
       LATERAL lance_set_storage(jsonb_build_object('location', 's3://many' || i || '/p', 'options', '{}'::jsonb)) s;
SELECT pg_relation_size('lance_catalog.storage') / current_setting('block_size')::int > 8 AS more_than_8_pages;
SELECT t AS table, d -> 'managed_versioning' AS managed, d -> 'storage_options' ->> 'aws_endpoint' AS endpoint
  FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e']) t,
       LATERAL lance_describe_table(jsonb_build_object('id', ARRAY['st', t])) d ORDER BY t;
-- A folder of 50,000 levels costs one probe per level, each by the same
-- value cut shorter, not a copy per level (that took 9 s and gigabytes: the
-- copies add up to the square of the folder's length, 2.5 GB here).  Both
-- are counted, not timed (test/memory runs this under valgrind, 20 to 50
-- times slower): the primary key probes of lance_catalog.storage in the
-- transaction, and the growth of the backend's peak memory (VmHWM), which
-- one copy and 100,000 probes keep far below 100 MB.
SELECT lance_register_table(jsonb_build_object('id', '["st", "deep"]'::jsonb, 'location', 's3://lake/cat/' || repeat('a/', 50000) || 't.lance')) ? 'location' AS registered;
SELECT lance_register_table(jsonb_build_object('id', '["st", "deep_out"]'::jsonb, 'location', 's3://pond/out/' || repeat('a/', 50000) || 't.lance')) ? 'location' AS registered;
CREATE FUNCTION pg_temp.peak_kb() RETURNS bigint LANGUAGE sql AS $$
    SELECT substring(pg_read_file('/proc/' || pg_backend_pid() || '/status') FROM 'VmHWM:\s*(\d+) kB')::bigint
$$;
SELECT pg_temp.peak_kb() AS peak_before \gset
BEGIN;
SELECT pg_stat_get_xact_numscans('lance_catalog.storage_pkey'::regclass) AS probes_before \gset
SELECT lance_describe_table('{"id": ["st", "deep"]}') -> 'storage_options' ->> 'aws_endpoint' AS deep,
       lance_describe_table('{"id": ["st", "deep_out"]}') -> 'storage_options' AS deep_out;
-- deep: t.lance, 50,000 levels of a, then s3://lake/cat is found; deep_out:
-- t.lance, 50,000 levels, s3://pond/out and s3://pond, none found
SELECT pg_stat_get_xact_numscans('lance_catalog.storage_pkey'::regclass) - :probes_before AS probes;
COMMIT;
SELECT pg_temp.peak_kb() - :peak_before < 100 * 1024 AS peak_grew_less_than_100_mb;
DROP FUNCTION pg_temp.peak_kb();
SELECT lance_deregister_table('{"id": ["st", "deep"]}') ? 'location' AS deregistered,
       lance_deregister_table('{"id": ["st", "deep_out"]}') ? 'location' AS deregistered;
SELECT count(*) AS removed
  FROM generate_series(1, 1500) i,
       LATERAL lance_remove_storage(jsonb_build_object('location', 's3://many' || i || '/p')) s;

-- DeclareTable under an S3 root: a derived location there, managed, with options
SET lance_namespace.root = 's3://lake/cat/declared';
SELECT d ->> 'location' ~ '^s3://lake/cat/declared/st/new_[0-9a-f]{8}\.lance$' AS derived,
       d -> 'managed_versioning' AS managed, d -> 'storage_options' ->> 'aws_region' AS region
  FROM lance_declare_table('{"id": ["st", "new"]}') d;
SELECT d -> 'managed_versioning' AS managed, d -> 'storage_options' AS none
  FROM lance_declare_table('{"id": ["st", "new2"], "vend_credentials": false}') d;
-- two tables may not share a folder, however spelled
SELECT lance_register_table('{"id": ["st", "a2"], "location": "s3://lake/cat/x/../a.lance/"}');
SELECT lance_register_table('{"id": ["st", "a3"], "location": "s3://lake/cat/%61.lance"}');

-- callers: options go with read; none without; settings are administrators'
SELECT lance_grant('{"id": ["st"], "role": "regress_st_reader", "privilege": "read"}') ->> 'changed' AS granted;
SET ROLE regress_st_reader;
SELECT lance_describe_table('{"id": ["st", "a"]}') -> 'storage_options' ->> 'aws_secret_access_key' AS reader_gets;
SELECT lance_list_storage();
SELECT lance_set_storage('{"location": "s3://lake/mine", "options": {"aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
SELECT * FROM lance_catalog.storage;
RESET ROLE;
SET ROLE regress_st_none;
SELECT lance_describe_table('{"id": ["st", "a"]}');
RESET ROLE;
SET ROLE regress_st_admin;
SELECT lance_remove_storage('{"location": "s3://lake/other/"}') AS removed;
SELECT jsonb_array_length(lance_list_storage() -> 'storage') AS settings_left;
RESET ROLE;

-- a namespace location where the catalog manages versions is an
-- administrator's to give: a writer could otherwise have its tables put
-- below any setting, and be handed that setting's keys
CREATE ROLE regress_st_writer;
SELECT lance_grant('{"id": ["st"], "role": "regress_st_writer", "privilege": "write"}') ->> 'changed' AS granted;
SET ROLE regress_st_writer;
SELECT lance_create_namespace('{"id": ["st", "evil"], "properties": {"location": "s3://lake/cat/deep"}}');
SELECT lance_create_namespace('{"id": ["st", "evil"], "properties": {"location": "s3://lake/cat"}}');
-- nor does a writer name a table's folder there
SELECT lance_register_table('{"id": ["st", "mine_t"], "location": "s3://lake/cat/mine_t"}');
-- elsewhere it may
SELECT lance_create_namespace('{"id": ["st", "mine"], "properties": {"location": "s3://elsewhere/mine"}}') -> 'properties' AS created;
RESET ROLE;
-- one an administrator gives serves writers: their tables go there, managed
SELECT lance_set_storage('{"location": "s3://pond/placed", "options": {}}') ->> 'location' AS set;
SELECT lance_create_namespace('{"id": ["st", "placed"], "properties": {"location": "s3://pond/placed"}}') -> 'properties' AS by_admin;
SET ROLE regress_st_writer;
SELECT d ->> 'location' ~ '^s3://pond/placed/t_[0-9a-f]{8}\.lance$' AS below, d -> 'managed_versioning' AS managed
  FROM lance_declare_table('{"id": ["st", "placed", "t"]}') d;
RESET ROLE;
SELECT lance_remove_storage('{"location": "s3://pond/placed"}') ->> 'location' AS removed;

-- tables registered while nothing managed a prefix may share a folder: a
-- setting that would manage them both is refused
SELECT lance_register_table('{"id": ["st", "one"], "location": "s3://lake/later/t1"}') ? 'location' AS registered;
SELECT lance_register_table('{"id": ["st", "two"], "location": "s3://lake/later/t1/"}') ? 'location' AS registered;
SELECT lance_set_storage('{"location": "s3://lake/later", "options": {}}');
SELECT lance_deregister_table('{"id": ["st", "two"]}') ? 'location' AS deregistered;
SELECT lance_register_table('{"id": ["st", "three"], "location": "s3://lake/later/t1/inner"}') ? 'location' AS registered;
SELECT lance_set_storage('{"location": "s3://lake/later", "options": {}}');
SELECT lance_deregister_table('{"id": ["st", "three"]}') ? 'location' AS deregistered;
-- the table left would become managed: named, until the administrator
-- takes it over (sql/locations.sql has the rest)
SELECT lance_set_storage('{"location": "s3://lake/later", "options": {}}') ->> 'location' AS set;
SELECT lance_set_storage('{"location": "s3://lake/later", "options": {}, "take_over": true}') ->> 'location' AS set;
SELECT lance_remove_storage('{"location": "s3://lake/later"}') ->> 'location' AS removed;

-- What callers are handed (vend).  Every mode hands out where the store is
-- (region, endpoint), so that no client probes a cloud metadata address;
-- "none" (a setting without "vend") nothing more, "keys" the pair of the
-- caller's privilege on the table (write or manage: "write"), "sts"
-- temporary keys of the token service, signed for with the setting's keys.
SELECT lance_set_storage('{"location": "s3://vend/none", "options": {"aws_access_key_id": "CAT", "aws_secret_access_key": "CATSECRET"}}') -> 'vend' AS vend;
SELECT lance_set_storage('{"location": "s3://vend/keys", "options": {"aws_endpoint": "https://minio.example:9000", "aws_access_key_id": "CAT", "aws_secret_access_key": "CATSECRET"}, "vend": {"mode": "keys", "read": {"aws_access_key_id": "RK", "aws_secret_access_key": "RSECRET"}, "write": {"aws_access_key_id": "WK", "aws_secret_access_key": "WSECRET"}}}') -> 'vend' AS vend;
SELECT lance_set_storage('{"location": "s3://vend/sts", "options": {"aws_endpoint": "http://127.0.0.1:1", "allow_http": "true", "aws_access_key_id": "CAT", "aws_secret_access_key": "CATSECRET"}, "vend": {"mode": "sts", "role_arn": "arn:aws:iam::123456789012:role/lance", "sts_endpoint": "http://127.0.0.1:1", "external_id": "EXTERNAL-1", "duration_seconds": 1800}}') -> 'vend' AS vend;
SELECT lance_create_namespace('{"id": ["vend"]}') ? 'transaction_id' AS created;
SELECT lance_register_table(jsonb_build_object('id', jsonb_build_array('vend', m), 'location', 's3://vend/' || m || '/t.lance')) ? 'location' AS registered
  FROM unnest(ARRAY['none', 'keys', 'sts']) m;
CREATE ROLE regress_st_vread;
CREATE ROLE regress_st_vwrite;
SELECT lance_grant('{"id": ["vend"], "role": "regress_st_vread", "privilege": "read"}') ->> 'changed' AS granted;
SELECT lance_grant('{"id": ["vend", "keys"], "role": "regress_st_vwrite", "privilege": "write"}') ->> 'changed' AS granted;
SET ROLE regress_st_vread;
SELECT lance_describe_table('{"id": ["vend", "none"]}') -> 'storage_options' AS reader_none;
SELECT lance_describe_table('{"id": ["vend", "keys"]}') -> 'storage_options' AS reader_keys;
RESET ROLE;
SET ROLE regress_st_vwrite;
SELECT lance_describe_table('{"id": ["vend", "keys"]}') -> 'storage_options' AS writer_keys;
RESET ROLE;
-- an administrator may write: the writers' pair
SELECT lance_describe_table('{"id": ["vend", "keys"]}') -> 'storage_options' ->> 'aws_access_key_id' AS admin_keys;
-- sts: a token service that cannot be reached is 17 (test/node/s3 reaches
-- one); asking for no credentials asks it nothing
SELECT pg_temp.outcome($$SELECT lance_describe_table('{"id": ["vend", "sts"]}')$$) AS unreachable;
SELECT lance_describe_table('{"id": ["vend", "sts"], "vend_credentials": false}') -> 'storage_options' AS none_asked;
-- the listing shows each mode and no secret: not the pairs', nor the external id
SELECT s -> 'location' AS location, s -> 'vend' AS vend
  FROM jsonb_array_elements(lance_list_storage() -> 'storage') s
 WHERE s ->> 'location' LIKE 's3://vend/%' ORDER BY 1;
-- vend members each mode takes, and only those: LN013
SELECT pg_temp.outcome(format('SELECT lance_set_storage(%L)', jsonb_build_object('location', 's3://vend/x', 'options', '{"aws_access_key_id": "CAT", "aws_secret_access_key": "CATSECRET"}'::jsonb, 'vend', v))) AS refused, v AS vend
  FROM unnest(ARRAY['"none"', '{}', '{"mode": "aws"}', '{"mode": "none", "role_arn": "arn:x"}',
                    '{"mode": "keys", "read": {"aws_access_key_id": "R", "aws_secret_access_key": "S"}}',
                    '{"mode": "keys", "read": {"aws_access_key_id": "R"}, "write": {"aws_access_key_id": "W", "aws_secret_access_key": "S"}}',
                    '{"mode": "keys", "read": {"aws_region": "x"}, "write": {"aws_access_key_id": "W", "aws_secret_access_key": "S"}}',
                    '{"mode": "keys", "read": "RK", "write": {}}',
                    '{"mode": "sts"}', '{"mode": "sts", "role_arn": "lance"}',
                    '{"mode": "sts", "role_arn": "arn:aws:iam::1:role/r", "duration_seconds": 60}',
                    '{"mode": "sts", "role_arn": "arn:aws:iam::1:role/r", "duration_seconds": "900"}',
                    '{"mode": "sts", "role_arn": "arn:aws:iam::1:role/r", "sts_endpoint": "ftp://sts"}',
                    '{"mode": "sts", "role_arn": "arn:aws:iam::1:role/r", "sts_endpoint": "http://sts"}',
                    '{"mode": "catalog_keys", "read": {}}']::jsonb[]) v;
-- sts signs with the setting's own keys: a setting without keys cannot use it
SELECT pg_temp.outcome($$SELECT lance_set_storage('{"location": "s3://vend/x", "options": {}, "vend": {"mode": "sts", "role_arn": "arn:aws:iam::1:role/r"}}')$$) AS no_keys;
SELECT lance_drop_namespace('{"id": ["vend"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT count(*) AS removed
  FROM unnest(ARRAY['none', 'keys', 'sts']) m,
       LATERAL lance_remove_storage(jsonb_build_object('location', 's3://vend/' || m)) s;
DROP ROLE regress_st_vread, regress_st_vwrite;

-- no secret reaches the change log
SELECT count(*) AS entries_with_secrets
  FROM lance_changes(0, 100000) c WHERE c::text ~ 'SECRET|TOKEN|EXTERNAL';

-- clean up
SELECT lance_drop_namespace('{"id": ["st"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_remove_storage('{"location": "s3://lake/cat"}') -> 'location' AS removed;
SELECT lance_remove_storage('{"location": "s3://lake/cat/deep"}') -> 'location' AS removed;
DROP ROLE regress_st_admin, regress_st_reader, regress_st_none, regress_st_writer;
