--
-- table: DeclareTable, RegisterTable, DescribeTable, TableExists,
-- ListTables, ListAllTables, RenameTable, DeregisterTable and DropTable on
-- their success paths.  The error paths are in table_errors.
--
-- A derived table location ends in a random suffix, so it is never printed:
-- it is matched against a pattern instead.  Explicit locations are printed.
--

-- Start with no root location and no managed folders, whatever the
-- server's configuration (managed_versioning is then false everywhere).
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '';

SELECT lance_create_namespace('{"id": ["tb"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["tb", "sub"]}') - 'transaction_id' AS lance_create_namespace;

--
-- DeclareTable with an explicit location.
--

-- The answer carries the location, the properties, (empty) storage options
-- and managed_versioning.
SELECT lance_declare_table('{"id": ["tb", "decl"], "location": "/data/tb/decl.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["tb", "decl_props"], "location": "s3://bucket/tb/decl_props.lance", "properties": {"owner": "alice"}, "vend_credentials": true}') - 'transaction_id' AS lance_declare_table;
-- A table directly under the root namespace.
SELECT lance_declare_table('{"id": ["tb_top"], "location": "/data/tb_top.lance", "vend_credentials": false}') - 'transaction_id' AS lance_declare_table;

-- A declared table exists.
SELECT lance_table_exists('{"id": ["tb", "decl"]}');
SELECT lance_table_exists('{"id": ["tb_top"]}');

--
-- DescribeTable and its flags.
--

-- No flags: location, properties, storage_options, managed_versioning.
SELECT lance_describe_table('{"id": ["tb", "decl"]}');
SELECT lance_describe_table('{"id": ["tb", "decl_props"]}');
-- Flags given as false add nothing.
SELECT lance_describe_table('{"id": ["tb", "decl"], "with_table_uri": false, "check_declared": false, "load_detailed_metadata": false, "vend_credentials": false}');
-- check_declared: is_only_declared is true for a declared table.
SELECT lance_describe_table('{"id": ["tb", "decl"], "check_declared": true}');
-- with_table_uri: an absolute path becomes a file:// URI (percent-encoded);
-- an object store URI stays as it is.
SELECT lance_describe_table('{"id": ["tb", "decl"], "with_table_uri": true}');
SELECT lance_describe_table('{"id": ["tb", "decl_props"], "with_table_uri": true}');
SELECT lance_declare_table('{"id": ["tb", "spaced"], "location": "/data/my tables/t#1.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_describe_table('{"id": ["tb", "spaced"], "with_table_uri": true}');
-- load_detailed_metadata: the table's name and namespace (the catalog never
-- opens the dataset, so no schema, version or stats).
SELECT lance_describe_table('{"id": ["tb", "decl"], "load_detailed_metadata": true}');
SELECT lance_describe_table('{"id": ["tb_top"], "load_detailed_metadata": true}');
-- All flags together.
SELECT lance_describe_table('{"id": ["tb", "decl_props"], "with_table_uri": true, "check_declared": true, "load_detailed_metadata": true}');

--
-- DeclareTable deriving the location.
--

-- From the "location" property of the table's own namespace.
SELECT lance_create_namespace('{"id": ["a"], "properties": {"location": "/data/a"}}') - 'transaction_id' AS lance_create_namespace;
SELECT r->>'location' ~ '^/data/a/t_[0-9a-f]{8}\.lance$' AS location_ok,
       r - 'location' - 'transaction_id' AS rest
FROM lance_declare_table('{"id": ["a", "t"]}') AS r;
-- From the closest ancestor namespace that has one: one folder per
-- namespace below it.
SELECT lance_create_namespace('{"id": ["a", "b"]}') - 'transaction_id' AS lance_create_namespace;
SELECT r->>'location' ~ '^/data/a/b/t_[0-9a-f]{8}\.lance$' AS location_ok,
       r - 'location' - 'transaction_id' AS rest
