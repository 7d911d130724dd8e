/*
 * catalog_access.c
 *		Privileges and API keys in the catalog: grants on namespaces and
 *		tables, whether a change log entry's names are a role's to see, and
 *		the keys a request authenticates with.
 *
 * What access.c asks and what an administrator's functions (sql/grants.c,
 * sql/api_keys.c) change; the check that a role holds a privilege, asked
 * on every request, walks the tree by index (catalog_tree.c).  A key is
 * kept as its SHA-256 hash alone, and authentication finds it by index
 * (catalog_index.c); the other statements run with catalog.c's plans.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "catalog_index.h"
#include "catalog_internal.h"

/*
 * A grant counts while its role is the one it was made for: the role with
 * its OID still has the name it had (grant.role_name).  A role dropped, and
 * another made later that the OID is given to again, gets nothing; so does
 * a role renamed in a session that did not have the library loaded (see
 * catalog_rename_role), until it is granted again.
 */
#define GRANT_ROLE_IS_LIVE                                                                         \
	"EXISTS (SELECT FROM pg_catalog.pg_roles r"                                                    \
	"         WHERE r.oid = g.role::pg_catalog.oid AND r.rolname = g.role_name)"

/* This file's statements, by their numbers (catalog_internal.h). */
static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	/*
	 * Whether role $2 may see every name path $1 (0, the namespaces below the
	 * root down to the object, then it) holds, so that an entry shows no name
	 * its reader could not see otherwise.  Read is needed on the path's last
	 * id if it is still there, else on the nearest one before it that is; on
	 * the nearest one still there before any id that is gone; and on every
	 * namespace of the path still there that is not above the first of these
	 * now (one above it is named by that object's own id; one it was moved
	 * out of is not).  Read on one includes read through a namespace above it
	 * now.  Ids are never used again, so what is found is what the path
	 * named.  A few look-ups per id of the path.
	 */
	[STMT_MAY_READ_PATH] =
		{"WITH RECURSIVE p(id, n) AS ("
		 "   SELECT * FROM pg_catalog.unnest($1::bigint[]) WITH ORDINALITY),"
		 /* per id: itself if it is still there, else the nearest before it that is */
		 " k(id, n, there) AS ("
		 "   SELECT (SELECT q.id FROM p q JOIN lance_catalog.object o ON o.id = q.id"
		 "            WHERE q.n <= p.n ORDER BY q.n DESC LIMIT 1), p.n,"
		 "          EXISTS (SELECT FROM lance_catalog.object o WHERE o.id = p.id)"
		 "     FROM p),"
		 " last(id) AS (SELECT id FROM k ORDER BY n DESC LIMIT 1),"
		 " above_last(id) AS ("
		 "   SELECT id FROM last"
		 "   UNION ALL"
		 "   SELECT o.parent_id FROM lance_catalog.object o JOIN above_last a ON o.id = a.id"
		 "    WHERE o.parent_id IS NOT NULL),"
		 " named(id) AS ("
		 "   SELECT id FROM last"
		 "   UNION"
		 "   SELECT k.id FROM k"
		 "    WHERE k.n > 1 AND NOT (k.there AND k.id IN (SELECT id FROM above_last))),"
		 " up(start, id) AS ("
		 "   SELECT id, id FROM named WHERE id IS NOT NULL"
		 "   UNION"
		 "   SELECT up.start, o.parent_id FROM lance_catalog.object o JOIN up ON o.id = up.id"
		 "    WHERE o.parent_id IS NOT NULL)"
		 " SELECT pg_catalog.cardinality($1::bigint[]) > 0"
		 "    AND NOT EXISTS (SELECT FROM named"
		 "     WHERE named.id IS NULL"
		 "        OR NOT EXISTS (SELECT FROM up JOIN lance_catalog.grant g ON g.object_id = up.id"
		 "                        WHERE up.start = named.id AND " GRANT_ROLE_IS_LIVE
		 "                          AND pg_catalog.pg_has_role($2, g.role::pg_catalog.oid,"
		 "                                                     'USAGE')))",
		 2,
		 {INT8ARRAYOID, OIDOID}},
	/* granted again: the row names the role as it is now (see GRANT_ROLE_IS_LIVE) */
	[STMT_INSERT_GRANT] =
		{"INSERT INTO lance_catalog.grant AS g (object_id, role, privilege, granted_by, role_name)"
		 " VALUES ($1, $2::pg_catalog.regrole, $3, $4::pg_catalog.regrole,"
		 "         (SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid = $2))"
		 " ON CONFLICT (object_id, role, privilege) DO UPDATE"
		 "   SET role_name = excluded.role_name, granted_by = excluded.granted_by,"
		 "       granted_at = excluded.granted_at"
		 "   WHERE g.role_name <> excluded.role_name"
		 " RETURNING 1",
		 4,
		 {INT8OID, OIDOID, TEXTOID, OIDOID}},
	[STMT_FORGET_ROLE_GRANTS] =
		{"DELETE FROM lance_catalog.grant WHERE role = $1::pg_catalog.regrole", 1, {OIDOID}},
	[STMT_FORGET_ROLE_KEYS] =
		{"DELETE FROM lance_catalog.api_key WHERE role = $1::pg_catalog.regrole", 1, {OIDOID}},
	[STMT_RENAME_ROLE] = {"UPDATE lance_catalog.grant SET role_name = $2"
						  " WHERE role = $1::pg_catalog.regrole AND role_name = $3",
						  3,
						  {OIDOID, NAMEOID, NAMEOID}},
	/* a role's request limit, made or replaced (role_limits.c) */
	[STMT_SET_ROLE_LIMIT] =
		{"INSERT INTO lance_catalog.role_limit AS l"
		 "       (role, role_name, requests_per_second, burst, set_by)"
		 " VALUES ($1::pg_catalog.regrole, $2, $3, $4, $5::pg_catalog.regrole)"
		 " ON CONFLICT (role) DO UPDATE SET role_name = EXCLUDED.role_name,"
		 "   requests_per_second = EXCLUDED.requests_per_second, burst = EXCLUDED.burst,"
		 "   set_by = EXCLUDED.set_by, set_at = pg_catalog.now()"
		 " WHERE (l.requests_per_second, l.burst, l.role_name)"
		 "       IS DISTINCT FROM (EXCLUDED.requests_per_second, EXCLUDED.burst, "
		 "EXCLUDED.role_name)"
		 " RETURNING 1",
		 5,
		 {OIDOID, NAMEOID, FLOAT8OID, INT4OID, OIDOID}},
	[STMT_REMOVE_ROLE_LIMIT] = {"DELETE FROM lance_catalog.role_limit"
								" WHERE role = $1::pg_catalog.regrole RETURNING 1",
								1,
								{OIDOID}},
	/* the limits of roles that exist, by the OID (as they are enforced), by current name */
	[STMT_LIST_ROLE_LIMITS] =
		{"SELECT r.rolname::pg_catalog.text, l.requests_per_second, l.burst,"
		 "       (SELECT s.rolname::pg_catalog.text FROM pg_catalog.pg_roles s"
		 "         WHERE s.oid OPERATOR(pg_catalog.=) l.set_by::pg_catalog.oid),"
		 "       pg_catalog.to_char(l.set_at AT TIME ZONE 'UTC', "
		 "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
		 "  FROM lance_catalog.role_limit l"
		 "  JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) l.role::pg_catalog.oid"
		 " WHERE $1::pg_catalog.name IS NULL OR r.rolname OPERATOR(pg_catalog.=) $1"
		 " ORDER BY r.rolname",
		 1,
		 {NAMEOID}},
	[STMT_FORGET_ROLE_LIMITS] =
		{"DELETE FROM lance_catalog.role_limit WHERE role = $1::pg_catalog.regrole", 1, {OIDOID}},
	/* by the OID alone, as limits hold: a name missed elsewhere is caught up here */
	[STMT_RENAME_ROLE_LIMITS] = {"UPDATE lance_catalog.role_limit SET role_name = $2"
								 " WHERE role = $1::pg_catalog.regrole AND role_name <> $2"
								 "   AND $3::pg_catalog.name IS NOT NULL",
								 3,
								 {OIDOID, NAMEOID, NAMEOID}},
	[STMT_RENAME_ROLE_KEYS] = {"UPDATE lance_catalog.api_key SET role_name = $2"
							   " WHERE role = $1::pg_catalog.regrole AND role_name = $3",
							   3,
							   {OIDOID, NAMEOID, NAMEOID}},
	[STMT_DELETE_GRANT] = {"DELETE FROM lance_catalog.grant"
						   " WHERE object_id = $1 AND role = $2::pg_catalog.regrole"
						   "   AND privilege = $3 RETURNING 1",
						   3,
						   {INT8OID, OIDOID, TEXTOID}},
	[STMT_LIST_GRANTS] = {"SELECT role::text, privilege FROM lance_catalog.grant g"
						  " WHERE object_id = $1 AND " GRANT_ROLE_IS_LIVE
						  " ORDER BY role::text COLLATE \"C\", privilege",
						  1,
						  {INT8OID}},
	[STMT_INSERT_API_KEY] =
		{"INSERT INTO lance_catalog.api_key"
		 "       (id, role, key_hash, created_by, role_name, expires_at)"
		 " VALUES ($1, $2::pg_catalog.regrole, pg_catalog.sha256($3),"
		 "         $4::pg_catalog.regrole,"
		 "         (SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid = $2),"
		 "         pg_catalog.now() + $5)",
		 5,
		 {TEXTOID, OIDOID, BYTEAOID, OIDOID, INTERVALOID}},
	/*
	 * The use of a key, kept to the minute; a request that finds the row
	 * locked (another request of the same key writing it) leaves it.
	 */
	[STMT_TOUCH_API_KEY] = {"UPDATE lance_catalog.api_key SET last_used_at = pg_catalog.now()"
							" WHERE id = (SELECT k.id FROM lance_catalog.api_key k WHERE k.id = $1"
							"               AND (k.last_used_at IS NULL"
							"                    OR k.last_used_at < pg_catalog.now() - '1 "
							"minute'::pg_catalog.interval)"
							"               FOR UPDATE SKIP LOCKED)",
							1,
							{TEXTOID}},
	/* a key whose role was dropped since is no key */
	[STMT_DELETE_API_KEY] = {"DELETE FROM lance_catalog.api_key WHERE id = $1 RETURNING 1",
							 1,
							 {TEXTOID}},
	[STMT_LIST_API_KEYS] =
		{"SELECT id, role::pg_catalog.oid, created_by::pg_catalog.oid, created_at, expires_at,"
		 "       last_used_at"
		 "  FROM lance_catalog.api_key ORDER BY created_at, id",
		 0,
		 {InvalidOid}},
};

