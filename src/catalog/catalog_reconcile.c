/*
 * catalog_reconcile.c
 *		The statements of the reconciliation of cleaned-up versions
 *		(maintenance's reconcile.c): tables to look at, their versions that
 *		are not the latest of their branch, and the removal of one.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog.h"
#include "catalog_internal.h"

static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	/* tables with data after a table id, in id order, with their ids (names) */
	[STMT_RECONCILE_TABLES] = {"SELECT p.id, p.location, " OBJECT_PATH
							   "  FROM lance_catalog.object p"
							   " WHERE p.kind = 'table' AND NOT p.declared AND p.id > $1"
							   " ORDER BY p.id LIMIT $2",
							   2,
							   {INT8OID, INT4OID}},
	/* a table's versions that are not the latest of their branch, oldest first */
	[STMT_OLD_VERSIONS] =
		{"SELECT v.branch, v.version, v.manifest_path FROM lance_catalog.version v"
		 " WHERE v.table_id = $1 AND v.version < (SELECT pg_catalog.max(w.version)"
		 "                                          FROM lance_catalog.version w"
		 "                                         WHERE w.table_id = $1 AND w.branch = v.branch)"
		 " ORDER BY v.branch, v.version LIMIT $2",
		 2,
		 {INT8OID, INT4OID}},
	/*
	 * One version, if it is still the one looked at (the same manifest) and
	 * still not the latest of its branch: a version is never removed that
	 * became the latest since (a deletion of the later ones).
	 */
	[STMT_DELETE_CLEANED_VERSION] =
		{"DELETE FROM lance_catalog.version v"
		 " WHERE v.table_id = $1 AND v.branch = $2 AND v.version = $3 AND v.manifest_path = $4"
		 "   AND EXISTS (SELECT FROM lance_catalog.version w"
		 "                WHERE w.table_id = $1 AND w.branch = $2 AND w.version > $3)",
		 4,
		 {INT8OID, TEXTOID, INT8OID, TEXTOID}},
};

static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	return catalog_execute(stmt, &statement_defs[stmt], values, nulls, limit);
}

/* Up to `limit` tables with data whose id is above `after`, in id order. */
int
catalog_reconcile_tables(int64 after, int limit, CatalogReconcileTable **tables)
{
	Datum values[2] = {Int64GetDatum(after), Int32GetDatum(limit)};
	int n;

	execute(STMT_RECONCILE_TABLES, values, NULL, 0);
	n = (int)SPI_processed;
	*tables = MemoryContextAllocZero(catalog_result_cxt, sizeof(CatalogReconcileTable) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;
		CatalogReconcileTable *t = &(*tables)[i];

		t->id = DatumGetInt64(catalog_result_datum(i, 1, &isnull));
		t->location = catalog_result_text(i, 2);
		t->id_len = catalog_result_text_array(i, 3, &t->names);
	}
	return n;
}

/* Up to `limit` versions of the table that are not the latest of their branch. */
int
catalog_old_versions(int64 table_id, int limit, CatalogOldVersion **versions)
{
	Datum values[2] = {Int64GetDatum(table_id), Int32GetDatum(limit)};
	int n;

	execute(STMT_OLD_VERSIONS, values, NULL, 0);
	n = (int)SPI_processed;
	*versions = MemoryContextAllocZero(catalog_result_cxt, sizeof(CatalogOldVersion) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;
		CatalogOldVersion *v = &(*versions)[i];

		v->branch = catalog_result_text(i, 1);
		v->version = DatumGetInt64(catalog_result_datum(i, 2, &isnull));
		v->manifest_path = catalog_result_text(i, 3);
	}
	return n;
}

/* Remove a version whose manifest is gone, unless it changed or is the latest now. */
bool
catalog_delete_cleaned_version(int64 table_id, const CatalogOldVersion *v)
{
	Datum values[4] = {Int64GetDatum(table_id), CStringGetTextDatum(v->branch),
					   Int64GetDatum(v->version), CStringGetTextDatum(v->manifest_path)};

	execute(STMT_DELETE_CLEANED_VERSION, values, NULL, 0);
	return SPI_processed > 0;
}
