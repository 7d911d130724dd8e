/*
 * catalog_objects.c
 *		The catalog's namespaces and tables (lance_catalog.object): look-ups,
 *		inserts, moves, deletes and listings, and where tables' folders are.
 *
 * Each statement sits next to the C that binds its parameters and reads its
 * rows, so that the two change together; catalog.c runs them with saved
 * plans.  A look-up by key without a row lock reads the index directly
 * (catalog_index.c); row locks and writes are statements.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/resowner.h"

#include "../storage/location.h"
#include "../storage/storage.h"
#include "catalog.h"
#include "catalog_index.h"
#include "catalog_internal.h"
#include "catalog_tree.h"

/*
 * Properties travel between C and the catalog as text[] pairs: jsonb_object()
 * builds the stored jsonb, and a flattened two-dimensional array of
 * [key, value] pairs reads it back, so that no JSON is handled here.
 */
#define OBJECT_COLUMNS                                                                             \
	"id, kind = 'table', name, location, coalesce(declared, false), "                              \
	"ARRAY(SELECT ARRAY[key, value] FROM pg_catalog.jsonb_each_text(properties)), "                \
	"coalesce(location_derived, false)"

/* This file's statements, by their numbers (catalog_internal.h). */
static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	[STMT_LOOKUP_CHILD_FOR_UPDATE] =
		{"SELECT " OBJECT_COLUMNS " FROM lance_catalog.object WHERE parent_id = $1 AND name = $2"
		 " FOR UPDATE",
		 2,
		 {INT8OID, TEXTOID}},
	/* the namespace something is made in: waits for a drop, and holds off the next one */
	[STMT_LOOKUP_CHILD_FOR_KEY_SHARE] =
		{"SELECT o.id, o.kind = 'table', o.name, o.location, coalesce(o.declared, false),"
		 "       ARRAY(SELECT ARRAY[e.key, e.value]"
		 "               FROM pg_catalog.jsonb_each_text(o.properties) AS e),"
		 "       coalesce(o.location_derived, false)"
		 "  FROM lance_catalog.object o WHERE o.parent_id = $1 AND o.name = $2"
		 " FOR KEY SHARE",
		 2,
		 {INT8OID, TEXTOID}},
	/* the creator gets manage on what it made, in the same statement */
	[STMT_INSERT_OBJECT] =
		{"WITH made AS ("
		 "  INSERT INTO lance_catalog.object"
		 "         (parent_id, kind, name, properties, location, declared, location_derived)"
		 "  VALUES ($1, CASE WHEN $2 THEN 'table' ELSE 'namespace' END, $3, "
		 "          pg_catalog.jsonb_object($4, $5), $6, $7, $9)"
		 "  ON CONFLICT (parent_id, name) DO NOTHING RETURNING id),"
		 " granted AS ("
		 "  INSERT INTO lance_catalog.grant (object_id, role, privilege, granted_by, role_name)"
		 "  SELECT made.id, $8::pg_catalog.regrole, 'manage', $8::pg_catalog.regrole, r.rolname"
		 "    FROM made, pg_catalog.pg_roles r WHERE r.oid = $8)"
		 " SELECT id FROM made",
		 9,
		 {INT8OID, BOOLOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID, BOOLOID, OIDOID,
		  BOOLOID}},
	[STMT_SET_PROPERTIES] = {"UPDATE lance_catalog.object SET properties = "
							 "pg_catalog.jsonb_object($2, $3) WHERE id = $1",
							 3,
							 {INT8OID, TEXTARRAYOID, TEXTARRAYOID}},
	[STMT_REREGISTER_TABLE] =
		{"UPDATE lance_catalog.object"
		 "   SET location = $2, properties = pg_catalog.jsonb_object($3, $4), declared = false,"
		 "       location_derived = false"
		 " WHERE id = $1",
		 4,
		 {INT8OID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID}},
	[STMT_HAS_CHILDREN] = {"SELECT EXISTS (SELECT FROM lance_catalog.object WHERE parent_id = $1)",
						   1,
						   {INT8OID}},
	[STMT_DELETE_OBJECT] = {"DELETE FROM lance_catalog.object WHERE id = $1", 1, {INT8OID}},
	[STMT_DELETE_SUBTREE] =
		{/* one statement, so that the parent key checks see the whole subtree gone */
		 "WITH RECURSIVE subtree(id) AS ("
		 "   SELECT $1::bigint"
		 "   UNION ALL"
		 "   SELECT o.id FROM lance_catalog.object o JOIN subtree s ON o.parent_id = s.id)"
		 " DELETE FROM lance_catalog.object WHERE id IN (SELECT id FROM subtree)",
		 1,
		 {INT8OID}},
	[STMT_MOVE_OBJECT] = {"UPDATE lance_catalog.object SET parent_id = $2, name = $3 WHERE id = $1",
						  3,
						  {INT8OID, INT8OID, TEXTOID}},
	[STMT_LIST_CHILDREN] =
		{"SELECT name FROM lance_catalog.object"
		 " WHERE parent_id = $1 AND kind = CASE WHEN $2 THEN 'table' ELSE 'namespace' END"
		 "   AND name > $3 ORDER BY name LIMIT $4",
		 4,
		 {INT8OID, BOOLOID, TEXTOID, INT4OID}},
	[STMT_LIST_TABLES_WITH_DATA] =
		{"SELECT name FROM lance_catalog.object"
		 " WHERE parent_id = $1 AND kind = 'table' AND NOT declared AND name > $2"
		 " ORDER BY name LIMIT $3",
		 3,
		 {INT8OID, TEXTOID, INT4OID}},
	[STMT_LOOKUP_TABLES] =
		{"SELECT e.ord, o.id, o.location, o.declared"
		 "  FROM ROWS FROM (pg_catalog.unnest($1::bigint[]), pg_catalog.unnest($2::text[]))"
		 "       WITH ORDINALITY AS e(parent_id, name, ord)"
		 "  JOIN lance_catalog.object o ON o.parent_id = e.parent_id AND o.name = e.name"
		 " WHERE o.kind = 'table'",
		 2,
		 {INT8ARRAYOID, TEXTARRAYOID}},
	/* a table at the folder, inside it, or around it: one of them, by its id */
	[STMT_LOCATION_IN_USE] =
		{"SELECT pg_catalog.array_to_string(" OBJECT_PATH ", '$') FROM ("
		 "  SELECT id, parent_id, name FROM lance_catalog.object"
		 "   WHERE kind = 'table'"
		 "     AND (lance_catalog.local_path(location) COLLATE \"C\" = $1"
		 "          OR (lance_catalog.local_path(location) COLLATE \"C\" >= $1 || '/'"
		 "              AND lance_catalog.local_path(location) COLLATE \"C\" < $1 || '0')"
		 "          OR lance_catalog.local_path(location) COLLATE \"C\" = ANY ($2))"
		 "     AND id <> $3"
		 "   LIMIT 1) p",
		 3,
		 {TEXTOID, TEXTARRAYOID, INT8OID}},
	/* another table on exactly this folder */
	[STMT_LOCATION_TAKEN] = {"SELECT EXISTS (SELECT FROM lance_catalog.object"
							 "  WHERE kind = 'table' AND id <> $2"
							 "    AND lance_catalog.local_path(location) COLLATE \"C\" = $1)",
							 2,
							 {TEXTOID, INT8OID}},
	[STMT_LOCK_TABLE_REFS] = {"SELECT FROM lance_catalog.object WHERE id = $1 FOR NO KEY UPDATE",
							  1,
							  {INT8OID}},
	/* every table's location, in id order, for the sweep after a crash */
	[STMT_LIST_TABLE_LOCATIONS] = {"SELECT id, location FROM lance_catalog.object"
								   " WHERE kind = 'table' AND id > $1 ORDER BY id LIMIT $2",
								   2,
								   {INT8OID, INT4OID}},
};