/* Run one of the statements above; catalog.c prepares and keeps its plan. */
static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	return catalog_execute(stmt, &statement_defs[stmt], values, nulls, limit);
}

/*
 * True if `role` may see every name `path` holds (n ids: 0, the namespaces
 * below the root, the object): see STMT_MAY_READ_PATH.
 */
bool
catalog_may_read_path(int n, const int64 *path, Oid role)
{
	Datum values[2] = {catalog_int8_array_datum(path, NULL, n), ObjectIdGetDatum(role)};
	bool isnull;

	execute(STMT_MAY_READ_PATH, values, NULL, 1);
	return DatumGetBool(catalog_result_datum(0, 1, &isnull));
}

/* True if role `role` exists and is named `name` (catalog_index.c). */
bool
catalog_role_is(Oid role, const char *name)
{
	return catalog_index_role_is(role, name);
}

/*
 * Remove the grants, API keys and request limit of `role`, which is being dropped, if this
 * database holds a catalog of the library's version; otherwise leave them to
 * the check that they name a live role (GRANT_ROLE_IS_LIVE).
 */
void
catalog_forget_role(Oid role)
{
	Datum values[1] = {ObjectIdGetDatum(role)};

	if (!catalog_is_current())
		return;
	catalog_begin();
	execute(STMT_FORGET_ROLE_GRANTS, values, NULL, 0);
	execute(STMT_FORGET_ROLE_KEYS, values, NULL, 0);
	execute(STMT_FORGET_ROLE_LIMITS, values, NULL, 0);
	catalog_end();
}

