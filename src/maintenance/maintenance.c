/*
 * maintenance.c
 *		Work on storage that cannot happen in a caller's transaction: remove
 *		the data of dropped tables, and sweep what a crash left.  Called by
 *		the background worker (worker.c) and, where it is not loaded, by an
 *		administrator through lance_process_drops() and
 *		lance_sweep_leftovers().
 *
 * DropTable removes a table's entry in the caller's transaction and queues
 * its data (for tables under lance_namespace.local_roots): removing files is
 * not transactional, so it happens here, later, once the drop is committed.
 * Each queued entry ends Succeeded, or Failed with the reason in its
 * properties.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../storage/location.h"
#include "../storage/storage.h"
#include "maintenance.h"

/* How many queued drops one call works through at most. */
#define DROPS_PER_CALL 1000

/* How many tables' locations one catalog statement of the sweep reads. */
#define SWEEP_PAGE 1000

/*
 * Remove the data of up to DROPS_PER_CALL queued drops; answers how many it
 * worked through.  The caller's transaction must commit at once: the files
 * are gone whatever it does.
 */
int
maintenance_process_drops(bool wait)
{
	char **transaction_ids;
	char **locations;
	int n;
	int handled = 0;
	bool stores_unreachable = false;

	catalog_begin();
	n = catalog_list_queued_drops(DROPS_PER_CALL, &transaction_ids, &locations);
	for (int i = 0; i < n; i++)
	{
		LnMap properties = {0, palloc(sizeof(char *) * 2), palloc(sizeof(char *) * 2)};
		char *path = locations[i] ? location_folder_key(locations[i]) : NULL;
		char *reason;

		CHECK_FOR_INTERRUPTS();
		/*
		 * Without local roots no local folder can be checked: such a drop
		 * stays queued (rather than fail for good) until they are set.
		 */
		if (locations[i] != NULL && storage_is_local(locations[i]) && !storage_has_local_roots())
			continue;
		if (locations[i] != NULL && !storage_is_local(locations[i]) && stores_unreachable)
			continue;
		handled++;
		/* none when a drop that queued nothing was set to Queued by AlterTransaction */
		if (locations[i] != NULL)
		{
			properties.keys[properties.len] = "location";
			properties.values[properties.len++] = locations[i];
		}

		/*
		 * A table at, in or around the folder since the drop owns that data
		 * now: wait for (and then see) a registration of the folder in
		 * flight.  The background worker does not wait, so that one idle
		 * transaction cannot hold up every database: the drop stays queued
		 * for its next round.
		 */
		if (path != NULL && !storage_try_lock_folder(path, true, wait))
			continue;
		if (path == NULL)
			reason = pstrdup("the drop names no local folder");
		else if (catalog_location_in_use(path, CATALOG_ROOT_ID))
			reason = psprintf("a table in the catalog uses the folder \"%s\"", path);
		else
		{
			bool later;

			reason = storage_remove_table_data(locations[i], &later);
			/* the store is out of reach: this drop and the rest on object stores wait */
			if (later)
			{
				ereport(LOG, (errmsg("lance_namespace: the drop of \"%s\" waits: %s", locations[i],
									 reason)));
				stores_unreachable = true;
				handled--;
				continue;
			}
		}
		if (reason != NULL)
		{
			properties.keys[properties.len] = "reason";
			properties.values[properties.len++] = reason;
		}
		catalog_set_change(transaction_ids[i], reason ? "Failed" : "Succeeded", &properties);
	}
	catalog_end();
	return handled;
}

/*
 * Sweep the folders of every table under the local roots for what
 * transactions that ended in a crash left there (storage_sweep_table);
 * answers the number of files and folders removed or put back.
 */
int
maintenance_sweep(void)
{
	int64 after = 0;
	int removed = 0;
	int restored = 0;
	int n;
	MemoryContext table_cxt = AllocSetContextCreate(CurrentMemoryContext, "lance_namespace sweep",
													ALLOCSET_DEFAULT_SIZES);

	catalog_begin();
	do
	{
		int64 *ids;
		char **locations;

		n = catalog_list_table_locations(after, SWEEP_PAGE, &ids, &locations);
		for (int i = 0; i < n; i++)
		{
			MemoryContext old = MemoryContextSwitchTo(table_cxt);

			CHECK_FOR_INTERRUPTS();
			storage_sweep_table(locations[i], &removed, &restored);
			MemoryContextSwitchTo(old);
			/* one table's walk at a time: the sweep visits every table */
			MemoryContextReset(table_cxt);
		}
		if (n > 0)
			after = ids[n - 1];
	} while (n == SWEEP_PAGE);
	catalog_end();
	if (removed + restored > 0)
		ereport(LOG, (errmsg("lance_namespace: swept %d leftover files and folders of "
							 "interrupted transactions, put %d originals back",
							 removed + restored, restored)));
	return removed + restored;
}

