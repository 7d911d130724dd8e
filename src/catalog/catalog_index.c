/*
 * catalog_index.c
 *		The catalog's key look-ups by direct index scans: a child by its
 *		parent and name, and a branch's latest versions.
 *
 * These run on every version operation: Lance asks for the latest version
 * before each read and each commit.  An SPI statement costs tens of
 * thousands of instructions before it reads a row (executor start, plan
 * revalidation), several times the index descent itself, so these scan the
 * catalog's unique indexes as PostgreSQL's own catalog code does
 * (systable_beginscan), under an MVCC snapshot taken as SPI would take it:
 * the transaction's, with the current command id, so that a look-up sees
 * what this transaction wrote before it.  Only plain reads are done here;
 * row locks and writes stay SQL statements (catalog_objects.c and the
 * other statement files).
 *
 * The relations, their indexes and the columns' numbers are found by name
 * once and kept until a relcache invalidation names one of them: an upgrade
 * that rebuilt a table, or a REINDEX, finds them anew.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "access/xact.h"
#include "storage/lmgr.h"
#include "utils/syscache.h"
#include "catalog/pg_authid.h"

#include "catalog_index.h"

/* the columns read here, by name, as the install scripts make them */
enum
{
	OBJ_ID,
	OBJ_PARENT_ID,
	OBJ_KIND,
	OBJ_NAME,
	OBJ_LOCATION,
	OBJ_DECLARED,
	OBJ_PROPERTIES,
	OBJ_LOCATION_DERIVED,
	OBJ_NCOLUMNS
};
static const char *const object_columns[OBJ_NCOLUMNS] = {
	"id", "parent_id", "kind", "name", "location", "declared", "properties", "location_derived"};

enum
{
	VER_TABLE_ID,
	VER_BRANCH,
	VER_VERSION,
	VER_MANIFEST_PATH,
	VER_MANIFEST_SIZE,
	VER_E_TAG,
	VER_METADATA,
	VER_CREATED_AT,
	VER_NCOLUMNS
};
static const char *const version_columns[VER_NCOLUMNS] = {
	"table_id",		 "branch", "version",  "manifest_path",
	"manifest_size", "e_tag",  "metadata", "created_at"};

enum
{
	KEY_ID,
	KEY_ROLE,
	KEY_HASH,
	KEY_ROLE_NAME,
	KEY_EXPIRES_AT,
	KEY_LAST_USED_AT,
	KEY_NCOLUMNS
};
static const char *const api_key_columns[KEY_NCOLUMNS] = {
	"id", "role", "key_hash", "role_name", "expires_at", "last_used_at"};

enum
{
	STO_LOCATION,
	STO_OPTIONS,
	STO_VEND,
	STO_NCOLUMNS
};
static const char *const storage_columns[STO_NCOLUMNS] = {"location", "options", "vend"};

enum
{
	LIM_ROLE,
	LIM_ROLE_NAME,
	LIM_REQUESTS_PER_SECOND,
	LIM_BURST,
	LIM_NCOLUMNS
};
static const char *const role_limit_columns[LIM_NCOLUMNS] = {"role", "role_name",
															 "requests_per_second", "burst"};

static struct
{
	bool valid;
	Oid object;
	Oid object_by_parent_name; /* UNIQUE (parent_id, name) */
	Oid version;
	Oid version_key; /* PRIMARY KEY (table_id, branch, version) */
	Oid storage;
	Oid storage_key; /* PRIMARY KEY (location) */
	Oid api_key;
	Oid api_key_key; /* PRIMARY KEY (id) */
	Oid role_limit;
	Oid role_limit_key; /* PRIMARY KEY (role) */
	AttrNumber object_attnum[OBJ_NCOLUMNS];
	AttrNumber version_attnum[VER_NCOLUMNS];
	AttrNumber storage_attnum[STO_NCOLUMNS];
	AttrNumber api_key_attnum[KEY_NCOLUMNS];
	AttrNumber role_limit_attnum[LIM_NCOLUMNS];
} rels;

static void
forget_relations(Datum arg pg_attribute_unused(), Oid relid)
{
	if (relid == InvalidOid || relid == rels.object || relid == rels.object_by_parent_name ||
		relid == rels.version || relid == rels.version_key || relid == rels.storage ||
		relid == rels.storage_key || relid == rels.api_key || relid == rels.api_key_key)
		rels.valid = false;
}

