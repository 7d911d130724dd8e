-- bench/sql/profile.sql: a C-free implementation of DescribeTableVersion
-- (the latest version of a two-level id), for run.sh --profile: what the same
-- answer costs when SQL builds the jsonb and no JSON goes through text.
CREATE FUNCTION bench.sql_describe_table_version(request jsonb) RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object('version', jsonb_strip_nulls(jsonb_build_object(
               'version', v.version,
               'manifest_path', v.manifest_path,
               'manifest_size', v.manifest_size,
               'e_tag', v.e_tag,
               'timestamp_millis', (extract(epoch FROM v.created_at) * 1000)::bigint,
               'metadata', CASE WHEN v.metadata <> '{}' THEN v.metadata END)))
      FROM lance_catalog.object n
      JOIN lance_catalog.object t
        ON t.parent_id = n.id AND t.name = request -> 'id' ->> 1 AND t.kind = 'table'
     CROSS JOIN LATERAL (SELECT * FROM lance_catalog.version v
                          WHERE v.table_id = t.id AND v.branch = ''
                          ORDER BY v.version DESC LIMIT 1) v
     WHERE n.parent_id = 0 AND n.name = request -> 'id' ->> 0
$$;
