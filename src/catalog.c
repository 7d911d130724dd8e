/*
 * catalog.c
 *		Read and write the catalog tables through SPI with saved plans.
 *
 * Every statement is prepared once per backend and kept, so that a call
 * never parses or plans SQL text.  Results are copied into the memory
 * context that was current at catalog_begin(), which outlives SPI.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "catalog.h"
#include "error.h"

typedef enum CatalogStatement
{
	STMT_LOOKUP_CHILD,
	STMT_LOOKUP_CHILD_FOR_UPDATE,
	STMT_INSERT_OBJECT,
	STMT_SET_PROPERTIES,
	STMT_REREGISTER_TABLE,
	STMT_HAS_CHILDREN,
	STMT_DELETE_OBJECT,
	STMT_DELETE_SUBTREE,
	STMT_MOVE_OBJECT,
	STMT_LIST_CHILDREN,
	STMT_LIST_TABLES_WITH_DATA,
	STMT_LIST_ALL_TABLES,
	STMT_LIST_ALL_TABLES_WITH_DATA,
	NUM_CATALOG_STATEMENTS
} CatalogStatement;

typedef struct StatementDef
{
	const char *sql;
	int			nargs;
	Oid			argtypes[7];
} StatementDef;

/*
 * Properties travel between C and the catalog as text[] pairs: jsonb_object()
 * builds the stored jsonb, and a flattened two-dimensional array of
 * [key, value] pairs reads it back, so that no JSON is handled here.
 */
#define OBJECT_COLUMNS \
	"id, kind = 'table', name, location, coalesce(declared, false), " \
	"ARRAY(SELECT ARRAY[key, value] FROM jsonb_each_text(properties))"

#define TABLE_PATH \
	"(WITH RECURSIVE up(parent_id, names) AS (" \
	"   SELECT p.parent_id, ARRAY[p.name]" \
	"   UNION ALL" \
	"   SELECT o.parent_id, o.name || up.names" \
	"     FROM up JOIN lance_catalog.object o ON o.id = up.parent_id" \
	"    WHERE up.parent_id <> 0)" \
	" SELECT names FROM up WHERE up.parent_id = 0)"

static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	[STMT_LOOKUP_CHILD] = {
		"SELECT " OBJECT_COLUMNS " FROM lance_catalog.object WHERE parent_id = $1 AND name = $2",
		2, {INT8OID, TEXTOID}
	},
	[STMT_LOOKUP_CHILD_FOR_UPDATE] = {
		"SELECT " OBJECT_COLUMNS " FROM lance_catalog.object WHERE parent_id = $1 AND name = $2"
		" FOR UPDATE",
		2, {INT8OID, TEXTOID}
	},
	[STMT_INSERT_OBJECT] = {
		"INSERT INTO lance_catalog.object (parent_id, kind, name, properties, location, declared)"
		" VALUES ($1, CASE WHEN $2 THEN 'table' ELSE 'namespace' END, $3, jsonb_object($4, $5),"
		"         $6, $7)"
		" ON CONFLICT (parent_id, name) DO NOTHING RETURNING id",
		7, {INT8OID, BOOLOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID, BOOLOID}
	},
	[STMT_SET_PROPERTIES] = {
		"UPDATE lance_catalog.object SET properties = jsonb_object($2, $3) WHERE id = $1",
		3, {INT8OID, TEXTARRAYOID, TEXTARRAYOID}
	},
	[STMT_REREGISTER_TABLE] = {
		"UPDATE lance_catalog.object"
		"   SET location = $2, properties = jsonb_object($3, $4), declared = false"
		" WHERE id = $1",
		4, {INT8OID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID}
	},
	[STMT_HAS_CHILDREN] = {
		"SELECT EXISTS (SELECT FROM lance_catalog.object WHERE parent_id = $1)",
		1, {INT8OID}
	},
	[STMT_DELETE_OBJECT] = {
		"DELETE FROM lance_catalog.object WHERE id = $1",
		1, {INT8OID}
	},
	[STMT_DELETE_SUBTREE] = {
		/* one statement, so that the parent key checks see the whole subtree gone */
		"WITH RECURSIVE subtree(id) AS ("
		"   SELECT $1::bigint"
		"   UNION ALL"
		"   SELECT o.id FROM lance_catalog.object o JOIN subtree s ON o.parent_id = s.id)"
		" DELETE FROM lance_catalog.object WHERE id IN (SELECT id FROM subtree)",
		1, {INT8OID}
	},
	[STMT_MOVE_OBJECT] = {
		"UPDATE lance_catalog.object SET parent_id = $2, name = $3 WHERE id = $1",
		3, {INT8OID, INT8OID, TEXTOID}
	},
	[STMT_LIST_CHILDREN] = {
		"SELECT name FROM lance_catalog.object"
		" WHERE parent_id = $1 AND kind = CASE WHEN $2 THEN 'table' ELSE 'namespace' END"
		"   AND name > $3"
		" ORDER BY name LIMIT $4",
		4, {INT8OID, BOOLOID, TEXTOID, INT4OID}
	},
	[STMT_LIST_TABLES_WITH_DATA] = {
		"SELECT name FROM lance_catalog.object"
		" WHERE parent_id = $1 AND kind = 'table' AND NOT declared AND name > $2"
		" ORDER BY name LIMIT $3",
		3, {INT8OID, TEXTOID, INT4OID}
	},
	[STMT_LIST_ALL_TABLES] = {
		"SELECT p.id, " TABLE_PATH " FROM ("
		"   SELECT id, parent_id, name FROM lance_catalog.object"
		"    WHERE kind = 'table' AND id > $1 ORDER BY id LIMIT $2) p"
		" ORDER BY p.id",
		2, {INT8OID, INT4OID}
	},
	[STMT_LIST_ALL_TABLES_WITH_DATA] = {
		"SELECT p.id, " TABLE_PATH " FROM ("
		"   SELECT id, parent_id, name FROM lance_catalog.object"
		"    WHERE kind = 'table' AND NOT declared AND id > $1 ORDER BY id LIMIT $2) p"
		" ORDER BY p.id",
		2, {INT8OID, INT4OID}
	},
};