/* The relation (table or index) lance_catalog.`name`: the direct scans' relations. */
Oid
catalog_find_relation(Oid schema, const char *name)
{
	Oid relid = get_relname_relid(name, schema);

	if (!OidIsValid(relid))
		elog(ERROR, "lance_namespace: relation lance_catalog.%s is missing", name);
	return relid;
}

/* The attribute numbers of `names` in `relid`. */
void
catalog_find_columns(Oid relid, int n, const char *const *names, AttrNumber *attnums)
{
	for (int i = 0; i < n; i++)
	{
		attnums[i] = get_attnum(relid, names[i]);
		if (attnums[i] == InvalidAttrNumber)
			elog(ERROR, "lance_namespace: column %s of %s is missing", names[i],
				 get_rel_name(relid));
	}
}

/*
 * The index must be `relid`'s with these key columns first, in this order
 * (and no other key column when `exact`): else the scans would be wrong.
 * Answers the collation of key column `collation_of` (0: none asked).
 */
Oid
catalog_check_index(Oid indexid, Oid relid, int n, const AttrNumber *attnums, bool exact,
					int collation_of)
{
	Relation index = index_open(indexid, AccessShareLock);
	Form_pg_index form = index->rd_index;
	bool ok = form->indrelid == relid && form->indisvalid &&
			  (exact ? form->indnkeyatts == n : form->indnkeyatts >= n);
	Oid collation = InvalidOid;

	for (int i = 0; ok && i < n; i++)
		ok = form->indkey.values[i] == attnums[i];
	if (ok && collation_of > 0)
		collation = index->rd_indcollation[collation_of - 1];
	index_close(index, AccessShareLock);
	if (!ok)
		elog(ERROR, "lance_namespace: index %s does not have the columns the catalog expects",
			 get_rel_name(indexid));
	return collation;
}

static void
find_relations(void)
{
	static bool callback_registered = false;
	Oid schema;

	if (rels.valid)
		return;
	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(forget_relations, (Datum)0);
		callback_registered = true;
	}
	schema = get_namespace_oid("lance_catalog", false);
	rels.object = catalog_find_relation(schema, "object");
	rels.object_by_parent_name = catalog_find_relation(schema, "object_parent_id_name_key");
	rels.version = catalog_find_relation(schema, "version");
	rels.version_key = catalog_find_relation(schema, "version_pkey");
	rels.storage = catalog_find_relation(schema, "storage");
	rels.storage_key = catalog_find_relation(schema, "storage_pkey");
	rels.api_key = catalog_find_relation(schema, "api_key");
	rels.api_key_key = catalog_find_relation(schema, "api_key_pkey");
	rels.role_limit = catalog_find_relation(schema, "role_limit");
	rels.role_limit_key = catalog_find_relation(schema, "role_limit_pkey");
	catalog_find_columns(rels.object, OBJ_NCOLUMNS, object_columns, rels.object_attnum);
	catalog_find_columns(rels.version, VER_NCOLUMNS, version_columns, rels.version_attnum);
	catalog_find_columns(rels.storage, STO_NCOLUMNS, storage_columns, rels.storage_attnum);
	catalog_find_columns(rels.api_key, KEY_NCOLUMNS, api_key_columns, rels.api_key_attnum);
	catalog_find_columns(rels.role_limit, LIM_NCOLUMNS, role_limit_columns, rels.role_limit_attnum);
	catalog_check_index(
		rels.object_by_parent_name, rels.object, 2,
		(AttrNumber[]){rels.object_attnum[OBJ_PARENT_ID], rels.object_attnum[OBJ_NAME]}, true, 0);
	catalog_check_index(rels.version_key, rels.version, 3,
						(AttrNumber[]){rels.version_attnum[VER_TABLE_ID],
									   rels.version_attnum[VER_BRANCH],
									   rels.version_attnum[VER_VERSION]},
						true, 0);
	catalog_check_index(rels.storage_key, rels.storage, 1,
						(AttrNumber[]){rels.storage_attnum[STO_LOCATION]}, true, 0);
	catalog_check_index(rels.api_key_key, rels.api_key, 1,
						(AttrNumber[]){rels.api_key_attnum[KEY_ID]}, true, 0);
	catalog_check_index(rels.role_limit_key, rels.role_limit, 1,
						(AttrNumber[]){rels.role_limit_attnum[LIM_ROLE]}, true, 0);
	rels.valid = true;
}