/* Run one of the statements above; catalog.c prepares and keeps its plan. */
static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	return catalog_execute(stmt, &statement_defs[stmt], values, nulls, limit);
}

/*
 * The object named `name` under parent_id, with the row lock `lock` (see
 * CatalogLock); false if there is none.
 */
bool
catalog_lookup_child(int64 parent_id, const char *name, CatalogLock lock, CatalogObject *out)
{
	static const CatalogStatement statements[] = {
		[CATALOG_KEY_SHARE] = STMT_LOOKUP_CHILD_FOR_KEY_SHARE,
		[CATALOG_FOR_UPDATE] = STMT_LOOKUP_CHILD_FOR_UPDATE};
	Datum values[2];
	bool isnull;

	/* a plain look-up reads the index directly; row locks take a statement */
	if (lock == CATALOG_NO_LOCK)
	{
		catalog_check_schema_version();
		return catalog_index_read_child(parent_id, name, out, catalog_result_cxt);
	}
	values[0] = Int64GetDatum(parent_id);
	values[1] = CStringGetTextDatum(name);
	execute(statements[lock], values, NULL, 1);
	if (SPI_processed == 0)
		return false;

	out->id = DatumGetInt64(catalog_result_datum(0, 1, &isnull));
	out->is_table = DatumGetBool(catalog_result_datum(0, 2, &isnull));
	out->name = catalog_result_text(0, 3);
	out->location = catalog_result_text(0, 4);
	out->declared = DatumGetBool(catalog_result_datum(0, 5, &isnull));
	out->properties = catalog_result_map(0, 6);
	out->location_derived = DatumGetBool(catalog_result_datum(0, 7, &isnull));
	return true;
}

