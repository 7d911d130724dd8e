-- (2) BatchCreateTableVersions: a fresh version of each of the 100 b2 tables.
-- :batch is the request (bench.template 'batch100') with @V@ for the version.
SELECT lance_batch_create_table_versions(replace(:batch, '@V@', v::text)::jsonb)
  FROM nextval('bench.v2_seq') AS v;
