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
