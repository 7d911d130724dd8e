/*
 * shared_stats.c
 *		The background worker's rounds and the object stores' errors, kept
 *		in shared memory for lance_stats().
 *
 * Shared memory rather than a table: a round that fails cannot write its
 * error into the database it failed in (its transaction is gone), a store
 * error is counted by whichever backend met it, in the middle of a
 * transaction that may roll back, and neither should cost a write.  The
 * price: the area exists only when lance_namespace is in
 * shared_preload_libraries (as the worker itself), it is fixed in size
 * (LN_STATS_MAX_DATABASES rounds, LN_STATS_MAX_STORE_ERRORS counters; a
 * full area gives the slot seen longest ago to the newcomer), and a restart
 * empties it.  A spinlock guards it: every holder only copies a few hundred
 * bytes.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "shared_stats.h"

typedef struct SharedStats
{
	slock_t mutex;
	LnWorkerRound rounds[LN_STATS_MAX_DATABASES];
	LnStoreErrors errors[LN_STATS_MAX_STORE_ERRORS];
} SharedStats;

static SharedStats *shared = NULL;
static shmem_request_hook_type previous_request_hook = NULL;
static shmem_startup_hook_type previous_startup_hook = NULL;

static void
request_shared_stats(void)
{
	if (previous_request_hook)
		previous_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(SharedStats)));
}

static void
start_shared_stats(void)
{
	bool found;

	if (previous_startup_hook)
		previous_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("lance_namespace stats", sizeof(SharedStats), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(SharedStats));
		SpinLockInit(&shared->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Ask for the area; only while the library is preloaded. */
void
shared_stats_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	previous_request_hook = shmem_request_hook;
	shmem_request_hook = request_shared_stats;
	previous_startup_hook = shmem_startup_hook;
	shmem_startup_hook = start_shared_stats;
}

bool
shared_stats_available(void)
{
	return shared != NULL;
}

/* Replace the database's last round with `round` (its error kept when this one has none). */
void
shared_stats_record_round(const LnWorkerRound *round)
{
	int slot = -1;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < LN_STATS_MAX_DATABASES && slot < 0; i++)
		if (shared->rounds[i].database == round->database)
			slot = i;
	if (slot < 0)
	{
		/* a free slot, else the one that started longest ago */
		slot = 0;
		for (int i = 0; i < LN_STATS_MAX_DATABASES; i++)
		{
			if (shared->rounds[i].database == InvalidOid)
			{
				slot = i;
				break;
			}
			if (shared->rounds[i].started_at < shared->rounds[slot].started_at)
				slot = i;
		}
		memset(&shared->rounds[slot], 0, sizeof(LnWorkerRound));
	}
	{
		LnWorkerRound *kept = &shared->rounds[slot];
		bool same_database = kept->database == round->database;
		TimestampTz error_at = kept->error_at;
		char error[sizeof(kept->error)];

		memcpy(error, kept->error, sizeof(error));
		*kept = *round;
		if (round->error_at == 0 && same_database)
		{
			kept->error_at = error_at;
			memcpy(kept->error, error, sizeof(error));
		}
	}
	SpinLockRelease(&shared->mutex);
}

/*
 * Count an error of the store of `bucket`; `code` is the store's code or the
 * HTTP status.  No message is kept: a store's message may quote what it was
 * sent (a key id), and lance_stats() must not hand that on.
 */
void
shared_stats_record_store_error(const char *bucket, const char *code)
{
	TimestampTz now;
	int slot = -1;

	if (shared == NULL)
		return;
	now = GetCurrentTimestamp();
	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < LN_STATS_MAX_STORE_ERRORS && slot < 0; i++)
	{
		LnStoreErrors *e = &shared->errors[i];

		if (e->database == MyDatabaseId && strncmp(e->bucket, bucket, sizeof(e->bucket) - 1) == 0 &&
			strncmp(e->code, code, sizeof(e->code) - 1) == 0)
			slot = i;
	}
	if (slot < 0)
	{
		/* a free slot, else the one seen longest ago */
		slot = 0;
		for (int i = 0; i < LN_STATS_MAX_STORE_ERRORS; i++)
		{
			if (shared->errors[i].count == 0)
			{
				slot = i;
				break;
			}
			if (shared->errors[i].last_at < shared->errors[slot].last_at)
				slot = i;
		}
		memset(&shared->errors[slot], 0, sizeof(LnStoreErrors));
		shared->errors[slot].database = MyDatabaseId;
		strlcpy(shared->errors[slot].bucket, bucket, sizeof(shared->errors[slot].bucket));
		strlcpy(shared->errors[slot].code, code, sizeof(shared->errors[slot].code));
	}
	shared->errors[slot].count++;
	shared->errors[slot].last_at = now;
	SpinLockRelease(&shared->mutex);
}

/* Where the database's next round goes on reconciling tables (0: from the start). */
int64
shared_stats_reconcile_after(Oid database)
{
	int64 after = 0;

	if (shared == NULL)
		return 0;
	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < LN_STATS_MAX_DATABASES; i++)
		if (shared->rounds[i].database == database)
			after = shared->rounds[i].reconcile_after;
	SpinLockRelease(&shared->mutex);
	return after;
}

/* Copy the rounds kept (at most max) to out; answers how many. */
int
shared_stats_rounds(LnWorkerRound *out, int max)
{
	int n = 0;

	if (shared == NULL)
		return 0;
	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < LN_STATS_MAX_DATABASES && n < max; i++)
		if (shared->rounds[i].database != InvalidOid)
			out[n++] = shared->rounds[i];
	SpinLockRelease(&shared->mutex);
	return n;
}

/* Copy the error counters of `database` (at most max) to out; answers how many. */
int
shared_stats_store_errors(Oid database, LnStoreErrors *out, int max)
{
	int n = 0;

	if (shared == NULL)
		return 0;
	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < LN_STATS_MAX_STORE_ERRORS && n < max; i++)
		if (shared->errors[i].count > 0 && shared->errors[i].database == database)
			out[n++] = shared->errors[i];
	SpinLockRelease(&shared->mutex);
	return n;
}
