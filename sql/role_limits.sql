--
-- role_limits: an administrator's request limit per role through
-- lance_rest() (the gateway), lance_set_role_limits and
-- lance_list_role_limits.  The tokens live in shared memory, which this
-- suite's server does not have (the library is not preloaded): the limits
-- are kept and listed as not enforced, with a warning.  test/gateway/run.sh
-- sends requests over a limit through a gateway to a server that preloads
-- it (429, code 21, Retry-After).
--
CREATE ROLE regress_rl_tenant;
CREATE ROLE regress_rl_other;
CREATE ROLE regress_rl_admin IN ROLE lance_admin;

-- a limit, its burst one second's worth when not given, and the listing
SELECT lance_set_role_limits('{"role": "regress_rl_tenant", "requests_per_second": 2.5}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": 1, "burst": 2}');
SELECT jsonb_path_query(lance_list_role_limits('{}'), '$.limits[*] ? (@.role starts with "regress_rl_")') - 'set_at' AS l;
SELECT lance_list_role_limits('{}') -> 'enforced' AS enforced;
SELECT (lance_list_role_limits('{"role": "regress_rl_other"}') #> '{limits,0}') - 'set_at' AS other;
-- replacing one; an administrator's call, by a member of lance_admin too
SET ROLE regress_rl_admin;
SELECT lance_set_role_limits('{"role": "regress_rl_tenant", "requests_per_second": 100, "burst": 10}');
RESET ROLE;
SELECT lance_list_role_limits('{"role": "regress_rl_tenant"}') #>> '{limits,0,set_by}' AS set_by;
-- null removes it; removing none is no change
SELECT lance_set_role_limits('{"role": "regress_rl_tenant", "requests_per_second": null}');
SELECT lance_set_role_limits('{"role": "regress_rl_tenant", "requests_per_second": null}') -> 'changed' AS changed;
SELECT lance_list_role_limits('{"role": "regress_rl_tenant"}') -> 'limits' AS none;

-- the client's mistakes: LN013
SELECT lance_set_role_limits('{"requests_per_second": 1}');
SELECT lance_set_role_limits('{"role": "regress_rl_nobody", "requests_per_second": 1}');
SELECT lance_set_role_limits('{"role": "regress_rl_other"}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": 0}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": -1}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": "10"}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": 1e9}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": 1, "burst": 0}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": 1, "burst": 1.5}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": 1e-12}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": null, "burst": 5}');
SELECT lance_set_role_limits('{"role": "regress_rl_other", "request_per_second": 1}');
SELECT lance_set_role_limits('[]');
SELECT lance_set_role_limits(NULL);
SELECT lance_list_role_limits('{"role": 7}');
SELECT lance_list_role_limits('{"requests_per_second": 1}');
-- none of them changed the limit
SELECT (lance_list_role_limits('{"role": "regress_rl_other"}') #> '{limits,0}') - 'set_at' AS other;

-- not for other roles: no EXECUTE, and the functions refuse them too
SET ROLE regress_rl_other;
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": null}');
SELECT lance_list_role_limits('{}');
RESET ROLE;
GRANT EXECUTE ON FUNCTION lance_set_role_limits(jsonb), lance_list_role_limits(jsonb) TO regress_rl_other;
SET ROLE regress_rl_other;
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": null}');
SELECT lance_list_role_limits('{}');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION lance_set_role_limits(jsonb), lance_list_role_limits(jsonb) FROM regress_rl_other;
-- and no rights on the table
SET ROLE regress_rl_other;
SELECT count(*) FROM lance_catalog.role_limit;
RESET ROLE;

-- setting the same again is no change
SELECT lance_set_role_limits('{"role": "regress_rl_other", "requests_per_second": 1, "burst": 2}') -> 'changed' AS changed;

-- A limit holds for its role by OID: renamed in another database, where
-- the library cannot carry the name, it still holds (as a grant would
-- lapse), listed under the new name; it follows a rename here, and goes
-- with the role when it is dropped; a role made again under the dropped
-- one's name is unlimited.
SELECT current_database() AS regress_db \gset
\c postgres
ALTER ROLE regress_rl_other RENAME TO regress_rl_elsewhere;
\c :regress_db
SELECT (lance_list_role_limits('{"role": "regress_rl_elsewhere"}') #> '{limits,0}') - 'set_at' AS renamed_elsewhere;
SELECT role_name FROM lance_catalog.role_limit WHERE role = 'regress_rl_elsewhere'::regrole;
ALTER ROLE regress_rl_elsewhere RENAME TO regress_rl_renamed;
SELECT (lance_list_role_limits('{"role": "regress_rl_renamed"}') #> '{limits,0}') - 'set_at' AS renamed;
SELECT role_name FROM lance_catalog.role_limit WHERE role = 'regress_rl_renamed'::regrole;
DROP ROLE regress_rl_renamed;
SELECT count(*) AS left_behind FROM lance_catalog.role_limit WHERE role_name LIKE 'regress_rl_%';
CREATE ROLE regress_rl_renamed;
SELECT lance_list_role_limits('{"role": "regress_rl_renamed"}') -> 'limits' AS none;

DROP ROLE regress_rl_tenant, regress_rl_renamed, regress_rl_admin;