/*
 * Insert a namespace or table under parent_id.  Returns the new id, or 0 if
 * the name is taken: the unique key decides, so that of two concurrent
 * inserts of one name exactly one wins and the other sees the winner.
 */
int64
catalog_insert_object(int64 parent_id, bool is_table, const char *name, const LnMap *properties,
					  const char *location, bool declared, bool location_derived, Oid creator)
{
	Datum values[9];
	char nulls[10] = "         ";
	bool isnull;

	values[0] = Int64GetDatum(parent_id);
	values[1] = BoolGetDatum(is_table);
	values[2] = CStringGetTextDatum(name);
	values[3] = catalog_text_array_datum(properties->keys, properties->len);
	values[4] = catalog_text_array_datum(properties->values, properties->len);
	values[5] = catalog_text_datum_or_null(location, &nulls[5]);
	values[6] = BoolGetDatum(declared);
	values[7] = ObjectIdGetDatum(creator);
	values[8] = BoolGetDatum(location_derived);
	if (!is_table)
		nulls[6] = nulls[8] = 'n';

	execute(STMT_INSERT_OBJECT, values, nulls, 0);
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt64(catalog_result_datum(0, 1, &isnull));
}

void
catalog_set_properties(int64 id, const LnMap *properties)
{
	Datum values[3];

	values[0] = Int64GetDatum(id);
	values[1] = catalog_text_array_datum(properties->keys, properties->len);
	values[2] = catalog_text_array_datum(properties->values, properties->len);
	execute(STMT_SET_PROPERTIES, values, NULL, 0);
}

/* Point an existing table entry at another location, as a table with data. */
void
catalog_reregister_table(int64 id, const char *location, const LnMap *properties)
{
	Datum values[4];

	values[0] = Int64GetDatum(id);
	values[1] = CStringGetTextDatum(location);
	values[2] = catalog_text_array_datum(properties->keys, properties->len);
	values[3] = catalog_text_array_datum(properties->values, properties->len);
	execute(STMT_REREGISTER_TABLE, values, NULL, 0);
}

bool
catalog_has_children(int64 id)
{
	Datum values[1] = {Int64GetDatum(id)};
	bool isnull;

	execute(STMT_HAS_CHILDREN, values, NULL, 1);
	return DatumGetBool(catalog_result_datum(0, 1, &isnull));
}

void
catalog_delete_object(int64 id)
{
	Datum values[1] = {Int64GetDatum(id)};

	execute(STMT_DELETE_OBJECT, values, NULL, 0);
}

/* Delete a namespace with every namespace and table below it. */
void
catalog_delete_subtree(int64 id)
{
	Datum values[1] = {Int64GetDatum(id)};

	execute(STMT_DELETE_SUBTREE, values, NULL, 0);
}

/*
 * Give object `id` a new parent and name.  Returns false, having changed
 * nothing, if the name is taken there: the unique key decides, waiting for
 * a concurrent transaction that takes the name, so the update runs in a
 * subtransaction of its own that a unique violation rolls back.  (Renames
 * are rare; the hot paths never pay for a subtransaction.)
 */
