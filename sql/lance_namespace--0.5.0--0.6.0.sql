/* lance_namespace 0.5.0 -> 0.6.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.6.0'" to load this file. \quit

-- lance_rest() answers the id of the API key the catalog authenticated the
-- request with (NULL: none), so that a gateway logs only a key id the
-- database vouched for.  A new OUT column changes the result type, which
-- CREATE OR REPLACE cannot do: the function is made anew, and the
-- privileges an administrator gave or took on the old one carry over.
DO $$
DECLARE
    old_acl pg_catalog.aclitem[];
    grant_item record;
BEGIN
    SELECT p.proacl INTO old_acl FROM pg_catalog.pg_proc p
     WHERE p.oid OPERATOR(pg_catalog.=)
           'lance_rest(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb)'::pg_catalog.regprocedure;
    DROP FUNCTION lance_rest(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb);
    CREATE FUNCTION lance_rest(method text, path text, query text DEFAULT NULL, body text DEFAULT NULL,
                               headers jsonb DEFAULT NULL,
                               OUT status integer, OUT response_headers jsonb, OUT response_body text,
                               OUT key_id text)
        AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
    -- NULL: the default (EXECUTE for PUBLIC), which the new function has
    IF old_acl IS NOT NULL THEN
        REVOKE ALL ON FUNCTION lance_rest(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb) FROM PUBLIC;
        FOR grant_item IN
            SELECT a.grantee, a.is_grantable FROM pg_catalog.aclexplode(old_acl) a
             WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION lance_rest(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb) TO %s%s',
                                      CASE WHEN grant_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                           ELSE grant_item.grantee::pg_catalog.regrole::pg_catalog.text END,
                                      CASE WHEN grant_item.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- Those grants, made in this script, were recorded as the
        -- extension's initial privileges; they are the administrator's.  A
        -- fresh CREATE EXTENSION records none for lance_rest, and pg_dump
        -- dumps what differs from them: without this, a dump of the updated
        -- database would leave the administrator's grants out.
        DELETE FROM pg_catalog.pg_init_privs
         WHERE objoid OPERATOR(pg_catalog.=)
               'lance_rest(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb)'::pg_catalog.regprocedure
           AND classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
    END IF;
END
$$;