FROM lance_declare_table('{"id": ["a", "b", "t"], "properties": {"p": "1"}}') AS r;
SELECT lance_create_namespace('{"id": ["a", "b", "c"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["a", "b", "c", "d"]}') - 'transaction_id' AS lance_create_namespace;
SELECT r->>'location' ~ '^/data/a/b/c/d/t_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["a", "b", "c", "d", "t"]}') AS r;
-- A closer namespace's location wins; its trailing slashes are dropped.
SELECT lance_create_namespace('{"id": ["a", "b", "s3"], "properties": {"location": "s3://bucket/lake//"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["a", "b", "s3", "x"]}') - 'transaction_id' AS lance_create_namespace;
SELECT r->>'location' ~ '^s3://bucket/lake/t_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["a", "b", "s3", "t"]}') AS r;
SELECT r->>'location' ~ '^s3://bucket/lake/x/t_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["a", "b", "s3", "x", "t"]}') AS r;
-- An empty "location" property does not count.
SELECT lance_create_namespace('{"id": ["a", "empty"], "properties": {"location": ""}}') - 'transaction_id' AS lance_create_namespace;
SELECT r->>'location' ~ '^/data/a/empty/t_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["a", "empty", "t"]}') AS r;

-- DescribeTable answers the location DeclareTable chose.
SELECT lance_declare_table('{"id": ["a", "same"]}') ->> 'location' AS declared_location \gset
SELECT lance_describe_table('{"id": ["a", "same"]}') ->> 'location' = :'declared_location' AS same_location;

-- The suffix is random: declaring, dropping and declaring the same table
-- again gives another location, so the old table's files are never reused.
SELECT lance_declare_table('{"id": ["a", "again"]}') ->> 'location' AS first_location \gset
SELECT lance_drop_table('{"id": ["a", "again"]}') ->> 'location' = :'first_location' AS drop_answers_location;
SELECT lance_declare_table('{"id": ["a", "again"]}') ->> 'location' AS second_location \gset
SELECT :'first_location' ~ '^/data/a/again_[0-9a-f]{8}\.lance$' AS first_ok,
       :'second_location' ~ '^/data/a/again_[0-9a-f]{8}\.lance$' AS second_ok,
       :'first_location' <> :'second_location' AS differ;

-- An explicit location wins over a derived one.
SELECT lance_declare_table('{"id": ["a", "explicit"], "location": "/elsewhere/explicit.lance"}') - 'transaction_id' AS lance_declare_table;

-- From the lance_namespace.root setting when no namespace has a location.
SET lance_namespace.root = '/srv/lance';
SELECT r->>'location' ~ '^/srv/lance/tb/sub/t_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tb", "sub", "t"]}') AS r;
SELECT r->>'location' ~ '^/srv/lance/tb_root_t_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tb_root_t"]}') AS r;
SET lance_namespace.root = 's3://bucket/root/';
SELECT r->>'location' ~ '^s3://bucket/root/tb/t_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tb", "t"]}') AS r;
-- A namespace "location" property still wins over the setting.
SELECT r->>'location' ~ '^/data/a/b/t2_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["a", "b", "t2"]}') AS r;

