/*
 * reconcile.c
 *		The catalog follows a client's clean-up of old versions.
 *
 * LanceDB's optimize({cleanupOlderThan}) deletes old manifests on storage
 * and tells the catalog nothing (it sends no request).  The catalog would go
 * on listing those versions, and a checkout of one would fail on a missing
 * file.  So the background worker, and lance_reconcile_versions(), look at
 * managed tables a few at a time, and remove from the catalog a version
 * whose manifest storage says does not exist, unless it is the latest of
 * its branch, with a ReconcileTableVersions entry in the change log (one
 * per table and branch, the removed versions as its objects' versions).
 * A manifest that cannot be looked at (a store out of reach, a folder the
 * server may not read, a missing bucket) is no proof that it is gone: the
 * table is left as it is until a later round, with a warning.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../storage/storage.h"
#include "maintenance.h"

/* How many old versions of one table one round looks at, at most. */
#define VERSIONS_PER_TABLE 1000

/* Remove the versions of one branch whose manifests are gone; answers how many. */
static int
remove_gone_versions(const CatalogReconcileTable *t, const LnId *id, CatalogOldVersion *versions,
					 const bool *gone, int from, int to)
{
	LnMap properties = {0, palloc(sizeof(char *) * 2), palloc(sizeof(char *) * 2)};
	LnMap none = ln_empty_map();
	const char *branch = versions[from].branch;
	int removed = 0;

	changes_begin();
	for (int j = from; j < to; j++)
	{
		if (!gone[j] || !catalog_delete_cleaned_version(t->id, &versions[j]))
			continue;
		changes_touch(id, id->len, false, versions[j].version, t->id);
		removed++;
	}
	if (removed == 0)
		return 0;
	properties.keys[properties.len] = "reason";
	properties.values[properties.len++] = "manifest removed from storage";
	if (branch[0] != '\0')
	{
		properties.keys[properties.len] = "branch";
		properties.values[properties.len++] = (char *)branch;
	}
	changes_set_properties(&properties);
	(void)changes_record("ReconcileTableVersions", &none, &none, NULL);
	return removed;
}

/* Look at one table's old versions; answers how many were removed. */
static int
reconcile_table(const CatalogReconcileTable *t)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int removed = 0;

	/* a table that fails is left alone: the others go on */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		CatalogOldVersion *versions;
		bool *gone;
		bool any_gone = false;
		int n;
		LnId id = {t->id_len, t->names};

		catalog_begin();
		n = catalog_old_versions(t->id, VERSIONS_PER_TABLE, &versions);
		catalog_end();
		gone = palloc0(sizeof(bool) * (n + 1));
		for (int j = 0; j < n; j++)
		{
			CHECK_FOR_INTERRUPTS();
			gone[j] = !storage_manifest_exists(t->location, versions[j].manifest_path);
			any_gone |= gone[j];
		}
		if (any_gone)
		{
			catalog_begin();
			/* no tag is made on a version while it goes; none if the table went */
			if (catalog_lock_table_refs(t->id))
			{
				int from = 0;

				/* versions come by branch: one change entry per branch */
				for (int j = 1; j <= n; j++)
					if (j == n || strcmp(versions[j].branch, versions[from].branch) != 0)
					{
						removed += remove_gone_versions(t, &id, versions, gone, from, j);
						from = j;
					}
			}
			catalog_end();
		}
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
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
			ReThrowError(edata);
		ereport(WARNING,
				(errmsg("lance_namespace: the versions of table \"%s\" were not reconciled: %s",
						t->location, edata->message),
				 errhint("A later maintenance round tries again.")));
		FreeErrorData(edata);
		removed = 0;
	}
	PG_END_TRY();
	return removed;
}

/*
 * Reconcile up to max_tables tables with data whose id is above `after`;
 * answers how many versions were removed, and in *next_after the id to go
 * on after (0 when the last table was reached: the next call starts over).
 */
int
maintenance_reconcile_versions(int64 after, int max_tables, int64 *next_after)
{
	CatalogReconcileTable *tables;
	int n;
	int removed = 0;

	access_begin();
	catalog_begin();
	n = catalog_reconcile_tables(after, max_tables, &tables);
	catalog_end();
	*next_after = 0;
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		/* only managed tables: the catalog knows where their manifests are */
		if (storage_is_managed(tables[i].location))
			removed += reconcile_table(&tables[i]);
		*next_after = tables[i].id;
	}
	if (n < max_tables)
		*next_after = 0;
	return removed;
}

/*
 * lance_reconcile_versions(after, max_tables) -> {"removed": n,
 * "next_after": id}: what the worker does each round, on demand (an
 * administrator's call).  Transactional: its removals commit or roll back
 * with the caller's transaction.
 */
PG_FUNCTION_INFO_V1(lance_reconcile_versions);
Datum
lance_reconcile_versions(PG_FUNCTION_ARGS)
{
	int64 after = PG_ARGISNULL(0) ? 0 : PG_GETARG_INT64(0);
	int max_tables = PG_ARGISNULL(1) ? 100 : PG_GETARG_INT32(1);
	int64 next_after;
	int removed;

	if (RecoveryInProgress())
		ln_error(LN_SERVICE_UNAVAILABLE,
				 "lance_reconcile_versions() cannot run on a standby: run it on the primary");
	access_begin();
	access_require_admin("lance_reconcile_versions()");
	if (max_tables < 1 || max_tables > 10000)
		ln_error(LN_INVALID_INPUT, "max_tables must be from 1 to 10000, not %d", max_tables);
	removed = maintenance_reconcile_versions(after, max_tables, &next_after);
	PG_RETURN_DATUM(DirectFunctionCall1(
		jsonb_in, CStringGetDatum(psprintf("{\"removed\": %d, \"next_after\": " INT64_FORMAT "}",
										   removed, next_after))));
}