static SPIPlanPtr plans[NUM_CATALOG_STATEMENTS];
static MemoryContext result_cxt;

void
catalog_begin(void)
{
	result_cxt = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
catalog_end(void)
{
	SPI_finish();
}

/* Run a catalog statement, preparing and keeping its plan on first use. */
static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	int			rc;

	if (plans[stmt] == NULL)
	{
		const StatementDef *def = &statement_defs[stmt];
		SPIPlanPtr	plan = SPI_prepare(def->sql, def->nargs, (Oid *) def->argtypes);

		if (plan == NULL)
			elog(ERROR, "could not prepare catalog statement %d: %s", stmt,
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		plans[stmt] = plan;
	}
	rc = SPI_execute_plan(plans[stmt], values, nulls, false, limit);
	if (rc < 0)
		elog(ERROR, "catalog statement %d failed: %s", stmt, SPI_result_code_string(rc));
	return rc;
}

static Datum
result_datum(int row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

static char *
result_text(int row, int col)
{
	bool		isnull;
	Datum		d = result_datum(row, col, &isnull);

	if (isnull)
		return NULL;
	return MemoryContextStrdup(result_cxt, TextDatumGetCString(d));
}

/* A text[] result as palloc'ed strings in the result context. */
static int
result_text_array(int row, int col, char ***strings)
{
	bool		isnull;
	Datum		d = result_datum(row, col, &isnull);
	Datum	   *elems;
	int			n;

	*strings = NULL;
	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
	*strings = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
		(*strings)[i] = MemoryContextStrdup(result_cxt, TextDatumGetCString(elems[i]));
	return n;
}

static Datum
text_array_datum(char **strings, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * (n + 1));

	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(strings[i]);
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

static Datum
text_datum_or_null(const char *s, char *null)
{
	*null = s ? ' ' : 'n';
	return s ? CStringGetTextDatum(s) : (Datum) 0;
}

bool
catalog_lookup_child(int64 parent_id, const char *name, bool for_update, CatalogObject *out)
{
	Datum		values[2] = {Int64GetDatum(parent_id), CStringGetTextDatum(name)};
	bool		isnull;
	char	  **pairs;
	int			npairs;

	execute(for_update ? STMT_LOOKUP_CHILD_FOR_UPDATE : STMT_LOOKUP_CHILD, values, NULL, 1);
	if (SPI_processed == 0)
		return false;

	out->id = DatumGetInt64(result_datum(0, 1, &isnull));
	out->is_table = DatumGetBool(result_datum(0, 2, &isnull));
	out->name = result_text(0, 3);
	out->location = result_text(0, 4);
	out->declared = DatumGetBool(result_datum(0, 5, &isnull));
	npairs = result_text_array(0, 6, &pairs) / 2;
	out->properties.len = npairs;
	out->properties.keys = MemoryContextAlloc(result_cxt, sizeof(char *) * (npairs + 1));
	out->properties.values = MemoryContextAlloc(result_cxt, sizeof(char *) * (npairs + 1));
	for (int i = 0; i < npairs; i++)
	{
		out->properties.keys[i] = pairs[2 * i];
		out->properties.values[i] = pairs[2 * i + 1];
	}
	return true;
}

/*
 * Insert a namespace or table under parent_id.  Returns the new id, or 0 if
 * the name is taken: the unique key decides, so that of two concurrent
 * inserts of one name exactly one wins and the other sees the winner.
 */
int64
catalog_insert_object(int64 parent_id, bool is_table, const char *name, const LnMap *properties,
					  const char *location, bool declared)
{
	Datum		values[7];
	char		nulls[8] = "       ";
	bool		isnull;

	values[0] = Int64GetDatum(parent_id);
	values[1] = BoolGetDatum(is_table);
	values[2] = CStringGetTextDatum(name);
	values[3] = text_array_datum(properties->keys, properties->len);
	values[4] = text_array_datum(properties->values, properties->len);
	values[5] = text_datum_or_null(location, &nulls[5]);
	values[6] = BoolGetDatum(declared);
	if (!is_table)
		nulls[6] = 'n';

	execute(STMT_INSERT_OBJECT, values, nulls, 0);
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt64(result_datum(0, 1, &isnull));
}

void
catalog_set_properties(int64 id, const LnMap *properties)
{
	Datum		values[3];

	values[0] = Int64GetDatum(id);
	values[1] = text_array_datum(properties->keys, properties->len);
	values[2] = text_array_datum(properties->values, properties->len);
	execute(STMT_SET_PROPERTIES, values, NULL, 0);
}

/* Point an existing table entry at another location, as a table with data. */
void
catalog_reregister_table(int64 id, const char *location, const LnMap *properties)
{
	Datum		values[4];

	values[0] = Int64GetDatum(id);
	values[1] = CStringGetTextDatum(location);
	values[2] = text_array_datum(properties->keys, properties->len);
	values[3] = text_array_datum(properties->values, properties->len);
	execute(STMT_REREGISTER_TABLE, values, NULL, 0);
}

bool
catalog_has_children(int64 id)
{
	Datum		values[1] = {Int64GetDatum(id)};
	bool		isnull;

	execute(STMT_HAS_CHILDREN, values, NULL, 1);
	return DatumGetBool(result_datum(0, 1, &isnull));
}

void
catalog_delete_object(int64 id)
{
	Datum		values[1] = {Int64GetDatum(id)};

	execute(STMT_DELETE_OBJECT, values, NULL, 0);
}

/* Delete a namespace with every namespace and table below it. */
void
catalog_delete_subtree(int64 id)
{
	Datum		values[1] = {Int64GetDatum(id)};

	execute(STMT_DELETE_SUBTREE, values, NULL, 0);
}

void
catalog_move_object(int64 id, int64 new_parent_id, const char *new_name)
{
	Datum		values[3] = {Int64GetDatum(id), Int64GetDatum(new_parent_id),
	CStringGetTextDatum(new_name)};

	execute(STMT_MOVE_OBJECT, values, NULL, 0);
}

/*
 * Names of the namespaces (or tables) directly under parent_id that sort
 * after `after`, in byte order, at most `limit` of them.
 */
int
catalog_list_children(int64 parent_id, bool tables, bool include_declared, const char *after,
					  int limit, char ***names)
{
	int			n;

	if (tables && !include_declared)
	{
		Datum		values[3] = {Int64GetDatum(parent_id), CStringGetTextDatum(after),
		Int32GetDatum(limit)};

		execute(STMT_LIST_TABLES_WITH_DATA, values, NULL, 0);
	}
	else
	{
		Datum		values[4] = {Int64GetDatum(parent_id), BoolGetDatum(tables),
		CStringGetTextDatum(after), Int32GetDatum(limit)};

		execute(STMT_LIST_CHILDREN, values, NULL, 0);
	}

	n = (int) SPI_processed;
	*names = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
		(*names)[i] = result_text(i, 1);
	return n;
}

/* Tables of the whole catalog with id above after_id, in id order, with their full ids. */
int
catalog_list_all_tables(bool include_declared, int64 after_id, int limit, int64 **ids,
						LnId **paths)
{
	Datum		values[2] = {Int64GetDatum(after_id), Int32GetDatum(limit)};
	int			n;
	bool		isnull;

	execute(include_declared ? STMT_LIST_ALL_TABLES : STMT_LIST_ALL_TABLES_WITH_DATA,
			values, NULL, 0);
	n = (int) SPI_processed;
	*ids = MemoryContextAlloc(result_cxt, sizeof(int64) * (n + 1));
	*paths = MemoryContextAlloc(result_cxt, sizeof(LnId) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*ids)[i] = DatumGetInt64(result_datum(i, 1, &isnull));
		(*paths)[i].len = result_text_array(i, 2, &(*paths)[i].names);
	}
	return n;
}
