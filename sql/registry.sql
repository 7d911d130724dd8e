--
-- The operation registry (src/operations.def) against the install script:
-- every spec operation has exactly one row, every row its SQL function, and
-- the SQL functions of the extension are exactly the registry's.
--

-- The registry: one row per operation of the spec.
SELECT operation_id, sql_function, http_method, http_path, changes_catalog, privilege, served
  FROM lance_operations() ORDER BY http_path, operation_id;
-- The request members each served operation reads (identity and context
-- belong to every request).
SELECT operation_id, request_members FROM lance_operations() WHERE served ORDER BY operation_id;

-- Each row's SQL function exists, takes and answers jsonb, and runs the
-- C symbol of the same name.
SELECT o.operation_id, o.sql_function AS missing_or_wrong
  FROM lance_operations() o
 WHERE NOT EXISTS (
       SELECT FROM pg_catalog.pg_proc p
         JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass
                                    AND d.objid = p.oid AND d.deptype = 'e'
         JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'lance_namespace'
        WHERE p.proname = o.sql_function
          AND p.proargtypes = '3802'::pg_catalog.oidvector
          AND p.prorettype = 'pg_catalog.jsonb'::pg_catalog.regtype
          AND p.prolang = (SELECT oid FROM pg_catalog.pg_language WHERE lanname = 'c')
          AND p.prosrc = o.sql_function);

-- Every request-taking function of the extension is a registry row.
SELECT p.proname AS not_in_registry
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass
                             AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'lance_namespace'
 WHERE p.proargtypes = '3802'::pg_catalog.oidvector
   AND p.prorettype = 'pg_catalog.jsonb'::pg_catalog.regtype
   AND p.proname NOT IN (SELECT sql_function FROM lance_operations())
   -- privileges, storage settings and request limits, not operations of the spec
   AND p.proname NOT IN ('lance_grant', 'lance_revoke', 'lance_list_grants',
                       'lance_set_storage', 'lance_remove_storage',
                       'lance_set_role_limits', 'lance_list_role_limits');

-- Operation ids and SQL names are unique, and so are the routes.
SELECT count(*) AS operations, count(DISTINCT operation_id) AS ids,
       count(DISTINCT sql_function) AS functions, count(DISTINCT http_path) AS paths
  FROM lance_operations();

-- Every operation the catalog does not serve answers the same LN000, with
-- its reason, from SQL and from REST (406 there).
CREATE FUNCTION pg_temp.sql_answer(fn text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    state text;
    detail text;
BEGIN
    EXECUTE pg_catalog.format('SELECT %I(%L::jsonb)', fn, '{"id": ["a", "b"]}');
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, detail = PG_EXCEPTION_DETAIL;
    RETURN state || ' ' || detail;
END
$$;
-- (REST requests act as this session's role without a key)
SELECT set_config('lance_namespace.anonymous_role', current_user, false) AS anonymous \gset
SELECT o.operation_id, s.answer = 'LN000 ' || r.response_body AS same_answer, r.status,
       r.response_body::jsonb ->> 'error' = o.operation_id || ' is not supported by this catalog: '
                                             || o.not_served AS gives_reason
  FROM lance_operations() o,
       LATERAL (SELECT pg_temp.sql_answer(o.sql_function) AS answer) s,
       LATERAL lance_rest(o.http_method,
                          replace(replace(o.http_path, '{id}', 'a%24b'), '{index_name}', 'i'),
                          NULL, '{}', NULL) r
 WHERE NOT o.served
 ORDER BY o.operation_id;
