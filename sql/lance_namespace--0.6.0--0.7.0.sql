/* lance_namespace 0.6.0 -> 0.7.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.7.0'" to load this file. \quit

-- Request limits per role (0.7.0): at most requests_per_second requests
-- of the role through lance_rest() (the gateway), in bursts of up to burst,
-- counted per server in shared memory while the library is preloaded;
-- past it a request is answered 429 with code 21 and Retry-After.  Kept by
-- role as grants are: its OID and the name it had (role_limits.c).
CREATE TABLE lance_catalog.role_limit (
    role                regrole PRIMARY KEY,
    role_name           name NOT NULL,
    -- the operators named: the script runs with the extension's schema,
    -- where others may create, on its search path
    requests_per_second double precision NOT NULL
        CHECK (requests_per_second OPERATOR(pg_catalog.>) 0::pg_catalog.float8),
    burst               integer NOT NULL CHECK (burst OPERATOR(pg_catalog.>=) 1),
    set_by              regrole,
    set_at              timestamptz NOT NULL DEFAULT pg_catalog.now()
);

COMMENT ON TABLE lance_catalog.role_limit IS 'lance_namespace: request rate limits of roles through lance_rest()';

SELECT pg_catalog.pg_extension_config_dump('lance_catalog.role_limit', '');

-- Namespaces by the folder of their "location" property (0.7.0): a
-- writer's table location at or above one is refused, found through this.
CREATE INDEX object_namespace_location_idx
    ON lance_catalog.object ((lance_catalog.local_path(properties OPERATOR(pg_catalog.->>) 'location')) COLLATE "C")
    WHERE kind OPERATOR(pg_catalog.=) 'namespace';

-- Set a role's limit: {"role": ..., "requests_per_second": n, "burst": n};
-- "requests_per_second": null removes it.  List them: {} or {"role": ...}.
CREATE FUNCTION lance_set_role_limits(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_list_role_limits(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
REVOKE EXECUTE ON FUNCTION lance_set_role_limits(jsonb), lance_list_role_limits(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_set_role_limits(jsonb), lance_list_role_limits(jsonb) TO lance_admin;

-- As every table of the catalog: its owner's alone, whatever default
-- privileges of the role running the update gave.
DO $$
DECLARE
    grantee text;
BEGIN
    FOR grantee IN
        SELECT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                    ELSE pg_catalog.quote_ident(r.rolname) END
          FROM pg_catalog.pg_class c
         CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
          LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
         WHERE c.oid OPERATOR(pg_catalog.=) 'lance_catalog.role_limit'::pg_catalog.regclass
           AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON lance_catalog.role_limit FROM %s CASCADE', grantee);
    END LOOP;
END
$$;
