/*
 * catalog_tree.c
 *		The catalog's tree walked by index: whether a role holds a privilege
 *		on an object, ListAllTables, and the listings of a role that may
 *		read only parts of the catalog.
 *
 * A privilege on a namespace holds for everything below it, so a check
 * walks up from the object: a primary key look-up per level, and the
 * grants on each object on the way (grant_pkey).  As a statement, the
 * recursive walk was planned once per backend for any object; planned at a
 * small catalog, it scanned all of lance_catalog.object and .grant on
 * every check of every caller that is not an administrator.
 *
 * ListAllTables pages through the catalog's tables in id order and names
 * each by its full id.  A statement that does so (a recursive query up the
 * namespaces per table) costs enough, planned generically, that PostgreSQL
 * compiled it with JIT on every call: a quarter of a second for a page of
 * 100, whatever the catalog's size.  Here a page is one ordered scan of
 * object_table_id_idx and a look-up per namespace on the way, each
 * namespace looked up once per page.
 *
 * A role reads what it, or a role whose privileges it has, holds a grant
 * on, and everything below that.  Filtering every child or every table of
 * the catalog by that costs a walk of the catalog per page, and computing
 * the whole readable subtree first costs a walk of everything below the
 * grants; both grow with the catalog.  Here such a role's page starts from
 * its grants instead (by index on grant.role) and walks down from them by
 * index, reading only what the page needs:
 *
 * - a namespace the role cannot read lists the granted objects directly
 *   below it (nothing below a child makes the child readable);
 * - ListAllTables takes every namespace the role may read (the granted
 *   ones and the namespaces below them, object_parent_kind_name_idx), and
 *   merges their tables in id order (object_table_parent_id_idx, a scan per
 *   namespace that stops where another source's next table comes first)
 *   with the granted tables outside them, until the page is full.
 *
 * A page so costs the role's grants, the namespaces it may read, and the
 * page, whatever else the catalog holds.  The reads run under the snapshot
 * an SPI statement would take, as in catalog_index.c.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_auth_members.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_index.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "catalog_index.h"
#include "catalog_internal.h"
#include "catalog_tree.h"

/* the columns read here, by name, as the install scripts make them */
enum
{
	OBJ_ID,
	OBJ_PARENT_ID,
	OBJ_KIND,
	OBJ_NAME,
	OBJ_DECLARED,
	OBJ_NCOLUMNS
};
static const char *const object_columns[OBJ_NCOLUMNS] = {"id", "parent_id", "kind", "name",
														 "declared"};
enum
{
	GRANT_OBJECT_ID,
	GRANT_ROLE,
	GRANT_PRIVILEGE,
	GRANT_ROLE_NAME,
	GRANT_NCOLUMNS
};
static const char *const grant_columns[GRANT_NCOLUMNS] = {"object_id", "role", "privilege",
														  "role_name"};

static struct
{
	bool valid;
	Oid object;
	Oid object_key;			  /* PRIMARY KEY (id) */
	Oid children;			  /* (parent_id, kind, name) */
	Oid tables;				  /* (parent_id, id) WHERE kind = 'table' */
	Oid tables_with_data;	  /* (parent_id, id) WHERE kind = 'table' AND NOT declared */
	Oid all_tables;			  /* (id) WHERE kind = 'table' */
	Oid all_tables_with_data; /* (id) WHERE kind = 'table' AND NOT declared */
	Oid grant;
	Oid grant_key;	   /* PRIMARY KEY (object_id, role, privilege) */
	Oid grant_by_role; /* (role) */
	Oid kind_collation;
	AttrNumber object_attnum[OBJ_NCOLUMNS];
	AttrNumber grant_attnum[GRANT_NCOLUMNS];
} rels;

static void
forget_relations(Datum arg pg_attribute_unused(), Oid relid)
{
	if (relid == InvalidOid || relid == rels.object || relid == rels.object_key ||
		relid == rels.children || relid == rels.tables || relid == rels.tables_with_data ||
		relid == rels.all_tables || relid == rels.all_tables_with_data || relid == rels.grant ||
		relid == rels.grant_key || relid == rels.grant_by_role)
		rels.valid = false;
}

