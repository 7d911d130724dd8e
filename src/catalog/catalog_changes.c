/*
 * catalog_changes.c
 *		The catalog's commit log (lance_catalog.change): appending an entry,
 *		reading and setting a logged transaction's status, and the queue of
 *		dropped tables whose data waits for removal.
 *
 * The log is a table of its own, written by every operation and read by
 * the change feed and the drop processor; it shares with the object and
 * version statements only the way statements run (catalog.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog.h"
#include "catalog_internal.h"

/* This file's statements, by their numbers (catalog_internal.h). */
static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	/* the caller is given: the catalog's statements run as its owner */
	[STMT_INSERT_CHANGE] = {"INSERT INTO lance_catalog.change"
							"       (operation, objects, versions, namespaces, context, status,"
							"        properties, drop_location, role, object_ids, namespace_ids,"
							"        role_id, headers, key_id)"
							" VALUES ($1, $2, $3, $4, pg_catalog.jsonb_object($5, $6), $7, "
							"pg_catalog.jsonb_object($8, $9), $10, $11::pg_catalog.name, $12, $13,"
							" $14::pg_catalog.regrole, pg_catalog.jsonb_object($15, $16), $17)"
							" RETURNING seq, transaction_id::text",
							17,
							{TEXTOID, TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
							 TEXTARRAYOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID, TEXTOID,
							 INT8ARRAYOID, INT8ARRAYOID, OIDOID, TEXTARRAYOID, TEXTARRAYOID,
							 TEXTOID}},
	[STMT_GET_CHANGE] = {"SELECT status, ARRAY(SELECT ARRAY[key, value]"
						 "                       FROM pg_catalog.jsonb_each_text(properties)),"
						 "       role::text, role_id::pg_catalog.oid"
						 "  FROM lance_catalog.change WHERE transaction_id = $1::uuid",
						 1,
						 {TEXTOID}},
	[STMT_GET_CHANGE_FOR_UPDATE] =
		{"SELECT status, ARRAY(SELECT ARRAY[key, value]"
		 "                       FROM pg_catalog.jsonb_each_text(properties)),"
		 "       role::text, role_id::pg_catalog.oid"
		 "  FROM lance_catalog.change WHERE transaction_id = $1::uuid"
		 " FOR UPDATE",
		 1,
		 {TEXTOID}},
	/* $5: whether the processor failed the drop; NULL, as it was */
	[STMT_SET_CHANGE] = {"UPDATE lance_catalog.change"
						 "   SET status = $2, properties = pg_catalog.jsonb_object($3, $4),"
						 "       drop_failed = COALESCE($5, drop_failed)"
						 " WHERE transaction_id = $1::uuid",
						 5,
						 {TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, BOOLOID}},
	/* SKIP LOCKED: two processors share the queue, and a drop being canceled waits */
	[STMT_LIST_QUEUED_DROPS] = {"SELECT transaction_id::text, drop_location"
								"  FROM lance_catalog.change"
								" WHERE status = 'Queued' AND operation = 'DropTable'"
								" ORDER BY seq LIMIT $1"
								" FOR UPDATE SKIP LOCKED",
								1,
								{INT4OID}},
	/*
	 * a drop whose removal failed goes back to the queue; one that queued no
	 * folder has none, and one its maker set Failed (drop_failed false) stays
	 */
	[STMT_REQUEUE_FAILED_DROPS] = {"UPDATE lance_catalog.change"
								   "   SET status = 'Queued', drop_failed = false"
								   " WHERE status = 'Failed' AND drop_failed"
								   "   AND operation = 'DropTable' AND drop_location IS NOT NULL",
								   0,
								   {InvalidOid}},
};

/* Run one of the statements above; catalog.c prepares and keeps its plan. */
static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	return catalog_execute(stmt, &statement_defs[stmt], values, nulls, limit);
}

/* Queue every drop the processor failed again; returns how many. */
int
catalog_requeue_failed_drops(void)
{
	execute(STMT_REQUEUE_FAILED_DROPS, NULL, NULL, 0);
	return (int)SPI_processed;
}

/*
 * Append an entry to the commit log; returns its transaction id and sets
 * *seq to its number.
 */
