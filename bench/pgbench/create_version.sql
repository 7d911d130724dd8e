-- (1) CreateTableVersion of a fresh version of a random b1 table.
\set t random(1, 100)
SELECT lance_create_table_version(format(
         '{"id": ["b1", "t%s"], "version": %s, "manifest_path": "lance-bench/b1/t%s.lance/_versions/%s.manifest"}',
         :t::int, v, :t::int, v)::jsonb)
  FROM nextval('bench.v1_seq') AS v;
