-- (3) DescribeTableVersion without a version: the latest.
\set t random(1, 100)
SELECT lance_describe_table_version(format('{"id": ["b3", "t%s"]}', :t::int)::jsonb);
