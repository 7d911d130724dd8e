-- (5) CreateTableVersion of a fresh version of a random b5 table, called directly in SQL.
\set t random(1, 100)
SELECT lance_create_table_version(format(
         '{"id": ["b5", "t%s"], "version": %s, "manifest_path": "lance-bench/b5/t%s.lance/_versions/%s.manifest"}',
         :t::int, v, :t::int, v)::jsonb)
  FROM nextval('bench.v5_seq') AS v;