/* The relations a look-up reads, for begin_lookup */
#define LOOKUP_OBJECT	  (1 << 0)
#define LOOKUP_VERSION	  (1 << 1)
#define LOOKUP_STORAGE	  (1 << 2)
#define LOOKUP_API_KEY	  (1 << 3)
#define LOOKUP_ROLE_LIMIT (1 << 4)

static void
lock_relation_and_key(Oid relation, Oid key)
{
	LockRelationOid(relation, AccessShareLock);
	LockRelationOid(key, AccessShareLock);
}

/*
 * Start a look-up of the relations `which` names: lock them and their
 * indexes as an SPI statement would, until the transaction ends (so that a
 * REINDEX CONCURRENTLY waits for this transaction before it drops an index
 * it may scan), finding them anew if taking a lock brought news of them,
 * and answer the snapshot to read with: what an SPI statement of this
 * transaction would see now (in READ COMMITTED a new snapshot, in
 * REPEATABLE READ the transaction's), including what this very command
 * wrote before.
 */
static Snapshot
begin_lookup(int which)
{
	do
	{
		find_relations();
		if (which & LOOKUP_OBJECT)
			lock_relation_and_key(rels.object, rels.object_by_parent_name);
		if (which & LOOKUP_VERSION)
			lock_relation_and_key(rels.version, rels.version_key);
		if (which & LOOKUP_STORAGE)
			lock_relation_and_key(rels.storage, rels.storage_key);
		if (which & LOOKUP_API_KEY)
			lock_relation_and_key(rels.api_key, rels.api_key_key);
		if (which & LOOKUP_ROLE_LIMIT)
			lock_relation_and_key(rels.role_limit, rels.role_limit_key);
	} while (!rels.valid);
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	return GetActiveSnapshot();
}

static void
end_lookup(void)
{
	PopActiveSnapshot();
}

static void
init_int8_key(ScanKey key, AttrNumber attnum, int64 value)
{
	ScanKeyInit(key, attnum, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(value));
}

/* the catalog's names are COLLATE "C" */
static void
init_text_key(ScanKey key, AttrNumber attnum, Datum value)
{
	ScanKeyEntryInitialize(key, 0, attnum, BTEqualStrategyNumber, InvalidOid, C_COLLATION_OID,
						   F_TEXTEQ, value);
}

static char *
copy_string(MemoryContext cxt, const char *s, int len)
{
	char *copy = MemoryContextAlloc(cxt, len + 1);

	memcpy(copy, s, len);
	copy[len] = '\0';
	return copy;
}

static char *
text_column(HeapTuple tuple, TupleDesc desc, AttrNumber attnum, MemoryContext cxt)
{
	bool isnull;
	Datum d = heap_getattr(tuple, attnum, desc, &isnull);

	if (isnull)
		return NULL;
	return MemoryContextStrdup(cxt, TextDatumGetCString(d));
}

static LnMap jsonb_map(Jsonb *object, MemoryContext cxt);
static int read_latest_versions(Snapshot snapshot, int64 table_id, int limit,
								LnTableVersion **versions, MemoryContext cxt);

static bool
bool_column(HeapTuple tuple, TupleDesc desc, AttrNumber attnum)
{
	bool isnull;
	Datum d = heap_getattr(tuple, attnum, desc, &isnull);

	return !isnull && DatumGetBool(d);
}

/* The whole row of an object, as catalog_lookup_child answers it, in `cxt`. */
static void
read_object(HeapTuple tuple, TupleDesc desc, CatalogObject *out, MemoryContext cxt)
{
	const AttrNumber *a = rels.object_attnum;
	bool isnull;
	Datum properties = heap_getattr(tuple, a[OBJ_PROPERTIES], desc, &isnull);

	out->name = text_column(tuple, desc, a[OBJ_NAME], cxt);
	out->location = text_column(tuple, desc, a[OBJ_LOCATION], cxt);
	out->declared = bool_column(tuple, desc, a[OBJ_DECLARED]);
	out->location_derived = bool_column(tuple, desc, a[OBJ_LOCATION_DERIVED]);
	if (isnull)
		out->properties = jsonb_map(NULL, cxt);
	else
		out->properties = jsonb_map(DatumGetJsonbP(properties), cxt);
}

