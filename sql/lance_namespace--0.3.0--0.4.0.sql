/* lance_namespace 0.3.0 -> 0.4.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.4.0'" to load this file. \quit

-- lance_catalog.local_path() now also spells S3 locations one way
-- ("s3://bucket/key", decoded): its index is built again.
REINDEX INDEX lance_catalog.object_table_local_path_idx;

-- Object stores (0.4.0): where tables on S3-compatible storage live and how
-- to reach them.  options are Lance's storage option names, handed to
-- callers that may read a table below the location as they are; only the
-- owner reads this table (secret options included).
CREATE TABLE lance_catalog.storage (
    location    text COLLATE "C" PRIMARY KEY,
    options     jsonb NOT NULL,
    set_by      regrole,
    set_at      timestamptz NOT NULL DEFAULT pg_catalog.now()
);

COMMENT ON TABLE lance_catalog.storage IS 'lance_namespace: object store settings by location prefix';

SELECT pg_catalog.pg_extension_config_dump('lance_catalog.storage', '');

-- Set (or replace) the setting of a location prefix: {"location":
-- "s3://bucket/prefix", "options": {"aws_endpoint": ..., ...}}.
CREATE FUNCTION lance_set_storage(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
-- Remove it: {"location": "s3://bucket/prefix"}.
CREATE FUNCTION lance_remove_storage(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
-- The settings, secret options shown as "****".
CREATE FUNCTION lance_list_storage() RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;

REVOKE EXECUTE ON FUNCTION lance_set_storage(jsonb), lance_remove_storage(jsonb),
    lance_list_storage() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_set_storage(jsonb), lance_remove_storage(jsonb),
    lance_list_storage() TO lance_admin;

-- Callers reach the catalog through the functions only: nobody but the
-- owner holds rights on its tables and sequences, whatever earlier grants
-- (0.2.0 had callers granted them) or default privileges gave.  Only the
-- change log's filtered view is for all.  (Operators are pg_catalog's by
-- name: the script runs as a superuser with the extension's schema, which
-- others may create in, on the search path.)
DO $$
DECLARE
    rel text;
    grantee text;
BEGIN
    FOR rel, grantee IN
        SELECT c.oid::pg_catalog.regclass::text,
               CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END
          FROM pg_catalog.pg_class c
         CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
          LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
         WHERE c.relnamespace OPERATOR(pg_catalog.=) 'lance_catalog'::pg_catalog.regnamespace::pg_catalog.oid
           AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,S,v,p}'::pg_catalog."char"[])
           AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM %s CASCADE', rel, grantee);
    END LOOP;
    -- and rights on single columns
    FOR rel, grantee IN
        SELECT DISTINCT at.attrelid::pg_catalog.regclass::text,
               CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                    ELSE pg_catalog.quote_ident(r.rolname) END
          FROM pg_catalog.pg_attribute at
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) at.attrelid
         CROSS JOIN LATERAL pg_catalog.aclexplode(at.attacl) a
          LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
         WHERE c.relnamespace OPERATOR(pg_catalog.=) 'lance_catalog'::pg_catalog.regnamespace::pg_catalog.oid
           AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL (%s) ON %s FROM %s CASCADE',
            (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(x.attname), ', ')
               FROM pg_catalog.pg_attribute x
              WHERE x.attrelid OPERATOR(pg_catalog.=) rel::pg_catalog.regclass::pg_catalog.oid
                AND x.attnum OPERATOR(pg_catalog.>) 0::pg_catalog.int2 AND NOT x.attisdropped),
            rel, grantee);
    END LOOP;
END
$$;
GRANT SELECT ON lance_catalog.visible_change TO PUBLIC;
