/*
 * lance_namespace.c
 *		Module entry point and settings.
 */
#include "postgres.h"

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/guc.h"
#include "utils/varlena.h"

#include "lance_namespace.h"
#include "storage.h"

PG_MODULE_MAGIC;

/* Where declared tables go when no namespace on their path has a "location" property. */
char *ln_root_location = NULL;

/* Local folders under which the catalog manages table versions and writes manifests. */
char *ln_local_roots = NULL;

void _PG_init(void);

/* local_roots must be a list of absolute folders. */
static bool
check_local_roots(char **newval, void **extra pg_attribute_unused(),
				  GucSource source pg_attribute_unused())
{
	char *raw = pstrdup(*newval);
	List *roots;
	ListCell *lc;

	if (!SplitDirectoriesString(raw, ',', &roots))
	{
		GUC_check_errdetail("List syntax is invalid.");
		return false;
	}
	foreach (lc, roots)
	{
		if (!is_absolute_path((char *)lfirst(lc)))
		{
			GUC_check_errdetail("\"%s\" is not an absolute path.", (char *)lfirst(lc));
			return false;
		}
	}
	return true;
}

void
_PG_init(void)
{
	/* Superuser only: it decides where every writer puts table data. */
	DefineCustomStringVariable("lance_namespace.root",
							   "Root location for tables declared without a location.",
							   "A local path or object store URI; a table's folder goes below "
							   "it, one folder per namespace.",
							   &ln_root_location, "", PGC_SUSET, 0, NULL, NULL, NULL);
	/*
	 * Superuser only: the catalog writes manifests as the server's OS user
	 * in these folders, on behalf of any role that can create versions.
	 */
	DefineCustomStringVariable("lance_namespace.local_roots",
							   "Local folders whose tables have their versions managed by the "
							   "catalog.",
							   "A comma-separated list of absolute paths.  For tables below "
							   "them the catalog answers managed_versioning and writes each "
							   "version's manifest.",
							   &ln_local_roots, "", PGC_SUSET, 0, check_local_roots, NULL, NULL);
	DefineCustomBoolVariable("lance_namespace.notify",
							 "Announce each committed change with NOTIFY lance_namespace_changes.",
							 "PostgreSQL serializes the commits of transactions that notify; turn "
							 "it off when nobody listens and commit throughput matters.",
							 &ln_notify_changes, true, PGC_SUSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("lance_namespace");
	storage_init();
}
