--
-- Objects a role with CREATE on public makes to catch the catalog's
-- statements: functions and operators whose argument types match the
-- catalog's calls more closely than PostgreSQL's own.  Every statement the
-- extension runs names pg_catalog's, so none of these is ever called.
--
SET lance_namespace.local_roots = '';
CREATE FUNCTION public.jsonb_object_agg(text, text) RETURNS jsonb
    LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: jsonb_object_agg'; END $$;
CREATE FUNCTION public.unnest(bigint[]) RETURNS SETOF bigint
    LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: unnest(bigint[])'; END $$;
CREATE FUNCTION public.unnest(text[]) RETURNS SETOF text
    LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: unnest(text[])'; END $$;
CREATE FUNCTION public.hijack_prepend(text, text[]) RETURNS text[]
    LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked: ||'; END $$;
CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = text[], FUNCTION = public.hijack_prepend);

-- The hostile objects are what the session would find for those names.
SELECT 'a' || ARRAY['b'] AS caught;

SELECT lance_create_namespace('{"id": ["hp"], "properties": {"k": "v"}}') - 'transaction_id' AS created;
SELECT lance_create_namespace('{"id": ["hp", "inner"]}') - 'transaction_id' AS created;
SELECT lance_register_table('{"id": ["hp", "inner", "t1"], "location": "s3://b/t1"}') - 'transaction_id' AS registered;
SELECT lance_register_table('{"id": ["hp", "t2"], "location": "s3://b/t2"}') - 'transaction_id' AS registered;
SELECT lance_batch_create_table_versions('{"entries": [
    {"id": ["hp", "inner", "t1"], "version": 1, "manifest_path": "b/t1/1", "metadata": {"m": "1"}},
    {"id": ["hp", "t2"], "version": 1, "manifest_path": "b/t2/1"}]}') -> 'versions' @? '$[*] ? (@.version == 1)' AS batch_created;
SELECT lance_create_table_version('{"id": ["hp", "t2"], "version": 2, "manifest_path": "b/t2/2"}') #> '{version,version}' AS created;
SELECT lance_batch_commit_tables('{"operations": [
    {"create_table_version": {"id": ["hp", "t2"], "version": 3, "manifest_path": "b/t2/3"}},
    {"declare_table": {"id": ["hp", "t3"], "location": "s3://b/t3"}}]}') -> 'results' IS NOT NULL AS committed;
SELECT lance_describe_namespace('{"id": ["hp"]}');
SELECT lance_list_namespaces('{"id": ["hp"]}');
SELECT lance_list_tables('{"id": ["hp"]}');
SELECT lance_list_all_tables('{}') -> 'tables' @> '["hp$inner$t1", "hp$t2", "hp$t3"]' AS listed;
SELECT lance_list_table_versions('{"id": ["hp", "inner", "t1"]}') #> '{versions,0,metadata}' AS metadata;
SELECT lance_describe_table_version('{"id": ["hp", "t2"]}') #> '{version,version}' AS latest;
SELECT lance_rename_table('{"id": ["hp", "t2"], "new_table_name": "t4", "new_namespace_id": ["hp", "inner"]}') - 'transaction_id' AS renamed;
SELECT count(*) > 0 AS feed_read FROM lance_changes(0, 100);
SELECT lance_drop_namespace('{"id": ["hp"], "behavior": "Cascade"}') - 'transaction_id' AS dropped;

DROP OPERATOR public.|| (text, text[]);
DROP FUNCTION public.hijack_prepend(text, text[]);
DROP FUNCTION public.unnest(text[]);
DROP FUNCTION public.unnest(bigint[]);
DROP FUNCTION public.jsonb_object_agg(text, text);
RESET lance_namespace.local_roots;