-- Names become path segments: everything but letters, digits, '-', '_' and
-- '.' is percent-encoded, so no name can add a folder, and no location is
-- derived through a name made only of dots, so none can climb out of one.
SET lance_namespace.root = '/srv/lance';
SELECT lance_create_namespace('{"id": ["tb_enc"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["tb_enc", "a/b"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["tb_enc", ".."]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["tb_enc", "."]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["tb_enc", "with space"]}') - 'transaction_id' AS lance_create_namespace;
SELECT r->>'location' ~ '^/srv/lance/tb_enc/a%2Fb/t%2Fx_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tb_enc", "a/b", "t/x"]}') AS r;
-- A name made only of dots has no encoding that URI parsers keep ("%2E%2E"
-- reads as ".."), so no location is derived through it; an explicit one works.
SELECT lance_declare_table('{"id": ["tb_enc", "..", "t"]}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["tb_enc", ".", ".."]}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["tb_enc", "..", ".."], "location": "/srv/explicit/dots"}') ->> 'location' AS location;
-- Nor through a name with "." or ".." between its '/'s: where a location is
-- read with its escapes decoded (S3, a file URI), "..%2F.." is "../.." and
-- climbs out of the namespace's folder.  Dots elsewhere in such a name are kept.
SELECT lance_declare_table('{"id": ["tb_enc", "a/b", "../.."]}') - 'transaction_id' AS lance_declare_table;
SELECT lance_declare_table('{"id": ["tb_enc", "a/b", "x/./y"]}') - 'transaction_id' AS lance_declare_table;
SELECT r->>'location' ~ '^/srv/lance/tb_enc/a%2Fb/\.\.x%2F\.y_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tb_enc", "a/b", "..x/.y"]}') AS r;
SELECT r->>'location' ~ '^/srv/lance/tb_enc/with%20space/my%20table_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tb_enc", "with space", "my table"]}') AS r;
-- Dots inside a name are kept; '%', '$', '~', '\' and non-ASCII bytes are encoded.
SELECT r->>'location' ~ '^/srv/lance/tb_enc/v1\.2-x_y_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tb_enc", "v1.2-x_y"]}') AS r;
SELECT r->>'location' ~ '^/srv/lance/tb_enc/50%25%24%7E%5C%C3%A9_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tb_enc", "50%$~\\é"]}') AS r;
SET lance_namespace.root = '';

--
-- RegisterTable.
--

-- Create (the default): the answer echoes location and properties.
SELECT lance_register_table('{"id": ["tb", "reg"], "location": "/data/tb/reg.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["tb", "reg_props"], "location": "gs://bucket/reg_props.lance", "mode": "Create", "properties": {"k": "v"}}') - 'transaction_id' AS lance_register_table;
SELECT lance_register_table('{"id": ["tb", "reg_lower"], "location": "/data/tb/reg_lower.lance", "mode": "create"}') - 'transaction_id' AS lance_register_table;
-- A registered table exists and is not only declared.
SELECT lance_table_exists('{"id": ["tb", "reg"]}');
SELECT lance_describe_table('{"id": ["tb", "reg"], "check_declared": true}');
SELECT lance_describe_table('{"id": ["tb", "reg_props"], "with_table_uri": true, "check_declared": true, "load_detailed_metadata": true}');

-- Overwrite replaces an existing registration's location and properties.
SELECT lance_register_table('{"id": ["tb", "reg_props"], "location": "gs://bucket/reg_props_v2.lance", "mode": "Overwrite", "properties": {"k2": "v2"}}') - 'transaction_id' AS lance_register_table;
SELECT lance_describe_table('{"id": ["tb", "reg_props"], "check_declared": true}');
SELECT lance_register_table('{"id": ["tb", "reg_props"], "location": "gs://bucket/reg_props_v3.lance", "mode": "overwrite"}') - 'transaction_id' AS lance_register_table;
SELECT lance_describe_table('{"id": ["tb", "reg_props"]}');
-- Overwrite of a declared table registers it: it is no longer only declared.
SELECT lance_describe_table('{"id": ["tb", "decl_props"], "check_declared": true}');
SELECT lance_register_table('{"id": ["tb", "decl_props"], "location": "s3://bucket/tb/decl_props.lance", "mode": "OVERWRITE", "properties": {"owner": "alice"}}') - 'transaction_id' AS lance_register_table;
SELECT lance_describe_table('{"id": ["tb", "decl_props"], "check_declared": true}');
-- Overwrite of a missing table creates it.
SELECT lance_register_table('{"id": ["tb", "reg_new"], "location": "/data/tb/reg_new.lance", "mode": "Overwrite"}') - 'transaction_id' AS lance_register_table;
SELECT lance_describe_table('{"id": ["tb", "reg_new"], "check_declared": true}');

--
-- ListTables and ListAllTables.
--

-- ListTables: the namespace's direct tables by bare name, in byte order;
-- declared tables are included unless include_declared is false.
SELECT lance_list_tables('{"id": ["tb"]}');
SELECT lance_list_tables('{"id": ["tb"], "include_declared": true}');
SELECT lance_list_tables('{"id": ["tb"], "include_declared": false}');
SELECT lance_list_tables('{"id": ["tb", "sub"]}');
SELECT lance_list_tables('{"id": ["tb", "sub"], "include_declared": false}');