/* Role `role` was renamed from `old_name` to `new_name`: its grants, keys and limit follow. */
void
catalog_rename_role(Oid role, const char *old_name, const char *new_name)
{
	Datum values[3] = {ObjectIdGetDatum(role), CStringGetDatum(new_name),
					   CStringGetDatum(old_name)};
	NameData new_data;
	NameData old_data;

	if (!catalog_is_current())
		return;
	namestrcpy(&new_data, new_name);
	namestrcpy(&old_data, old_name);
	values[1] = NameGetDatum(&new_data);
	values[2] = NameGetDatum(&old_data);
	catalog_begin();
	execute(STMT_RENAME_ROLE, values, NULL, 0);
	execute(STMT_RENAME_ROLE_KEYS, values, NULL, 0);
	execute(STMT_RENAME_ROLE_LIMITS, values, NULL, 0);
	catalog_end();
}

/* Grant `privilege` on object_id to `role`; false if it was granted already. */
bool
catalog_insert_grant(int64 object_id, Oid role, LnPrivilege privilege, Oid granted_by)
{
	Datum values[4] = {Int64GetDatum(object_id), ObjectIdGetDatum(role),
					   CStringGetTextDatum(ln_privilege_name(privilege)),
					   ObjectIdGetDatum(granted_by)};

	execute(STMT_INSERT_GRANT, values, NULL, 0);
	return SPI_processed > 0;
}

