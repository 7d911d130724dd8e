/* lance_namespace 0.4.0 -> 0.5.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.5.0'" to load this file. \quit

-- Storage undo that rollbacks could not finish (issue 19, items 3 and 7)
-- The undo that rollbacks could not finish on storage (a store out of reach
-- during the rollback, a folder that could not be reached): the rollback
-- spools each step to the data directory, and the next maintenance round
-- (lance_sweep_leftovers(), the background worker) takes it over here and
-- attempts it until it is done, waiting longer after each failure.  step is
-- the spooled record (what to remove or put back, and what it must still
-- be); the other columns say the same for a person.
CREATE TABLE lance_catalog.storage_undo (
    spool          text COLLATE "C" PRIMARY KEY,
    transaction_id xid8,
    action         text NOT NULL CHECK (action IN ('remove', 'put back')),
    location       text NOT NULL,
    path           text NOT NULL,
    branch         text,
    version        bigint,
    step           bytea NOT NULL,
    attempts       integer NOT NULL DEFAULT 0,
    next_attempt   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    last_error     text,
    taken_at       timestamptz NOT NULL DEFAULT pg_catalog.now()
);

COMMENT ON TABLE lance_catalog.storage_undo IS 'lance_namespace: storage undo of rollbacks still to do';

-- Identity, not names, in the change log and in authorization (issue 19,
-- item 5), and a feed reader that may see nothing still advances (item 13).
-- Entries record the ids of their objects and of the namespaces above them,
-- and the caller's OID; grants and API keys the name their role had, which
-- with its OID tells that role from one made later under the same OID.
ALTER TABLE lance_catalog.change
    ADD COLUMN object_ids bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN namespace_ids bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN role_id regrole;

-- Existing entries: their names resolved as the catalog stands now (split
-- at "$", the spec's string form; the best the names can tell), an object
-- not found there NULL, and the role that has the entry's role name now.
-- One statement for the whole log, each name and each list of names
-- resolved once, not a look-up per name and entry: the update holds the
-- change log locked against writers while it runs.  paths: every object
-- under the root by its string form, with the ids from the top down (a name
-- holding "$" cannot be reached by a split form, nor can what is below it).
-- Per name, the deepest of its prefixes found gives the namespaces above it
-- (as far as they exist) and, when it is the whole name, the object.  An
-- entry's namespace_ids are, per object in order, the root (0) then the
-- namespaces found above it.
-- (The steps go through temporary tables with statistics: the planner's
-- guesses for a CTE's rows could make a join rescan one per entry.)
CREATE TEMPORARY TABLE ln_050_paths AS
WITH RECURSIVE paths (id, path, ids) AS (
    SELECT o.id, o.name, ARRAY[o.id]
      FROM lance_catalog.object o
     WHERE o.parent_id OPERATOR(pg_catalog.=) 0
       AND pg_catalog.strpos(o.name, '$') OPERATOR(pg_catalog.=) 0
    UNION ALL
    SELECT o.id, p.path OPERATOR(pg_catalog.||) '$' OPERATOR(pg_catalog.||) o.name,
           p.ids OPERATOR(pg_catalog.||) o.id
      FROM paths p
      JOIN lance_catalog.object o ON o.parent_id OPERATOR(pg_catalog.=) p.id
     WHERE pg_catalog.strpos(o.name, '$') OPERATOR(pg_catalog.=) 0
)
SELECT p.path, p.ids FROM paths p;
CREATE TEMPORARY TABLE ln_050_names AS
SELECT DISTINCT e.name,
       CASE WHEN e.name IS NULL OR e.name OPERATOR(pg_catalog.=) '' THEN '{}'::text[]
            ELSE pg_catalog.string_to_array(e.name, '$') END AS parts
  FROM lance_catalog.change c
 CROSS JOIN LATERAL pg_catalog.unnest(c.objects) AS e (name);
ANALYZE pg_temp.ln_050_paths;
ANALYZE pg_temp.ln_050_names;
CREATE TEMPORARY TABLE ln_050_resolved AS
WITH found AS (
    SELECT DISTINCT ON (n.name) n.name, k.k, p.ids
      FROM pg_temp.ln_050_names n
     CROSS JOIN LATERAL pg_catalog.generate_series(1, pg_catalog.cardinality(n.parts)) AS k (k)
      JOIN pg_temp.ln_050_paths p ON p.path OPERATOR(pg_catalog.=) pg_catalog.array_to_string(n.parts[1:k.k], '$')
     ORDER BY n.name, k.k DESC
)
SELECT n.name, n.name IS NULL AS is_null,
       CASE WHEN n.name IS NULL THEN NULL::bigint
            WHEN pg_catalog.cardinality(n.parts) OPERATOR(pg_catalog.=) 0 THEN 0::bigint
            WHEN f.k OPERATOR(pg_catalog.=) pg_catalog.cardinality(n.parts) THEN f.ids[f.k]
       END AS object_id,
       ARRAY[0::bigint] OPERATOR(pg_catalog.||)
           COALESCE(f.ids[1:LEAST(f.k, pg_catalog.cardinality(n.parts) OPERATOR(pg_catalog.-) 1)], '{}'::bigint[])
           AS above
  FROM pg_temp.ln_050_names n
  LEFT JOIN found f ON f.name OPERATOR(pg_catalog.=) n.name;
ANALYZE pg_temp.ln_050_resolved;
CREATE TEMPORARY TABLE ln_050_elements AS
SELECT l.objects, e.name, e.i
  FROM (SELECT DISTINCT c.objects FROM lance_catalog.change c) l
 CROSS JOIN LATERAL pg_catalog.unnest(l.objects) WITH ORDINALITY AS e (name, i);
ANALYZE pg_temp.ln_050_elements;
CREATE TEMPORARY TABLE ln_050_lists AS
SELECT e.objects,
       -- above has the root first: one row per object with n = 1
       pg_catalog.array_agg(r.object_id ORDER BY e.i) FILTER (WHERE x.n OPERATOR(pg_catalog.=) 1) AS object_ids,
       pg_catalog.array_agg(x.id ORDER BY e.i, x.n) AS namespace_ids
  FROM pg_temp.ln_050_elements e
  JOIN pg_temp.ln_050_resolved r ON r.is_null OPERATOR(pg_catalog.=) (e.name IS NULL)
                                AND COALESCE(r.name, '') OPERATOR(pg_catalog.=) COALESCE(e.name, '')
 CROSS JOIN LATERAL pg_catalog.unnest(r.above) WITH ORDINALITY AS x (id, n)
 GROUP BY e.objects;
ANALYZE pg_temp.ln_050_lists;
UPDATE lance_catalog.change c
   SET object_ids = COALESCE(pl.object_ids, '{}'),
       namespace_ids = COALESCE(pl.namespace_ids, '{}'),
       role_id = r.oid::pg_catalog.regrole
  FROM lance_catalog.change c2
  LEFT JOIN pg_temp.ln_050_lists pl ON pl.objects OPERATOR(pg_catalog.=) c2.objects
  LEFT JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) c2.role
 WHERE c.seq OPERATOR(pg_catalog.=) c2.seq;
DROP TABLE pg_temp.ln_050_paths, pg_temp.ln_050_names, pg_temp.ln_050_resolved, pg_temp.ln_050_elements,
           pg_temp.ln_050_lists;

-- Grants and keys whose role is gone grant nothing; a role made later under
-- the same OID must not get them.
DELETE FROM lance_catalog.grant g
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles r
                    WHERE r.oid OPERATOR(pg_catalog.=) g.role::pg_catalog.oid);
DELETE FROM lance_catalog.api_key k
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles r
                    WHERE r.oid OPERATOR(pg_catalog.=) k.role::pg_catalog.oid);
ALTER TABLE lance_catalog.grant ADD COLUMN role_name name;
UPDATE lance_catalog.grant g SET role_name = r.rolname
  FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) g.role::pg_catalog.oid;
ALTER TABLE lance_catalog.grant ALTER COLUMN role_name SET NOT NULL;
ALTER TABLE lance_catalog.api_key ADD COLUMN role_name name;
UPDATE lance_catalog.api_key k SET role_name = r.rolname
  FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) k.role::pg_catalog.oid;
ALTER TABLE lance_catalog.api_key ALTER COLUMN role_name SET NOT NULL;

-- The filtered view judges by identity.  Replaced in place, not dropped and
-- made again: a user's view over it (a feed of one's own) keeps working, and
-- the new columns come last, as CREATE OR REPLACE VIEW requires.  The old
-- function goes once the view no longer uses it (the library serves only the
-- new one).
CREATE FUNCTION lance_catalog.may_read_change(object_ids bigint[], namespace_ids bigint[],
                                              role_id regrole, role name) RETURNS boolean
    AS 'MODULE_PATHNAME', 'lance_may_read_change' LANGUAGE C STABLE;
CREATE OR REPLACE VIEW lance_catalog.visible_change WITH (security_barrier) AS
    SELECT * FROM lance_catalog.change c
     WHERE lance_catalog.may_read_change(c.object_ids, c.namespace_ids, c.role_id, c.role);
DROP FUNCTION lance_catalog.may_read_change(text[], name);
REVOKE ALL ON lance_catalog.visible_change FROM PUBLIC;
GRANT SELECT ON lance_catalog.visible_change TO PUBLIC;

-- lance_changes(): a row with only seq set ends an answer whose last entries the
-- reader may not see, so that its "after" moves past them.
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
            EXIT WHEN lance_catalog.change_in_flight(expected, found_seq - 1);
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

-- Retrying failed drops (0.5.0): lance_retry_drops() queues every DropTable
-- that the drop processor failed again (for the worker or
-- lance_process_drops()) and answers how many; an administrator's call.  A
-- drop its maker set Failed (change.drop_failed false) stays Failed.
CREATE FUNCTION lance_retry_drops() RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION lance_retry_drops() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_retry_drops() TO lance_admin;

-- The catalog of record (0.5.0).  A catalog restored from a dump into
-- another database (a check of the backup, a staging copy) holds the same
-- storage settings and table locations as the live one: it must not remove
-- the live tables' data or write manifests, tags or branches there.  A row
-- is an identity, the cluster's system identifier and the database's oid,
-- recorded at install, by the update to 0.5.0 or by lance_adopt_storage().
-- pg_dump keeps the rows, and the restore's own CREATE EXTENSION records the
-- restored database next to them: a catalog is the one of record when all
-- its rows name one identity and that identity's database oid is its own
-- (a pg_upgrade keeps the oid and the rows, with a new system identifier).
CREATE TABLE lance_catalog.identity (
    system_identifier bigint NOT NULL,
    database_oid      oid NOT NULL,
    recorded_how      text NOT NULL CHECK (recorded_how IN ('install', 'update', 'adopt')),
    recorded_by       name,
    recorded_at       timestamptz NOT NULL DEFAULT pg_catalog.now()
);

COMMENT ON TABLE lance_catalog.identity IS 'lance_namespace: the cluster and database this catalog is the one of record in';

INSERT INTO lance_catalog.identity (system_identifier, database_oid, recorded_how, recorded_by)
SELECT s.system_identifier, d.oid, 'update', CURRENT_USER
  FROM pg_catalog.pg_control_system() s, pg_catalog.pg_database d
 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database();

SELECT pg_catalog.pg_extension_config_dump('lance_catalog.identity', '');

-- Make this catalog the one of record for its storage: its drops then remove
-- data and its commits write manifests again (superusers and lance_admin).
CREATE FUNCTION lance_adopt_storage() RETURNS jsonb
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;

REVOKE EXECUTE ON FUNCTION lance_adopt_storage() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_adopt_storage() TO lance_admin;

-- Retrying only the drops the processor failed (0.5.0): a DropTable its
-- maker set Failed with AlterTransaction is a stop that lance_retry_drops()
-- leaves alone.  Drops that failed before 0.5.0 cannot tell which they were:
-- none is retried by it (an administrator requeues one with
-- AlterTransaction's setStatusAction Queued).
ALTER TABLE lance_catalog.change ADD COLUMN drop_failed boolean NOT NULL DEFAULT false;
-- the view over the log shows the new column, as a fresh install's does
CREATE OR REPLACE VIEW lance_catalog.visible_change WITH (security_barrier) AS
    SELECT * FROM lance_catalog.change c
     WHERE lance_catalog.may_read_change(c.object_ids, c.namespace_ids, c.role_id, c.role);

-- Rights on the catalog (0.5.0): the tables and view this update makes or
-- replaces took the default privileges of the role running it (ALTER
-- DEFAULT PRIVILEGES ... GRANT ALL ON TABLES TO ...): the same clean-up as a
-- fresh install, over the whole schema.
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
