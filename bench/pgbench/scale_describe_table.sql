-- (4) DescribeTable of a random table of a random namespace.
\set k random(1, :nns)
\set j random(1, :tpn)
SELECT lance_describe_table(format('{"id": ["s%s", "t%s"]}', :k::int, :j::int)::jsonb);