bool
catalog_move_object(int64 id, int64 new_parent_id, const char *new_name)
{
	Datum values[3] = {Int64GetDatum(id), Int64GetDatum(new_parent_id),
					   CStringGetTextDatum(new_name)};
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool moved = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		execute(STMT_MOVE_OBJECT, values, NULL, 0);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* roll back first in any case: the caller's own subtransactions come next */
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
			ReThrowError(edata);
		FreeErrorData(edata);
		moved = false;
	}
	PG_END_TRY();
	return moved;
}

/*
 * Names of the namespaces (or tables) directly under parent_id that sort
 * after `after`, in byte order, at most `limit` of them; with a valid
 * `reader`, those that role may read (found from its grants,
 * catalog_tree.c, unless it may read the namespace).
 */
int
catalog_list_children(int64 parent_id, bool tables, bool include_declared, const char *after,
					  int limit, Oid reader, char ***names)
{
	int n;

	if (OidIsValid(reader))
	{
		n = catalog_tree_children(parent_id, tables, include_declared, after, limit, reader, names);
		if (n >= 0)
			return n;
		/* the reader may read the namespace: all of it */
	}
	if (tables && !include_declared)
	{
		Datum values[3] = {Int64GetDatum(parent_id), CStringGetTextDatum(after),
						   Int32GetDatum(limit)};

		execute(STMT_LIST_TABLES_WITH_DATA, values, NULL, 0);
	}
	else
	{
		Datum values[4] = {Int64GetDatum(parent_id), BoolGetDatum(tables),
						   CStringGetTextDatum(after), Int32GetDatum(limit)};

		execute(STMT_LIST_CHILDREN, values, NULL, 0);
	}

	n = (int)SPI_processed;
	*names = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
		(*names)[i] = catalog_result_text(i, 1);
	return n;
}

/*
 * Find the tables named (parent_ids[i], names[i]).  Fills ids[i] (0 when
 * there is no such table), locations[i] and declared[i].
 */
void
catalog_lookup_tables(int n, const int64 *parent_ids, char **names, int64 *ids, char **locations,
					  bool *declared)
{
	Datum values[2];
	bool isnull;

	values[0] = catalog_int8_array_datum(parent_ids, NULL, n);
	values[1] = catalog_nullable_text_array_datum(names, n);
	execute(STMT_LOOKUP_TABLES, values, NULL, 0);

	memset(ids, 0, sizeof(int64) * n);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		int i = (int)DatumGetInt64(catalog_result_datum(row, 1, &isnull)) - 1;

		ids[i] = DatumGetInt64(catalog_result_datum(row, 2, &isnull));
		locations[i] = catalog_result_text(row, 3);
		declared[i] = DatumGetBool(catalog_result_datum(row, 4, &isnull));
	}
}

/*
 * The folders around folder key `path` (those that hold it), outermost
 * first, into `around`, which has room for strlen(path) of them: how many.
 */
int
catalog_folders_around(const char *path, char **around)
{
	int n = 0;

	for (const char *c = path + 1; *c; c++)
		if (*c == '/')
			around[n++] = pnstrdup(path, c - path);
	return n;
}

/*
 * True if a table at folder key `folder`, around `path`, does not count as
 * in its way: `folder` holds one of the `n` folder keys of `roots` that
 * `path` lies in (a table there, registered before locations at the roots
 * were refused or by an administrator, holds every folder the catalog
 * chooses below it, and must not stop every other table), and the catalog
 * manages no table at `folder` (none writes, removes or vends credentials
 * there for such a table: a table at or above a local root is not managed;
 * one at a storage setting's prefix is, and its readers are handed keys for
 * the whole prefix, so it still counts).
 */
static bool
around_a_root(const char *folder, const char *path, const char *const *roots, int n)
{
	for (int i = 0; i < n; i++)
		if (roots[i] != NULL && location_folder_within(roots[i], folder) &&
			location_folder_within(path, roots[i]))
			return !storage_is_managed(folder);
	return false;
}

/*
 * The id (names joined by '$') of a table other than except_id that uses
 * folder key `path`: at it, inside it, or in a folder around it; NULL if
 * none does.  A folder around it at or above one of the `nroots` folder
 * keys of `roots` that `path` lies in does not count when the catalog
 * manages no table there (around_a_root).
 */