-- ListAllTables: every table of the catalog by full id in string form, "$"
-- by default or the given delimiter.
SELECT jsonb_array_elements_text(lance_list_all_tables('{}') -> 'tables') AS tbl ORDER BY 1;
SELECT jsonb_array_elements_text(lance_list_all_tables('{"include_declared": false, "delimiter": "::"}') -> 'tables') AS tbl ORDER BY 1;
SELECT jsonb_array_elements_text(lance_list_all_tables('{"include_declared": false, "delimiter": "."}') -> 'tables') AS tbl ORDER BY 1;

--
-- RenameTable: the location, properties and declared state go along.
--

-- Within the namespace.
SELECT lance_rename_table('{"id": ["tb", "reg"], "new_table_name": "reg_renamed"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_describe_table('{"id": ["tb", "reg_renamed"], "check_declared": true}');
SELECT lance_list_tables('{"id": ["tb"], "include_declared": false}');
-- Into another namespace.
SELECT lance_rename_table('{"id": ["tb", "reg_renamed"], "new_table_name": "moved", "new_namespace_id": ["tb", "sub"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_describe_table('{"id": ["tb", "sub", "moved"], "check_declared": true, "load_detailed_metadata": true}');
SELECT lance_list_tables('{"id": ["tb", "sub"], "include_declared": false}');
-- A declared table stays declared, and keeps its location.
SELECT lance_rename_table('{"id": ["tb", "decl"], "new_table_name": "decl", "new_namespace_id": ["tb", "sub"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_describe_table('{"id": ["tb", "sub", "decl"], "check_declared": true}');
-- Into the root namespace, and back with the same name.
SELECT lance_rename_table('{"id": ["tb", "sub", "moved"], "new_table_name": "tb_moved_top", "new_namespace_id": []}') - 'transaction_id' AS lance_rename_table;
SELECT lance_describe_table('{"id": ["tb_moved_top"], "load_detailed_metadata": true}');
SELECT lance_rename_table('{"id": ["tb_moved_top"], "new_table_name": "reg", "new_namespace_id": ["tb"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_describe_table('{"id": ["tb", "reg"]}');
-- A derived location does not change with the name either.
SELECT lance_describe_table('{"id": ["a", "same"]}') ->> 'location' AS before_rename \gset
SELECT lance_rename_table('{"id": ["a", "same"], "new_table_name": "renamed", "new_namespace_id": ["tb"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_describe_table('{"id": ["tb", "renamed"]}') ->> 'location' = :'before_rename' AS location_kept;

--
-- DeregisterTable and DropTable answer the id, location and properties of
-- the entry they removed.
--

SELECT lance_deregister_table('{"id": ["tb", "reg_props"]}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_deregister_table('{"id": ["tb", "sub", "decl"]}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_drop_table('{"id": ["tb", "reg_lower"]}') - 'transaction_id' AS lance_drop_table;
SELECT lance_drop_table('{"id": ["tb_top"]}') - 'transaction_id' AS lance_drop_table;
SELECT r->>'location' ~ '^/data/a/b/t_[0-9a-f]{8}\.lance$' AS location_ok,
       r - 'location' - 'transaction_id' AS rest
FROM lance_drop_table('{"id": ["a", "b", "t"]}') AS r;
SELECT lance_list_tables('{"id": ["tb"]}');
SELECT lance_list_tables('{"id": ["tb", "sub"]}');
-- The data stays: the same location can be registered again.
SELECT lance_register_table('{"id": ["tb", "reg_props"], "location": "gs://bucket/reg_props_v3.lance"}') - 'transaction_id' AS lance_register_table;
SELECT lance_describe_table('{"id": ["tb", "reg_props"], "check_declared": true}');

-- Clean up.
SELECT lance_drop_namespace('{"id": ["tb"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["tb_enc"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["a"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_table('{"id": ["tb_root_t"]}') -> 'id' AS dropped;
SELECT lance_list_all_tables('{}');
SELECT lance_list_namespaces('{"id": []}');
RESET lance_namespace.root;
RESET lance_namespace.local_roots;
