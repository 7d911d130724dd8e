--
-- DROP EXTENSION lance_namespace while the catalog holds namespaces or
-- tables is refused (LN003), unless an administrator allows it; an empty
-- catalog drops as any extension does.  Runs last: it drops the extension.
--
SET lance_namespace.local_roots = '';
SELECT count(*) > 0 AS catalog_holds_objects FROM lance_catalog.object WHERE id <> 0;
DROP EXTENSION lance_namespace;
DROP EXTENSION lance_namespace CASCADE;
-- Dropping another extension is not affected.
CREATE EXTENSION cube;
DROP EXTENSION cube;
-- Nothing was dropped.
SELECT extname FROM pg_catalog.pg_extension WHERE extname = 'lance_namespace';
SELECT count(*) > 0 AS catalog_holds_objects FROM lance_catalog.object WHERE id <> 0;
-- An administrator says so explicitly, in a new session, before the
-- library is loaded: the setting still applies.
\c
SET lance_namespace.allow_drop_extension = on;
DROP EXTENSION lance_namespace;
SELECT count(*) AS extensions FROM pg_catalog.pg_extension WHERE extname = 'lance_namespace';
-- An empty catalog drops without the setting.
RESET lance_namespace.allow_drop_extension;
CREATE EXTENSION lance_namespace;
DROP EXTENSION lance_namespace;
CREATE EXTENSION lance_namespace;
-- Nor through the statements that drop it with something else.
SELECT lance_create_namespace('{"id": ["kept"]}') - 'transaction_id' AS created;
DROP SCHEMA public CASCADE;
DROP OWNED BY CURRENT_USER CASCADE;
SELECT extname FROM pg_catalog.pg_extension WHERE extname = 'lance_namespace';
-- Without CASCADE, DROP SCHEMA fails on its own, as it would anyway.
DROP SCHEMA public;
SELECT lance_drop_namespace('{"id": ["kept"]}') - 'transaction_id' AS dropped;
