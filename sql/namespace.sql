--
-- namespace: CreateNamespace, ListNamespaces, DescribeNamespace,
-- DropNamespace and NamespaceExists on their success paths.
-- The error paths are in namespace_errors.
--

-- No managed folders, whatever the server's configuration: the table
-- answers below then say managed_versioning false.
SET lance_namespace.local_roots = '';

-- The root namespace ([]) always exists and has no properties.
SELECT lance_namespace_exists('{"id": []}');
SELECT lance_describe_namespace('{"id": []}');
-- Creating it with ExistOk therefore succeeds (Create and Overwrite: LN002).
SELECT lance_create_namespace('{"id": [], "mode": "ExistOk"}') - 'transaction_id' AS lance_create_namespace;

-- CreateNamespace (mode absent = Create) answers the properties it stored.
SELECT lance_create_namespace('{"id": ["ns_a"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_b"], "mode": "Create", "properties": {"owner": "alice", "team": "data"}}') - 'transaction_id' AS lance_create_namespace;

-- Child namespaces, several levels deep.
SELECT lance_create_namespace('{"id": ["ns_a", "child"], "properties": {"k": "v"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_a", "child", "grandchild"]}') - 'transaction_id' AS lance_create_namespace;
-- The same name may be used under different parents.
SELECT lance_create_namespace('{"id": ["ns_b", "child"]}') - 'transaction_id' AS lance_create_namespace;

-- NamespaceExists answers an empty object for any existing namespace.
SELECT lance_namespace_exists('{"id": ["ns_a"]}');
SELECT lance_namespace_exists('{"id": ["ns_a", "child", "grandchild"]}');
SELECT lance_namespace_exists('{"id": ["ns_b", "child"]}');

-- DescribeNamespace returns the stored properties, {} when there are none.
SELECT lance_describe_namespace('{"id": ["ns_a"]}');
SELECT lance_describe_namespace('{"id": ["ns_b"]}');
SELECT lance_describe_namespace('{"id": ["ns_a", "child"]}');

-- ListNamespaces: direct children only, bare names, in byte order, no
-- page_token when everything fits.
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_list_namespaces('{"id": ["ns_a"]}');
SELECT lance_list_namespaces('{"id": ["ns_a", "child"]}');
SELECT lance_list_namespaces('{"id": ["ns_a", "child", "grandchild"]}');

