--
-- transaction: the operations are ordinary SQL writes, so they commit and
-- roll back with the caller's transaction (and savepoints).
--

-- No root location and no managed folders, whatever the server's configuration.
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '';

-- The catalog's row count before anything below, to prove "no trace".
SELECT count(*) AS objects_before FROM lance_catalog.object \gset

--
-- A rolled back transaction leaves no trace.
--

BEGIN;
SELECT lance_create_namespace('{"id": ["tx_a"], "properties": {"k": "v"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_create_namespace('{"id": ["tx_a", "child"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_declare_table('{"id": ["tx_a", "t"], "location": "/data/tx_a/t.lance"}') - 'transaction_id' AS lance_declare_table;
SELECT lance_register_table('{"id": ["tx_a", "child", "r"], "location": "/data/tx_a/r.lance"}') - 'transaction_id' AS lance_register_table;
-- Inside the transaction all of it is visible.
SELECT lance_list_namespaces('{"id": ["tx_a"]}');
SELECT lance_list_tables('{"id": ["tx_a"]}');
SELECT lance_list_all_tables('{}');
ROLLBACK;
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_list_all_tables('{}');
SELECT lance_namespace_exists('{"id": ["tx_a"]}');
SELECT count(*) = :objects_before AS no_trace FROM lance_catalog.object;

-- The same work committed stays.
BEGIN;
SELECT lance_create_namespace('{"id": ["tx_a"], "properties": {"k": "v"}}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_declare_table('{"id": ["tx_a", "t"], "location": "/data/tx_a/t.lance"}') - 'transaction_id' AS lance_declare_table;
COMMIT;
SELECT lance_describe_table('{"id": ["tx_a", "t"], "check_declared": true}');

--
-- A failed call inside a transaction: the transaction aborts, and rolling
-- it back leaves the catalog as it was before the transaction.
--

BEGIN;
SELECT lance_create_namespace('{"id": ["tx_b"]}') - 'transaction_id' AS lance_create_namespace;
SELECT lance_declare_table('{"id": ["tx_a", "t"], "location": "/data/tx_a/other.lance"}') - 'transaction_id' AS lance_declare_table;
-- Nothing runs until the transaction ends.
SELECT lance_list_namespaces('{"id": []}');
ROLLBACK;
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_describe_table('{"id": ["tx_a", "t"]}');

-- A failed call after a savepoint: rolling back to the savepoint undoes
-- only the failure; the work before it commits.
BEGIN;
SELECT lance_create_namespace('{"id": ["tx_b"]}') - 'transaction_id' AS lance_create_namespace;
SAVEPOINT before_error;
SELECT lance_drop_namespace('{"id": ["tx_a"]}') - 'transaction_id' AS lance_drop_namespace;
ROLLBACK TO SAVEPOINT before_error;
SELECT lance_register_table('{"id": ["tx_b", "r"], "location": "/data/tx_b/r.lance"}') - 'transaction_id' AS lance_register_table;
COMMIT;
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_list_tables('{"id": ["tx_a"]}');
SELECT lance_list_tables('{"id": ["tx_b"]}');

-- In PL/pgSQL an exception block is a subtransaction: catching the error
-- also undoes the block's earlier calls.
DO $$
BEGIN
    PERFORM lance_create_namespace('{"id": ["tx_c"]}');
    PERFORM lance_create_namespace('{"id": ["tx_c"]}');
EXCEPTION WHEN SQLSTATE 'LN002' THEN
    RAISE NOTICE 'caught %: %', SQLSTATE, SQLERRM;
END
$$;
SELECT lance_list_namespaces('{"id": []}');

--
-- A savepoint rolled back undoes a declare.
--

BEGIN;
SAVEPOINT s1;
SELECT lance_declare_table('{"id": ["tx_a", "d"], "location": "/data/tx_a/d1.lance", "properties": {"try": "1"}}') - 'transaction_id' AS lance_declare_table;
SELECT lance_list_tables('{"id": ["tx_a"]}');
ROLLBACK TO SAVEPOINT s1;
SELECT lance_list_tables('{"id": ["tx_a"]}');
-- The name is free again within the same transaction.
SELECT lance_declare_table('{"id": ["tx_a", "d"], "location": "/data/tx_a/d2.lance", "properties": {"try": "2"}}') - 'transaction_id' AS lance_declare_table;
COMMIT;
SELECT lance_describe_table('{"id": ["tx_a", "d"], "check_declared": true}');

-- A derived location under a rolled back savepoint: the declare after it
-- gets a location of its own.
SET lance_namespace.root = '/srv/tx';
BEGIN;
SAVEPOINT s2;
SELECT lance_declare_table('{"id": ["tx_a", "derived"]}') ->> 'location' AS rolled_back_location \gset
ROLLBACK TO SAVEPOINT s2;
SELECT lance_declare_table('{"id": ["tx_a", "derived"]}') ->> 'location' AS kept_location \gset
COMMIT;
SELECT :'rolled_back_location' ~ '^/srv/tx/tx_a/derived_[0-9a-f]{8}\.lance$' AS first_ok,
       :'kept_location' ~ '^/srv/tx/tx_a/derived_[0-9a-f]{8}\.lance$' AS second_ok,
       :'rolled_back_location' <> :'kept_location' AS differ;
SELECT lance_describe_table('{"id": ["tx_a", "derived"]}') ->> 'location' = :'kept_location' AS kept;
SET lance_namespace.root = '';

--
-- Rolled back changes to existing entries restore them exactly.
--

-- DropNamespace Cascade.
BEGIN;
SELECT lance_drop_namespace('{"id": ["tx_a"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_list_namespaces('{"id": []}');
ROLLBACK;
SELECT lance_describe_namespace('{"id": ["tx_a"]}');
SELECT lance_list_tables('{"id": ["tx_a"]}');
SELECT lance_describe_table('{"id": ["tx_a", "t"], "check_declared": true}');

-- RenameTable across namespaces.
BEGIN;
SELECT lance_rename_table('{"id": ["tx_a", "t"], "new_table_name": "t2", "new_namespace_id": ["tx_b"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_list_tables('{"id": ["tx_b"]}');
ROLLBACK;
SELECT lance_list_tables('{"id": ["tx_a"]}');
SELECT lance_list_tables('{"id": ["tx_b"]}');

-- RegisterTable Overwrite, DeregisterTable and DropTable.
BEGIN;
SELECT lance_register_table('{"id": ["tx_a", "t"], "location": "/data/tx_a/t_v2.lance", "mode": "Overwrite", "properties": {"v": "2"}}') - 'transaction_id' AS lance_register_table;
SELECT lance_deregister_table('{"id": ["tx_b", "r"]}') - 'transaction_id' AS lance_deregister_table;
SELECT lance_drop_table('{"id": ["tx_a", "d"]}') - 'transaction_id' AS lance_drop_table;
ROLLBACK;
SELECT lance_describe_table('{"id": ["tx_a", "t"], "check_declared": true}');
SELECT lance_describe_table('{"id": ["tx_b", "r"], "check_declared": true}');
SELECT lance_describe_table('{"id": ["tx_a", "d"], "check_declared": true}');

-- CreateNamespace Overwrite.
SELECT lance_create_namespace('{"id": ["tx_e"], "properties": {"v": "1"}}') - 'transaction_id' AS lance_create_namespace;
BEGIN;
SELECT lance_create_namespace('{"id": ["tx_e"], "mode": "Overwrite", "properties": {"v": "2"}}') - 'transaction_id' AS lance_create_namespace;
ROLLBACK;
SELECT lance_describe_namespace('{"id": ["tx_e"]}');

--
-- SET LOCAL lance_namespace.root lasts for one transaction.
--

BEGIN;
SET LOCAL lance_namespace.root = '/srv/local';
SELECT r->>'location' ~ '^/srv/local/tx_e/t_[0-9a-f]{8}\.lance$' AS location_ok
FROM lance_declare_table('{"id": ["tx_e", "t"]}') AS r;
COMMIT;
SELECT lance_describe_table('{"id": ["tx_e", "t"]}') ->> 'location' ~ '^/srv/local/tx_e/t_[0-9a-f]{8}\.lance$' AS kept_location;
SELECT lance_declare_table('{"id": ["tx_e", "t2"]}') - 'transaction_id' AS lance_declare_table;

-- Clean up.
SELECT lance_drop_namespace('{"id": ["tx_a"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["tx_b"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT lance_drop_namespace('{"id": ["tx_e"], "behavior": "Cascade"}') - 'transaction_id' AS lance_drop_namespace;
SELECT count(*) = :objects_before AS no_trace FROM lance_catalog.object;
RESET lance_namespace.root;
RESET lance_namespace.local_roots;