static void
find_relations(void)
{
	static bool callback_registered = false;
	const AttrNumber *o = rels.object_attnum;
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
	rels.object_key = catalog_find_relation(schema, "object_pkey");
	rels.children = catalog_find_relation(schema, "object_parent_kind_name_idx");
	rels.tables = catalog_find_relation(schema, "object_table_parent_id_idx");
	rels.tables_with_data = catalog_find_relation(schema, "object_table_with_data_parent_id_idx");
	rels.all_tables = catalog_find_relation(schema, "object_table_id_idx");
	rels.all_tables_with_data = catalog_find_relation(schema, "object_table_with_data_id_idx");
	rels.grant = catalog_find_relation(schema, "grant");
	rels.grant_key = catalog_find_relation(schema, "grant_pkey");
	rels.grant_by_role = catalog_find_relation(schema, "grant_role_idx");
	catalog_find_columns(rels.object, OBJ_NCOLUMNS, object_columns, rels.object_attnum);
	catalog_find_columns(rels.grant, GRANT_NCOLUMNS, grant_columns, rels.grant_attnum);
	catalog_check_index(rels.object_key, rels.object, 1, (AttrNumber[]){o[OBJ_ID]}, false, 0);
	rels.kind_collation = catalog_check_index(
		rels.children, rels.object, 2, (AttrNumber[]){o[OBJ_PARENT_ID], o[OBJ_KIND]}, false, 2);
	catalog_check_index(rels.tables, rels.object, 2, (AttrNumber[]){o[OBJ_PARENT_ID], o[OBJ_ID]},
						false, 0);
	catalog_check_index(rels.tables_with_data, rels.object, 2,
						(AttrNumber[]){o[OBJ_PARENT_ID], o[OBJ_ID]}, false, 0);
	catalog_check_index(rels.all_tables, rels.object, 1, (AttrNumber[]){o[OBJ_ID]}, false, 0);
	catalog_check_index(rels.all_tables_with_data, rels.object, 1, (AttrNumber[]){o[OBJ_ID]}, false,
						0);
	catalog_check_index(rels.grant_key, rels.grant, 1,
						(AttrNumber[]){rels.grant_attnum[GRANT_OBJECT_ID]}, false, 0);
	catalog_check_index(rels.grant_by_role, rels.grant, 1,
						(AttrNumber[]){rels.grant_attnum[GRANT_ROLE]}, false, 0);
	rels.valid = true;
}

/* One listing's reads: one snapshot, and a context for what it finds on the way. */
typedef struct Reading
{
	Snapshot snapshot;
	Relation object;
	TupleDesc desc;
	MemoryContext work;
	MemoryContext caller;
} Reading;

/*
 * Lock the relations as an SPI statement would, until the transaction ends,
 * and read under the snapshot such a statement would take (see
 * catalog_index.c's begin_lookup).
 */
