/*
 * extension_guard.c
 *		Refuse DROP EXTENSION lance_namespace while the catalog holds
 *		namespaces or tables.
 *
 * Dropping the extension drops the catalog's tables with every namespace,
 * table and version in them, while the tables' manifests and data stay on
 * storage with nothing left that says which version is real.  An event
 * trigger (see the install script) calls this before DROP EXTENSION runs;
 * an administrator who means it sets lance_namespace.allow_drop_extension.
 */
#include "postgres.h"

#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "utils/guc.h"

#include "error.h"
#include "extension_guard.h"

static bool allow_drop_extension = false;

void
extension_guard_init(void)
{
	DefineCustomBoolVariable("lance_namespace.allow_drop_extension",
							 "Allow DROP EXTENSION lance_namespace while the catalog holds "
							 "namespaces or tables.",
							 "Dropping the extension drops the whole catalog, while the tables' "
							 "files stay on storage.",
							 &allow_drop_extension, false, PGC_SUSET, 0, NULL, NULL, NULL);
}

/* True if the statement drops this extension. */
static bool
drops_this_extension(Node *parsetree)
{
	DropStmt *stmt;
	ListCell *lc;

	if (parsetree == NULL || !IsA(parsetree, DropStmt))
		return false;
	stmt = (DropStmt *)parsetree;
	if (stmt->removeType != OBJECT_EXTENSION)
		return false;
	foreach (lc, stmt->objects)
		if (strcmp(strVal(lfirst(lc)), "lance_namespace") == 0)
			return true;
	return false;
}

/* How many namespaces and tables the catalog holds, the root aside. */
static int64
count_catalog_objects(void)
{
	int64 count;
	bool isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT pg_catalog.count(*) FROM lance_catalog.object WHERE id <> 0", true,
					1) != SPI_OK_SELECT)
		elog(ERROR, "could not count the catalog's objects");
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return count;
}

PG_FUNCTION_INFO_V1(lance_refuse_drop_extension);
Datum
lance_refuse_drop_extension(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	int64 count;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "lance_refuse_drop_extension() must be called as an event trigger");
	trigdata = (EventTriggerData *)fcinfo->context;
	if (!drops_this_extension(trigdata->parsetree) || allow_drop_extension)
		PG_RETURN_VOID();

	count = count_catalog_objects();
	if (count > 0)
		ln_error_detail(LN_NAMESPACE_NOT_EMPTY,
						"Drop the namespaces and tables first, or, to drop the catalog with "
						"everything in it, SET lance_namespace.allow_drop_extension = on "
						"(superuser).",
						"the catalog is not empty (" INT64_FORMAT " namespaces and tables): "
						"dropping the extension would drop them all, while their files stay on "
						"storage",
						count);
	PG_RETURN_VOID();
}
