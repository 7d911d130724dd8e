-- (1) floor: the same row (same table id, version, path), inserted with a
-- plain INSERT into a table with the same columns and key, around the same
-- nextval().  :b1_first_id is the id of b1$t1; the b1 tables have
-- consecutive ids.
\set t random(1, 100)
\set id :b1_first_id - 1 + :t
INSERT INTO bench.version_floor (table_id, version, manifest_path, naming_scheme)
SELECT :id::bigint, v, format('lance-bench/b1/t%s.lance/_versions/%s.manifest', :t::int, v), 'V2'
  FROM nextval('bench.v1_floor_seq') AS v;
