--
-- change_idle: a transaction that made a change holds lance_changes() back
-- for every reader until it ends, so it may idle at most
-- lance_namespace.change_idle_timeout (default 1min): its first change sets
-- idle_in_transaction_session_timeout to that for the rest of the
-- transaction, unless it is lower already.  Only a superuser sets the bound.
-- That the idle writer is then ended, and that a reader held back longer
-- than the bound is told its process, is test/feedhold's.
--
\set VERBOSITY default

LOAD 'lance_namespace';
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '';

SHOW lance_namespace.change_idle_timeout;
SHOW idle_in_transaction_session_timeout;

-- The entry locks this session holds (see changes.c).
CREATE FUNCTION pg_temp.entry_locks() RETURNS bigint
LANGUAGE sql AS $$
    SELECT count(*) FROM pg_locks
     WHERE locktype = 'advisory' AND objsubid = x'4345'::int AND pid = pg_backend_pid() AND granted
$$;

-- A change bounds the transaction's idle time; its end takes the bound away.
BEGIN;
SELECT lance_create_namespace('{"id": ["ci_a"]}') IS NOT NULL AS made;
SHOW idle_in_transaction_session_timeout;
SELECT pg_temp.entry_locks();
COMMIT;
SHOW idle_in_transaction_session_timeout;
SELECT pg_temp.entry_locks();
-- so does a rollback
BEGIN;
SELECT lance_create_namespace('{"id": ["ci_b"]}') IS NOT NULL AS made;
SHOW idle_in_transaction_session_timeout;
ROLLBACK;
SHOW idle_in_transaction_session_timeout;

-- A reading transaction is not bounded: it holds no reader back.
BEGIN;
SELECT lance_describe_namespace('{"id": ["ci_a"]}') IS NOT NULL AS read;
SHOW idle_in_transaction_session_timeout;
COMMIT;

-- A lower setting stays; a higher one is lowered; the session's own value
-- comes back at the end.
SET idle_in_transaction_session_timeout = '10s';
BEGIN;
SELECT lance_create_namespace('{"id": ["ci_c"]}') IS NOT NULL AS made;
SHOW idle_in_transaction_session_timeout;
COMMIT;
SET idle_in_transaction_session_timeout = '1h';
BEGIN;
SELECT lance_create_namespace('{"id": ["ci_d"]}') IS NOT NULL AS made;
SHOW idle_in_transaction_session_timeout;
COMMIT;
SHOW idle_in_transaction_session_timeout;
RESET idle_in_transaction_session_timeout;

-- A bound of 0 sets none.
SET lance_namespace.change_idle_timeout = 0;
BEGIN;
SELECT lance_create_namespace('{"id": ["ci_e"]}') IS NOT NULL AS made;
SHOW idle_in_transaction_session_timeout;
COMMIT;
SET lance_namespace.change_idle_timeout = '1500ms';
BEGIN;
SELECT lance_create_namespace('{"id": ["ci_f"]}') IS NOT NULL AS made;
SHOW idle_in_transaction_session_timeout;
COMMIT;
RESET lance_namespace.change_idle_timeout;

-- A change in a savepoint that rolls back: its entry is gone, and so are
-- its lock (no entry of the transaction is left to hold readers back for)
-- and the bound; the next change takes both again.
BEGIN;
SAVEPOINT p;
SELECT lance_create_namespace('{"id": ["ci_g"]}') IS NOT NULL AS made;
SELECT pg_temp.entry_locks();
SHOW idle_in_transaction_session_timeout;
ROLLBACK TO SAVEPOINT p;
SELECT pg_temp.entry_locks();
SHOW idle_in_transaction_session_timeout;
SELECT lance_create_namespace('{"id": ["ci_h"]}') IS NOT NULL AS made;
SELECT pg_temp.entry_locks();
SHOW idle_in_transaction_session_timeout;
-- a savepoint released keeps them, for the transaction
SAVEPOINT q;
SELECT lance_create_namespace('{"id": ["ci_i"]}') IS NOT NULL AS made;
RELEASE SAVEPOINT q;
SELECT pg_temp.entry_locks();
COMMIT;
SELECT pg_temp.entry_locks();
BEGIN;
SAVEPOINT p;
SELECT lance_create_namespace('{"id": ["ci_j"]}') IS NOT NULL AS made;
RELEASE SAVEPOINT p;
-- a later savepoint that rolls back does not take them away
SAVEPOINT r;
SELECT lance_create_namespace('{"id": ["ci_k"]}') IS NOT NULL AS made;
ROLLBACK TO SAVEPOINT r;
SELECT pg_temp.entry_locks();
SHOW idle_in_transaction_session_timeout;
COMMIT;
SELECT array_agg(name ORDER BY name) AS made FROM lance_catalog.object WHERE name LIKE 'ci\_%';

-- Only a superuser sets the bound: a role may not lift it for itself.
CREATE ROLE regress_lance_change_idle;
SET ROLE regress_lance_change_idle;
SET lance_namespace.change_idle_timeout = 0;
SELECT set_config('lance_namespace.change_idle_timeout', '0', true);
RESET ROLE;
DROP ROLE regress_lance_change_idle;

SELECT lance_drop_namespace(jsonb_build_object('id', ARRAY[name])) IS NOT NULL AS dropped
  FROM lance_catalog.object WHERE name LIKE 'ci\_%' ORDER BY name;
