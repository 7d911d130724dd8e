-- (5) DescribeTable of a random b5 table, called directly in SQL.
\set t random(1, 100)
SELECT lance_describe_table(format('{"id": ["b5", "t%s"]}', :t::int)::jsonb);
