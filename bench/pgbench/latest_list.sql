-- (3) ListTableVersions, newest first, limit 1: Lance's look-up of the latest version.
\set t random(1, 100)
SELECT lance_list_table_versions(format('{"id": ["b3", "t%s"], "descending": true, "limit": 1}', :t::int)::jsonb);
