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
 * properties.  Both wait for the catalog of record: a restored copy of the
 * catalog names the live tables' folders and objects, and leaves them.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "nodes/value.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

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
 * A drop whose data goes when the transaction that worked through it
 * commits: removing files cannot be rolled back, so it waits until nothing
 * the transaction does can roll the entry's new status back (a function
 * that calls lance_process_drops() and then fails leaves the entry Queued
 * and the files in place).
 */
typedef struct PendingRemoval
{
	char *transaction_id;
	char *location;
	char *path;
	struct PendingRemoval *next;
} PendingRemoval;

/* in TopTransactionContext, in the queue's order; gone with the transaction */
static PendingRemoval *pending_removals = NULL;
static PendingRemoval **pending_tail = &pending_removals;

static void remove_at_commit(XactEvent event, void *arg);

/* Remove a drop's data when the transaction commits, once even if asked twice. */
static void
remove_at_pre_commit(const char *transaction_id, const char *location, const char *path)
{
	static bool callback_registered = false;
	PendingRemoval *p;

	if (!callback_registered)
	{
		RegisterXactCallback(remove_at_commit, NULL);
		callback_registered = true;
	}
	for (p = pending_removals; p != NULL; p = p->next)
		if (strcmp(p->transaction_id, transaction_id) == 0)
			return;
	p = MemoryContextAllocZero(TopTransactionContext, sizeof(PendingRemoval));
	p->transaction_id = MemoryContextStrdup(TopTransactionContext, transaction_id);
	p->location = MemoryContextStrdup(TopTransactionContext, location);
	p->path = MemoryContextStrdup(TopTransactionContext, path);
	*pending_tail = p;
	pending_tail = &p->next;
}

/*
 * At pre-commit: remove the data of the drops the transaction worked
 * through and set their entries Succeeded, or Failed with the reason; a
 * drop whose store is out of reach stays Queued, and so do the others on
 * object stores.  Whatever the transaction did since the call counts: an
 * entry no longer Queued (canceled) is left alone, and a folder a table
 * uses now is not removed.  An error here (a cancel) aborts the
 * transaction, leaving the entries Queued for the next round, whose
 * removal finds what is left.
 */
static void
run_pending_removals(void)
{
	PendingRemoval *list = pending_removals;
	bool stores_unreachable = false;
	MemoryContext cxt;
	MemoryContext old;

	pending_removals = NULL;
	pending_tail = &pending_removals;
	cxt = AllocSetContextCreate(TopTransactionContext, "lance_namespace drops",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	PushActiveSnapshot(GetTransactionSnapshot());
	catalog_begin();
	for (PendingRemoval *p = list; p != NULL; p = p->next)
	{
		LnMap properties = {0, palloc(sizeof(char *) * 2), palloc(sizeof(char *) * 2)};
		char *status;
		LnMap was;
		char *role;
		Oid role_id;
		char *reason;
		bool later;
		bool in_use;

		CHECK_FOR_INTERRUPTS();
		if (!storage_is_local(p->location) && stores_unreachable)
			continue;
		if (!catalog_get_change(p->transaction_id, false, &status, &was, &role, &role_id) ||
			strcmp(status, "Queued") != 0)
			continue;
		properties.keys[properties.len] = "location";
		properties.values[properties.len++] = p->location;
		in_use = catalog_location_in_use(p->path, CATALOG_ROOT_ID);
		if (in_use)
			reason = psprintf("a table in the catalog uses the folder \"%s\"", p->path);
		else
		{
			reason = storage_remove_table_data(p->location, &later);
			/* the store is out of reach: this drop and the rest on object stores wait */
			if (later)
			{
				ereport(LOG, (errmsg("lance_namespace: the drop of \"%s\" waits: %s", p->location,
									 reason)));
				stores_unreachable = true;
				continue;
			}
		}
		if (reason != NULL)
		{
			properties.keys[properties.len] = "reason";
			properties.values[properties.len++] = reason;
		}
		/*
		 * A folder another table took is that table's now: no retry may
		 * remove it, even once that table is gone (its drop left the folder,
		 * as a named location's drop does).
		 */
		catalog_set_change(p->transaction_id, reason ? "Failed" : "Succeeded", &properties,
						   in_use ? CHANGE_SET_BY_PROCESSOR_FINAL : CHANGE_SET_BY_PROCESSOR);
	}
	catalog_end();
	PopActiveSnapshot();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

static void
remove_at_commit(XactEvent event, void *arg pg_attribute_unused())
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (pending_removals != NULL)
				run_pending_removals();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (pending_removals != NULL)
				ln_error(LN_UNSUPPORTED, "cannot prepare a transaction that processed drops");
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* TopTransactionContext went with the transaction */
			pending_removals = NULL;
			pending_tail = &pending_removals;
			break;
		default:
			break;
	}
}

/*
 * Work through up to DROPS_PER_CALL queued drops; answers how many.  The
 * checks run now (a drop of no folder, or of a folder a table uses, is
 * Failed now); the removals run when the transaction commits
 * (run_pending_removals).  A catalog that is not the one of record (a
 * restored copy) removes nothing: its drops stay queued until an
 * administrator runs lance_adopt_storage().
 */
