/* lance_namespace 0.1.0 -> 0.2.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.2.0'" to load this file. \quit

-- Every operation of the spec has its SQL function now: those not served
-- answer LN000 with the reason, as they do through REST.
CREATE FUNCTION lance_alter_table_backfill_columns(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_get_table_stats(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_insert_into_table(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_merge_insert_into_table(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_update_table(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_delete_from_table(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_query_table(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_count_table_rows(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_create_table(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_explain_table_query_plan(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_analyze_table_query_plan(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_refresh_materialized_view(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_create_materialized_view(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;

-- The operation registry: every operation of the spec, its SQL function,
-- its REST route, whether it changes the catalog, the privilege it needs,
-- and for those not served, why.
CREATE FUNCTION lance_operations(
    OUT operation_id text, OUT sql_function text, OUT http_method text, OUT http_path text,
    OUT changes_catalog boolean, OUT privilege text, OUT served boolean, OUT not_served text)
RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