/*
 * The child `name` of `parent_id` under `snapshot`: its keys in *child
 * (and, with `cxt`, a table's location and declared state), and, with
 * `full`, the whole row, allocated in `cxt`.
 */
static bool
find_child(Snapshot snapshot, Relation object, int64 parent_id, Datum name, CatalogChild *child,
		   CatalogObject *full, MemoryContext cxt)
{
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple tuple;
	bool found = false;

	init_int8_key(&keys[0], rels.object_attnum[OBJ_PARENT_ID], parent_id);
	init_text_key(&keys[1], rels.object_attnum[OBJ_NAME], name);
	scan = systable_beginscan(object, rels.object_by_parent_name, true, snapshot, 2, keys);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		TupleDesc desc = RelationGetDescr(object);
		bool isnull;
		char *kind;

		found = true;
		child->id = DatumGetInt64(heap_getattr(tuple, rels.object_attnum[OBJ_ID], desc, &isnull));
		kind =
			TextDatumGetCString(heap_getattr(tuple, rels.object_attnum[OBJ_KIND], desc, &isnull));
		child->is_table = strcmp(kind, "table") == 0;
		pfree(kind);
		child->location = NULL;
		child->declared = false;
		if (child->is_table && cxt != NULL)
		{
			child->location = text_column(tuple, desc, rels.object_attnum[OBJ_LOCATION], cxt);
			child->declared = bool_column(tuple, desc, rels.object_attnum[OBJ_DECLARED]);
		}
		if (full != NULL)
		{
			full->id = child->id;
			full->is_table = child->is_table;
			read_object(tuple, desc, full, cxt);
		}
	}
	systable_endscan(scan);
	return found;
}

/*
 * Find the child `name` of `parent_id`: its id and whether it is a table,
 * and, with `cxt` given, a table's location (allocated there) and declared
 * state.  False if there is none.
 */
bool
catalog_index_find_child(int64 parent_id, const char *name, CatalogChild *child, MemoryContext cxt)
{
	Snapshot snapshot = begin_lookup(LOOKUP_OBJECT);
	Relation object = table_open(rels.object, NoLock);
	bool found =
		find_child(snapshot, object, parent_id, CStringGetTextDatum(name), child, NULL, cxt);

	table_close(object, NoLock);
	end_lookup();
	return found;
}

/*
 * The whole row of the child `name` of `parent_id` (catalog_lookup_child
 * without a row lock), allocated in `cxt`; false if there is none.
 */
bool
catalog_index_read_child(int64 parent_id, const char *name, CatalogObject *out, MemoryContext cxt)
{
	Snapshot snapshot = begin_lookup(LOOKUP_OBJECT);
	Relation object = table_open(rels.object, NoLock);
	CatalogChild child;
	bool found =
		find_child(snapshot, object, parent_id, CStringGetTextDatum(name), &child, out, cxt);

	table_close(object, NoLock);
	end_lookup();
	return found;
}

/*
 * The role API key `id` acts as, if the key's SHA-256 is `hash` and the
 * role still exists; InvalidOid otherwise.  The hashes are compared in
 * constant time.  A key found also answers when it expires and when it was
 * last used (DT_NOBEGIN: never, no expiry).
 */
Oid
catalog_index_authenticate(const char *id, const uint8 *hash, int hash_len, TimestampTz *expires_at,
						   TimestampTz *last_used_at)
{
	Snapshot snapshot = begin_lookup(LOOKUP_API_KEY);
	Relation api_key = table_open(rels.api_key, NoLock);
	TupleDesc desc = RelationGetDescr(api_key);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	Oid role = InvalidOid;

	init_text_key(&key, rels.api_key_attnum[KEY_ID], CStringGetTextDatum(id));
	scan = systable_beginscan(api_key, rels.api_key_key, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool isnull;
		Datum d = heap_getattr(tuple, rels.api_key_attnum[KEY_HASH], desc, &isnull);
		bytea *stored = isnull ? NULL : DatumGetByteaPP(d);
		uint8 differ = 1;

		if (stored != NULL && VARSIZE_ANY_EXHDR(stored) == (Size)hash_len)
		{
			const uint8 *bytes = (const uint8 *)VARDATA_ANY(stored);

			differ = 0;
			for (int i = 0; i < hash_len; i++)
				differ |= bytes[i] ^ hash[i];
		}
		d = heap_getattr(tuple, rels.api_key_attnum[KEY_ROLE], desc, &isnull);
		if (differ == 0 && !isnull)
		{
			Oid key_role = DatumGetObjectId(d);
			Datum name = heap_getattr(tuple, rels.api_key_attnum[KEY_ROLE_NAME], desc, &isnull);

			/* the key's role, not one made since under its OID */
			if (!isnull && catalog_index_role_is(key_role, NameStr(*DatumGetName(name))))
			{
				role = key_role;
				d = heap_getattr(tuple, rels.api_key_attnum[KEY_EXPIRES_AT], desc, &isnull);
				*expires_at = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
				d = heap_getattr(tuple, rels.api_key_attnum[KEY_LAST_USED_AT], desc, &isnull);
				*last_used_at = isnull ? DT_NOBEGIN : DatumGetTimestampTz(d);
			}
		}
	}
	systable_endscan(scan);
	table_close(api_key, NoLock);
	end_lookup();
	return role;
}

