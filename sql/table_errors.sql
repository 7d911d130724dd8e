--
-- table_errors: every error the table operations raise.
-- An error shows as its message, with the spec's ErrorResponse JSON as
-- DETAIL; the SQLSTATE (LN + three-digit code) is checked at the end.
--
\set VERBOSITY default

-- No root location and no managed folders, whatever the server's configuration.
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '';

-- Fixtures: te holds a declared table, a registered table and a namespace.
SELECT lance_create_namespace('{"id": ["te"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["te", "sub"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["te2"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_declare_table('{"id": ["te", "decl"], "location": "/data/te/decl.lance", "properties": {"k": "d"}}') - 'transaction_id' AS lance_declare_table;
SELECT lance_register_table('{"id": ["te", "reg"], "location": "/data/te/reg.lance", "properties": {"k": "r"}}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te2", "other"], "location": "/data/te2/other.lance"}') - 'transaction_id' AS lance_register_table;

--
-- LN013 InvalidInput.
--

-- "id" is required, and a table id cannot be [] (the root namespace).
SELECT lance_declare_table('{"location": "/x.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_register_table('{"id": null, "location": "/x.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_list_tables('{}');
SELECT lance_declare_table('{"id": [], "location": "/x.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_register_table('{"id": [], "location": "/x.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_describe_table('{"id": []}');
SELECT lance_table_exists('{"id": []}');
SELECT lance_deregister_table('{"id": []}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_drop_table('{"id": []}') - 'transaction_id' AS lance_drop_table;
SELECT lance_rename_table('{"id": [], "new_table_name": "x"}') - 'transaction_id' AS lance_rename_table;

-- "id" must be an array of non-empty strings of at most 1024 bytes.
SELECT lance_describe_table('{"id": "te$reg"}');
SELECT lance_table_exists('{"id": ["te", 1]}');
SELECT lance_drop_table('{"id": ["te", ""]}') - 'transaction_id' AS lance_drop_table;
SELECT lance_declare_table(jsonb_build_object('id', jsonb_build_array('te', repeat('t', 1025)), 'location', '/x.lance'));
SELECT lance_list_tables('{"id": {"te": true}}');

-- RegisterTable needs a non-empty string "location" and a known mode.
SELECT lance_register_table('{"id": ["te", "new"]}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "new"], "location": null}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "new"], "location": ""}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "new"], "location": 42}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "new"], "location": "/x.lance", "mode": "ExistOk"}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "new"], "location": "/x.lance", "mode": "bogus"}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "new"], "location": "/x.lance", "mode": false}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "new"], "location": "/x.lance", "properties": {"k": 1}}') - 'transaction_id' AS lance_register_table;

-- DeclareTable: wrongly typed members.
SELECT lance_declare_table('{"id": ["te", "new"], "location": ""}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["te", "new"], "location": ["/x.lance"]}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["te", "new"], "location": "/x.lance", "properties": ["k", "v"]}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["te", "new"], "location": "/x.lance", "properties": {"k": ["v"]}}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["te", "new"], "location": "/x.lance", "vend_credentials": "true"}') - 'transaction_id' AS lance_declare_table;

-- DeclareTable with no location, no "location" property on any namespace of
-- the path and no lance_namespace.root has nowhere to put the table.
SELECT lance_declare_table('{"id": ["te", "new"]}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["te_root_table"]}') - 'transaction_id' AS lance_declare_table;
SELECT lance_create_namespace('{"id": ["te", "empty_loc"], "properties": {"location": ""}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_declare_table('{"id": ["te", "empty_loc", "new"]}') - 'transaction_id' AS lance_declare_table;

-- DescribeTable and TableExists: boolean and integer members.
SELECT lance_describe_table('{"id": ["te", "reg"], "with_table_uri": "yes"}');
SELECT lance_describe_table('{"id": ["te", "reg"], "check_declared": 1}');
SELECT lance_describe_table('{"id": ["te", "reg"], "load_detailed_metadata": {}}');
SELECT lance_describe_table('{"id": ["te", "reg"], "vend_credentials": []}');
SELECT lance_describe_table('{"id": ["te", "reg"], "version": -1}');
SELECT lance_describe_table('{"id": ["te", "reg"], "version": "1"}');
SELECT lance_describe_table('{"id": ["te", "reg"], "version": 1.5}');
SELECT lance_table_exists('{"id": ["te", "reg"], "version": -3}');

-- ListTables and ListAllTables: paging members.
SELECT lance_list_tables('{"id": ["te"], "include_declared": "false"}');
SELECT lance_list_tables('{"id": ["te"], "limit": -5}');
SELECT lance_list_tables('{"id": ["te"], "limit": 0.5}');
SELECT lance_list_tables('{"id": ["te"], "page_token": ["reg"]}');
SELECT lance_list_all_tables(NULL);
SELECT lance_list_all_tables('[]');
SELECT lance_list_all_tables('{"include_declared": 0}');
SELECT lance_list_all_tables('{"limit": -1}');
SELECT lance_list_all_tables('{"limit": "2"}');
SELECT lance_list_all_tables('{"page_token": 1}');
SELECT lance_list_all_tables('{"delimiter": ""}');
SELECT lance_list_all_tables('{"delimiter": 36}');
-- ListAllTables page tokens come from this catalog; others are refused.
SELECT lance_list_all_tables('{"page_token": "te$reg"}');
SELECT lance_list_all_tables('{"page_token": "-1"}');
SELECT lance_list_all_tables('{"page_token": "1.5"}');
SELECT lance_list_all_tables('{"page_token": "99999999999999999999"}');

-- RenameTable needs "new_table_name", a valid name.
SELECT lance_rename_table('{"id": ["te", "reg"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["te", "reg"], "new_namespace_id": ["te2"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": ""}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": ["x"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table(jsonb_build_object('id', '["te", "reg"]'::jsonb, 'new_table_name', repeat('n', 1025)));
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": "x", "new_namespace_id": "te2"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": "x", "new_namespace_id": ["te2", ""]}') - 'transaction_id' AS lance_rename_table;

-- None of the failed calls above left anything behind.
SELECT lance_list_tables('{"id": ["te"]}');
SELECT lance_list_tables('{"id": ["te2"]}');
SELECT lance_list_tables('{"id": []}');

--
-- LN001 NamespaceNotFound: the table's namespace is missing (or is a table).
--

SELECT lance_declare_table('{"id": ["te_missing", "t"], "location": "/x.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["te_missing", "t"]}') - 'transaction_id' AS lance_declare_table;
SELECT lance_register_table('{"id": ["te", "missing", "t"], "location": "/x.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te_missing", "t"], "location": "/x.lance", "mode": "Overwrite"}') - 'transaction_id' AS lance_register_table;
SELECT lance_describe_table('{"id": ["te_missing", "t"]}');
SELECT lance_table_exists('{"id": ["te_missing", "t"]}');
SELECT lance_table_exists('{"id": ["te", "reg", "t"]}');
SELECT lance_deregister_table('{"id": ["te_missing", "t"]}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_drop_table('{"id": ["te_missing", "t"]}') - 'transaction_id' AS lance_drop_table;
SELECT lance_rename_table('{"id": ["te_missing", "t"], "new_table_name": "x"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_list_tables('{"id": ["te_missing"]}');
SELECT lance_list_tables('{"id": ["te", "reg"]}');
-- RenameTable into a missing namespace, or into a table.
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": "x", "new_namespace_id": ["te_missing"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": "x", "new_namespace_id": ["te", "decl"]}') - 'transaction_id' AS lance_rename_table;

--
-- LN004 TableNotFound.
--

SELECT lance_describe_table('{"id": ["te", "missing"]}');
SELECT lance_table_exists('{"id": ["te", "missing"]}');
SELECT lance_deregister_table('{"id": ["te", "missing"]}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_drop_table('{"id": ["te", "missing"]}') - 'transaction_id' AS lance_drop_table;
SELECT lance_rename_table('{"id": ["te", "missing"], "new_table_name": "x"}') - 'transaction_id' AS lance_rename_table;
-- Names are case-sensitive.
SELECT lance_describe_table('{"id": ["te", "REG"]}');
-- A namespace is not a table.
SELECT lance_describe_table('{"id": ["te", "sub"]}');
SELECT lance_table_exists('{"id": ["te", "sub"]}');
SELECT lance_deregister_table('{"id": ["te", "sub"]}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_drop_table('{"id": ["te", "sub"]}') - 'transaction_id' AS lance_drop_table;
SELECT lance_rename_table('{"id": ["te", "sub"], "new_table_name": "x"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_namespace_exists('{"id": ["te", "sub"]}');
-- A table is gone after DeregisterTable / DropTable, and after RenameTable
-- under its old name.
SELECT lance_register_table('{"id": ["te", "gone"], "location": "/data/te/gone.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_deregister_table('{"id": ["te", "gone"]}') -> 'id' AS deregistered;
SELECT lance_deregister_table('{"id": ["te", "gone"]}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_drop_table('{"id": ["te", "gone"]}') - 'transaction_id' AS lance_drop_table;
SELECT lance_register_table('{"id": ["te", "gone"], "location": "/data/te/gone.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_drop_table('{"id": ["te", "gone"]}') -> 'id' AS dropped;
SELECT lance_describe_table('{"id": ["te", "gone"]}');
SELECT lance_register_table('{"id": ["te", "gone"], "location": "/data/te/gone.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_rename_table('{"id": ["te", "gone"], "new_table_name": "gone2"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_table_exists('{"id": ["te", "gone"]}');
SELECT lance_drop_table('{"id": ["te", "gone2"]}') -> 'id' AS dropped;
-- A version is asked for only after the table is found.
SELECT lance_describe_table('{"id": ["te", "missing"], "version": 1}');

--
-- LN005 TableAlreadyExists.
--

-- DeclareTable over a declared or a registered table.
SELECT lance_declare_table('{"id": ["te", "decl"], "location": "/data/te/decl2.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["te", "reg"], "location": "/data/te/reg2.lance"}') - 'transaction_id' AS lance_declare_table;
-- RegisterTable with mode Create (the default) over either.
SELECT lance_register_table('{"id": ["te", "decl"], "location": "/data/te/decl2.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "reg"], "location": "/data/te/reg2.lance", "mode": "Create"}') - 'transaction_id' AS lance_register_table;
-- Names are unique among namespaces and tables together: a table cannot
-- take a namespace's name, not even with mode Overwrite.
SELECT lance_declare_table('{"id": ["te", "sub"], "location": "/data/te/sub.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_register_table('{"id": ["te", "sub"], "location": "/data/te/sub.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["te", "sub"], "location": "/data/te/sub.lance", "mode": "Overwrite"}') - 'transaction_id' AS lance_register_table;
SELECT lance_namespace_exists('{"id": ["te", "sub"]}');
-- RenameTable onto a taken name: a table in the same namespace, a table in
-- the target namespace, or a namespace.
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": "decl"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": "other", "new_namespace_id": ["te2"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": "sub"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["te", "reg"], "new_table_name": "te", "new_namespace_id": []}') - 'transaction_id' AS lance_rename_table;
-- The existing tables are unchanged: same location, properties, state.
SELECT lance_describe_table('{"id": ["te", "decl"], "check_declared": true}');
SELECT lance_describe_table('{"id": ["te", "reg"], "check_declared": true}');
SELECT lance_describe_table('{"id": ["te2", "other"], "check_declared": true}');

--
-- LN011 TableVersionNotFound: DescribeTable and TableExists asked for a
-- version the table does not have.
--

-- A table with no versions recorded (declared, or registered without any).
SELECT lance_describe_table('{"id": ["te", "reg"], "version": 0}');
SELECT lance_describe_table('{"id": ["te", "reg"], "version": 1, "with_table_uri": true}');
SELECT lance_describe_table('{"id": ["te", "decl"], "version": 1}');
SELECT lance_table_exists('{"id": ["te", "reg"], "version": 1}');
SELECT lance_table_exists('{"id": ["te", "decl"], "version": 0}');
-- "version": null is no version.
SELECT lance_table_exists('{"id": ["te", "reg"], "version": null}');
-- A table with version 1 only: 1 is found, 0 and 2 are not.
SELECT lance_register_table('{"id": ["te", "versioned"], "location": "/data/te/versioned.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_create_table_version('{"id": ["te", "versioned"], "version": 1, "manifest_path": "/data/te/versioned.lance/_versions/1.manifest"}') -> 'version' -> 'version' AS created_version;
SELECT lance_describe_table('{"id": ["te", "versioned"], "version": 1}');
SELECT lance_table_exists('{"id": ["te", "versioned"], "version": 1}');
SELECT lance_describe_table('{"id": ["te", "versioned"], "version": 2}');
SELECT lance_table_exists('{"id": ["te", "versioned"], "version": 0}');

--
-- SQLSTATE: every error is LN followed by its three-digit Lance code, and
-- the DETAIL is the ErrorResponse with the same code.
--

\i test/sql/outcome.sql

-- A missing "id" is LN013 for every operation that takes one.
SELECT op, pg_temp.outcome(format('SELECT %I(%L)', op, '{}')) AS outcome
FROM (VALUES
    ('lance_create_namespace'),
    ('lance_list_namespaces'),
    ('lance_describe_namespace'),
    ('lance_drop_namespace'),
    ('lance_namespace_exists'),
    ('lance_list_tables'),
    ('lance_declare_table'),
    ('lance_register_table'),
    ('lance_describe_table'),
    ('lance_table_exists'),
    ('lance_deregister_table'),
    ('lance_rename_table'),
    ('lance_drop_table')
) AS t(op);

-- The table operations' codes.
SELECT call, pg_temp.outcome('SELECT ' || call) AS outcome
FROM (VALUES
    ($$lance_describe_table('{"id": ["te_missing", "t"]}')$$),
    ($$lance_declare_table('{"id": ["te_missing", "t"], "location": "/x"}')$$),
    ($$lance_rename_table('{"id": ["te", "reg"], "new_table_name": "x", "new_namespace_id": ["te_missing"]}')$$),
    ($$lance_describe_table('{"id": ["te", "missing"]}')$$),
    ($$lance_table_exists('{"id": ["te", "missing"]}')$$),
    ($$lance_deregister_table('{"id": ["te", "missing"]}')$$),
    ($$lance_drop_table('{"id": ["te", "missing"]}')$$),
    ($$lance_rename_table('{"id": ["te", "missing"], "new_table_name": "x"}')$$),
    ($$lance_declare_table('{"id": ["te", "decl"], "location": "/x"}')$$),
    ($$lance_register_table('{"id": ["te", "reg"], "location": "/x"}')$$),
    ($$lance_rename_table('{"id": ["te", "reg"], "new_table_name": "decl"}')$$),
    ($$lance_describe_table('{"id": ["te", "reg"], "version": 1}')$$),
    ($$lance_table_exists('{"id": ["te", "reg"], "version": 1}')$$),
    ($$lance_declare_table('{"id": ["te", "new"]}')$$),
    ($$lance_register_table('{"id": ["te", "new"]}')$$),
    ($$lance_rename_table('{"id": ["te", "reg"]}')$$),
    ($$lance_list_all_tables('{"page_token": "x"}')$$),
    ($$lance_drop_table('{"id": []}')$$),
    ($$lance_table_exists('{"id": ["te", "reg"]}')$$)
) AS t(call);

-- Clean up.
SELECT lance_drop_namespace('{"id": ["te"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["te2"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_list_all_tables('{}');
RESET lance_namespace.root;
RESET lance_namespace.local_roots;
