-- (3) floor: one indexed SELECT of the same answer from the same input (the
-- table's name in its namespace), straight from the catalog tables.
\set t random(1, 100)
SELECT v.version, v.manifest_path, v.manifest_size, v.e_tag, v.created_at, v.metadata
  FROM lance_catalog.object n
  JOIN lance_catalog.object t ON t.parent_id = n.id AND t.name = 't' || :t AND t.kind = 'table'
 CROSS JOIN LATERAL (SELECT * FROM lance_catalog.version v
                      WHERE v.table_id = t.id AND v.branch = ''
                      ORDER BY v.version DESC LIMIT 1) v
 WHERE n.parent_id = 0 AND n.name = 'b3';