static void
begin_reading(Reading *r)
{
	do
	{
		find_relations();
		LockRelationOid(rels.object, AccessShareLock);
		LockRelationOid(rels.object_key, AccessShareLock);
		LockRelationOid(rels.children, AccessShareLock);
		LockRelationOid(rels.tables, AccessShareLock);
		LockRelationOid(rels.tables_with_data, AccessShareLock);
		LockRelationOid(rels.all_tables, AccessShareLock);
		LockRelationOid(rels.all_tables_with_data, AccessShareLock);
		LockRelationOid(rels.grant, AccessShareLock);
		LockRelationOid(rels.grant_key, AccessShareLock);
		LockRelationOid(rels.grant_by_role, AccessShareLock);
	} while (!rels.valid);
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	r->snapshot = GetActiveSnapshot();
	r->object = table_open(rels.object, NoLock);
	r->desc = RelationGetDescr(r->object);
	r->caller = CurrentMemoryContext;
	r->work = AllocSetContextCreate(CurrentMemoryContext, "lance_namespace catalog tree",
									ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(r->work);
}

static void
end_reading(Reading *r)
{
	MemoryContextSwitchTo(r->caller);
	MemoryContextDelete(r->work);
	table_close(r->object, NoLock);
	PopActiveSnapshot();
}

typedef struct ObjectRow
{
	int64 id;
	int64 parent_id; /* -1: none (the root) */
	bool is_table;
	bool declared;
	char *name;
} ObjectRow;

static void
read_row(Reading *r, HeapTuple tuple, ObjectRow *row)
{
	const AttrNumber *a = rels.object_attnum;
	bool isnull;
	Datum d;
	text *kind;

	row->id = DatumGetInt64(heap_getattr(tuple, a[OBJ_ID], r->desc, &isnull));
	d = heap_getattr(tuple, a[OBJ_PARENT_ID], r->desc, &isnull);
	row->parent_id = isnull ? -1 : DatumGetInt64(d);
	kind = DatumGetTextPP(heap_getattr(tuple, a[OBJ_KIND], r->desc, &isnull));
	row->is_table = VARSIZE_ANY_EXHDR(kind) == 5 && memcmp(VARDATA_ANY(kind), "table", 5) == 0;
	d = heap_getattr(tuple, a[OBJ_DECLARED], r->desc, &isnull);
	row->declared = !isnull && DatumGetBool(d);
	row->name = TextDatumGetCString(heap_getattr(tuple, a[OBJ_NAME], r->desc, &isnull));
}

/* The object `id`, by primary key; false if there is none. */
static bool
fetch_object(Reading *r, int64 id, ObjectRow *row)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	bool found;

	ScanKeyInit(&key, rels.object_attnum[OBJ_ID], BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(id));
	scan = systable_beginscan(r->object, rels.object_key, true, r->snapshot, 1, &key);
	tuple = systable_getnext(scan);
	found = HeapTupleIsValid(tuple);
	if (found)
		read_row(r, tuple, row);
	systable_endscan(scan);
	return found;
}

/*
 * The roles whose grants count for `reader`: those whose privileges it has
 * (pg_has_role USAGE), found through its memberships rather than by
 * asking of every role in the cluster.
 */
static List *
reader_roles(Oid reader)
{
	List *found = list_make1_oid(reader);
	List *roles = NIL;
	ListCell *lc;

	/* every role the reader is in, directly or not; kept if it passes its privileges on */
	for (int i = 0; i < list_length(found); i++)
	{
		CatCList *memberships =
			SearchSysCacheList1(AUTHMEMMEMROLE, ObjectIdGetDatum(list_nth_oid(found, i)));

		CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < memberships->n_members; j++)
		{
			Form_pg_auth_members m =
				(Form_pg_auth_members)GETSTRUCT(&memberships->members[j]->tuple);

			found = list_append_unique_oid(found, m->roleid);
		}
		ReleaseSysCacheList(memberships);
	}
	/* the one role a reader has without a membership: the database's owner's */
	found = list_append_unique_oid(found, ROLE_PG_DATABASE_OWNER);
	foreach (lc, found)
		if (has_privs_of_role(reader, lfirst_oid(lc)))
			roles = lappend_oid(roles, lfirst_oid(lc));
	return roles;
}

/* True if role `role` exists and is named `name` (see catalog_access.c). */
static bool
role_is(Oid role, const char *name)
{
	HeapTuple authid = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
	bool same;

	if (!HeapTupleIsValid(authid))
		return false;
	same = strcmp(NameStr(((Form_pg_authid)GETSTRUCT(authid))->rolname), name) == 0;
	ReleaseSysCache(authid);
	return same;
}

/* The objects a reader holds a grant on, by id. */
typedef struct Granted
{
	int n;
	ObjectRow *rows;
} Granted;

static int
compare_int64(const void *a, const void *b)
{
	int64 x = *(const int64 *)a;
	int64 y = *(const int64 *)b;

	return x < y ? -1 : x > y;
}

static int
compare_rows_by_id(const void *a, const void *b)
{
	return compare_int64(&((const ObjectRow *)a)->id, &((const ObjectRow *)b)->id);
}

static int
compare_rows_by_name(const void *a, const void *b)
{
	return strcmp(((const ObjectRow *)a)->name, ((const ObjectRow *)b)->name);
}

/*
 * The objects `reader` holds a grant on through one of its roles, each
 * once.  A grant counts for the role it was made for: the role with its OID
 * still has the name it had (see catalog_access.c).
 */
