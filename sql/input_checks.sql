--
-- What a request may hold, whichever way it arrives: every client mistake
-- is LN013 (400 through REST), and nothing that could not be stored, dumped
-- and restored is ever stored.
--
SET lance_namespace.local_roots = '';
-- REST requests act as this session's role without a key.
SELECT set_config('lance_namespace.anonymous_role', current_user, false) AS anonymous \gset

-- A request that is not an object, including a top-level null.
SELECT lance_create_namespace('null');
SELECT lance_create_namespace('"ns"');
SELECT lance_create_namespace(NULL);

-- JSON nested deeper than 32 levels, anywhere: a request, a body, a header.
SELECT lance_create_namespace(('{"id": ["deep"], "properties": {"a": ' || repeat('[', 40) || '1' || repeat(']', 40) || '}}')::jsonb);
SELECT status, response_body
  FROM lance_rest('POST', '/v1/namespace/deep/create', NULL,
                  '{"properties": ' || repeat('[', 40) || '1' || repeat(']', 40) || '}', NULL);
SELECT status, response_body
  FROM lance_rest('POST', '/v1/namespace/deep/create', NULL, NULL,
                  ('{"x-trace": ' || repeat('[', 40) || '1' || repeat(']', 40) || '}')::jsonb);
-- 32 levels are fine: the request object, properties and 30 arrays.
SELECT lance_describe_namespace(('{"id": [], "x": {"y": ' || repeat('[', 30) || '1' || repeat(']', 30) || '}}')::jsonb);

-- Bytes that are not UTF-8, spelled with percent escapes in a path or query.
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/%FF%FE/create', NULL, NULL, NULL);
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/%24/list', 'page_token=%C3', NULL, NULL);
-- A query left on the path counts like the given one, and is checked alike.
SELECT status, response_body FROM lance_rest('POST', '/v1/table/?x=%C0%AF', NULL, NULL, NULL);
-- Well-formed UTF-8 in escapes is a name like any other.
SELECT status, response_body::jsonb - 'transaction_id' AS body
  FROM lance_rest('POST', '/v1/namespace/%C3%A9t%C3%A9/create', NULL, NULL, NULL);

-- \u0000 in a key or a value, and a lone surrogate, in a REST body: refused,
-- never cut short or replaced.
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/k1/create', NULL, '{"properties": {"a\u0000b": "c"}}', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/k2/create', NULL, '{"properties": {"a": "b\u0000c"}}', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/k3/create', NULL, '{"properties": {"a": "\ud800"}}', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/k4/create', NULL, '{"properties": {}} trailing', NULL);

-- None of the refused requests left anything behind.
SELECT name FROM lance_catalog.object WHERE id <> 0 ORDER BY name;

-- The change feed after the largest number is empty, not an overflow.
SELECT count(*) FROM lance_changes(9223372036854775807);
SELECT count(*) FROM lance_changes(9223372036854775806, 5);

SELECT lance_drop_namespace('{"id": ["été"]}') - 'transaction_id';

-- Any "after" is answered at once: below 1 means from the start, and a gap
-- of any size is checked against the lock table, not number by number.
SELECT count(*) >= 0 AS answered FROM lance_changes(-9223372036854775808, 5);
SELECT lance_catalog.change_in_flight(1, 9223372036854775807) AS in_flight;

-- A name too long for the file system, in a location under the local
-- roots, is the request's mistake, not an internal error.
SET lance_namespace.root = '/tmp';
SET lance_namespace.local_roots = '/tmp';
-- (the derived location has a random part: show the SQLSTATE alone)
\set VERBOSITY sqlstate
SELECT lance_declare_table(jsonb_build_object('id', jsonb_build_array(repeat('n', 300)))) - 'transaction_id';
\set VERBOSITY default
RESET lance_namespace.root;
SET lance_namespace.local_roots = '';

-- A request's size is bounded: at most 1000 entries (operations, ranges,
-- actions) and ids of at most 64 levels.
SELECT lance_batch_create_table_versions(jsonb_build_object('entries',
    (SELECT jsonb_agg(jsonb_build_object('id', ARRAY['ns', 't'], 'version', g, 'manifest_path', 'm'))
       FROM generate_series(1, 1001) g)));
SELECT lance_batch_delete_table_versions(jsonb_build_object('id', ARRAY['ns', 't'], 'ranges',
    (SELECT jsonb_agg(jsonb_build_object('start_version', g, 'end_version', g + 1))
       FROM generate_series(1, 20000) g)));
