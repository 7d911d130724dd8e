/*
 * extension_guard.c
 *		Refuse DROP EXTENSION lance_namespace, and the statements that drop
 *		it with something else (DROP SCHEMA ... CASCADE of its schema, DROP
 *		OWNED BY its owner), while the catalog holds namespaces or tables.
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
#include "utils/acl.h"
#include "utils/guc.h"

#include "../common/error.h"
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

/* The extension's owner and schema name, from pg_extension; false if it is not there. */
static bool
extension_owner_and_schema(Oid *owner, char **schema)
{
	bool found;
	bool isnull;

	if (SPI_execute(
			"SELECT e.extowner, n.nspname::pg_catalog.text"
			"  FROM pg_catalog.pg_extension e"
			"  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace"
			" WHERE e.extname OPERATOR(pg_catalog.=) 'lance_namespace'",
			true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_extension");
	found = SPI_processed == 1;
	if (found)
	{
		*owner = DatumGetObjectId(
			SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		*schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	}
	return found;
}

/*
 * True if the statement would drop this extension: DROP EXTENSION naming it,
 * DROP SCHEMA ... CASCADE of its schema, or DROP OWNED BY its owner.
 */
static bool
drops_this_extension(Node *parsetree, Oid owner, const char *schema)
{
	ListCell *lc;

	if (parsetree == NULL)
		return false;
	if (IsA(parsetree, DropOwnedStmt))
	{
		foreach (lc, ((DropOwnedStmt *)parsetree)->roles)
			if (get_rolespec_oid((RoleSpec *)lfirst(lc), true) == owner)
				return true;
		return false;
	}
	if (!IsA(parsetree, DropStmt))
		return false;
	if (((DropStmt *)parsetree)->removeType == OBJECT_EXTENSION)
	{
		foreach (lc, ((DropStmt *)parsetree)->objects)
			if (strcmp(strVal(lfirst(lc)), "lance_namespace") == 0)
				return true;
	}
	else if (((DropStmt *)parsetree)->removeType == OBJECT_SCHEMA &&
			 ((DropStmt *)parsetree)->behavior == DROP_CASCADE)
	{
		foreach (lc, ((DropStmt *)parsetree)->objects)
			if (strcmp(strVal(lfirst(lc)), schema) == 0 ||
				strcmp(strVal(lfirst(lc)), "lance_catalog") == 0)
				return true;
	}
	return false;
}

/* How many namespaces and tables the catalog holds, the root aside. */
static int64
count_catalog_objects(void)
{
	bool isnull;

	if (SPI_execute("SELECT pg_catalog.count(*) FROM lance_catalog.object"
					" WHERE id OPERATOR(pg_catalog.<>) 0",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not count the catalog's objects");
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

PG_FUNCTION_INFO_V1(lance_refuse_drop_extension);
Datum
lance_refuse_drop_extension(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	int64 count;
	Oid owner = InvalidOid;
	char *schema = NULL;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "lance_refuse_drop_extension() must be called as an event trigger");
	trigdata = (EventTriggerData *)fcinfo->context;
	if (allow_drop_extension)
		PG_RETURN_VOID();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	count = extension_owner_and_schema(&owner, &schema) &&
					drops_this_extension(trigdata->parsetree, owner, schema)
				? count_catalog_objects()
				: 0;
	SPI_finish();
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