int
maintenance_process_drops(bool wait)
{
	char **transaction_ids;
	char **locations;
	int n;
	int handled = 0;

	catalog_begin();
	n = catalog_list_queued_drops(DROPS_PER_CALL, &transaction_ids, &locations);
	if (n > 0 && !catalog_is_of_record())
	{
		catalog_end();
		ereport(wait ? WARNING : LOG,
				(errmsg("lance_namespace: %d queued drops keep their data: this catalog is a "
						"copy, not the catalog of record for its tables' storage",
						n),
				 errhint("If this catalog is to own its tables' storage from now on (the one it "
						 "was copied from no longer does), an administrator runs "
						 "lance_adopt_storage() here.")));
		return 0;
	}
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
		/* none when a drop that queued nothing was set to Queued by AlterTransaction */
		if (locations[i] != NULL)
		{
			properties.keys[properties.len] = "location";
			properties.values[properties.len++] = locations[i];
		}

		/*
		 * A table at, in or around the folder since the drop owns that data
		 * now: wait for (and then see) a registration of the folder in
		 * flight.  The lock is held until the transaction ends, past the
		 * removal.  The background worker does not wait, so that one idle
		 * transaction cannot hold up every database: the drop stays queued
		 * for its next round.
		 */
		if (path != NULL && !storage_try_lock_folder(path, true, wait))
			continue;
		handled++;
		if (path == NULL)
			reason = pstrdup("the drop names no local folder");
		else if (catalog_location_in_use(path, CATALOG_ROOT_ID))
			reason = psprintf("a table in the catalog uses the folder \"%s\"", path);
		else
		{
			remove_at_pre_commit(transaction_ids[i], locations[i], path);
			continue;
		}
		properties.keys[properties.len] = "reason";
		properties.values[properties.len++] = reason;
		/* neither failure is the drop's to retry: see run_pending_removals */
		catalog_set_change(transaction_ids[i], "Failed", &properties,
						   CHANGE_SET_BY_PROCESSOR_FINAL);
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
	/* the folders of a restored copy's tables are the live catalog's, and so are their leftovers */
	if (!catalog_is_of_record())
	{
		catalog_end();
		ereport(LOG, (errmsg("lance_namespace: no sweep: this catalog is a copy, not the catalog "
							 "of record for its tables' storage"),
					  errhint("An administrator runs lance_adopt_storage() to make it so.")));
		return 0;
	}
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
	List *failed_stores = NIL;
	int n;
	int done = 0;
	int waiting = 0;

	catalog_begin();
	/*
	 * A copy's storage_undo rows (and spool) are the live catalog's steps,
	 * on the live catalog's storage: a copy made while a step waited would
	 * otherwise redo it, and could remove what the live catalog committed
	 * since.  They wait, as its drops do, until lance_adopt_storage().
	 */
	if (!catalog_is_of_record())
	{
		catalog_end();
		ereport(LOG, (errmsg("lance_namespace: no undo of rollbacks: this catalog is a copy, not "
							 "the catalog of record for its tables' storage"),
					  errhint("An administrator runs lance_adopt_storage() to make it so.")));
		return 0;
	}
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
		char *store;
		bool ok;

		CHECK_FOR_INTERRUPTS();
		if (!storage_undo_decode(due[i].step, due[i].len, &step))
		{
			catalog_undo_failed(due[i].spool, "the step's record is damaged");
			continue;
		}
		/*
		 * A store that failed a step this round is not asked again until
		 * the next: each step would wait out lance_namespace.storage_timeout.
		 */
		store = storage_undo_endpoint(&step);
		if (store != NULL && list_member(failed_stores, makeString(store)))
		{
			waiting++;
			continue;
		}
		/* a writer of this final manifest's version is in flight: next round */
		if (!storage_undo_try_lock(&step))
		{
			waiting++;
			continue;
		}
		ok = (step.version >= 0 && step.action == UNDO_REMOVE &&
			  catalog_version_at_location(step.location, step.branch, step.version)) ||
			 storage_retry_undo(&step, &error);
		/* held for the check and the removal only (storage_unlock_final_name says why) */
		storage_undo_unlock(&step);
		if (ok)
		{
			catalog_undo_done(due[i].spool);
			done++;
		}
		else
		{
			catalog_undo_failed(due[i].spool, error);
			if (store != NULL)
				failed_stores = lappend(failed_stores, makeString(store));
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
	/*
	 * What is removed on disk cannot be rolled back: a transaction block
	 * could keep the entries' new status uncommitted long after (the
	 * removals themselves wait for the commit, see run_pending_removals).
	 */
	if (IsTransactionBlock() || IsSubTransaction())
		ln_error_detail(LN_INVALID_INPUT, "Call it on its own, outside BEGIN ... COMMIT.",
						"%s cannot run inside a transaction block", function);
	PreventInTransactionBlock(true, function);
	/*
	 * Its checks (does the catalog record this version, does a table use
	 * this folder) must see what committed while it waited for a lock: a
	 * snapshot taken before the wait would let it remove data a writer
	 * committed meanwhile.
	 */
	if (IsolationUsesXactSnapshot())
		ln_error_detail(LN_INVALID_INPUT,
						"Run it with default_transaction_isolation = 'read committed' in the "
						"session.",
						"%s runs at the READ COMMITTED isolation level only", function);
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
 * lance_retry_drops(): queue the drops the processor failed again, for the
 * worker or lance_process_drops() to retry (once what made them fail, such
 * as a folder the server may not remove, is fixed); answers how many.  A
 * drop its maker set Failed with AlterTransaction stays: that is a stop.
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