/*
 * The request limit of role `role` through lance_rest(), if it has one.  By
 * the OID alone, unlike grants: a limit must not lapse when the role is
 * renamed where the catalog cannot see it (another database), and a role
 * given a dropped role's OID inheriting a limit errs on the safe side.  On
 * every request of a key: a key look-up, no statement.
 */
bool
catalog_index_role_limit(Oid role, double *requests_per_second, int *burst)
{
	Snapshot snapshot = begin_lookup(LOOKUP_ROLE_LIMIT);
	Relation role_limit = table_open(rels.role_limit, NoLock);
	TupleDesc desc = RelationGetDescr(role_limit);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	bool found = false;

	ScanKeyInit(&key, rels.role_limit_attnum[LIM_ROLE], BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(role));
	scan = systable_beginscan(role_limit, rels.role_limit_key, true, snapshot, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool rate_null;
		bool burst_null;
		Datum rate =
			heap_getattr(tuple, rels.role_limit_attnum[LIM_REQUESTS_PER_SECOND], desc, &rate_null);
		Datum most = heap_getattr(tuple, rels.role_limit_attnum[LIM_BURST], desc, &burst_null);

		if (!rate_null && !burst_null)
		{
			*requests_per_second = DatumGetFloat8(rate);
			*burst = DatumGetInt32(most);
			found = *requests_per_second > 0 && *burst >= 1;
		}
	}
	systable_endscan(scan);
	table_close(role_limit, NoLock);
	end_lookup();
	return found;
}

/*
 * True if role `role` exists and is named `name`: the identity that grants,
 * API keys and change log entries record.  An OID alone is not one: a
 * dropped role's OID can be given to a role made later.
 */
bool
catalog_index_role_is(Oid role, const char *name)
{
	HeapTuple tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
	bool same;

	if (!HeapTupleIsValid(tuple))
		return false;
	same = name != NULL && strcmp(NameStr(((Form_pg_authid)GETSTRUCT(tuple))->rolname), name) == 0;
	ReleaseSysCache(tuple);
	return same;
}

/*
 * Find table `table_name` in namespace `ns_name` under `grandparent_id` (or,
 * with ns_name NULL, directly under it), and, with `limit` above 0, the
 * table's latest versions on main, at most `limit`, newest first (their
 * number in *nversions, them in *versions), all under one snapshot, as one
 * statement would.  Returns 0 if the namespace is missing (or is a table),
 * 1 if the table is (or is a namespace), 2 if found.
 */
int
catalog_index_find_table(int64 grandparent_id, const char *ns_name, const char *table_name,
						 CatalogChild *table, int limit, LnTableVersion **versions, int *nversions,
						 MemoryContext cxt)
{
	Snapshot snapshot = begin_lookup(limit > 0 ? LOOKUP_OBJECT | LOOKUP_VERSION : LOOKUP_OBJECT);
	Relation object = table_open(rels.object, NoLock);
	int64 parent_id = grandparent_id;
	int found = 2;
	CatalogChild ns = {0};

	if (ns_name != NULL)
	{
		if (!find_child(snapshot, object, grandparent_id, CStringGetTextDatum(ns_name), &ns, NULL,
						NULL) ||
			ns.is_table)
			found = 0;
		parent_id = ns.id;
	}
	if (found == 2 && (!find_child(snapshot, object, parent_id, CStringGetTextDatum(table_name),
								   table, NULL, cxt) ||
					   !table->is_table))
		found = 1;
	table_close(object, NoLock);
	if (found == 2 && limit > 0)
		*nversions = read_latest_versions(snapshot, table->id, limit, versions, cxt);
	end_lookup();
	return found;
}

