/* lance_namespace 0.2.0 -> 0.3.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.3.0'" to load this file. \quit

-- Tables declared before 0.3.0 count as registered: lance_process_drops()
-- leaves their data in place, since the catalog cannot tell now whether it
-- chose their folders.
ALTER TABLE lance_catalog.object ADD COLUMN location_derived boolean;

-- Earlier scripts set this default with an unqualified nextval, which a
-- nextval(text) in the extension's schema would have caught: set it again,
-- by pg_catalog's name.
ALTER TABLE lance_catalog.change ALTER COLUMN seq
    SET DEFAULT pg_catalog.nextval('lance_catalog.change_seq'::pg_catalog.regclass);

-- lance_catalog.local_path() now reads file:/p, file://localhost/p and the
-- scheme in any case as Lance does: its index is made again.
REINDEX INDEX lance_catalog.object_table_local_path_idx;

-- Access control (0.3.0).  Callers are PostgreSQL roles: current_user in
-- SQL, the role of the API key through lance_rest().  The API functions read
-- and write the catalog as the owner of schema lance_catalog (see
-- catalog.c), with a fixed search_path; callers need EXECUTE on them and no
-- rights on the catalog's tables, so that what the catalog holds and logs
-- is only what its checks let through.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles
                    WHERE rolname OPERATOR(pg_catalog.=) 'lance_admin'::pg_catalog.name) THEN
        CREATE ROLE lance_admin NOLOGIN;
    END IF;
END
$$;
COMMENT ON ROLE lance_admin IS 'lance_namespace: catalog administrators (bypass privilege checks, manage API keys)';

-- read, write or manage on a namespace (and everything below it) or on a
-- table; each privilege includes the ones before it.  The creator of an
-- object gets manage on it.
CREATE TABLE lance_catalog.grant (
    object_id  bigint NOT NULL REFERENCES lance_catalog.object (id) ON DELETE CASCADE,
    role       regrole NOT NULL,
    privilege  text NOT NULL CHECK (privilege IN ('read', 'write', 'manage')),
    granted_by regrole,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (object_id, role, privilege)
);

COMMENT ON TABLE lance_catalog.grant IS 'lance_namespace: privileges of roles on namespaces and tables';

-- a role's grants, for the listings it may see
CREATE INDEX grant_role_idx ON lance_catalog.grant (role);

SELECT pg_catalog.pg_extension_config_dump('lance_catalog.grant', '');

-- API keys for the REST gateway: only a SHA-256 hash of each key is kept.
CREATE TABLE lance_catalog.api_key (
    id          text COLLATE "C" PRIMARY KEY,
    role        regrole NOT NULL,
    key_hash    bytea NOT NULL,
    created_by  regrole,
    created_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE lance_catalog.api_key IS 'lance_namespace: API keys (hashed) and the roles they act as';

SELECT pg_catalog.pg_extension_config_dump('lance_catalog.api_key', '');

-- The change log as a caller may read it: the entries it made, and those
-- that touched an object it can read (lance_changes() reads this).
CREATE FUNCTION lance_catalog.may_read_change(objects text[], role name) RETURNS boolean
    AS 'MODULE_PATHNAME', 'lance_may_read_change' LANGUAGE C STABLE STRICT;
CREATE VIEW lance_catalog.visible_change WITH (security_barrier) AS
    SELECT * FROM lance_catalog.change c
     WHERE lance_catalog.may_read_change(c.objects, c.role);

GRANT USAGE ON SCHEMA lance_catalog TO PUBLIC;

-- Grant and revoke a privilege: {"id": [...], "role": "name", "privilege":
-- "read|write|manage"}; the root namespace is [].  Needs manage on the object.
CREATE FUNCTION lance_grant(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
CREATE FUNCTION lance_revoke(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
-- The grants on one object: {"id": [...]}.  Needs read on it.
CREATE FUNCTION lance_list_grants(request jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;

-- API keys (superusers and lance_admin only).  lance_create_api_key answers
-- the key once; the catalog keeps its hash.
CREATE FUNCTION lance_create_api_key(role name) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT;
-- Revoke a key by its id ("lnk_" and 12 hex digits), or by the key itself;
-- true if there was one.
CREATE FUNCTION lance_revoke_api_key(key_prefix_or_id text) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT;
-- The keys, never the keys themselves: id, role, who made it and when.
CREATE FUNCTION lance_list_api_keys(
    OUT id text, OUT role regrole, OUT created_by regrole, OUT created_at timestamptz)
RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;

REVOKE EXECUTE ON FUNCTION lance_create_api_key(name), lance_revoke_api_key(text),
    lance_list_api_keys(), lance_process_drops(), lance_sweep_leftovers() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_create_api_key(name), lance_revoke_api_key(text),
    lance_list_api_keys(), lance_process_drops(), lance_sweep_leftovers() TO lance_admin;

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

-- The number of the first entry of the change log numbered from_seq or
-- later, whoever may read it: entry numbers say nothing of what changed.
CREATE FUNCTION lance_catalog.next_change(from_seq bigint) RETURNS bigint
    LANGUAGE sql STABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT min(c.seq) FROM lance_catalog.change c WHERE c.seq >= from_seq;
$$;

-- The change log in commit order: the entries after `after`, at most
-- max_entries.  Entry numbers are taken when a call runs, but transactions
-- commit in another order, so an entry with a smaller number can become
-- visible after one with a larger number.  The reader therefore stops at
-- the first missing number whose transaction is still in flight: a reader
-- that asks again for "everything after the last entry it got" never misses
-- one.  A number whose transaction rolled back is skipped.  Each look-up
-- needs a fresh snapshot, so this runs in READ COMMITTED.  A caller sees the
-- entries it made and those whose objects it can all read
-- (lance_catalog.visible_change); the others are passed over, and are no
-- gaps.
CREATE OR REPLACE FUNCTION lance_changes(after bigint DEFAULT 0, max_entries integer DEFAULT 1000)
RETURNS SETOF lance_catalog.change
LANGUAGE plpgsql VOLATILE
-- pg_catalog's operators, whatever the caller's search_path
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    entry    lance_catalog.change;
    found_seq bigint;
    expected bigint;
    returned integer := 0;
BEGIN
    -- A standby cannot see the locks of the primary's writers in flight, so
    -- it cannot tell a gap that will fill from one that will not.
    IF pg_catalog.pg_is_in_recovery() THEN
        RAISE EXCEPTION 'lance_changes() cannot run on a standby: read the change feed from the primary'
            USING ERRCODE = 'LN017',
                  DETAIL = '{"code":17,"error":"lance_changes() cannot run on a standby: read the change feed from the primary"}';
    END IF;
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'lance_changes() must run in a READ COMMITTED transaction'
            USING ERRCODE = 'LN013',
                  DETAIL = '{"code":13,"error":"lance_changes() must run in a READ COMMITTED transaction"}';
    END IF;
    -- nothing comes after the largest number
    IF after >= 9223372036854775807 THEN
        RETURN;
    END IF;
    -- entries are numbered from 1: an "after" below that means from the start
    expected := GREATEST(after, 0) + 1;
    WHILE returned < max_entries LOOP
        found_seq := lance_catalog.next_change(expected);
        EXIT WHEN found_seq IS NULL;
        IF found_seq > expected THEN
            -- a gap: stop at it while its transaction may still commit
            EXIT WHEN lance_catalog.change_in_flight(expected, found_seq - 1);
            -- none is in flight; one may have committed since the look-up
            CONTINUE WHEN lance_catalog.next_change(expected) < found_seq;
        END IF;
        SELECT * INTO entry FROM lance_catalog.visible_change c WHERE c.seq = found_seq;
        IF FOUND THEN
            RETURN NEXT entry;
            returned := returned + 1;
        END IF;
        expected := found_seq + 1;
    END LOOP;
END
$$;