static void
read_grants(Reading *r, Oid reader, Granted *granted)
{
	Relation grant = table_open(rels.grant, NoLock);
	TupleDesc desc = RelationGetDescr(grant);
	const AttrNumber *a = rels.grant_attnum;
	int room = 16;
	int n = 0;
	int64 *ids = palloc(sizeof(int64) * room);
	ListCell *lc;

	foreach (lc, reader_roles(reader))
	{
		Oid role = lfirst_oid(lc);
		HeapTuple authid = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
		NameData role_name;
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple tuple;

		if (!HeapTupleIsValid(authid))
			continue;
		role_name = ((Form_pg_authid)GETSTRUCT(authid))->rolname;
		ReleaseSysCache(authid);
		ScanKeyInit(&key, a[GRANT_ROLE], BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(role));
		scan = systable_beginscan(grant, rels.grant_by_role, true, r->snapshot, 1, &key);
		while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		{
			bool isnull;
			Datum name = heap_getattr(tuple, a[GRANT_ROLE_NAME], desc, &isnull);

			CHECK_FOR_INTERRUPTS();
			if (isnull || strcmp(NameStr(*DatumGetName(name)), NameStr(role_name)) != 0)
				continue;
			if (n == room)
			{
				room *= 2;
				ids = repalloc(ids, sizeof(int64) * room);
			}
			ids[n++] = DatumGetInt64(heap_getattr(tuple, a[GRANT_OBJECT_ID], desc, &isnull));
		}
		systable_endscan(scan);
	}
	table_close(grant, NoLock);

	qsort(ids, n, sizeof(int64), compare_int64);
	granted->rows = palloc(sizeof(ObjectRow) * (n + 1));
	granted->n = 0;
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if ((i == 0 || ids[i] != ids[i - 1]) && fetch_object(r, ids[i], &granted->rows[granted->n]))
			granted->n++;
	}
}

static bool
is_granted(const Granted *granted, int64 id)
{
	ObjectRow key = {.id = id};

	return bsearch(&key, granted->rows, granted->n, sizeof(ObjectRow), compare_rows_by_id) != NULL;
}

/* True if the reader may read object `id`: it or a namespace above it is granted. */
static bool
may_read(Reading *r, const Granted *granted, int64 id)
{
	while (id >= 0)
	{
		ObjectRow row;

		CHECK_FOR_INTERRUPTS();
		if (is_granted(granted, id))
			return true;
		if (!fetch_object(r, id, &row))
			return false;
		id = row.parent_id;
	}
	return false;
}

/*
 * True if `role` holds `privilege`, or one that includes it, on `object_id`
 * through a grant that counts (its role still has the name it was granted
 * under, and `role` has that role's privileges).
 */
static bool
holds_on(Reading *r, Relation grant, int64 object_id, Oid role, LnPrivilege privilege)
{
	TupleDesc desc = RelationGetDescr(grant);
	const AttrNumber *a = rels.grant_attnum;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	bool held = false;

	ScanKeyInit(&key, a[GRANT_OBJECT_ID], BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(object_id));
	scan = systable_beginscan(grant, rels.grant_key, true, r->snapshot, 1, &key);
	while (!held && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool isnull;
		char *granted = TextDatumGetCString(heap_getattr(tuple, a[GRANT_PRIVILEGE], desc, &isnull));
		Oid grantee = DatumGetObjectId(heap_getattr(tuple, a[GRANT_ROLE], desc, &isnull));
		Datum name = heap_getattr(tuple, a[GRANT_ROLE_NAME], desc, &isnull);
		bool enough = false;

		CHECK_FOR_INTERRUPTS();
		for (int p = privilege; p <= LN_PRIV_MANAGE; p++)
			enough = enough || strcmp(granted, ln_privilege_name((LnPrivilege)p)) == 0;
		held = enough && !isnull && has_privs_of_role(role, grantee) &&
			   role_is(grantee, NameStr(*DatumGetName(name)));
	}
	systable_endscan(scan);
	return held;
}

/*
 * True if `role` holds `privilege` (or a greater one) on object_id or on a
 * namespace above it, directly or through a role whose privileges it has.
 */
