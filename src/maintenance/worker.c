/*
 * worker.c
 *		The background worker: with lance_namespace in
 *		shared_preload_libraries, a launcher visits every database that
 *		accepts connections every lance_namespace.maintenance_interval
 *		seconds, one at a time, through a short-lived worker that removes
 *		the data of dropped tables (maintenance_process_drops), removes the
 *		versions whose manifests a client cleaned up (reconcile.c), records
 *		the round for lance_stats() (shared_stats.c) and, on its
 *		first visit after the server starts, sweeps what a crash left
 *		(maintenance_sweep).  Databases without the extension are left at
 *		once.  Without the preload, an administrator calls
 *		lance_process_drops() (e.g. from cron) and lance_sweep_leftovers().
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/snapmgr.h"

#include "../common/shared_stats.h"
#include "../storage/storage.h"
#include "feed_guard.h"
#include "maintenance.h"
#include "worker.h"

/* How many tables a round looks at for versions a client's clean-up removed. */
#define RECONCILE_TABLES_PER_ROUND 100

/* Seconds between two rounds over the databases; 0 turns the worker off. */
static int maintenance_interval = 60;

PGDLLEXPORT void lance_maintenance_launcher_main(Datum arg);
PGDLLEXPORT void lance_maintenance_main(Datum arg);

void
worker_init(void)
{
	BackgroundWorker launcher;

	DefineCustomIntVariable("lance_namespace.maintenance_interval",
							"Seconds between two rounds of the background worker, which removes "
							"dropped tables' data and sweeps crash leftovers.",
							"0 turns it off.  The worker runs only when lance_namespace is in "
							"shared_preload_libraries.",
							&maintenance_interval, 60, 0, 86400, PGC_SIGHUP, GUC_UNIT_S, NULL, NULL,
							NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;

	memset(&launcher, 0, sizeof(launcher));
	launcher.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	launcher.bgw_start_time = BgWorkerStart_RecoveryFinished;
	launcher.bgw_restart_time = 10;
	snprintf(launcher.bgw_library_name, BGW_MAXLEN, "lance_namespace");
	snprintf(launcher.bgw_function_name, BGW_MAXLEN, "lance_maintenance_launcher_main");
	snprintf(launcher.bgw_name, BGW_MAXLEN, "lance_namespace maintenance launcher");
	snprintf(launcher.bgw_type, BGW_MAXLEN, "lance_namespace launcher");
	RegisterBackgroundWorker(&launcher);
}

/* lance_namespace.maintenance_interval, for lance_stats(). */
int
worker_interval_seconds(void)
{
	return maintenance_interval;
}

/* The databases a round visits: those that accept connections. */
static List *
list_databases(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	List *databases = NIL;
	Relation rel;
	TableScanDesc scan;
	HeapTuple tuple;

	StartTransactionCommand();
	(void)GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tuple = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database)GETSTRUCT(tuple);

		if (db->datallowconn && !db->datistemplate)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			databases = lappend_oid(databases, db->oid);
			MemoryContextSwitchTo(old);
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return databases;
}

/* Run one database's maintenance in a worker of its own and wait for it. */
static void
visit_database(Oid database, bool sweep)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "lance_namespace");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "lance_maintenance_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "lance_namespace maintenance");
	snprintf(worker.bgw_type, BGW_MAXLEN, "lance_namespace maintenance");
	worker.bgw_main_arg = ObjectIdGetDatum(database);
	worker.bgw_extra[0] = sweep ? 's' : '-';
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(LOG, (errmsg("lance_namespace: no background worker slot free for maintenance"),
					  errhint("Raise max_worker_processes.")));
		return;
	}
	(void)WaitForBackgroundWorkerShutdown(handle);
}

void
lance_maintenance_launcher_main(Datum arg)
{
	bool first_round = true;

	(void)arg;
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* no database: the launcher reads only pg_database, a shared catalog */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (maintenance_interval > 0)
		{
			List *databases = list_databases();
			ListCell *lc;

			foreach (lc, databases)
				visit_database(lfirst_oid(lc), first_round);
			list_free(databases);
			first_round = false;
		}
		/* and, meanwhile, end writers that hold the change feed back idly */
		feed_guard_wait((maintenance_interval > 0 ? maintenance_interval : 60) * 1000L);
		ResetLatch(MyLatch);
	}
}

void
lance_maintenance_main(Datum arg)
{
	bool sweep = MyBgworkerEntry->bgw_extra[0] == 's';
	/* static: read after an error's longjmp, which may lose what locals held */
	static LnWorkerRound round;
	volatile bool in_catalog = false;
	MemoryContext worker_cxt = CurrentMemoryContext;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* as the bootstrap superuser, with the database's own settings (local_roots) */
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	/*
	 * As autovacuum does: a superuser must not resolve names through a
	 * search_path the database's owner set, nor wait on a lock for ever.
	 */
	SetConfigOption("search_path", "", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", "10s", PGC_SUSET, PGC_S_OVERRIDE);
	/*
	 * Whatever the database's default: the round's checks must see what
	 * committed while it waited for a lock (maintenance.c).
	 */
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);

	round.database = MyDatabaseId;
	round.started_at = GetCurrentTimestamp();
	round.swept = -1;
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "lance_namespace maintenance");
		if (OidIsValid(get_extension_oid("lance_namespace", true)))
		{
			round.drops = maintenance_process_drops(false);
			round.undo_steps = maintenance_finish_undo();
			if (sweep)
				round.swept = maintenance_sweep();
			/* a few tables a round, on from where the last round stopped */
			round.reconciled =
				maintenance_reconcile_versions(shared_stats_reconcile_after(MyDatabaseId),
											   RECONCILE_TABLES_PER_ROUND, &round.reconcile_after);
			in_catalog = true;
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		/* what lance_stats() says of this database's last round: then the error goes on */
		ErrorData *edata;

		MemoryContextSwitchTo(worker_cxt);
		edata = CopyErrorData();
		round.error_at = GetCurrentTimestamp();
		strlcpy(round.error, edata->message ? edata->message : "unknown error",
				sizeof(round.error));
		shared_stats_record_round(&round);
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* databases without the extension are left at once, and not reported */
	if (in_catalog)
	{
		round.finished_at = GetCurrentTimestamp();
		shared_stats_record_round(&round);
	}
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
