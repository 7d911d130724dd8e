-- (2) floor: the same 100 rows (same table ids, version, paths) in one
-- multi-row INSERT, around the same nextval().  :b2_first_id is the id of
-- b2$t1; the b2 tables have consecutive ids.
INSERT INTO bench.version_floor (table_id, version, manifest_path, naming_scheme)
SELECT :b2_first_id::bigint - 1 + t, v,
       format('lance-bench/b2/t%s.lance/_versions/%s.manifest', t, v), 'V2'
  FROM nextval('bench.v2_floor_seq') AS v, generate_series(1, 100) AS t;