-- ListNamespaces lists namespaces only, ListTables tables only.
SELECT lance_declare_table('{"id": ["ns_a", "tbl"], "location": "/data/ns_a/tbl.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_list_namespaces('{"id": ["ns_a"]}');
SELECT lance_list_tables('{"id": ["ns_a"]}');

-- Names are case-sensitive and may hold any character; they sort by bytes.
SELECT lance_create_namespace('{"id": ["ns_c"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_c", "b"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_c", "B"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_c", "with space"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_c", "a/b$c"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_c", "q\"uote\\"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_c", "été"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_list_namespaces('{"id": ["ns_c"]}');
SELECT lance_describe_namespace('{"id": ["ns_c", "a/b$c"]}');
-- A name of exactly 1024 bytes is accepted (1025 is not: namespace_errors).
SELECT lance_create_namespace(jsonb_build_object('id', jsonb_build_array('ns_c', repeat('x', 1024)))) - 'transaction_id' AS lance_create_namespace;
SELECT lance_namespace_exists(jsonb_build_object('id', jsonb_build_array('ns_c', repeat('x', 1024))));
SELECT lance_create_namespace(jsonb_build_object('id', jsonb_build_array('ns_c', repeat('é', 512)))) - 'transaction_id' AS lance_create_namespace;
SELECT lance_namespace_exists(jsonb_build_object('id', jsonb_build_array('ns_c', repeat('é', 512))));
SELECT lance_drop_namespace(jsonb_build_object('id', jsonb_build_array('ns_c', repeat('x', 1024)))) - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace(jsonb_build_object('id', jsonb_build_array('ns_c', repeat('é', 512)))) - 'transaction_id' AS lance_drop_namespace;

-- Property keys and values are arbitrary strings.
SELECT lance_create_namespace('{"id": ["ns_c", "props"], "properties": {"": "empty key", "k\"": "v\\", "x": ""}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ns_c", "props"]}');

-- Unknown request members (and members other operations know) are ignored.
SELECT lance_describe_namespace('{"id": ["ns_b"], "identity": {"api_key": "k"}, "context": {"a": "b"}, "limit": "not checked here", "extra": [1, 2]}');

--
-- CreateNamespace modes.
--

-- ExistOk on an existing namespace succeeds and keeps (and answers) the
-- existing properties; the request's properties are not applied.
SELECT lance_create_namespace('{"id": ["ns_b"], "mode": "ExistOk", "properties": {"owner": "bob"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ns_b"]}');
-- ExistOk keeps the existing namespace's children too.
SELECT lance_create_namespace('{"id": ["ns_a"], "mode": "ExistOk"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_list_namespaces('{"id": ["ns_a"]}');
-- ExistOk on a missing namespace creates it with the given properties.
SELECT lance_create_namespace('{"id": ["ns_d"], "mode": "ExistOk", "properties": {"p": "1"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ns_d"]}');

-- Overwrite on an existing, empty namespace replaces its properties.
SELECT lance_create_namespace('{"id": ["ns_d"], "mode": "Overwrite", "properties": {"p": "2", "q": "3"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ns_d"]}');
-- Overwrite without properties leaves none.
SELECT lance_create_namespace('{"id": ["ns_d"], "mode": "Overwrite"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ns_d"]}');
-- Overwrite on a missing namespace creates it.
SELECT lance_create_namespace('{"id": ["ns_e"], "mode": "Overwrite", "properties": {"fresh": "yes"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ns_e"]}');
-- (Overwrite of a non-empty namespace is LN003: namespace_errors.)

-- Enum values are case-insensitive, in PascalCase or snake_case.
SELECT lance_create_namespace('{"id": ["ns_b"], "mode": "ExistOk"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_b"], "mode": "exist_ok"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_b"], "mode": "EXISTOK"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_b"], "mode": "existok"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_b"], "mode": "EXIST_OK"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_e"], "mode": "overwrite", "properties": {"v": "1"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_e"], "mode": "OVERWRITE", "properties": {"v": "2"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_f"], "mode": "create"}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["ns_g"], "mode": "CREATE"}') - 'transaction_id' AS lance_create_namespace;
-- A JSON null is the same as an absent member (mode Create).
SELECT lance_create_namespace('{"id": ["ns_h"], "mode": null, "properties": null}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_describe_namespace('{"id": ["ns_e"]}');

--
-- DropNamespace: mode Fail (default) | Skip x behavior Restrict (default) | Cascade.
-- Every drop that removes a namespace answers its properties.
--

-- Fail + Restrict (both defaults) on an empty namespace.
SELECT lance_drop_namespace('{"id": ["ns_f"]}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ns_g"], "mode": "Fail", "behavior": "Restrict"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ns_d"], "mode": "fail", "behavior": "restrict"}') - 'transaction_id' AS lance_drop_namespace;
-- Skip + Restrict on an empty namespace drops it like Fail does.
SELECT lance_drop_namespace('{"id": ["ns_e"], "mode": "Skip", "behavior": "Restrict"}') - 'transaction_id' AS lance_drop_namespace;
-- Skip on a missing namespace succeeds with an empty answer, with either behavior.
SELECT lance_drop_namespace('{"id": ["ns_e"], "mode": "Skip"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ns_e"], "mode": "SKIP", "behavior": "Restrict"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ns_e"], "mode": "skip", "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
-- ... also when the parent is missing.
SELECT lance_drop_namespace('{"id": ["no_such_parent", "ns_e"], "mode": "Skip"}') - 'transaction_id' AS lance_drop_namespace;
-- Skip + Cascade on an existing, non-empty namespace drops its subtree.
SELECT lance_drop_namespace('{"id": ["ns_b"], "mode": "Skip", "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_list_namespaces('{"id": []}');
-- Fail + Cascade on a namespace holding namespaces and a table drops
-- everything below it.
SELECT lance_drop_namespace('{"id": ["ns_a"], "behavior": "CASCADE"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_list_namespaces('{"id": []}');
-- Created again, it is empty: its children and tables are really gone.
SELECT lance_create_namespace('{"id": ["ns_a"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_list_namespaces('{"id": ["ns_a"]}');
SELECT lance_list_tables('{"id": ["ns_a"]}');
-- Cascade on an empty namespace.
SELECT lance_drop_namespace('{"id": ["ns_a"], "behavior": "cascade"}') - 'transaction_id' AS lance_drop_namespace;
-- Restrict works once the children are gone (bottom-up drops).
SELECT lance_drop_namespace('{"id": ["ns_c", "b"]}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_list_namespaces('{"id": ["ns_c"]}');

-- Clean up.
SELECT lance_drop_namespace('{"id": ["ns_c"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["ns_h"]}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_list_namespaces('{"id": []}');
RESET lance_namespace.local_roots;
