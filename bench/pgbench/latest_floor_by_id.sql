-- (3) the bare floor: the latest version of a table whose id the caller
-- already knows (:b3_first_id is the id of b3$t1; the b3 tables have
-- consecutive ids).
\set id :b3_first_id - 1 + random(1, 100)
SELECT version, manifest_path, manifest_size, e_tag, created_at, metadata
  FROM lance_catalog.version
 WHERE table_id = :id AND branch = ''
 ORDER BY version DESC LIMIT 1;
