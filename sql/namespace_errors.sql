--
-- namespace_errors: every error the namespace operations raise.
-- An error shows as its message, with the spec's ErrorResponse JSON as
-- DETAIL; the SQLSTATE (LN + three-digit code) is checked at the end.
--
\set VERBOSITY default

-- No managed folders, whatever the server's configuration.
SET lance_namespace.local_roots = '';

-- Fixtures: ne_a has a child namespace, ne_t holds only a table, ne_e is empty.
SELECT lance_create_namespace('{"id": ["ne_a"], "properties": {"k": "v"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_a", "child"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_t"], "properties": {"k": "t"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_declare_table('{"id": ["ne_t", "tbl"], "location": "/data/ne_t/tbl.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_create_namespace('{"id": ["ne_e"]}') - 'transaction_id' AS lance_create_namespace;

--
-- LN013 InvalidInput: the request itself.
--

-- The request must be a JSON object.
SELECT lance_create_namespace(NULL);
SELECT lance_list_namespaces(NULL);
SELECT lance_describe_namespace('[]');
SELECT lance_drop_namespace('"ne_e"') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_namespace_exists('1');

-- "id" is required by every namespace operation (a JSON null is absent).
SELECT lance_create_namespace('{}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_list_namespaces('{"limit": 1}');
SELECT lance_describe_namespace('{"id": null}');
SELECT lance_drop_namespace('{"mode": "Skip"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_namespace_exists('{"ID": ["ne_e"]}');

-- "id" must be an array of non-empty strings.
SELECT lance_create_namespace('{"id": "ne_x"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": {"0": "ne_e"}}');
SELECT lance_namespace_exists('{"id": 7}');
SELECT lance_list_namespaces('{"id": [1]}');
SELECT lance_drop_namespace('{"id": ["ne_e", null]}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_create_namespace('{"id": [["ne_x"]]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": [""]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ne_a", ""]}');

-- A name may hold at most 1024 bytes (not characters).
SELECT lance_create_namespace(jsonb_build_object('id', jsonb_build_array(repeat('x', 1025))));
SELECT lance_create_namespace(jsonb_build_object('id', jsonb_build_array('ne_a', repeat('é', 513))));
SELECT lance_namespace_exists(jsonb_build_object('id', jsonb_build_array(repeat('x', 1025))));

-- String members: "mode", "behavior", "page_token".
SELECT lance_create_namespace('{"id": ["ne_x"], "mode": 1}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "mode": true}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "mode": ["Create"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_drop_namespace('{"id": ["ne_e"], "mode": {}}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_e"], "behavior": false}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_list_namespaces('{"id": [], "page_token": 5}');

-- Map members: "properties" must be an object whose values are strings.
SELECT lance_create_namespace('{"id": ["ne_x"], "properties": []}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "properties": "k=v"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "properties": {"k": 1}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "properties": {"a": "ok", "k": null}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "properties": {"k": true}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "properties": {"k": {"nested": "v"}}}') - 'transaction_id' AS lance_create_namespace;

-- Integer members: "limit" must be a non-negative integer.
SELECT lance_list_namespaces('{"id": [], "limit": -1}');
SELECT lance_list_namespaces('{"id": [], "limit": 1.5}');
SELECT lance_list_namespaces('{"id": [], "limit": "10"}');
SELECT lance_list_namespaces('{"id": [], "limit": true}');

-- Unknown enum values, listing the accepted ones.
SELECT lance_create_namespace('{"id": ["ne_x"], "mode": "bogus"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "mode": ""}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "mode": "Exist-Ok"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_x"], "mode": "Skip"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_drop_namespace('{"id": ["ne_e"], "mode": "ExistOk"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_e"], "behavior": "bogus"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_e"], "behavior": "Skip"}') - 'transaction_id' AS lance_drop_namespace;

-- The root namespace cannot be dropped, whatever the mode or behavior.
SELECT lance_drop_namespace('{"id": []}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": [], "mode": "Skip", "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;

-- Nothing above was created or dropped.
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_list_namespaces('{"id": ["ne_a"]}');

--
-- LN001 NamespaceNotFound.
--

SELECT lance_describe_namespace('{"id": ["ne_missing"]}');
SELECT lance_namespace_exists('{"id": ["ne_missing"]}');
SELECT lance_namespace_exists('{"id": ["ne_a", "missing"]}');
SELECT lance_namespace_exists('{"id": ["ne_missing", "child"]}');
SELECT lance_list_namespaces('{"id": ["ne_missing"]}');
-- Names are case-sensitive.
SELECT lance_describe_namespace('{"id": ["NE_A"]}');
-- A table is not a namespace.
SELECT lance_describe_namespace('{"id": ["ne_t", "tbl"]}');
SELECT lance_namespace_exists('{"id": ["ne_t", "tbl"]}');
SELECT lance_list_namespaces('{"id": ["ne_t", "tbl"]}');
-- CreateNamespace needs its parent.
SELECT lance_create_namespace('{"id": ["ne_missing", "child"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_missing", "child"], "mode": "ExistOk"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_t", "tbl", "child"]}') - 'transaction_id' AS lance_create_namespace;
-- DropNamespace with mode Fail (the default), with either behavior.
SELECT lance_drop_namespace('{"id": ["ne_missing"]}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_missing"], "mode": "Fail", "behavior": "Restrict"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_missing"], "mode": "Fail", "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_a", "missing"], "mode": "fail"}') - 'transaction_id' AS lance_drop_namespace;

--
-- LN002 NamespaceAlreadyExists.
--

SELECT lance_create_namespace('{"id": ["ne_a"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_a", "child"], "mode": "Create"}') - 'transaction_id' AS lance_create_namespace;
-- The root namespace always exists.
SELECT lance_create_namespace('{"id": []}') - 'transaction_id' AS lance_create_namespace;
-- Names are unique among namespaces and tables together: whatever the mode,
-- a namespace cannot take a table's name.
SELECT lance_create_namespace('{"id": ["ne_t", "tbl"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_t", "tbl"], "mode": "ExistOk"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_t", "tbl"], "mode": "Overwrite"}') - 'transaction_id' AS lance_create_namespace;
-- The table is still a table with its location.
SELECT lance_describe_table('{"id": ["ne_t", "tbl"]}');
-- The failed Create did not change the existing namespace's properties.
SELECT lance_create_namespace('{"id": ["ne_a"], "properties": {"k": "changed"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ne_a"]}');

--
-- LN003 NamespaceNotEmpty.
--

-- DropNamespace with behavior Restrict (the default), with mode Fail or
-- Skip (Skip only excuses a missing namespace), on a namespace holding a
-- namespace or a table.
SELECT lance_drop_namespace('{"id": ["ne_a"]}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_a"], "mode": "Fail", "behavior": "Restrict"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_a"], "mode": "Skip", "behavior": "Restrict"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_t"]}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_t"], "mode": "Skip"}') - 'transaction_id' AS lance_drop_namespace;
-- CreateNamespace Overwrite of a non-empty namespace.
SELECT lance_create_namespace('{"id": ["ne_a"], "mode": "Overwrite", "properties": {"k": "new"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ne_t"], "mode": "Overwrite"}') - 'transaction_id' AS lance_create_namespace;
-- Both namespaces are untouched: same properties, same children.
SELECT lance_describe_namespace('{"id": ["ne_a"]}');
SELECT lance_list_namespaces('{"id": ["ne_a"]}');
SELECT lance_describe_namespace('{"id": ["ne_t"]}');
SELECT lance_list_tables('{"id": ["ne_t"]}');

--
-- SQLSTATE: every error is LN followed by its three-digit Lance code, and
-- the DETAIL is the ErrorResponse with the same code.
--

\i test/sql/outcome.sql

SELECT call, pg_temp.outcome('SELECT ' || call) AS outcome
FROM (VALUES
    ($$lance_describe_namespace('{"id": ["ne_missing"]}')$$),
    ($$lance_namespace_exists('{"id": ["ne_missing"]}')$$),
    ($$lance_list_namespaces('{"id": ["ne_missing"]}')$$),
    ($$lance_drop_namespace('{"id": ["ne_missing"]}')$$),
    ($$lance_create_namespace('{"id": ["ne_missing", "x"]}')$$),
    ($$lance_create_namespace('{"id": ["ne_a"]}')$$),
    ($$lance_create_namespace('{"id": []}')$$),
    ($$lance_create_namespace('{"id": ["ne_t", "tbl"]}')$$),
    ($$lance_drop_namespace('{"id": ["ne_a"]}')$$),
    ($$lance_create_namespace('{"id": ["ne_a"], "mode": "Overwrite"}')$$),
    ($$lance_create_namespace('{}')$$),
    ($$lance_create_namespace('{"id": ["ne_x"], "mode": "bogus"}')$$),
    ($$lance_drop_namespace('{"id": []}')$$),
    ($$lance_list_namespaces('{"id": [], "limit": -1}')$$),
    ($$lance_namespace_exists('{"id": ["ne_e"]}')$$)
) AS t(call);

-- The same check as a DO block, the way a PL/pgSQL caller catches one code.
DO $$
BEGIN
    PERFORM lance_describe_namespace('{"id": ["ne_missing"]}');
EXCEPTION WHEN SQLSTATE 'LN001' THEN
    RAISE NOTICE 'caught LN001: %', SQLERRM;
END
$$;

-- Clean up.
SELECT lance_drop_namespace('{"id": ["ne_a"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_t"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ne_e"]}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_list_namespaces('{"id": []}');
RESET lance_namespace.local_roots;
