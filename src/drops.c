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
#include "fmgr.h"

#include "catalog.h"
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

	PreventInTransactionBlock(true, "lance_process_drops()");
	catalog_begin();
	n = catalog_list_queued_drops(DROPS_PER_CALL, &transaction_ids, &locations);
	for (int i = 0; i < n; i++)
	{
		LnMap properties = {2, palloc(sizeof(char *) * 2), palloc(sizeof(char *) * 2)};
		char *reason;

		properties.keys[0] = "location";
		properties.values[0] = locations[i];
		/* a table registered at the location since the drop owns that data now */
		if (catalog_location_in_use(locations[i]))
			reason = psprintf("a table has been registered at \"%s\" since", locations[i]);
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