/*
 * A jsonb value as jsonb_each_text gives it: a string's own text, any other
 * value (never null here) as its JSON text.
 */
static char *
scalar_text(JsonbValue *v, MemoryContext cxt)
{
	switch (v->type)
	{
		case jbvString:
			return copy_string(cxt, v->val.string.val, v->val.string.len);
		default:
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);
			Jsonb *value = JsonbValueToJsonb(v);
			char *text = JsonbToCString(NULL, &value->root, VARSIZE(value));

			MemoryContextSwitchTo(old);
			return text;
		}
	}
}

/*
 * A jsonb object (a version's metadata, a setting's options) as an LnMap,
 * in the object's key order (jsonb_each_text's); a null value is left out,
 * as catalog.c's catalog_result_map leaves it out.
 */
static LnMap
jsonb_map(Jsonb *metadata, MemoryContext cxt)
{
	LnMap map;
	int n = metadata != NULL ? JB_ROOT_COUNT(metadata) : 0;
	JsonbIterator *it;
	JsonbValue v;
	JsonbIteratorToken token;

	map.len = 0;
	map.keys = MemoryContextAlloc(cxt, sizeof(char *) * (n + 1));
	map.values = MemoryContextAlloc(cxt, sizeof(char *) * (n + 1));
	if (metadata != NULL && !JB_ROOT_IS_OBJECT(metadata))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("lance_namespace: a map stored in the catalog is not a JSON object")));
	if (n == 0)
		return map;
	it = JsonbIteratorInit(&metadata->root);
	while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (token == WJB_KEY && map.len < n)
			map.keys[map.len] = copy_string(cxt, v.val.string.val, v.val.string.len);
		else if (token == WJB_VALUE && map.len < n && v.type != jbvNull)
			map.values[map.len++] = scalar_text(&v, cxt);
	}
	return map;
}

/*
 * A timestamptz as milliseconds since the Unix epoch, rounded half away
 * from zero, as (extract(epoch FROM t) * 1000)::bigint rounds it.
 */
static int64
unix_millis(TimestampTz t)
{
	int64 us;

	/* as the SQL's cast of an infinite epoch to bigint does */
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("lance_namespace: a version's created_at is infinite")));
	us = t + (int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
	return us >= 0 ? (us + 500) / 1000 : -((-us + 500) / 1000);
}

static void
read_version(HeapTuple tuple, TupleDesc desc, LnTableVersion *v, MemoryContext cxt)
{
	const AttrNumber *a = rels.version_attnum;
	bool isnull;
	Datum d;

	v->version = DatumGetInt64(heap_getattr(tuple, a[VER_VERSION], desc, &isnull));
	v->manifest_path = text_column(tuple, desc, a[VER_MANIFEST_PATH], cxt);
	d = heap_getattr(tuple, a[VER_MANIFEST_SIZE], desc, &isnull);
	v->has_manifest_size = !isnull;
	v->manifest_size = isnull ? 0 : DatumGetInt64(d);
	v->e_tag = text_column(tuple, desc, a[VER_E_TAG], cxt);
	v->timestamp_millis =
		unix_millis(DatumGetTimestampTz(heap_getattr(tuple, a[VER_CREATED_AT], desc, &isnull)));
	d = heap_getattr(tuple, a[VER_METADATA], desc, &isnull);
	if (isnull)
	{
		v->metadata.len = 0;
		v->metadata.keys = v->metadata.values = NULL;
	}
	else
		v->metadata = jsonb_map(DatumGetJsonbP(d), cxt);
}

/*
 * The latest versions of table `table_id`'s main branch, newest first, at
 * most `limit` (at least 1): their number, and them in *versions, allocated
 * in `cxt` with room for one more.  A backward scan of the primary key
 * reads only the rows it returns.
 */
