-- (profile) the C-free DescribeTableVersion of bench/sql/profile.sql, same requests as latest_describe.sql.
\set t random(1, 100)
SELECT bench.sql_describe_table_version(format('{"id": ["b3", "t%s"]}', :t::int)::jsonb);