char *
catalog_insert_change(const char *operation, int nobjects, char **objects, const int64 *versions,
					  const bool *has_version, int nnamespaces, char **namespaces,
					  const int64 *object_ids, int nnamespace_ids, const int64 *namespace_ids,
					  const LnMap *context, const LnMap *headers, const char *status,
					  const LnMap *properties, const char *drop_location, Oid role_id,
					  const char *role, const char *key_id, int64 *seq)
{
	Datum values[17];
	char nulls[18] = "                 ";
	bool isnull;

	values[0] = CStringGetTextDatum(operation);
	values[1] = catalog_nullable_text_array_datum(objects, nobjects);
	values[2] = catalog_int8_array_datum(versions, has_version, nobjects);
	values[3] = catalog_nullable_text_array_datum(namespaces, nnamespaces);
	values[4] = catalog_text_array_datum(context->keys, context->len);
	values[5] = catalog_text_array_datum(context->values, context->len);
	values[6] = CStringGetTextDatum(status);
	values[7] = catalog_text_array_datum(properties->keys, properties->len);
	values[8] = catalog_text_array_datum(properties->values, properties->len);
	values[9] = catalog_text_datum_or_null(drop_location, &nulls[9]);
	values[10] = CStringGetTextDatum(role);
	values[11] = catalog_int8_array_datum(object_ids, NULL, nobjects);
	values[12] = catalog_int8_array_datum(namespace_ids, NULL, nnamespace_ids);
	values[13] = ObjectIdGetDatum(role_id);
	values[14] = catalog_text_array_datum(headers->keys, headers->len);
	values[15] = catalog_text_array_datum(headers->values, headers->len);
	values[16] = catalog_text_datum_or_null(key_id, &nulls[16]);
	execute(STMT_INSERT_CHANGE, values, nulls, 0);
	*seq = DatumGetInt64(catalog_result_datum(0, 1, &isnull));
	return catalog_result_text(0, 2);
}

/*
 * The status, properties and role (its name then, and its OID, InvalidOid if
 * unknown) of a logged transaction; false if there is none.
 */
bool
catalog_get_change(const char *transaction_id, bool for_update, char **status, LnMap *properties,
				   char **role, Oid *role_id)
{
	bool isnull;

	Datum values[1] = {CStringGetTextDatum(transaction_id)};

	execute(for_update ? STMT_GET_CHANGE_FOR_UPDATE : STMT_GET_CHANGE, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	*status = catalog_result_text(0, 1);
	*properties = catalog_result_map(0, 2);
	*role = catalog_result_text(0, 3);
	*role_id = DatumGetObjectId(catalog_result_datum(0, 4, &isnull));
	if (isnull)
		*role_id = InvalidOid;
	return true;
}

/*
 * Set a logged transaction's status and properties; `setter` records whether
 * a Failed status is the processor's (lance_retry_drops() may queue it
 * again) or the caller's own stop.
 */
void
catalog_set_change(const char *transaction_id, const char *status, const LnMap *properties,
				   ChangeSetter setter)
{
	Datum values[5];
	char nulls[6] = "     ";

	values[0] = CStringGetTextDatum(transaction_id);
	values[1] = CStringGetTextDatum(status);
	values[2] = catalog_text_array_datum(properties->keys, properties->len);
	values[3] = catalog_text_array_datum(properties->values, properties->len);
	values[4] = BoolGetDatum(setter == CHANGE_SET_BY_PROCESSOR && strcmp(status, "Failed") == 0);
	if (setter == CHANGE_SET_PROPERTIES)
		nulls[4] = 'n';
	execute(STMT_SET_CHANGE, values, nulls, 0);
}

/* DropTable entries whose data waits for removal, oldest first: their ids and locations. */
int
catalog_list_queued_drops(int limit, char ***transaction_ids, char ***locations)
{
	Datum values[1] = {Int32GetDatum(limit)};
	int n;

	execute(STMT_LIST_QUEUED_DROPS, values, NULL, 0);
	n = (int)SPI_processed;
	*transaction_ids = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	*locations = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*transaction_ids)[i] = catalog_result_text(i, 1);
		(*locations)[i] = catalog_result_text(i, 2);
	}
	return n;
}