bool
catalog_has_privilege(int64 object_id, Oid role, LnPrivilege privilege)
{
	Reading r;
	Relation grant;
	bool held = false;
	int64 id = object_id;

	catalog_check_schema_version();
	begin_reading(&r);
	grant = table_open(rels.grant, NoLock);
	while (!held && id >= 0)
	{
		ObjectRow row;

		CHECK_FOR_INTERRUPTS();
		held = holds_on(&r, grant, id, role, privilege);
		if (held || !fetch_object(&r, id, &row))
			break;
		id = row.parent_id;
	}
	table_close(grant, NoLock);
	end_reading(&r);
	return held;
}

/*
 * The names of the namespaces (or tables) directly under parent_id that
 * `reader` holds a grant on and that sort after `after`, in byte order, at
 * most `limit`, allocated in the caller's context; or -1 if the reader may
 * read parent_id itself, and with it all its children.
 */
int
catalog_tree_children(int64 parent_id, bool tables, bool include_declared, const char *after,
					  int limit, Oid reader, char ***names)
{
	Reading r;
	Granted granted;
	ObjectRow *children;
	int n = 0;

	catalog_check_schema_version();
	begin_reading(&r);
	read_grants(&r, reader, &granted);
	if (may_read(&r, &granted, parent_id))
	{
		end_reading(&r);
		return -1;
	}
	children = palloc(sizeof(ObjectRow) * (granted.n + 1));
	for (int i = 0; i < granted.n; i++)
	{
		const ObjectRow *row = &granted.rows[i];

		if (row->parent_id == parent_id && row->is_table == tables &&
			strcmp(row->name, after) > 0 && (!tables || include_declared || !row->declared))
			children[n++] = *row;
	}
	qsort(children, n, sizeof(ObjectRow), compare_rows_by_name);
	n = Min(n, limit);
	*names = MemoryContextAlloc(r.caller, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
		(*names)[i] = MemoryContextStrdup(r.caller, children[i].name);
	end_reading(&r);
	return n;
}

/* A namespace met on the way: one the reader may read, or one above a table it lists. */
typedef struct NamespaceEntry
{
	int64 id; /* the key */
	int64 parent_id;
	char *name;
	bool readable;
} NamespaceEntry;

/*
 * Every namespace the reader may read, into `namespaces` (readable) and
 * *readable: the granted ones, and those below them, walking down by index.
 */
static int
readable_namespaces(Reading *r, const Granted *granted, HTAB *namespaces, int64 **readable)
{
	int room = 16;
	int n = 0;
	int64 *queue = palloc(sizeof(int64) * room);

	for (int i = 0; i < granted->n; i++)
	{
		const ObjectRow *row = &granted->rows[i];
		NamespaceEntry *entry;

		if (row->is_table)
			continue;
		entry = hash_search(namespaces, &row->id, HASH_ENTER, NULL);
		entry->parent_id = row->parent_id;
		entry->name = row->name;
		entry->readable = true;
		if (n == room)
			queue = repalloc(queue, sizeof(int64) * (room *= 2));
		queue[n++] = row->id;
	}
	for (int i = 0; i < n; i++)
	{
		ScanKeyData keys[2];
		SysScanDesc scan;
		HeapTuple tuple;

		ScanKeyInit(&keys[0], rels.object_attnum[OBJ_PARENT_ID], BTEqualStrategyNumber, F_INT8EQ,
					Int64GetDatum(queue[i]));
		ScanKeyEntryInitialize(&keys[1], 0, rels.object_attnum[OBJ_KIND], BTEqualStrategyNumber,
							   InvalidOid, rels.kind_collation, F_TEXTEQ,
							   CStringGetTextDatum("namespace"));
		scan = systable_beginscan(r->object, rels.children, true, r->snapshot, 2, keys);
		while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		{
			ObjectRow row;
			NamespaceEntry *entry;
			bool found;

			CHECK_FOR_INTERRUPTS();
			read_row(r, tuple, &row);
			entry = hash_search(namespaces, &row.id, HASH_ENTER, &found);
			if (found)
				continue; /* granted itself, and walked from there */
			entry->parent_id = row.parent_id;
			entry->name = row.name;
			entry->readable = true;
			if (n == room)
				queue = repalloc(queue, sizeof(int64) * (room *= 2));
			queue[n++] = row.id;
		}
		systable_endscan(scan);
	}
	*readable = queue;
	return n;
}

/* The tables of one readable namespace still to merge: the next one's id. */
typedef struct TableSource
{
	int64 namespace_id;
	int64 next_id;
} TableSource;

/* binaryheap keeps the greatest first: the source whose next table is first is "greatest" */
static int
compare_sources(Datum a, Datum b, void *arg)
{
	const TableSource *sources = arg;

	return -compare_int64(&sources[DatumGetInt32(a)].next_id, &sources[DatumGetInt32(b)].next_id);
}

/* An ordered scan of namespace_id's tables from id `from` (or after it). */
static SysScanDesc
begin_tables(Reading *r, Relation index, int64 namespace_id, int64 from, bool after)
{
	ScanKeyData keys[2];

	ScanKeyInit(&keys[0], rels.object_attnum[OBJ_PARENT_ID], BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(namespace_id));
	ScanKeyInit(&keys[1], rels.object_attnum[OBJ_ID],
				after ? BTGreaterStrategyNumber : BTGreaterEqualStrategyNumber,
				after ? F_INT8GT : F_INT8GE, Int64GetDatum(from));
	return systable_beginscan_ordered(r->object, index, r->snapshot, 2, keys);
}

/* The full id of a table: its namespaces' names from the root down, then its own. */
static LnId
table_path(Reading *r, HTAB *namespaces, const ObjectRow *table)
{
	int room = 8;
	int len = 0;
	char **reversed = palloc(sizeof(char *) * room);
	int64 id = table->parent_id;
	LnId path;

	reversed[len++] = table->name;
	while (id > 0)
	{
		bool found;
		NamespaceEntry *entry = hash_search(namespaces, &id, HASH_ENTER, &found);

		CHECK_FOR_INTERRUPTS();
		if (!found)
		{
			ObjectRow row;

			if (!fetch_object(r, id, &row))
				elog(ERROR,
					 "lance_namespace: namespace " INT64_FORMAT " of table " INT64_FORMAT
					 " is missing",
					 id, table->id);
			entry->parent_id = row.parent_id;
			entry->name = row.name;
			entry->readable = false;
		}
		if (len == room)
			reversed = repalloc(reversed, sizeof(char *) * (room *= 2));
		reversed[len++] = entry->name;
		id = entry->parent_id;
	}
	path.len = len;
	path.names = MemoryContextAlloc(r->caller, sizeof(char *) * (len + 1));
	for (int i = 0; i < len; i++)
		path.names[i] = MemoryContextStrdup(r->caller, reversed[len - 1 - i]);
	return path;
}

/*
 * The tables `reader` may read with id above after_id, in id order, at most
 * `limit`, into `page`: the granted tables outside the readable namespaces
 * merged with each readable namespace's tables.
 */
static int
readable_tables(Reading *r, const Granted *granted, HTAB *namespaces, bool include_declared,
				int64 after_id, int limit, ObjectRow *page)
{
	int64 *readable;
	int nreadable = readable_namespaces(r, granted, namespaces, &readable);
	ObjectRow *tables = palloc(sizeof(ObjectRow) * (granted->n + 1));
	int ntables = 0;
	int next_table = 0;
	TableSource *sources;
	binaryheap *heap;
	Relation index;
	int n = 0;

	/* the granted tables outside the readable namespaces, in id order */
	for (int i = 0; i < granted->n; i++)
	{
		const ObjectRow *row = &granted->rows[i];
		NamespaceEntry *parent;

		if (!row->is_table || row->id <= after_id || (!include_declared && row->declared))
			continue;
		parent = hash_search(namespaces, &row->parent_id, HASH_FIND, NULL);
		if (parent == NULL || !parent->readable)
			tables[ntables++] = *row;
	}

	/* each readable namespace's first table after after_id, first first */
	index = index_open(include_declared ? rels.tables : rels.tables_with_data, NoLock);
	sources = palloc(sizeof(TableSource) * (nreadable + 1));
	heap = binaryheap_allocate(nreadable + 1, compare_sources, sources);
	for (int i = 0; i < nreadable; i++)
	{
		SysScanDesc scan = begin_tables(r, index, readable[i], after_id, true);
		HeapTuple tuple = systable_getnext_ordered(scan, ForwardScanDirection);

		CHECK_FOR_INTERRUPTS();
		if (HeapTupleIsValid(tuple))
		{
			bool isnull;

			sources[i].namespace_id = readable[i];
			sources[i].next_id =
				DatumGetInt64(heap_getattr(tuple, rels.object_attnum[OBJ_ID], r->desc, &isnull));
			binaryheap_add_unordered(heap, Int32GetDatum(i));
		}
		systable_endscan_ordered(scan);
	}
	binaryheap_build(heap);

	/*
	 * Merge: the granted table or the namespace whose next table comes
	 * first; a namespace's scan goes on while its tables come before every
	 * other source's next one.
	 */
	while (n < limit && (!binaryheap_empty(heap) || next_table < ntables))
	{
		TableSource *source;
		int64 bound = PG_INT64_MAX;
		SysScanDesc scan;
		HeapTuple tuple;

		CHECK_FOR_INTERRUPTS();
		if (binaryheap_empty(heap) ||
			(next_table < ntables &&
			 tables[next_table].id < sources[DatumGetInt32(binaryheap_first(heap))].next_id))
		{
			page[n++] = tables[next_table++];
			continue;
		}
		source = &sources[DatumGetInt32(binaryheap_first(heap))];
		binaryheap_remove_first(heap);
		if (!binaryheap_empty(heap))
			bound = sources[DatumGetInt32(binaryheap_first(heap))].next_id;
		if (next_table < ntables)
			bound = Min(bound, tables[next_table].id);
		scan = begin_tables(r, index, source->namespace_id, source->next_id, false);
		while (HeapTupleIsValid(tuple = systable_getnext_ordered(scan, ForwardScanDirection)))
		{
			ObjectRow row;

			CHECK_FOR_INTERRUPTS();
			read_row(r, tuple, &row);
			if (row.id > bound)
			{
				source->next_id = row.id;
				binaryheap_add(heap, Int32GetDatum((int)(source - sources)));
				break;
			}
			page[n++] = row;
			if (n == limit)
				break;
		}
		systable_endscan_ordered(scan);
	}
	index_close(index, NoLock);
	return n;
}

/* Every table with id above after_id, in id order, at most `limit`, into `page`. */
static int
every_table(Reading *r, bool include_declared, int64 after_id, int limit, ObjectRow *page)
{
	Relation index =
		index_open(include_declared ? rels.all_tables : rels.all_tables_with_data, NoLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	int n = 0;

	ScanKeyInit(&key, rels.object_attnum[OBJ_ID], BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(after_id));
	scan = systable_beginscan_ordered(r->object, index, r->snapshot, 1, &key);
	while (n < limit &&
		   HeapTupleIsValid(tuple = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		CHECK_FOR_INTERRUPTS();
		read_row(r, tuple, &page[n++]);
	}
	systable_endscan_ordered(scan);
	index_close(index, NoLock);
	return n;
}

/*
 * Tables of the whole catalog with id above after_id, in id order, at most
 * `limit`, with their full ids; with a valid `reader`, those that role may
 * read.
 */
int
catalog_list_all_tables(bool include_declared, int64 after_id, int limit, Oid reader, int64 **ids,
						LnId **paths)
{
	Reading r;
	HASHCTL ctl;
	HTAB *namespaces;
	ObjectRow *page;
	int n;

	catalog_check_schema_version();
	begin_reading(&r);
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(NamespaceEntry);
	ctl.hcxt = r.work;
	namespaces =
		hash_create("lance_namespace namespaces", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	page = palloc(sizeof(ObjectRow) * (limit + 1));
	if (OidIsValid(reader))
	{
		Granted granted;

		read_grants(&r, reader, &granted);
		/* one that may read the root reads every table */
		if (is_granted(&granted, CATALOG_ROOT_ID))
			n = every_table(&r, include_declared, after_id, limit, page);
		else
			n = readable_tables(&r, &granted, namespaces, include_declared, after_id, limit, page);
	}
	else
		n = every_table(&r, include_declared, after_id, limit, page);

	*ids = MemoryContextAlloc(r.caller, sizeof(int64) * (n + 1));
	*paths = MemoryContextAlloc(r.caller, sizeof(LnId) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*ids)[i] = page[i].id;
		(*paths)[i] = table_path(&r, namespaces, &page[i]);
	}
	end_reading(&r);
	return n;
}