static int
read_latest_versions(Snapshot snapshot, int64 table_id, int limit, LnTableVersion **versions,
					 MemoryContext cxt)
{
	Relation version = table_open(rels.version, NoLock);
	Relation key = index_open(rels.version_key, NoLock);
	TupleDesc desc = RelationGetDescr(version);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple tuple;
	int n = 0;
	int room = Min(limit, 64);

	*versions = MemoryContextAllocZero(cxt, sizeof(LnTableVersion) * (room + 1));
	init_int8_key(&keys[0], rels.version_attnum[VER_TABLE_ID], table_id);
	init_text_key(&keys[1], rels.version_attnum[VER_BRANCH], CStringGetTextDatum(""));
	scan = systable_beginscan_ordered(version, key, snapshot, 2, keys);
	while (n < limit &&
		   HeapTupleIsValid(tuple = systable_getnext_ordered(scan, BackwardScanDirection)))
	{
		CHECK_FOR_INTERRUPTS();
		if (n == room)
		{
			room = Min(limit, room * 2);
			*versions = repalloc(*versions, sizeof(LnTableVersion) * (room + 1));
			memset(&(*versions)[n], 0, sizeof(LnTableVersion) * (room + 1 - n));
		}
		read_version(tuple, desc, &(*versions)[n++], cxt);
	}
	systable_endscan_ordered(scan);
	index_close(key, NoLock);
	table_close(version, NoLock);
	return n;
}

static int
compare_keys(const void *a, const void *b)
{
	return strcmp(((const char *const *)a)[0], ((const char *const *)b)[0]);
}

/* A map's pairs in byte order of their keys, as ORDER BY key COLLATE "C" gives them. */
static void
sort_map(LnMap *map, MemoryContext cxt)
{
	char **pairs = MemoryContextAlloc(cxt, sizeof(char *) * 2 * (map->len + 1));

	for (int i = 0; i < map->len; i++)
	{
		pairs[2 * i] = map->keys[i];
		pairs[2 * i + 1] = map->values[i];
	}
	qsort(pairs, map->len, sizeof(char *) * 2, compare_keys);
	for (int i = 0; i < map->len; i++)
	{
		map->keys[i] = pairs[2 * i];
		map->values[i] = pairs[2 * i + 1];
	}
	pfree(pairs);
}

/*
 * The storage settings, read once per catalog session (one lance_* call,
 * catalog_begin to catalog_end): a DBA keeps a handful, and every version
 * operation on an s3:// table asks which one covers it (a batch asks once
 * per table).  They live in the session's memory; catalog_begin forgets
 * them, and so does a change of a setting (catalog_index_forget_storage),
 * so a call sees the settings as of its first look-up, much as one
 * statement would.  A setting's options are read when it is matched, so
 * that a bad row troubles only the folders it covers.  A storage table of
 * more than MAX_KEPT_PAGES pages is probed by primary key per folder.
 */
#define MAX_KEPT_PAGES 8

typedef struct StorageSetting
{
	char *location;
	size_t len;
	Jsonb *options; /* NULL: none */
	Jsonb *vend;	/* how callers are handed credentials */
} StorageSetting;

static struct
{
	bool loaded;
	bool probe;
	int n;
	StorageSetting *settings;
} kept;

void
catalog_index_forget_storage(void)
{
	memset(&kept, 0, sizeof(kept));
}

/* A setting's options (by name, in byte order), in `cxt`. */
static LnMap
setting_options(Jsonb *options, MemoryContext cxt)
{
	LnMap map = jsonb_map(options, cxt);

	sort_map(&map, cxt);
	return map;
}

/*
 * Read every setting into `cxt` and publish them in `kept` only once all
 * are read, so that an error part-way (a cancel) leaves nothing half-made.
 */
static void
keep_settings(Snapshot snapshot, Relation storage, MemoryContext cxt)
{
	TupleDesc desc = RelationGetDescr(storage);
	SysScanDesc scan;
	HeapTuple tuple;
	StorageSetting *settings;
	int n = 0;
	int room = 8;

	if (RelationGetNumberOfBlocks(storage) > MAX_KEPT_PAGES)
	{
		kept.probe = true;
		kept.loaded = true;
		return;
	}
	settings = MemoryContextAlloc(cxt, sizeof(StorageSetting) * room);
	scan = systable_beginscan(storage, InvalidOid, false, snapshot, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool isnull;
		Datum d;

		CHECK_FOR_INTERRUPTS();
		if (n == room)
		{
			room *= 2;
			settings = repalloc(settings, sizeof(StorageSetting) * room);
		}
		settings[n].location = text_column(tuple, desc, rels.storage_attnum[STO_LOCATION], cxt);
		settings[n].len = strlen(settings[n].location);
		d = heap_getattr(tuple, rels.storage_attnum[STO_OPTIONS], desc, &isnull);
		settings[n].options = NULL;
		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			settings[n].options = DatumGetJsonbPCopy(d);
			MemoryContextSwitchTo(old);
		}
		d = heap_getattr(tuple, rels.storage_attnum[STO_VEND], desc, &isnull);
		settings[n].vend = NULL;
		if (!isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			settings[n].vend = DatumGetJsonbPCopy(d);
			MemoryContextSwitchTo(old);
		}
		n++;
	}
	systable_endscan(scan);
	kept.settings = settings;
	kept.n = n;
	kept.loaded = true;
}