char *
catalog_table_in_the_way(const char *path, int64 except_id, const char *const *roots, int nroots)
{
	Datum values[3];
	char **ancestors = palloc(sizeof(char *) * (strlen(path) + 1));
	int around = catalog_folders_around(path, ancestors);
	int n = 0;

	for (int i = 0; i < around; i++)
		if (!around_a_root(ancestors[i], path, roots, nroots))
			ancestors[n++] = ancestors[i];
	values[0] = CStringGetTextDatum(path);
	values[1] = catalog_text_array_datum(ancestors, n);
	values[2] = Int64GetDatum(except_id);
	execute(STMT_LOCATION_IN_USE, values, NULL, 1);
	return SPI_processed > 0 ? catalog_result_text(0, 1) : NULL;
}

/*
 * True if a table in the catalog other than except_id uses the local folder
 * `path` (a canonical local path): at it, inside it, or in a folder around it.
 */
bool
catalog_location_in_use(const char *path, int64 except_id)
{
	return catalog_table_in_the_way(path, except_id, NULL, 0) != NULL;
}

/*
 * Serialize changes to one table's tags and branches.  FOR NO KEY UPDATE
 * does not conflict with the key share that version commits take.
 */
bool
catalog_lock_table_refs(int64 table_id)
{
	Datum values[1] = {Int64GetDatum(table_id)};

	execute(STMT_LOCK_TABLE_REFS, values, NULL, 0);
	/* none: the table was removed by a transaction this one waited for */
	return SPI_processed > 0;
}

/* The id of the object named `name` under parent_id, and whether it is a table; keys only. */
bool
catalog_lookup_child_id(int64 parent_id, const char *name, int64 *id, bool *is_table)
{
	CatalogChild child;

	catalog_check_schema_version();
	if (!catalog_index_find_child(parent_id, name, &child, NULL))
		return false;
	*id = child.id;
	*is_table = child.is_table;
	return true;
}

/*
 * Find table `table_name` in namespace `ns_name` under `grandparent_id` (or,
 * with ns_name NULL, directly under grandparent_id), keys, location and
 * declared state only.  Returns 0 if the namespace is missing, 1 if the
 * table is, 2 if found.
 */
int
catalog_lookup_table_key(int64 grandparent_id, const char *ns_name, const char *table_name,
						 CatalogObject *table)
{
	int nversions;

	return catalog_lookup_table_latest(grandparent_id, ns_name, table_name, 0, table, NULL,
									   &nversions);
}

/* True if a table other than except_id is at the local folder `path` (canonical). */
bool
catalog_location_taken(const char *path, int64 except_id)
{
	Datum values[2] = {CStringGetTextDatum(path), Int64GetDatum(except_id)};
	bool isnull;

	execute(STMT_LOCATION_TAKEN, values, NULL, 1);
	return DatumGetBool(catalog_result_datum(0, 1, &isnull));
}

/* Up to `limit` tables' ids and locations after table id `after_id`, in id order. */
int
catalog_list_table_locations(int64 after_id, int limit, int64 **ids, char ***locations)
{
	Datum values[2] = {Int64GetDatum(after_id), Int32GetDatum(limit)};
	int n;

	execute(STMT_LIST_TABLE_LOCATIONS, values, NULL, 0);
	n = (int)SPI_processed;
	*ids = MemoryContextAlloc(catalog_result_cxt, sizeof(int64) * (n + 1));
	*locations = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;

		(*ids)[i] = DatumGetInt64(catalog_result_datum(i, 1, &isnull));
		(*locations)[i] = catalog_result_text(i, 2);
	}
	return n;
}

/*
 * As catalog_lookup_table_key, and the table's latest versions on main, at
 * most `limit` (0: none), newest first, under the same snapshot, as one
 * statement would read them: *nversions of them in *versions (none when the
 * table is missing).
 */
int
catalog_lookup_table_latest(int64 grandparent_id, const char *ns_name, const char *table_name,
							int limit, CatalogObject *table, LnTableVersion **versions,
							int *nversions)
{
	CatalogChild child;
	int found;

	catalog_check_schema_version();
	memset(table, 0, sizeof(CatalogObject));
	*nversions = 0;
	if (versions != NULL)
		*versions = NULL;
	found = catalog_index_find_table(grandparent_id, ns_name, table_name, &child, limit, versions,
									 nversions, catalog_result_cxt);
	if (found == 2)
	{
		table->id = child.id;
		table->is_table = true;
		table->name = MemoryContextStrdup(catalog_result_cxt, table_name);
		table->location = child.location;
		table->declared = child.declared;
	}
	return found;
}
