/*
 * feed_guard.c
 *		End a transaction that holds the change feed back while it waits on
 *		its client longer than lance_namespace.change_idle_timeout.
 *
 * A transaction that made a change holds its entry's lock until it ends, and
 * every reader of lance_changes() stops there (feed/changes.c).  Its first
 * change in a transaction block sets idle_in_transaction_session_timeout,
 * which PostgreSQL arms only when the backend reports ReadyForQuery, and
 * which the writer may set again.  So it does not bound
 *  - a client of the extended query protocol that sends Parse, Bind,
 *    Execute and Flush but never Sync: its transaction stays open while the
 *    backend, "active", waits for the next message; nor
 *  - a writer that sets idle_in_transaction_session_timeout to 0 after its
 *    change.
 * So the background worker's launcher, between its rounds, looks for a
 * backend that waits to read from its client (wait event ClientRead) inside
 * a transaction, has done so longer than the bound, and holds an entry's
 * lock, in any database; and ends it as pg_terminate_backend() does, which
 * is also what PostgreSQL does to a session idle in transaction too long:
 * the transaction rolls back, its entries with it, and the feed goes on.
 *
 * How long a backend has waited on its client: one "idle in transaction"
 * has since it reported that state (state_change), right before it waits.
 * One "active" has ended its statement, but what the status records is
 * when the last message that ran something (Parse, Bind, Execute) began,
 * not when it ended, so now - state_change overstates the wait by the
 * statement's run time, and would end a pipelining client whose statement
 * ran long just as it waits for the next message.  That wait counts from
 * when a check first saw the backend waiting with the same state_change
 * instead: late by at most one check period, never early.  (A COPY FROM
 * STDIN is "active" and reads from its client too, with one state_change
 * throughout: one that every check over the bound finds waiting for data is
 * ended, even if its client sent some in between.)
 *
 * A backend that runs a statement, however long, or waits on a lock is not
 * waiting on its client and is left alone (statement_timeout bounds it); so
 * is one that waits to write to a client that does not read (ClientWrite),
 * which a slow reader of a large answer does too.
 *
 * Each check costs about what reading pg_stat_activity once does (a copy of
 * the backends' status); only when a backend has waited on its client past
 * the bound does it read the lock table, once.
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/backend_status.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "../common/pg_compat.h"
#include "../feed/changes.h"
#include "feed_guard.h"

/* A word another process writes, read once (as pg_stat_activity reads wait events). */
#define UINT32_ACCESS_ONCE(var) ((uint32)(*((volatile uint32 *)&(var))))

/* The shortest and the longest time between two checks (ms). */
#define GUARD_PERIOD_MIN 1000
#define GUARD_PERIOD_MAX 10000

/* A backend "active" and waiting on its client, and since when a check saw it so. */
typedef struct WaitingBackend
{
	int pid;
	TimestampTz state_change;
	TimestampTz since;
} WaitingBackend;

/* The backends the last check saw "active" and waiting on their client, by pid. */
static WaitingBackend *watched;
static int nwatched;
static int watched_capacity;

/* What one check allocates; reset after it. */
static MemoryContext guard_context;

/* A backend that has waited on its client in a transaction longer than the bound. */
typedef struct Suspect
{
	int pid;
	Oid role;
	TimestampTz state_change;
	TimestampTz since;
} Suspect;

static int
compare_waiting(const void *a, const void *b)
{
	int pid_a = ((const WaitingBackend *)a)->pid;
	int pid_b = ((const WaitingBackend *)b)->pid;

	return (pid_a > pid_b) - (pid_a < pid_b);
}

/*
 * Time between two checks: a quarter of the bound, from 1 s to 10 s, so a
 * held feed goes on within the bound and a little more; 0 if there is no
 * bound.
 */
static long
guard_period(void)
{
	int bound = changes_idle_bound();

	if (bound <= 0)
		return 0;
	return Min(Max(bound / 4, GUARD_PERIOD_MIN), GUARD_PERIOD_MAX);
}

/*
 * Since when the backend `pid`, "active" with `state_change`, has waited on
 * its client as far as the checks saw: carried over from the last check if
 * it saw the same, else now.  Noted for the next check in `seen`.
 */
static TimestampTz
waiting_since(int pid, TimestampTz state_change, TimestampTz now, WaitingBackend *seen, int *nseen)
{
	WaitingBackend key = {pid, 0, 0};
	WaitingBackend *before =
		nwatched > 0 ? bsearch(&key, watched, nwatched, sizeof(WaitingBackend), compare_waiting)
					 : NULL;
	TimestampTz since = now;

	if (before != NULL && before->state_change == state_change)
		since = before->since;
	seen[*nseen].pid = pid;
	seen[*nseen].state_change = state_change;
	seen[*nseen].since = since;
	(*nseen)++;
	return since;
}

/*
 * The backends in a transaction that wait to read from their client, and
 * have longer than `bound` ms, as the status shows them now.  Notes the
 * "active" ones in `watched` for the next check.
 */
