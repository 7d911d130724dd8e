/*
 * grants.c
 *		lance_grant, lance_revoke and lance_list_grants: privileges on
 *		namespaces and tables, and who may read which change log entries.
 *
 * Grants are catalog rows (lance_catalog.grant), dumped with the catalog,
 * and each grant or revoke is an entry of the change log.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/pg_compat.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../frame/frame.h"
#include "../json/json_edge.h"

/*
 * The object `id` names, which the caller needs `privilege` on; one it
 * cannot read does not exist for it.
 */
static int64
find_object(const LnId *id, LnPrivilege privilege, bool *is_namespace)
{
	int64 object = CATALOG_ROOT_ID;
	bool is_table = false;

	for (int i = 0; i < id->len; i++)
	{
		if (is_table || !catalog_lookup_child_id(object, id->names[i], &object, &is_table) ||
			(i == id->len - 1 && !access_may(object, LN_PRIV_READ)))
			ln_error(LN_NAMESPACE_NOT_FOUND, "no namespace or table \"%s\" exists",
					 ln_id_string(id, id->len));
	}
	*is_namespace = !is_table;
	if (!access_may(object, privilege))
		ln_error_detail(LN_PERMISSION_DENIED,
						"Ask a role with manage on it (or a member of lance_admin).",
						"role \"%s\" may not %s the grants on \"%s\"", access_caller_name(),
						privilege == LN_PRIV_MANAGE ? "change" : "read",
						id->len ? ln_id_string(id, id->len) : "the root namespace");
	return object;
}

static Jsonb *
grant_or_revoke(Jsonb *request, bool grant)
{
	LnId id;
	char *role_name;
	char *privilege_name;
	LnPrivilege privilege;
	Oid role;
	int64 object;
	bool is_namespace;
	bool changed;
	char *transaction_id;
	LnMap properties = {2, palloc(sizeof(char *) * 2), palloc(sizeof(char *) * 2)};
	LnMap no_context = {0, NULL, NULL};

	json_decode_grant(request, true, &id, &role_name, &privilege_name);
	privilege = access_parse_privilege(privilege_name);
	role = get_role_oid(role_name, true);
	if (!OidIsValid(role))
		ln_error(LN_INVALID_INPUT, "role \"%s\" does not exist", role_name);

	access_begin();
	catalog_begin();
	object = find_object(&id, LN_PRIV_MANAGE, &is_namespace);
	if (grant)
		changed = catalog_insert_grant(object, role, privilege, access_caller());
	else
		changed = catalog_delete_grant(object, role, privilege);

	changes_begin();
	if (changed)
	{
		properties.keys[0] = "role";
		properties.values[0] = role_name;
		properties.keys[1] = "privilege";
		properties.values[1] = privilege_name;
		changes_touch(&id, id.len, is_namespace, -1, object);
		changes_set_properties(&properties);
	}
	transaction_id = changes_record(grant ? "Grant" : "Revoke", &no_context, &no_context, NULL);
	catalog_end();
	return json_encode_grant(&id, role_name, privilege_name, changed, transaction_id);
}

