-- bench/sql/scale_load.sql: fill an empty catalog for benchmark (4) with
-- set-based SQL, straight into the catalog tables (no API call per row):
--   :nns namespaces s1..s<nns> under the root, :tpn tables t1..t<tpn> in
--   each (at s3:// locations), and :vpt versions 1..<vpt> of every table.
-- Rows go in key order, so every index grows at its right edge.  The
-- foreign keys are checked as usual.
\set ON_ERROR_STOP 1
\timing on

INSERT INTO lance_catalog.object (id, parent_id, kind, name)
SELECT k, 0, 'namespace', 's' || k
  FROM generate_series(1, :nns) AS k;

INSERT INTO lance_catalog.object (id, parent_id, kind, name, location, declared)
SELECT :nns + (k - 1) * :tpn + j, k, 'table', 't' || j,
       format('s3://lance-scale/s%s/t%s.lance', k, j), false
  FROM generate_series(1, :nns) AS k, generate_series(1, :tpn) AS j;

SELECT setval(pg_get_serial_sequence('lance_catalog.object', 'id'), max(id))
  FROM lance_catalog.object;

-- Paths as Lance's V2 naming scheme writes them: 20 digits of 2^64-1-version.
INSERT INTO lance_catalog.version (table_id, version, manifest_path, manifest_size, naming_scheme)
SELECT :nns + (k - 1) * :tpn + j, v,
       format('lance-scale/s%s/t%s.lance/_versions/%s.manifest', k, j,
              18446744073709551615 - v),
       1000 + v, 'V2'
  FROM generate_series(1, :nns) AS k, generate_series(1, :tpn) AS j,
       generate_series(1, :vpt) AS v;

VACUUM (ANALYZE) lance_catalog.object, lance_catalog.version;
