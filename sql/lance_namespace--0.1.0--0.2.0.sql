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
-- for those not served why, and the request members it reads.
CREATE FUNCTION lance_operations(
    OUT operation_id text, OUT sql_function text, OUT http_method text, OUT http_path text,
    OUT changes_catalog boolean, OUT privilege text, OUT served boolean, OUT not_served text,
    OUT request_members text[])
RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;

-- lance_changes(): nothing after the largest number (no bigint overflow), and
-- a standby refuses with LN017 rather than return entries out of commit order.
CREATE OR REPLACE FUNCTION lance_changes(after bigint DEFAULT 0, max_entries integer DEFAULT 1000)
RETURNS SETOF lance_catalog.change
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    entry    lance_catalog.change;
    earliest bigint;
    expected bigint;
    returned integer := 0;
BEGIN
    -- A standby cannot see the locks of the primary's writers in flight, so
    -- it cannot tell a gap that will fill from one that will not.
    IF pg_catalog.pg_is_in_recovery() THEN
        RAISE EXCEPTION 'lance_changes() cannot run on a standby: read the change feed from the primary'
            USING ERRCODE = 'LN017',
                  DETAIL = '{"code":17,"error":"lance_changes() cannot run on a standby: read the change feed from the primary"}';
    END IF;
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'lance_changes() must run in a READ COMMITTED transaction'
            USING ERRCODE = 'LN013',
                  DETAIL = '{"code":13,"error":"lance_changes() must run in a READ COMMITTED transaction"}';
    END IF;
    -- nothing comes after the largest number
    IF after >= 9223372036854775807 THEN
        RETURN;
    END IF;
    -- entries are numbered from 1: an "after" below that means from the start
    expected := GREATEST(after, 0) + 1;
    WHILE returned < max_entries LOOP
        SELECT * INTO entry FROM lance_catalog.change c
         WHERE c.seq >= expected ORDER BY c.seq LIMIT 1;
        EXIT WHEN NOT FOUND;
        IF entry.seq > expected THEN
            -- a gap: stop at it while its transaction may still commit
            EXIT WHEN lance_catalog.change_in_flight(expected, entry.seq - 1);
            -- none is in flight; one may have committed since the look-up
            SELECT pg_catalog.min(c.seq) INTO earliest FROM lance_catalog.change c
             WHERE c.seq >= expected AND c.seq < entry.seq;
            CONTINUE WHEN earliest IS NOT NULL;
        END IF;
        RETURN NEXT entry;
        returned := returned + 1;
        expected := entry.seq + 1;
    END LOOP;
END
$$;

-- DROP EXTENSION lance_namespace drops the whole catalog while the tables'
-- files stay on storage: refused while the catalog holds namespaces or
-- tables, unless lance_namespace.allow_drop_extension is on.
CREATE FUNCTION lance_catalog.refuse_drop_extension() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'lance_refuse_drop_extension' LANGUAGE C;
CREATE EVENT TRIGGER lance_namespace_refuse_drop ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION', 'DROP SCHEMA', 'DROP OWNED')
    EXECUTE FUNCTION lance_catalog.refuse_drop_extension();

-- Sweep what transactions that ended in a crash left in the tables' folders
-- (set-aside originals, temporary files): the background worker does it
-- after every start; without it, call this after a crash, outside a
-- transaction block.  Answers how many files and folders it removed or put
-- back.
CREATE FUNCTION lance_sweep_leftovers() RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;

-- lance_catalog.local_path() now resolves ".." by spelling, so that every
-- spelling of one folder has one key: rebuild the index on it.
REINDEX INDEX lance_catalog.object_table_local_path_idx;
