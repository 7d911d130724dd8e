/*
 * drops.c
 *		lance_process_drops(): remove the data of dropped tables.
 *
 * DropTable removes a table's entry in the caller's transaction and queues
 * its data (for tables under lance_namespace.local_roots): removing files is
 * not transactional, so it happens here, later, outside any user
 * transaction, once the drop is committed.  Each queued entry ends
 * Succeeded, or Failed with the reason in its properties.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "fmgr.h"

#include "catalog.h"
#include "error.h"
#include "location.h"
#include "storage.h"

/* How many queued drops one call works through at most. */
#define DROPS_PER_CALL 1000

PG_FUNCTION_INFO_V1(lance_process_drops);
Datum
lance_process_drops(PG_FUNCTION_ARGS)
{
	char **transaction_ids;
	char **locations;
	int n;

	/* a standby cannot change the catalog; the primary removes the data */
	if (RecoveryInProgress())
		ln_error(LN_SERVICE_UNAVAILABLE,
				 "lance_process_drops() cannot run on a standby: run it on the primary");
	/* data removed on disk cannot be rolled back, so the queue's updates must commit at once */
	if (IsTransactionBlock() || IsSubTransaction())
		ln_error_detail(LN_INVALID_INPUT, "Call it on its own, outside BEGIN ... COMMIT.",
						"lance_process_drops() cannot run inside a transaction block");
	PreventInTransactionBlock(true, "lance_process_drops()");
	/* without roots every drop would look out of bounds, and fail for good */
	if (!storage_has_local_roots())
		ln_error(LN_INVALID_INPUT, "lance_process_drops() needs lance_namespace.local_roots set, "
								   "as where the tables were dropped");
	catalog_begin();
	n = catalog_list_queued_drops(DROPS_PER_CALL, &transaction_ids, &locations);
	for (int i = 0; i < n; i++)
	{
		LnMap properties = {2, palloc(sizeof(char *) * 2), palloc(sizeof(char *) * 2)};
		char *path = locations[i] ? location_local_path(locations[i]) : NULL;
		char *reason;

		properties.keys[0] = "location";
		properties.values[0] = locations[i];

		/* a table at, in or around the folder since the drop owns that data now */
		/* wait for (and then see) a registration of the folder in flight */
		if (path != NULL)
			storage_lock_folder(path, true);
		if (path == NULL)
			reason = pstrdup("the drop names no local folder");
		else if (catalog_location_in_use(path))
			reason = psprintf("a table in the catalog uses the folder \"%s\"", path);
		else
			reason = storage_remove_table_data(locations[i]);
		properties.len = reason ? 2 : 1;
		properties.keys[1] = "reason";
		properties.values[1] = reason;
		catalog_set_change(transaction_ids[i], reason ? "Failed" : "Succeeded", &properties);
	}
	catalog_end();
	PG_RETURN_INT32(n);
}
