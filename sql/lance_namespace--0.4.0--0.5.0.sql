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
DO $$
DECLARE
    e record;
    names text[];
    parent bigint;
    child bigint;
    oids bigint[];
    nids bigint[];
BEGIN
    FOR e IN SELECT c.seq, c.objects, c.role FROM lance_catalog.change c LOOP
        oids := '{}';
        nids := '{}';
        FOR i IN 1 .. COALESCE(pg_catalog.array_length(e.objects, 1), 0) LOOP
            nids := nids OPERATOR(pg_catalog.||) 0::bigint;
            parent := 0;
            child := 0;
            IF e.objects[i] IS NULL THEN
                child := NULL;
                names := '{}';
            ELSIF e.objects[i] OPERATOR(pg_catalog.=) '' THEN
                names := '{}';
            ELSE
                names := pg_catalog.string_to_array(e.objects[i], '$');
            END IF;
            FOR j IN 1 .. COALESCE(pg_catalog.array_length(names, 1), 0) LOOP
                SELECT o.id INTO child FROM lance_catalog.object o
                 WHERE o.parent_id OPERATOR(pg_catalog.=) parent
                   AND o.name OPERATOR(pg_catalog.=) names[j] COLLATE "C";
                IF NOT FOUND THEN
                    child := NULL;
                    EXIT;
                END IF;
                IF j OPERATOR(pg_catalog.<) pg_catalog.array_length(names, 1) THEN
                    nids := nids OPERATOR(pg_catalog.||) child;
                    parent := child;
                END IF;
            END LOOP;
            oids := oids OPERATOR(pg_catalog.||) child;
        END LOOP;
        UPDATE lance_catalog.change c
           SET object_ids = oids, namespace_ids = nids,
               role_id = (SELECT r.oid FROM pg_catalog.pg_roles r
                           WHERE r.rolname OPERATOR(pg_catalog.=) e.role)::pg_catalog.regrole
         WHERE c.seq OPERATOR(pg_catalog.=) e.seq;
    END LOOP;
END
$$;

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

-- The filtered view judges by identity.
DROP VIEW lance_catalog.visible_change;
DROP FUNCTION lance_catalog.may_read_change(text[], name);
CREATE FUNCTION lance_catalog.may_read_change(object_ids bigint[], namespace_ids bigint[],
                                              role_id regrole, role name) RETURNS boolean
    AS 'MODULE_PATHNAME', 'lance_may_read_change' LANGUAGE C STABLE;
CREATE VIEW lance_catalog.visible_change WITH (security_barrier) AS
    SELECT * FROM lance_catalog.change c
     WHERE lance_catalog.may_read_change(c.object_ids, c.namespace_ids, c.role_id, c.role);
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
