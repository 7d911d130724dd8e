/* lance_namespace 0.5.0 -> 0.6.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.6.0'" to load this file. \quit

-- The request headers lance_rest() records, apart from the context the
-- caller sent (which entries made before 0.6.0 hold both in, the headers as
-- "header.<name>": they cannot be told apart, so they stay there).
ALTER TABLE lance_catalog.change ADD COLUMN headers jsonb NOT NULL DEFAULT '{}';
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
