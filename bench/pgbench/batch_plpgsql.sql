-- (2) the same request to the PL/pgSQL implementation (bench/sql/plpgsql_batch.sql).
SELECT bench.plpgsql_batch_create_table_versions(replace(:batch, '@V@', v::text)::jsonb)
  FROM nextval('bench.v2_seq') AS v;
