-- (4) ListTables: the first page of 100 tables of a random namespace
-- (:nns namespaces s1..s<nns> of :tpn tables each, bench/sql/scale_load.sql).
\set k random(1, :nns)
SELECT lance_list_tables(format('{"id": ["s%s"], "limit": 100}', :k::int)::jsonb);