/* Revoke `privilege` on object_id from `role`; false if it was not granted. */
bool
catalog_delete_grant(int64 object_id, Oid role, LnPrivilege privilege)
{
	Datum values[3] = {Int64GetDatum(object_id), ObjectIdGetDatum(role),
					   CStringGetTextDatum(ln_privilege_name(privilege))};

	execute(STMT_DELETE_GRANT, values, NULL, 0);
	return SPI_processed > 0;
}

/* The grants on object_id: role names and privileges, by role name. */
int
catalog_list_grants(int64 object_id, char ***roles, char ***privileges)
{
	Datum values[1] = {Int64GetDatum(object_id)};
	int n;

	execute(STMT_LIST_GRANTS, values, NULL, 0);
	n = (int)SPI_processed;
	*roles = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	*privileges = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*roles)[i] = catalog_result_text(i, 1);
		(*privileges)[i] = catalog_result_text(i, 2);
	}
	return n;
}

/*
 * Keep API key `id` for `role`; the catalog stores only the hash of `key`.
 * It expires `valid_for` from now (NULL: never).
 */
void
catalog_insert_api_key(const char *id, const char *key, Oid role, Oid created_by,
					   const Interval *valid_for)
{
	Datum values[5] = {CStringGetTextDatum(id), ObjectIdGetDatum(role),
					   PointerGetDatum(cstring_to_text(key)), ObjectIdGetDatum(created_by),
					   PointerGetDatum(valid_for)};
	char nulls[5] = {' ', ' ', ' ', ' ', valid_for ? ' ' : 'n'};

	execute(STMT_INSERT_API_KEY, values, nulls, 0);
}

/*
 * The role API key `key` (whose id is `id`) acts as, or InvalidOid if there
 * is no such key or it has expired (*expired says which).  A key in use has
 * its last use noted, at most once a minute, and not where nothing may be
 * written (a standby, a read-only transaction).
 */
Oid
catalog_authenticate(const char *id, const char *key, bool *expired)
{
	uint8 hash[PG_SHA256_DIGEST_LENGTH];
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	TimestampTz expires_at = DT_NOBEGIN;
	TimestampTz last_used_at = DT_NOBEGIN;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Oid role;

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *)key, strlen(key)) < 0 ||
		pg_cryptohash_final(ctx, hash, sizeof(hash)) < 0)
		elog(ERROR, "could not compute SHA-256: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
	catalog_check_schema_version();
	*expired = false;
	role = catalog_index_authenticate(id, hash, sizeof(hash), &expires_at, &last_used_at);
	if (!OidIsValid(role))
		return InvalidOid;
	if (expires_at != DT_NOBEGIN && expires_at <= GetCurrentTimestamp())
	{
		*expired = true;
		return InvalidOid;
	}
	if ((last_used_at == DT_NOBEGIN || last_used_at < now - 60 * USECS_PER_SEC) &&
		!RecoveryInProgress() && !XactReadOnly)
	{
		Datum values[1] = {CStringGetTextDatum(id)};

		execute(STMT_TOUCH_API_KEY, values, NULL, 0);
	}
	return role;
}

/* Forget API key `id`; false if there was none. */
bool
catalog_delete_api_key(const char *id)
{
	Datum values[1] = {CStringGetTextDatum(id)};

	execute(STMT_DELETE_API_KEY, values, NULL, 0);
	return SPI_processed > 0;
}