static int
find_suspects(int bound, TimestampTz now, Suspect **suspects)
{
	int n;
	int nsuspects = 0;
	int nseen = 0;
	WaitingBackend *seen;

	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	*suspects = palloc(sizeof(Suspect) * Max(n, 1));
	if (n > watched_capacity)
	{
		watched = watched == NULL ? MemoryContextAlloc(TopMemoryContext, sizeof(WaitingBackend) * n)
								  : repalloc(watched, sizeof(WaitingBackend) * n);
		watched_capacity = n;
	}
	seen = palloc(sizeof(WaitingBackend) * Max(n, 1));
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = LN_LOCAL_BEENTRY(i);
		PgBackendStatus *status;
		PGPROC *proc;
		TimestampTz since;

		CHECK_FOR_INTERRUPTS();
		if (local == NULL)
			continue;
		status = &local->backendStatus;
		if (status->st_xact_start_timestamp == 0 || status->st_procpid == MyProcPid ||
			(status->st_state != STATE_IDLEINTRANSACTION && status->st_state != STATE_RUNNING))
			continue;
		proc = BackendPidGetProc(status->st_procpid);
		if (proc == NULL || UINT32_ACCESS_ONCE(proc->wait_event_info) != WAIT_EVENT_CLIENT_READ)
			continue;
		if (status->st_state == STATE_IDLEINTRANSACTION)
			since = status->st_state_start_timestamp;
		else
			since = waiting_since(status->st_procpid, status->st_state_start_timestamp, now, seen,
								  &nseen);
		if (TimestampDifferenceExceeds(since, now, bound))
		{
			Suspect *suspect = &(*suspects)[nsuspects++];

			suspect->pid = status->st_procpid;
			suspect->role = status->st_userid;
			suspect->state_change = status->st_state_start_timestamp;
			suspect->since = since;
		}
	}
	qsort(seen, nseen, sizeof(WaitingBackend), compare_waiting);
	if (nseen > 0)
		memcpy(watched, seen, sizeof(WaitingBackend) * nseen);
	nwatched = nseen;
	pgstat_clear_backend_activity_snapshot();
	return nsuspects;
}

/*
 * True if `suspect` still waits on its client where the check saw it: the
 * same process, state_change and wait, read afresh after the lock table (so
 * that a backend that went on meanwhile is not ended for an entry of a
 * transaction it began since).
 */
static bool
still_waiting(const Suspect *suspect)
{
	int n;

	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = LN_LOCAL_BEENTRY(i);
		PGPROC *proc;

		if (local == NULL || local->backendStatus.st_procpid != suspect->pid)
			continue;
		if (local->backendStatus.st_state_start_timestamp != suspect->state_change)
			return false;
		proc = BackendPidGetProc(suspect->pid);
		return proc != NULL && UINT32_ACCESS_ONCE(proc->wait_event_info) == WAIT_EVENT_CLIENT_READ;
	}
	return false;
}

/* End `suspect`, which holds entry `hold`, as pg_terminate_backend() does, and say so. */
static void
end_holder(const Suspect *suspect, const ChangeEntryHold *hold, TimestampTz now)
{
	char *role;
	char *database;
	long waited_ms = (long)((now - suspect->since) / 1000);

	/* the names, from the shared catalogs */
	StartTransactionCommand();
	role = GetUserNameFromId(suspect->role, true);
	database = get_database_name(hold->database);
	role = role != NULL ? MemoryContextStrdup(guard_context, role) : psprintf("%u", suspect->role);
	database = database != NULL ? MemoryContextStrdup(guard_context, database)
								: psprintf("%u", hold->database);
	CommitTransactionCommand();

	if (BackendPidGetProc(suspect->pid) == NULL)
		return;
#ifdef HAVE_SETSID
	if (kill(-suspect->pid, SIGTERM) != 0)
#else
	if (kill(suspect->pid, SIGTERM) != 0)
#endif
		return;
	ereport(LOG,
			(errmsg("lance_namespace: ended process %d (role \"%s\", database \"%s\"), which holds "
					"back the change feed at entry " INT64_FORMAT
					" and has waited on its client for %ld ms",
					suspect->pid, role, database, hold->number, waited_ms),
			 errdetail("lance_namespace.change_idle_timeout is %d ms.", changes_idle_bound())));
}

/*
 * One check: end every backend that has waited on its client in a
 * transaction longer than the bound while it holds a change-log entry.
 */
static void
feed_guard_check(void)
{
	int bound = changes_idle_bound();
	MemoryContext old;
	TimestampTz now;
	Suspect *suspects;
	int nsuspects;

	if (bound <= 0)
	{
		nwatched = 0;
		return;
	}
	if (guard_context == NULL)
		guard_context = AllocSetContextCreate(TopMemoryContext, "lance_namespace feed guard",
											  ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(guard_context);
	now = GetCurrentTimestamp();
	nsuspects = find_suspects(bound, now, &suspects);
	if (nsuspects > 0)
	{
		ChangeEntryHold *holds;
		int nholds = changes_entry_holds(&holds);

		for (int s = 0; s < nsuspects; s++)
		{
			const ChangeEntryHold *hold = NULL;

			CHECK_FOR_INTERRUPTS();
			for (int h = 0; h < nholds; h++)
				if (holds[h].pid == suspects[s].pid &&
					(hold == NULL || holds[h].number < hold->number))
					hold = &holds[h];
			if (hold != NULL && still_waiting(&suspects[s]))
				end_holder(&suspects[s], hold, now);
		}
		pgstat_clear_backend_activity_snapshot();
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(guard_context);
}

/*
 * Wait up to `timeout_ms` for the process latch, checking every period
 * meanwhile; return early when the latch is set, which the caller resets.
 */
void
feed_guard_wait(long timeout_ms)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);

	for (;;)
	{
		long left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);
		long period = guard_period();
		int rc;

		if (left <= 0)
			return;
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					   period > 0 ? Min(left, period) : left, PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
			return;
		CHECK_FOR_INTERRUPTS();
		feed_guard_check();
	}
}
