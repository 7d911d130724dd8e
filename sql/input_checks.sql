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