/* How many spooled undo steps one round attempts at most. */
#define UNDO_PER_ROUND 100

/*
 * Finish the undo that rollbacks could not: take the steps they spooled
 * (storage_spool.c) into lance_catalog.storage_undo, then attempt those
 * that are due; one that fails again waits longer (catalog_undo_failed).
 * A final manifest is removed only if the catalog does not record its
 * version, under its name's lock: a writer of that version since owns the
 * name.  Answers the number of steps done.
 */
int
maintenance_finish_undo(void)
{
	StorageSpooled *spooled;
	CatalogUndo *due;
	int n;
	int done = 0;
	int waiting = 0;

	catalog_begin();
	n = storage_spool_read(&spooled);
	for (int i = 0; i < n; i++)
	{
		const StorageUndoStep *s = &spooled[i].step;

		CHECK_FOR_INTERRUPTS();
		(void)catalog_take_undo(spooled[i].name, s->xid,
								s->action == UNDO_REMOVE ? "remove" : "put back", s->location,
								s->path, s->branch, s->version, spooled[i].record, spooled[i].len);
	}
	n = catalog_list_due_undo(UNDO_PER_ROUND, &due);
	for (int i = 0; i < n; i++)
	{
		StorageUndoStep step;
		char *error = NULL;

		CHECK_FOR_INTERRUPTS();
		if (!storage_undo_decode(due[i].step, due[i].len, &step))
		{
			catalog_undo_failed(due[i].spool, "the step's record is damaged");
			continue;
		}
		/* a writer of this final manifest's version is in flight: next round */
		if (!storage_undo_try_lock(&step))
		{
			waiting++;
			continue;
		}
		if ((step.version >= 0 && step.action == UNDO_REMOVE &&
			 catalog_version_at_location(step.location, step.branch, step.version)) ||
			storage_retry_undo(&step, &error))
		{
			catalog_undo_done(due[i].spool);
			done++;
		}
		else
		{
			catalog_undo_failed(due[i].spool, error);
			waiting++;
		}
	}
	catalog_end();
	if (done > 0)
		ereport(LOG, (errmsg("lance_namespace: finished %d steps of rollbacks' undo", done)));
	if (waiting > 0)
		ereport(LOG, (errmsg("lance_namespace: %d steps of rollbacks' undo wait for a later round",
							 waiting)));
	return done;
}

/* The checks of a call that changes storage for good: on a primary, alone. */
static void
check_standalone_call(const char *function)
{
	/* a standby cannot change the catalog; the primary does this */
	if (RecoveryInProgress())
		ln_error(LN_SERVICE_UNAVAILABLE, "%s cannot run on a standby: run it on the primary",
				 function);
	/* what is removed on disk cannot be rolled back, so the catalog's updates must commit at once
	 */
	if (IsTransactionBlock() || IsSubTransaction())
		ln_error_detail(LN_INVALID_INPUT, "Call it on its own, outside BEGIN ... COMMIT.",
						"%s cannot run inside a transaction block", function);
	PreventInTransactionBlock(true, function);
}

PG_FUNCTION_INFO_V1(lance_process_drops);
Datum
lance_process_drops(PG_FUNCTION_ARGS)
{
	check_standalone_call("lance_process_drops()");
	/* it removes folders on the server: not for every role that may call functions */
	access_begin();
	access_require_admin("lance_process_drops()");
	PG_RETURN_INT32(maintenance_process_drops(true));
}

/*
 * lance_retry_drops(): queue the drops that ended Failed again, for the
 * worker or lance_process_drops() to retry (once what made them fail, such
 * as a folder the server may not remove, is fixed); answers how many.
 * Transactional, as any catalog change: it may run in a transaction block.
 */
PG_FUNCTION_INFO_V1(lance_retry_drops);
Datum
lance_retry_drops(PG_FUNCTION_ARGS)
{
	int n;

	if (RecoveryInProgress())
		ln_error(LN_SERVICE_UNAVAILABLE,
				 "lance_retry_drops() cannot run on a standby: run it on the primary");
	access_begin();
	access_require_admin("lance_retry_drops()");
	catalog_begin();
	n = catalog_requeue_failed_drops();
	catalog_end();
	PG_RETURN_INT32(n);
}

PG_FUNCTION_INFO_V1(lance_sweep_leftovers);
Datum
lance_sweep_leftovers(PG_FUNCTION_ARGS)
{
	check_standalone_call("lance_sweep_leftovers()");
	access_begin();
	access_require_admin("lance_sweep_leftovers()");
	PG_RETURN_INT32(maintenance_finish_undo() + maintenance_sweep());
}