SELECT lance_describe_namespace(jsonb_build_object('id', (SELECT jsonb_agg('n'::text) FROM generate_series(1, 65))));

-- "/" as the local root: every folder is below it, and files are reached
-- from it like from any other root.
SET lance_namespace.local_roots = '/';
\! rm -rf /tmp/lance_namespace_slash && mkdir -p /tmp/lance_namespace_slash/t.lance/_versions && cp test/fixtures/lance.manifest /tmp/lance_namespace_slash/t.lance/_versions/18446744073709551614.manifest-s && chmod -R 777 /tmp/lance_namespace_slash
SELECT lance_create_namespace('{"id": ["slash"]}') - 'transaction_id' AS created;
SELECT lance_register_table('{"id": ["slash", "t"], "location": "/tmp/lance_namespace_slash/t.lance"}') - 'transaction_id' AS registered;
SELECT lance_describe_table('{"id": ["slash", "t"]}') -> 'managed_versioning' AS managed;
SELECT lance_create_table_version('{"id": ["slash", "t"], "version": 1, "manifest_path": "tmp/lance_namespace_slash/t.lance/_versions/18446744073709551614.manifest-s"}') #>> '{version,manifest_path}' AS manifest_path;
SELECT (pg_stat_file('/tmp/lance_namespace_slash/t.lance/_versions/18446744073709551614.manifest')).size AS final_size;
SELECT lance_deregister_table('{"id": ["slash", "t"]}') - 'transaction_id' AS deregistered;
SELECT lance_drop_namespace('{"id": ["slash"]}') - 'transaction_id' AS dropped;
\! rm -rf /tmp/lance_namespace_slash
SET lance_namespace.local_roots = '';

-- A file:// location whose escapes spell bytes that are not UTF-8 names no
-- folder the catalog keeps (it went into the index and drop reasons).
SELECT lance_catalog.local_path('file:///tmp/%FF') IS NULL AS no_folder,
       lance_catalog.local_path('file:///tmp/%C3%A9') AS folder;

-- One reading of integers, from SQL (jsonb) and REST (JSON text) alike: a
-- number whose exact value is an integer in int64's range (1e2, 2.0, 20e-1
-- are 100, 2, 2), never rounded (1.5, 1e-400) nor clamped (-1e30,
-- -99999999999999999999): those are LN013 naming the field.
SELECT lance_create_namespace('{"id": ["ints"]}') - 'transaction_id' AS created;
SELECT count(lance_create_namespace(jsonb_build_object('id', ARRAY['ints', n]))) AS children
  FROM unnest(ARRAY['a', 'b', 'c']) n;
