/*
 * rate_buckets.c
 *		Token buckets in shared memory, one per (database, role) that has a
 *		request limit: the requests it may still make now.
 *
 * Shared memory rather than a table: every request of a limited role takes
 * a token, on a standby too, and must not cost a write or wait for another
 * request's transaction.  A bucket holds up to `burst` tokens and gains
 * `rate` a second; a request takes one, or is refused with the time until
 * one is there.  The area exists only while the library is preloaded, it is
 * fixed in size (LN_RATE_BUCKETS; a role beyond that takes the slot used
 * longest ago among those its hash probes, starting with a full bucket),
 * and a restart fills every bucket.  A spinlock guards it: a holder does a
 * few comparisons and one subtraction.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "rate_buckets.h"

/* How many slots from its hash a bucket may lie at. */
#define PROBES 16

typedef struct RateBucket
{
	Oid database;
	Oid role;
	double tokens;
	TimestampTz refilled_at; /* 0: a free slot */
} RateBucket;

typedef struct RateBuckets
{
	slock_t mutex;
	RateBucket buckets[LN_RATE_BUCKETS];
} RateBuckets;

static RateBuckets *area = NULL;
static shmem_request_hook_type previous_request_hook = NULL;
static shmem_startup_hook_type previous_startup_hook = NULL;

static void
request_rate_buckets(void)
{
	if (previous_request_hook)
		previous_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(RateBuckets)));
}

static void
start_rate_buckets(void)
{
	bool found;

	if (previous_startup_hook)
		previous_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	area = ShmemInitStruct("lance_namespace rate buckets", sizeof(RateBuckets), &found);
	if (!found)
	{
		memset(area, 0, sizeof(RateBuckets));
		SpinLockInit(&area->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Ask for the area; only while the library is preloaded. */
void
rate_buckets_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	previous_request_hook = shmem_request_hook;
	shmem_request_hook = request_rate_buckets;
	previous_startup_hook = shmem_startup_hook;
	shmem_startup_hook = start_rate_buckets;
}

bool
rate_buckets_available(void)
{
	return area != NULL;
}

/*
 * Take a token from the bucket of (database, role), which gains `rate`
 * tokens a second up to `burst`.  True if one was there; false otherwise,
 * with *wait_seconds until one will be.  Without the area (the library not
 * preloaded) nothing is counted: true.
 */
bool
rate_bucket_take(Oid database, Oid role, double rate, int burst, double *wait_seconds)
{
	uint32 start = hash_combine(murmurhash32(database), murmurhash32(role)) % LN_RATE_BUCKETS;
	TimestampTz now = GetCurrentTimestamp();
	RateBucket *bucket = NULL;
	RateBucket *oldest = NULL;
	bool taken;

	*wait_seconds = 0;
	if (area == NULL)
		return true;
	SpinLockAcquire(&area->mutex);
	for (int i = 0; i < PROBES && bucket == NULL; i++)
	{
		RateBucket *b = &area->buckets[(start + i) % LN_RATE_BUCKETS];

		if (b->refilled_at != 0 && b->database == database && b->role == role)
			bucket = b;
		else if (oldest == NULL || b->refilled_at < oldest->refilled_at)
			oldest = b;
	}
	if (bucket == NULL)
	{
		/* a newcomer, or one pushed out: a full bucket */
		bucket = oldest;
		bucket->database = database;
		bucket->role = role;
		bucket->tokens = burst;
		bucket->refilled_at = now;
	}
	else if (now > bucket->refilled_at)
	{
		bucket->tokens += rate * (double)(now - bucket->refilled_at) / USECS_PER_SEC;
		bucket->refilled_at = now;
	}
	/* a burst lowered since, or a rate raised: never more than the burst */
	if (bucket->tokens > burst)
		bucket->tokens = burst;
	taken = bucket->tokens >= 1;
	if (taken)
		bucket->tokens -= 1;
	else
		*wait_seconds = (1 - bucket->tokens) / rate;
	SpinLockRelease(&area->mutex);
	return taken;
}
