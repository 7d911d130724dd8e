-- (4) The latest version of a random table of a random namespace
-- (ListTableVersions, newest first, limit 1).
\set k random(1, :nns)
\set j random(1, :tpn)
SELECT lance_list_table_versions(format('{"id": ["s%s", "t%s"], "descending": true, "limit": 1}',
                                        :k::int, :j::int)::jsonb);