CREATE FUNCTION pg_temp.by_sql(spelling text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN 'listed ' || jsonb_array_length(lance_list_namespaces(
        ('{"id": ["ints"], "limit": ' || spelling || '}')::jsonb) -> 'namespaces');
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
CREATE FUNCTION pg_temp.by_rest(spelling text) RETURNS text LANGUAGE sql AS $$
    SELECT status || CASE WHEN status = 200
                THEN ' listed ' || jsonb_array_length(response_body::jsonb -> 'namespaces')
                ELSE ' LN0' || (response_body::jsonb ->> 'code') || ' ' || (response_body::jsonb ->> 'error') END
      FROM lance_rest('GET', '/v1/namespace/ints/list', NULL, '{"limit": ' || spelling || '}', NULL)
$$;
SELECT s AS spelling, pg_temp.by_sql(s) AS sql, pg_temp.by_rest(s) AS rest,
       pg_temp.by_sql(s) = regexp_replace(pg_temp.by_rest(s), '^(200|400) ', '') AS same
  FROM unnest(ARRAY['2', '1.0', '2e0', '20e-1', '1e2', '0.2e1', '-0',
                    '9223372036854775807', '9.223372036854775807e18', '-9223372036854775808',
                    '9223372036854775808', '-9223372036854775809', '-99999999999999999999',
                    '99999999999999999999999', '1e30', '-1e30', '1e400',
                    '1.5', '1e-400', '-1e-400', '0.5e1', '2.0000000000000000001']) s;
-- Query parameters are read by the same rule.
SELECT q AS query, status, CASE WHEN status = 200 THEN 'listed ' || jsonb_array_length(response_body::jsonb -> 'namespaces')
                               ELSE response_body END AS answer
  FROM unnest(ARRAY['limit=2', 'limit=1e2', 'limit=20e-1', 'limit=1.5', 'limit=1e-400',
                    'limit=-99999999999999999999', 'limit=%2B2', 'limit=%202']) q,
       LATERAL lance_rest('GET', '/v1/namespace/ints/list', q, NULL, NULL);
-- A number jsonb could not hold at all, in a body: LN013 too.
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/ints/list', NULL, '{"limit": 1e-20000}', NULL);
SELECT status, response_body FROM lance_rest('GET', '/v1/namespace/ints/list', NULL, '{"limit": 1e200000}', NULL);
-- A number outside the request fields is read, never refused: only fields check.
SELECT status, response_body::jsonb -> 'properties' AS properties
  FROM lance_rest('POST', '/v1/namespace/ints%24d/create', NULL, '{"properties": {"n": "1"}, "x": [1e-400, -99999999999999999999, 1.50]}', NULL);
SELECT lance_drop_namespace('{"id": ["ints"], "behavior": "Cascade"}') - 'transaction_id' AS dropped;

-- A REST body of 5 MB of '[' (or deep inside an object) is LN013, ours:
-- nesting is counted before PostgreSQL's parser, which recurses per level
-- and would run out of stack.  Brackets inside strings are no nesting.
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/deep/create', NULL, repeat('[', 5000000), NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/deep/create', NULL, '{"properties": ' || repeat('{"a": [', 2500000), NULL);
SELECT status, response_body::jsonb #>> '{properties,a}' = repeat('[', 100) AS kept
  FROM lance_rest('POST', '/v1/namespace/brackets/create', NULL, '{"properties": {"a": "' || repeat('[', 100) || '"}}', NULL);
-- 32 levels are fine through REST too.
SELECT status, response_body::jsonb -> 'properties' ? 'a' AS described
  FROM lance_rest('POST', '/v1/namespace/brackets/describe', NULL, '{"x": {"y": ' || repeat('[', 30) || '1' || repeat(']', 30) || '}}', NULL);
SELECT lance_drop_namespace('{"id": ["brackets"]}') ? 'properties' AS dropped;

-- An S3 location names a bucket, not a host: a port or a user in it is
-- LN013 wherever a location is accepted (a table's, a namespace's
-- "location" property, a storage setting).
SELECT lance_create_namespace('{"id": ["hosts"]}') - 'transaction_id' AS created;
CREATE FUNCTION pg_temp.by_call(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE call;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
SELECT l AS location,
       pg_temp.by_call(format('SELECT lance_register_table(%L)', jsonb_build_object('id', ARRAY['hosts', 'r'], 'location', l))) AS register,
       pg_temp.by_call(format('SELECT lance_declare_table(%L)', jsonb_build_object('id', ARRAY['hosts', 'd'], 'location', l))) AS declare,
       pg_temp.by_call(format('SELECT lance_create_namespace(%L)', jsonb_build_object('id', ARRAY['hosts', 'n'], 'properties', jsonb_build_object('location', l)))) AS namespace,
       pg_temp.by_call(format('SELECT lance_set_storage(%L)', jsonb_build_object('location', l, 'options', '{}'::jsonb))) AS storage
  FROM unnest(ARRAY['s3://bkt:443/t.lance', 's3://user@bkt/t.lance', 's3://user:secret@bkt/t.lance', 's3://bkt:/t.lance', 'S3://bkt:443']) l;
SELECT status, response_body FROM lance_rest('POST', '/v1/table/hosts%24rr/register', NULL, '{"location": "s3://bkt:443/t.lance"}', NULL);
-- The refusal never shows a user part: it may hold a password.
SELECT strpos(pg_temp.by_call('SELECT lance_register_table(''{"id": ["hosts", "r"], "location": "s3://user:secret@bkt/t.lance"}'')'), 'secret') AS secret_shown,
       strpos(r.response_body::text, 'secret') AS secret_in_rest
  FROM lance_rest('POST', '/v1/table/hosts%24rr/register', NULL, '{"location": "s3://user:secret@bkt/t.lance"}', NULL) r;
-- A colon or an @ after the bucket is part of the key, as S3 allows.
SELECT lance_register_table('{"id": ["hosts", "k"], "location": "s3://bkt/a:b@c/t.lance"}') ->> 'location' AS registered;
SELECT name FROM lance_catalog.object WHERE name IN ('r', 'd', 'n', 'rr') ORDER BY name;
SELECT lance_drop_namespace('{"id": ["hosts"], "behavior": "Cascade"}') - 'transaction_id' AS dropped;
