/* lance_namespace 0.5.0 -> 0.6.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.6.0'" to load this file. \quit

-- ListAllTables of a role that may read some namespaces only: each such
-- namespace's tables in id order, merged (0.6.0).
CREATE INDEX object_table_parent_id_idx
    ON lance_catalog.object (parent_id, id) WHERE kind = 'table';
CREATE INDEX object_table_with_data_parent_id_idx
    ON lance_catalog.object (parent_id, id) WHERE kind = 'table' AND NOT declared;
