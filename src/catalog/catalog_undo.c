/*
 * catalog_undo.c
 *		The undo a rollback could not finish on storage
 *		(lance_catalog.storage_undo): steps taken over from the spool
 *		(storage_spool.c), the ones due for an attempt, and their outcome.
 *
 * Only maintenance rounds use these statements; they run as the catalog's
 * other statements do (catalog.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog.h"
#include "catalog_internal.h"

/* This file's statements, by their numbers (catalog_internal.h). */
static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	/* a spool record is taken once, however many rounds read its file before it goes */
	[STMT_TAKE_UNDO] = {"INSERT INTO lance_catalog.storage_undo"
						"       (spool, transaction_id, action, location, path, branch, version,"
						"        step)"
						" VALUES ($1, $2::pg_catalog.text::pg_catalog.xid8, $3, $4, $5, $6, $7, $8)"
						" ON CONFLICT (spool) DO NOTHING",
						8,
						{TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, BYTEAOID}},
	/* SKIP LOCKED: the worker and lance_sweep_leftovers() may run at once */
	[STMT_LIST_DUE_UNDO] = {"SELECT spool, step FROM lance_catalog.storage_undo"
							" WHERE next_attempt <= pg_catalog.now()"
							" ORDER BY next_attempt, spool LIMIT $1"
							" FOR UPDATE SKIP LOCKED",
							1,
							{INT4OID}},
	[STMT_UNDO_DONE] = {"DELETE FROM lance_catalog.storage_undo WHERE spool = $1", 1, {TEXTOID}},
	/* backoff: 10 s, doubled per attempt, an hour at most */
	[STMT_UNDO_FAILED] =
		{"UPDATE lance_catalog.storage_undo"
		 "   SET attempts = attempts + 1, last_error = $2,"
		 "       next_attempt = pg_catalog.now() + LEAST("
		 "           interval '1 hour',"
		 "           interval '10 seconds' * pg_catalog.power(2, LEAST(attempts, 20)))"
		 " WHERE spool = $1",
		 2,
		 {TEXTOID, TEXTOID}},
	[STMT_VERSION_AT_LOCATION] = {"SELECT 1 FROM lance_catalog.version v"
								  "  JOIN lance_catalog.object o ON o.id = v.table_id"
								  " WHERE o.kind = 'table' AND o.location = $1"
								  "   AND v.branch = $2 AND v.version = $3",
								  3,
								  {TEXTOID, TEXTOID, INT8OID}},
};

static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	return catalog_execute(stmt, &statement_defs[stmt], values, nulls, limit);
}

/* Take over a spooled step; false if it was taken already. */
bool
catalog_take_undo(const char *spool, uint64 xid, const char *action, const char *location,
				  const char *path, const char *branch, int64 version, const char *step, size_t len)
{
	Datum values[8];
	char nulls[9] = "        ";
	bytea *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), step, len);
	values[0] = CStringGetTextDatum(spool);
	values[1] = CStringGetTextDatum(psprintf(UINT64_FORMAT, xid));
	values[2] = CStringGetTextDatum(action);
	values[3] = CStringGetTextDatum(location);
	values[4] = CStringGetTextDatum(path);
	values[5] = catalog_text_datum_or_null(branch, &nulls[5]);
	values[6] = Int64GetDatum(version);
	if (version < 0)
		nulls[6] = 'n';
	values[7] = PointerGetDatum(b);
	execute(STMT_TAKE_UNDO, values, nulls, 0);
	return SPI_processed > 0;
}

/* Up to `limit` steps due for an attempt, locked until the transaction ends. */
int
catalog_list_due_undo(int limit, CatalogUndo **steps)
{
	Datum values[1] = {Int32GetDatum(limit)};
	int n;

	execute(STMT_LIST_DUE_UNDO, values, NULL, 0);
	n = (int)SPI_processed;
	*steps = MemoryContextAlloc(catalog_result_cxt, sizeof(CatalogUndo) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;
		bytea *b;
		MemoryContext old;

		(*steps)[i].spool = catalog_result_text(i, 1);
		b = DatumGetByteaPP(catalog_result_datum(i, 2, &isnull));
		old = MemoryContextSwitchTo(catalog_result_cxt);
		(*steps)[i].len = VARSIZE_ANY_EXHDR(b);
		(*steps)[i].step = palloc((*steps)[i].len + 1);
		memcpy((*steps)[i].step, VARDATA_ANY(b), (*steps)[i].len);
		MemoryContextSwitchTo(old);
	}
	return n;
}

/* A step is done: it goes. */
void
catalog_undo_done(const char *spool)
{
	Datum values[1] = {CStringGetTextDatum(spool)};

	execute(STMT_UNDO_DONE, values, NULL, 0);
}

/* A step failed: it waits longer before its next attempt. */
void
catalog_undo_failed(const char *spool, const char *error)
{
	Datum values[2] = {CStringGetTextDatum(spool), CStringGetTextDatum(error)};

	execute(STMT_UNDO_FAILED, values, NULL, 0);
}

/* Whether the catalog records version `version` of branch `branch` of the table at `location`. */
bool
catalog_version_at_location(const char *location, const char *branch, int64 version)
{
	Datum values[3] = {CStringGetTextDatum(location), CStringGetTextDatum(branch),
					   Int64GetDatum(version)};

	execute(STMT_VERSION_AT_LOCATION, values, NULL, 1);
	return SPI_processed > 0;
}
