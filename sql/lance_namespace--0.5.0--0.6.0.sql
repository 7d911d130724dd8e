/* lance_namespace 0.5.0 -> 0.6.0 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION lance_namespace UPDATE TO '0.6.0'" to load this file. \quit

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

DROP FUNCTION lance_list_api_keys();
CREATE FUNCTION lance_list_api_keys(
    OUT id text, OUT role regrole, OUT created_by regrole, OUT created_at timestamptz,
    OUT expires_at timestamptz, OUT last_used_at timestamptz)
RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE;

REVOKE EXECUTE ON FUNCTION lance_create_api_key(name, interval), lance_list_api_keys() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lance_create_api_key(name, interval), lance_list_api_keys() TO lance_admin;