PG_FUNCTION_INFO_V1(lance_grant);
Datum
lance_grant(PG_FUNCTION_ARGS)
{
	Jsonb *result = NULL;

	LANCE_SQL_ENTRY(result, grant_or_revoke(PG_GETARG_JSONB_P(0), true));
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(lance_revoke);
Datum
lance_revoke(PG_FUNCTION_ARGS)
{
	Jsonb *result = NULL;

	LANCE_SQL_ENTRY(result, grant_or_revoke(PG_GETARG_JSONB_P(0), false));
	PG_RETURN_JSONB_P(result);
}

static Jsonb *
list_grants(Jsonb *request)
{
	LnId id;
	bool is_namespace;
	char **roles;
	char **privileges;
	int n;

	json_decode_grant(request, false, &id, NULL, NULL);
	access_begin();
	catalog_begin();
	n = catalog_list_grants(find_object(&id, LN_PRIV_READ, &is_namespace), &roles, &privileges);
	catalog_end();
	return json_encode_grants(&id, n, roles, privileges);
}

PG_FUNCTION_INFO_V1(lance_list_grants);
Datum
lance_list_grants(PG_FUNCTION_ARGS)
{
	Jsonb *result = NULL;

	LANCE_SQL_ENTRY(result, list_grants(PG_GETARG_JSONB_P(0)));
	PG_RETURN_JSONB_P(result);
}

/*
 * What the current caller may read, by object path, for the entries one
 * statement reads: a feed reader meets the same few objects in entry after
 * entry.  Kept for one statement of one transaction and one caller (and
 * one command of it, so that a grant made since is seen), and for at most
 * READABLE_MAX_PATHS short paths, so that it stays small; others are
 * looked up each time.
 */
#define READABLE_KEY_SIZE  256
#define READABLE_MAX_PATHS 10000

typedef struct ReadableEntry
{
	char path[READABLE_KEY_SIZE];
	bool readable;
} ReadableEntry;

static HTAB *readable_cache = NULL;
static LocalTransactionId readable_lxid = InvalidLocalTransactionId;
static TimestampTz readable_statement = 0;
static CommandId readable_command = InvalidCommandId;
static Oid readable_caller = InvalidOid;

static HTAB *
readable_paths(void)
{
	CommandId command = GetCurrentCommandId(false);
	TimestampTz statement = GetCurrentStatementStartTimestamp();

	if (readable_cache == NULL || readable_lxid != LN_MY_LXID() ||
		readable_statement != statement || readable_command != command ||
		readable_caller != access_caller())
	{
		HASHCTL ctl;

		/* an earlier transaction's table went with its memory */
		if (readable_cache != NULL && readable_lxid == LN_MY_LXID())
			hash_destroy(readable_cache);
		readable_cache = NULL;
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = READABLE_KEY_SIZE;
		ctl.entrysize = sizeof(ReadableEntry);
		ctl.hcxt = TopTransactionContext;
		readable_cache = hash_create("lance_namespace readable paths", 64, &ctl,
									 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
		readable_lxid = LN_MY_LXID();
		readable_statement = statement;
		readable_command = command;
		readable_caller = access_caller();
	}
	return readable_cache;
}

/*
 * Whether the caller may see every name `path` holds (n ids: 0, the
 * namespaces below the root, the object): it may read the object (for one
 * gone, the nearest namespace before it on the path that is still there),
 * and every namespace of the path still there that is not above that now
 * (catalog session open).
 */
static bool
may_read_path(int n, const int64 *path)
{
	HTAB *cache = NULL;
	ReadableEntry *entry = NULL;
	char key[READABLE_KEY_SIZE];
	bool readable;
	int len = 0;

	for (int i = 0; i < n && len >= 0; i++)
	{
		int w = snprintf(key + len, sizeof(key) - len, "%s" INT64_FORMAT, i ? "/" : "", path[i]);

		len = (w < 0 || w >= (int)sizeof(key) - len) ? -1 : len + w;
	}
	if (len >= 0)
	{
		cache = readable_paths();
		entry = hash_search(cache, key, HASH_FIND, NULL);
		if (entry != NULL)
			return entry->readable;
	}
	readable = catalog_may_read_path(n, path, access_caller());
	/* kept once answered: an error leaves no entry without an answer */
	if (cache != NULL && hash_get_num_entries(cache) < READABLE_MAX_PATHS)
	{
		entry = hash_search(cache, key, HASH_ENTER, NULL);
		entry->readable = readable;
	}
	return readable;
}

/*
 * lance_catalog.may_read_change(object_ids, namespace_ids, role_id, role):
 * whether the current user may read a change log entry: one made by a role
 * it has the privileges of (the role with that OID, still under that name),
 * or one whose objects, and the namespaces on their paths, it can all read
 * now, by id (for one gone since, the nearest namespace above it on the path
 * that is still there).  Called per
 * entry by the view lance_catalog.visible_change.
 */
PG_FUNCTION_INFO_V1(lance_may_read_change);
Datum
lance_may_read_change(PG_FUNCTION_ARGS)
{
	ArrayType *object_ids;
	ArrayType *namespace_ids;
	Datum *objects;
	bool *object_nulls;
	int nobjects;
	Datum *above;
	bool *above_nulls;
	int nabove;
	int64 *path;
	int start = 0;
	bool may;

	access_begin();
	if (!PG_ARGISNULL(2) && !PG_ARGISNULL(3) &&
		access_acts_for(PG_GETARG_OID(2), NameStr(*PG_GETARG_NAME(3))))
		PG_RETURN_BOOL(true);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_BOOL(false);
	object_ids = PG_GETARG_ARRAYTYPE_P(0);
	namespace_ids = PG_GETARG_ARRAYTYPE_P(1);
	deconstruct_array(object_ids, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &objects,
					  &object_nulls, &nobjects);
	deconstruct_array(namespace_ids, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &above,
					  &above_nulls, &nabove);
	path = palloc(sizeof(int64) * (nabove + 1));

	/* every object it touched, so that an entry shows no name the caller may not see */
	may = nobjects > 0;
	catalog_begin();
	for (int k = 0; k < nobjects && may; k++)
	{
		int n = 0;

		CHECK_FOR_INTERRUPTS();
		/* object k's namespaces: from its 0 (the root) up to the next object's */
		if (start >= nabove || above_nulls[start] || DatumGetInt64(above[start]) != CATALOG_ROOT_ID)
		{
			may = false; /* not an entry this version wrote: shown to no one but admins */
			break;
		}
		do
			path[n++] = DatumGetInt64(above[start++]);
		while (start < nabove && !above_nulls[start] &&
			   DatumGetInt64(above[start]) != CATALOG_ROOT_ID);
		if (!object_nulls[k])
			path[n++] = DatumGetInt64(objects[k]);
		may = may_read_path(n, path);
	}
	catalog_end();
	PG_RETURN_BOOL(may);
}
