-- bench/sql/setup.sql: the objects the benchmarks work on, in the database
-- the benchmarks run in (psql -v ON_ERROR_STOP=1 -f setup.sql).
--
-- Every catalog table is at an s3:// location, so the catalog writes no
-- files: what is measured is the catalog itself.  Namespaces:
--   b1  100 tables     create one version (1)
--   b2  100 tables     batch of 100 versions over 100 tables (2)
--   b3  100 tables     100 versions each: the latest-version lookup (3)
--   b5  100 tables     the gateway against direct SQL (5)
CREATE EXTENSION IF NOT EXISTS lance_namespace;

CREATE SCHEMA bench;

-- The floor of (1) and (2): a table with the same columns, defaults, checks
-- and unique key as lance_catalog.version (LIKE ... INCLUDING ALL copies all
-- of them but the foreign key), written to with plain INSERTs.
CREATE TABLE bench.version_floor (LIKE lance_catalog.version INCLUDING ALL);

-- Fresh version numbers: one sequence per writer, so that the catalog and its
-- floor do the same nextval() around their insert.
CREATE SEQUENCE bench.v1_seq;          -- (1) lance_create_table_version
CREATE SEQUENCE bench.v1_floor_seq;    -- (1) floor
CREATE SEQUENCE bench.v2_seq;          -- (2) batch, ours and PL/pgSQL
CREATE SEQUENCE bench.v2_floor_seq;    -- (2) floor
CREATE SEQUENCE bench.v5_seq START 1000000;  -- (5) CreateTableVersion in SQL

SELECT lance_create_namespace(jsonb_build_object('id', jsonb_build_array(ns)))
  FROM unnest(ARRAY['b1', 'b2', 'b3', 'b5']) AS ns;

SELECT count(lance_register_table(jsonb_build_object(
           'id', jsonb_build_array(ns, 't' || i),
           'location', format('s3://lance-bench/%s/t%s.lance', ns, i))))
  FROM unnest(ARRAY['b1', 'b2', 'b3', 'b5']) AS ns, generate_series(1, 100) AS i;

-- (3): 100 versions of each b3 table, and (5): one of each b5 table, so that
-- DescribeTable answers tables with data; committed through the catalog, one
-- CreateTableVersion call per version.
SELECT count(lance_create_table_version(jsonb_build_object(
           'id', jsonb_build_array(ns, 't' || i),
           'version', v,
           'manifest_path', format('lance-bench/%s/t%s.lance/_versions/%s.manifest', ns, i, v),
           'manifest_size', 1000 + v)))
  FROM (VALUES ('b3', 100), ('b5', 1)) AS x(ns, nversions),
       generate_series(1, nversions) AS v, generate_series(1, 100) AS i;

-- The request of (2): one version of every b2 table, with the version number
-- left as @V@ for the benchmark script to fill in with its nextval().
CREATE TABLE bench.template (name text PRIMARY KEY, body text NOT NULL);
INSERT INTO bench.template
SELECT 'batch100', jsonb_build_object('entries', jsonb_agg(jsonb_build_object(
           'id', jsonb_build_array('b2', 't' || i),
           'version', 0,
           'manifest_path', format('lance-bench/b2/t%s.lance/_versions/@V@.manifest', i))
         ORDER BY i))::text
  FROM generate_series(1, 100) AS i;
UPDATE bench.template SET body = replace(body, '"version": 0', '"version": @V@');

ANALYZE;