/* Every API key: ids, roles, who made each and when (never a key). */
int
catalog_list_api_keys(char ***ids, Oid **roles, Oid **created_by, TimestampTz **created_at,
					  TimestampTz **expires_at, TimestampTz **last_used_at)
{
	int n;
	bool isnull;

	execute(STMT_LIST_API_KEYS, NULL, NULL, 0);
	n = (int)SPI_processed;
	*ids = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	*roles = MemoryContextAlloc(catalog_result_cxt, sizeof(Oid) * (n + 1));
	*created_by = MemoryContextAlloc(catalog_result_cxt, sizeof(Oid) * (n + 1));
	*created_at = MemoryContextAlloc(catalog_result_cxt, sizeof(TimestampTz) * (n + 1));
	*expires_at = MemoryContextAlloc(catalog_result_cxt, sizeof(TimestampTz) * (n + 1));
	*last_used_at = MemoryContextAlloc(catalog_result_cxt, sizeof(TimestampTz) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*ids)[i] = catalog_result_text(i, 1);
		(*roles)[i] = DatumGetObjectId(catalog_result_datum(i, 2, &isnull));
		(*created_by)[i] = DatumGetObjectId(catalog_result_datum(i, 3, &isnull));
		if (isnull)
			(*created_by)[i] = InvalidOid;
		(*created_at)[i] = DatumGetTimestampTz(catalog_result_datum(i, 4, &isnull));
		(*expires_at)[i] = DatumGetTimestampTz(catalog_result_datum(i, 5, &isnull));
		if (isnull)
			(*expires_at)[i] = DT_NOBEGIN;
		(*last_used_at)[i] = DatumGetTimestampTz(catalog_result_datum(i, 6, &isnull));
		if (isnull)
			(*last_used_at)[i] = DT_NOBEGIN;
	}
	return n;
}

/*
 * Set the request limit of `role` (named `role_name`) through lance_rest():
 * `requests_per_second`, in bursts of up to `burst`.  False if it was that
 * already.
 */
bool
catalog_set_role_limit(Oid role, const char *role_name, double requests_per_second, int burst,
					   Oid set_by)
{
	NameData name;
	Datum values[5];

	namestrcpy(&name, role_name);
	values[0] = ObjectIdGetDatum(role);
	values[1] = NameGetDatum(&name);
	values[2] = Float8GetDatum(requests_per_second);
	values[3] = Int32GetDatum(burst);
	values[4] = ObjectIdGetDatum(set_by);
	execute(STMT_SET_ROLE_LIMIT, values, NULL, 0);
	return SPI_processed > 0;
}

/* Remove the request limit of `role`; false if it had none. */
bool
catalog_remove_role_limit(Oid role)
{
	Datum values[1] = {ObjectIdGetDatum(role)};

	execute(STMT_REMOVE_ROLE_LIMIT, values, NULL, 0);
	return SPI_processed > 0;
}

/*
 * The request limits of the roles that exist (of `role_name` alone, unless
 * NULL), by role name: how many, in *limits, in the result context.
 */
int
catalog_list_role_limits(const char *role_name, CatalogRoleLimit **limits)
{
	NameData name;
	Datum values[1];
	char nulls[1] = {role_name ? ' ' : 'n'};
	int n;

	if (role_name != NULL)
		namestrcpy(&name, role_name);
	values[0] = NameGetDatum(&name);
	execute(STMT_LIST_ROLE_LIMITS, values, nulls, 0);
	n = (int)SPI_processed;
	*limits = MemoryContextAllocZero(catalog_result_cxt, sizeof(CatalogRoleLimit) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;

		(*limits)[i].role_name = catalog_result_text(i, 1);
		(*limits)[i].requests_per_second = DatumGetFloat8(catalog_result_datum(i, 2, &isnull));
		(*limits)[i].burst = DatumGetInt32(catalog_result_datum(i, 3, &isnull));
		(*limits)[i].set_by = catalog_result_text(i, 4);
		(*limits)[i].set_at = catalog_result_text(i, 5);
	}
	return n;
}

/* The request limit of `role` through lance_rest(), if it has one (by index, no statement). */
bool
catalog_role_limit(Oid role, double *requests_per_second, int *burst)
{
	catalog_check_schema_version();
	return catalog_index_role_limit(role, requests_per_second, burst);
}
