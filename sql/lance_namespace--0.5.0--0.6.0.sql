/* lance_namespace 0.5.0 -> 0.6.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.6.0'" to load this file. \quit

-- Two functions change their result type, which CREATE OR REPLACE cannot
-- do: lance_rest() answers the id of the API key the catalog authenticated
-- the request with (NULL: none), so that a gateway logs only a key id the
-- database vouched for, and lance_list_api_keys() each key's expiry and
-- last use.  Each is made anew with the privileges of the old one, exactly:
-- what an administrator granted or revoked on it stays so, and no default
-- privilege of the role running the update is added.  Its initial
-- privileges (pg_init_privs, what pg_dump compares with) are what a fresh
-- install records, so that a dump of the updated database carries the
-- administrator's grants as one of a fresh install would.
DO $$
DECLARE
    made record;
    fn pg_catalog.regprocedure;
    old_acl pg_catalog.aclitem[];
    fresh_acl pg_catalog.aclitem[];
    owner_id pg_catalog.oid;
    grant_item record;
BEGIN
    FOR made IN
        SELECT * FROM (VALUES
            ('lance_rest(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb)',
             'CREATE FUNCTION lance_rest(method text, path text, query text DEFAULT NULL, body text DEFAULT NULL,
                                         headers jsonb DEFAULT NULL,
                                         OUT status integer, OUT response_headers jsonb, OUT response_body text,
                                         OUT key_id text)
                  AS ''MODULE_PATHNAME'' LANGUAGE C VOLATILE',
             NULL),
            ('lance_list_api_keys()',
             'CREATE FUNCTION lance_list_api_keys(
                  OUT id text, OUT role regrole, OUT created_by regrole, OUT created_at timestamptz,
                  OUT expires_at timestamptz, OUT last_used_at timestamptz)
              RETURNS SETOF record
                  AS ''MODULE_PATHNAME'' LANGUAGE C STABLE',
             'lance_admin')) AS f(signature, definition, only_for)
    LOOP
        SELECT p.proacl, p.proowner INTO old_acl, owner_id FROM pg_catalog.pg_proc p
         WHERE p.oid OPERATOR(pg_catalog.=) made.signature::pg_catalog.regprocedure;
        EXECUTE 'DROP FUNCTION ' OPERATOR(pg_catalog.||) made.signature;
        EXECUTE made.definition;
        fn := made.signature::pg_catalog.regprocedure;
        -- what the install script grants: a fresh install's initial privileges
        IF made.only_for IS NOT NULL THEN
            EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', fn);
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %I', fn, made.only_for);
        END IF;
        SELECT p.proacl INTO fresh_acl FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) fn;
        -- then the old function's privileges, and no other (NULL: the
        -- default, EXECUTE for PUBLIC)
        FOR grant_item IN
            SELECT DISTINCT a.grantee FROM pg_catalog.aclexplode(
                       COALESCE(fresh_acl, pg_catalog.acldefault('f', owner_id))) a
             WHERE a.grantee OPERATOR(pg_catalog.<>) owner_id
        LOOP
            EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s', fn,
                                      CASE WHEN grant_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                           ELSE grant_item.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        FOR grant_item IN
            SELECT a.grantee, a.is_grantable FROM pg_catalog.aclexplode(
                       COALESCE(old_acl, pg_catalog.acldefault('f', owner_id))) a
             WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
               AND a.grantee OPERATOR(pg_catalog.<>) owner_id
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', fn,
                                      CASE WHEN grant_item.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                           ELSE grant_item.grantee::pg_catalog.regrole::pg_catalog.text END,
                                      CASE WHEN grant_item.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- Every GRANT and REVOKE of this script was recorded as the
        -- extension's initial privileges: put back a fresh install's, which
        -- records those of its own GRANT and REVOKE, and none for a
        -- function it grants nothing on.
        DELETE FROM pg_catalog.pg_init_privs
         WHERE objoid OPERATOR(pg_catalog.=) fn::pg_catalog.oid
           AND classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
        IF made.only_for IS NOT NULL THEN
            INSERT INTO pg_catalog.pg_init_privs (objoid, classoid, objsubid, privtype, initprivs)
            VALUES (fn::pg_catalog.oid, 'pg_catalog.pg_proc'::pg_catalog.regclass, 0, 'e', fresh_acl);
        END IF;
    END LOOP;
END
$$;

-- The request headers lance_rest() records, apart from the context the
-- caller sent (which entries made before 0.6.0 hold both in, the headers as
-- "header.<name>": they cannot be told apart, so they stay there).
ALTER TABLE lance_catalog.change ADD COLUMN headers jsonb NOT NULL DEFAULT '{}';
CREATE OR REPLACE VIEW lance_catalog.visible_change WITH (security_barrier) AS
    SELECT * FROM lance_catalog.change c
     WHERE lance_catalog.may_read_change(c.object_ids, c.namespace_ids, c.role_id, c.role);

-- The id of the API key a change was requested with through lance_rest()
-- (never the key): two teams that share a role are told apart.  NULL for
-- calls from SQL, for requests without a key, and for entries made before.
ALTER TABLE lance_catalog.change ADD COLUMN key_id text;
CREATE OR REPLACE VIEW lance_catalog.visible_change WITH (security_barrier) AS
    SELECT * FROM lance_catalog.change c
     WHERE lance_catalog.may_read_change(c.object_ids, c.namespace_ids, c.role_id, c.role);

-- The log keeps no credential-like context entry (the names
-- ln_is_credential_name() matches), nor did it mean to: take out those
-- that entries made before 0.6.0 kept as given.
UPDATE lance_catalog.change c
   SET context = (SELECT COALESCE(pg_catalog.jsonb_object_agg(e.key, e.value), '{}')
                    FROM pg_catalog.jsonb_each(c.context) e
                   WHERE e.key OPERATOR(pg_catalog.!~*)
                         'authoriz|cookie|credential|key|passw|secret|session|signature|token')
 WHERE EXISTS (SELECT FROM pg_catalog.jsonb_object_keys(c.context) k
                WHERE k OPERATOR(pg_catalog.~*)
                      'authoriz|cookie|credential|key|passw|secret|session|signature|token');

-- A reader held back is told by whom: the holder of the first entry of the
-- gap, once that transaction began longer ago than a writer may idle.
-- (0.6.0) The first entry numbered from lo to hi that may still commit, the
-- process whose transaction holds it, when that transaction began (NULL to
-- a caller that may not see it in pg_stat_activity) and whether that is
-- longer ago than lance_namespace.change_idle_timeout; all NULL if none.
-- Whom lance_changes() names to a reader held back.
CREATE FUNCTION lance_catalog.change_holder(lo bigint, hi bigint,
                                            OUT seq bigint, OUT pid integer, OUT since timestamptz,
                                            OUT overdue boolean)
    AS 'MODULE_PATHNAME', 'lance_change_holder' LANGUAGE C VOLATILE STRICT;

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
-- gaps; when such entries come last, a row with only seq set (the number
-- scanned up to) ends the answer, so that the reader's "after" moves on.
-- A reader held back at a gap by a transaction that began longer ago than
-- lance_namespace.change_idle_timeout gets a NOTICE naming its process.
CREATE OR REPLACE FUNCTION lance_changes(after bigint DEFAULT 0, max_entries integer DEFAULT 1000)
RETURNS SETOF lance_catalog.change
LANGUAGE plpgsql VOLATILE
-- pg_catalog's operators, whatever the caller's search_path
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    entry    lance_catalog.change;
    holder   record;
    found_seq bigint;
    expected bigint;
    returned integer := 0;
    last_returned bigint := 0;
    -- Entries one call looks at, whoever may see them: ten per entry it may
    -- answer, at least 100.  A reader that may see few entries would
    -- otherwise walk the whole log in one call; at the cap the position row
    -- ends the answer and the next call goes on from there.
    examined bigint := 0;
    max_examined bigint := GREATEST(10 * GREATEST(max_entries, 0)::bigint, 100);
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
    WHILE returned < max_entries AND examined < max_examined LOOP
        found_seq := lance_catalog.next_change(expected);
        EXIT WHEN found_seq IS NULL;
        IF found_seq > expected THEN
            -- a gap: stop at it while its transaction may still commit
            IF lance_catalog.change_in_flight(expected, found_seq - 1) THEN
                -- held back longer than a writer may idle: say by whom, so
                -- that the reader (or an administrator) can act on it
                SELECT * INTO holder FROM lance_catalog.change_holder(expected, found_seq - 1);
                IF holder.overdue THEN
                    RAISE NOTICE 'the change feed is held back at entry % by process %, whose transaction began %',
                                 holder.seq, holder.pid,
                                 COALESCE('at ' OPERATOR(pg_catalog.||) holder.since::text,
                                          'longer ago than lance_namespace.change_idle_timeout')
                        USING DETAIL = pg_catalog.jsonb_build_object('held_back_at', holder.seq,
                                           'pid', holder.pid, 'since', holder.since)::text,
                              HINT = pg_catalog.format('An administrator can end it: SELECT pg_terminate_backend(%s);',
                                                       holder.pid);
                END IF;
                EXIT;
            END IF;
            -- none is in flight; one may have committed since the look-up
            CONTINUE WHEN lance_catalog.next_change(expected) < found_seq;
        END IF;
        examined := examined + 1;
        SELECT * INTO entry FROM lance_catalog.visible_change c WHERE c.seq = found_seq;
        IF FOUND THEN
            RETURN NEXT entry;
            returned := returned + 1;
            last_returned := found_seq;
        END IF;
        expected := found_seq + 1;
    END LOOP;
    -- Entries passed over after the last one returned: a row that carries
    -- only the number scanned up to, so that a reader who asks for
    -- "everything after the last seq I got" moves past them.
    IF expected - 1 > last_returned AND expected - 1 > after AND returned < max_entries THEN
        entry := NULL;
        entry.seq := expected - 1;
        RETURN NEXT entry;
    END IF;
END
$$;

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

-- Scoped credentials (issue 23): a storage setting says what callers are
-- handed in "vend".  Settings made before vended the setting's own keys:
-- they keep doing so ("catalog_keys") until an administrator chooses another
-- mode; a setting made from now on without "vend" hands out no keys.
ALTER TABLE lance_catalog.storage
    ADD COLUMN vend jsonb NOT NULL DEFAULT '{"mode": "catalog_keys"}';
ALTER TABLE lance_catalog.storage ALTER COLUMN vend SET DEFAULT '{"mode": "none"}';

-- API keys that expire, and when each was last used.
ALTER TABLE lance_catalog.api_key
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN last_used_at timestamptz;

CREATE FUNCTION lance_create_api_key(role name, valid_for interval) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;

-- (lance_list_api_keys() is made anew at the top, with its privileges.)
REVOKE EXECUTE ON FUNCTION lance_create_api_key(name, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_create_api_key(name, interval) TO lance_admin;

-- Operating the catalog (0.6.0).  The rows the statistics say a table or
-- index holds, scaled to its current size as the planner does; NULL while
-- it has none (never vacuumed or analyzed).  lance_stats() counts exactly
-- below 100000 and estimates above.
CREATE FUNCTION lance_catalog.estimated_rows(relation text) RETURNS bigint
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN c.reltuples < 0 THEN NULL
                WHEN c.relpages = 0 THEN c.reltuples::bigint
                ELSE (c.reltuples / c.relpages
                      * (pg_catalog.pg_relation_size(c.oid) / pg_catalog.current_setting('block_size')::integer))::bigint
           END
      FROM pg_catalog.pg_class c
     WHERE c.oid = pg_catalog.to_regclass(relation);
$$;

-- Drops the drop processor failed, counted by lance_stats() without a scan
-- of the change log (they are few; other entries cost nothing here).
CREATE INDEX change_failed_drop_idx ON lance_catalog.change (seq) WHERE drop_failed;

-- The catalog's size, its queues, the background worker's last rounds, the
-- object stores' recent errors and who holds the change feed back, as
-- jsonb (see the README, "Administration").  An administrator's call.
CREATE FUNCTION lance_stats() RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION lance_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_stats() TO lance_admin;

-- The catalog follows a client's clean-up of old versions (0.6.0): look at
-- up to max_tables tables with data after table id `after`, remove the
-- versions of managed tables whose manifest storage says is gone (never the
-- latest of a branch), and answer {"removed": n, "next_after": id} (0: the
-- last table was reached).  The background worker does it every round; an
-- administrator's call.
CREATE FUNCTION lance_reconcile_versions(after bigint DEFAULT 0, max_tables integer DEFAULT 100)
RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION lance_reconcile_versions(bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_reconcile_versions(bigint, integer) TO lance_admin;

-- The version of the library a backend loaded (0.6.0): the gateway's
-- /readyz is ready only when it equals the installed extension's version
-- (pg_extension.extversion).  Nothing secret: PUBLIC may call it.
CREATE FUNCTION lance_library_version() RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

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