/* The kept setting whose location is `folder` or the longest folder above it, or NULL. */
static const StorageSetting *
find_kept_setting(const char *folder)
{
	size_t len = strlen(folder);
	const StorageSetting *best = NULL;

	for (int i = 0; i < kept.n; i++)
	{
		const StorageSetting *s = &kept.settings[i];

		if (s->len <= len && memcmp(folder, s->location, s->len) == 0 &&
			(folder[s->len] == '\0' || folder[s->len] == '/') &&
			(best == NULL || s->len > best->len))
			best = s;
	}
	return best;
}

/*
 * The storage setting that covers folder key `folder`: the one whose
 * location is the folder or, failing that, the longest folder above it (a
 * prefix that ends where the folder has a '/').  Its location, its options
 * and its vend members (by name, in byte order; a member that is an object
 * as its JSON text) are allocated in `cxt`.  False if no
 * setting covers the folder.  From the kept settings, or, with too many to
 * keep, by one primary key probe per candidate, longest first: a folder has
 * as many as it has slashes after its scheme's.
 */
bool
catalog_index_find_storage(const char *folder, char **location, LnMap *options, LnMap *vend,
						   MemoryContext cxt)
{
	Snapshot snapshot = begin_lookup(LOOKUP_STORAGE);
	Relation storage = table_open(rels.storage, NoLock);
	size_t len = strlen(folder);
	const char *scheme_end = strstr(folder, "://");
	/* nothing shorter than "scheme://" and a bucket's first letter is a setting */
	size_t shortest = scheme_end != NULL ? (size_t)(scheme_end - folder) + 4 : 1;
	bool found = false;
	text *candidate;

	if (!kept.loaded)
		keep_settings(snapshot, storage, cxt);
	if (!kept.probe)
	{
		const StorageSetting *setting = find_kept_setting(folder);

		if (setting != NULL)
		{
			*location = MemoryContextStrdup(cxt, setting->location);
			*options = setting_options(setting->options, cxt);
			*vend = setting_options(setting->vend, cxt);
		}
		table_close(storage, NoLock);
		end_lookup();
		return setting != NULL;
	}

	/*
	 * One text value serves every candidate, cut shorter in place: a folder
	 * of many levels costs one copy of it, not one per level.
	 */
	candidate = cstring_to_text_with_len(folder, len);
	while (!found && len >= shortest)
	{
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple tuple;

		CHECK_FOR_INTERRUPTS();
		SET_VARSIZE(candidate, VARHDRSZ + len);
		init_text_key(&key, rels.storage_attnum[STO_LOCATION], PointerGetDatum(candidate));
		scan = systable_beginscan(storage, rels.storage_key, true, snapshot, 1, &key);
		tuple = systable_getnext(scan);
		if (HeapTupleIsValid(tuple))
		{
			bool isnull;
			Datum d = heap_getattr(tuple, rels.storage_attnum[STO_OPTIONS],
								   RelationGetDescr(storage), &isnull);

			found = true;
			*location = text_column(tuple, RelationGetDescr(storage),
									rels.storage_attnum[STO_LOCATION], cxt);
			*options = setting_options(isnull ? NULL : DatumGetJsonbP(d), cxt);
			d = heap_getattr(tuple, rels.storage_attnum[STO_VEND], RelationGetDescr(storage),
							 &isnull);
			*vend = setting_options(isnull ? NULL : DatumGetJsonbP(d), cxt);
		}
		systable_endscan(scan);
		/* the next candidate: the folder above, cut at the last '/' before len */
		while (!found && len > 0 && folder[--len] != '/')
			;
	}
	table_close(storage, NoLock);
	end_lookup();
	return found;
}
