/* lance_namespace 0.5.0 -> 0.6.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.6.0'" to load this file. \quit

-- ListAllTables of a role that may read some namespaces only: each such
-- namespace's tables in id order, merged (0.6.0).
CREATE INDEX object_table_parent_id_idx
    ON lance_catalog.object (parent_id, id) WHERE kind = 'table';
CREATE INDEX object_table_with_data_parent_id_idx
    ON lance_catalog.object (parent_id, id) WHERE kind = 'table' AND NOT declared;

-- The key that ListAllTables' page tokens are sealed with (0.6.0): a token
-- names a position by a table's internal number, which would tell how many
-- tables were made between two pages, those the caller may not see
-- included.  256 bits (less the UUIDs' 12 fixed ones) of pg_strong_random,
-- made at install, read by the catalog's owner alone, and not dumped: a
-- restored catalog makes its own, and a token from before answers code 13.
CREATE TABLE lance_catalog.page_token_key (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    key bytea NOT NULL CHECK (pg_catalog.length(key) = 32)
);

COMMENT ON TABLE lance_catalog.page_token_key IS 'lance_namespace: the secret page tokens are sealed with';

INSERT INTO lance_catalog.page_token_key (key)
SELECT pg_catalog.decode(pg_catalog.replace(pg_catalog.concat(pg_catalog.gen_random_uuid(),
                                                              pg_catalog.gen_random_uuid()),
                                            '-', ''), 'hex');

-- Rights on the catalog: the table this update makes took the default
-- privileges of the role running it (ALTER DEFAULT PRIVILEGES ... GRANT ALL
-- ON TABLES TO ...): the same clean-up as a fresh install, over the whole
-- schema.
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
