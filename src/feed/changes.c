/*
 * changes.c
 *		Record each call that changed the catalog in lance_catalog.change,
 *		in the caller's transaction, and let readers follow the log in
 *		commit order.
 *
 * Entries are numbered when a call runs, but transactions commit in another
 * order, so entry 7 can become visible after entry 8.  A reader that has
 * seen 8 must not skip 7 while 7 may still commit.  Each transaction
 * therefore holds an advisory lock keyed by the number of its first entry
 * until it ends; a reader that finds a number missing tries that lock, and
 * stops there if it is held (lance_changes() in the install script).  The
 * window between taking a number and locking it is closed by a gate: writers
 * hold it shared across that window, and a reader takes it exclusively
 * before it looks at the entry locks.
 */
#include "postgres.h"

#include "commands/async.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/resowner.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/request.h"
#include "changes.h"

#define CHANGE_GATE_LOCK  0x4347 /* "CG" */
#define CHANGE_ENTRY_LOCK 0x4345 /* "CE" */
#define CHANGE_CHANNEL	  "lance_namespace_changes"

/* What the current call touched, collected as it runs. */
typedef struct ChangeState
{
	int nobjects;
	int capacity;
	char **objects;
	int64 *versions;
	bool *has_version;
	bool *is_namespace;
	const char *status;
	LnMap properties;
	const char *drop_location;
} ChangeState;

static ChangeState change;

/* The local transaction whose first entry is locked already. */
static LocalTransactionId locked_lxid = InvalidLocalTransactionId;

/* lance_namespace.notify: announce each committed change. */
static bool notify_changes = true;

void
changes_init(void)
{
	DefineCustomBoolVariable("lance_namespace.notify",
							 "Announce each committed change with NOTIFY lance_namespace_changes.",
							 "PostgreSQL serializes the commits of transactions that notify; turn "
							 "it off when nobody listens and commit throughput matters.",
							 &notify_changes, true, PGC_SUSET, 0, NULL, NULL, NULL);
}

void
changes_begin(void)
{
	memset(&change, 0, sizeof(change));
	change.status = "Succeeded";
	change.properties = ln_empty_map();
}

/*
 * Note that the current call changed the object named by the first `len`
 * names of `id`: a namespace, or a table (and its `version`, or -1).
 */
void
changes_touch(const LnId *id, int len, bool is_namespace, int64 version)
{
	if (change.nobjects == change.capacity)
	{
		int capacity = Max(8, change.capacity * 2);
		char **objects = palloc(sizeof(char *) * capacity);
		int64 *versions = palloc(sizeof(int64) * capacity);
		bool *has_version = palloc(sizeof(bool) * capacity);
		bool *namespaces = palloc(sizeof(bool) * capacity);

		if (change.nobjects > 0)
		{
			memcpy(objects, change.objects, sizeof(char *) * change.nobjects);
			memcpy(versions, change.versions, sizeof(int64) * change.nobjects);
			memcpy(has_version, change.has_version, sizeof(bool) * change.nobjects);
			memcpy(namespaces, change.is_namespace, sizeof(bool) * change.nobjects);
		}
		change.objects = objects;
		change.versions = versions;
		change.has_version = has_version;
		change.is_namespace = namespaces;
		change.capacity = capacity;
	}
	change.objects[change.nobjects] = ln_id_string(id, len);
	change.versions[change.nobjects] = version;
	change.has_version[change.nobjects] = version >= 0;
	change.is_namespace[change.nobjects] = is_namespace;
	change.nobjects++;
}

/*
 * Record the call as a drop whose data at `location` waits for
 * lance_process_drops(): status Queued, the location as a property to show
 * and, apart, as the folder to remove.
 */
void
changes_queue_drop(const char *location)
{
	LnMap properties = {1, palloc(sizeof(char *)), palloc(sizeof(char *))};

	properties.keys[0] = "location";
	properties.values[0] = (char *)location;
	change.status = "Queued";
	change.properties = properties;
	change.drop_location = location;
}

/* The properties the current call's entry shows (lance_grant: role and privilege). */
void
changes_set_properties(const LnMap *properties)
{
	change.properties = *properties;
}

static void
set_lock_tag(LOCKTAG *tag, uint16 lock_class, int64 number)
{
	/*
	 * All 64 bits of the number, so that entries 2^32 apart never share a
	 * lock, and the class in the field that pg_advisory_lock() sets to 1 or
	 * 2, so that no application's advisory lock is ever one of ours.
	 */
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32)((uint64)number >> 32), (uint32)number,
						 lock_class);
}

/* Add `ns` to the list unless it is there already. */
static void
add_namespace(char ***namespaces, int *n, char *ns)
{
	for (int k = 0; k < *n; k++)
		if (strcmp((*namespaces)[k], ns) == 0)
			return;
	if (*n % 8 == 0)
		*namespaces = repalloc(*namespaces, sizeof(char *) * (*n + 8));
	(*namespaces)[(*n)++] = ns;
}

/*
 * The namespaces the call changed something in: every namespace above the
 * touched objects, and the touched namespaces themselves; each once, in the
 * string form.
 */
static int
touched_namespaces(char ***namespaces)
{
	int n = 0;

	*namespaces = palloc(sizeof(char *) * 8);
	for (int i = 0; i < change.nobjects; i++)
	{
		char *id = change.objects[i];

		for (char *c = id; *c; c++)
			if (*c == '$')
				add_namespace(namespaces, &n, pnstrdup(id, c - id));
		if (change.is_namespace[i])
			add_namespace(namespaces, &n, id);
	}
	return n;
}

/*
 * Record the current call in the log if it changed anything, and return
 * its transaction id (NULL if it changed nothing).
 */
char *
changes_record(const char *operation, const LnMap *context)
{
	LOCKTAG gate;
	char **namespaces;
	int nnamespaces;
	char *volatile transaction_id = NULL;

	if (change.nobjects == 0)
		return NULL;
	nnamespaces = touched_namespaces(&namespaces);

	set_lock_tag(&gate, CHANGE_GATE_LOCK, 0);
	(void)LockAcquire(&gate, ShareLock, true, false);
	PG_TRY();
	{
		int64 number;

		transaction_id = catalog_insert_change(
			operation, change.nobjects, change.objects, change.versions, change.has_version,
			nnamespaces, namespaces, context, change.status, &change.properties,
			change.drop_location, access_caller_name(), &number);
		if (MyProc->lxid != locked_lxid)
		{
			/* held by the top transaction: a subtransaction's end must not drop it */
			ResourceOwner owner = CurrentResourceOwner;
			LOCKTAG entry;

			set_lock_tag(&entry, CHANGE_ENTRY_LOCK, number);
			CurrentResourceOwner = TopTransactionResourceOwner;
			(void)LockAcquire(&entry, ExclusiveLock, false, false);
			CurrentResourceOwner = owner;
			locked_lxid = MyProc->lxid;
		}
	}
	PG_FINALLY();
	{
		LockRelease(&gate, ShareLock, true);
	}
	PG_END_TRY();

	/*
	 * A signal without a payload: a listener may not be allowed to read what
	 * changed, so it learns that only from lance_changes().
	 */
	if (notify_changes)
		Async_Notify(CHANGE_CHANNEL, "");
	return transaction_id;
}

/*
 * lance_catalog.change_in_flight(lo, hi): true if the transaction of a
 * missing entry numbered from lo to hi may still commit it.
 */
/* A gap longer than this is checked against the lock table rather than number by number. */
#define GAP_PROBE_LIMIT 1024

/*
 * True if another backend holds the lock of an entry numbered lo to hi: one
 * pass over the lock table, whose size is bounded by the server's settings
 * whatever the gap (a setval or a caller's "after" can make it any size).
 */
static bool
entry_lock_held(int64 lo, int64 hi)
{
	LockData *locks = GetLockStatusData();

	for (int i = 0; i < locks->nelements; i++)
	{
		const LockInstanceData *lock = &locks->locks[i];
		const LOCKTAG *tag = &lock->locktag;
		int64 number;

		if (tag->locktag_type != LOCKTAG_ADVISORY || tag->locktag_field1 != MyDatabaseId ||
			tag->locktag_field4 != CHANGE_ENTRY_LOCK || lock->pid == MyProcPid ||
			lock->holdMask == 0)
			continue;
		number = (int64)(((uint64)tag->locktag_field2 << 32) | tag->locktag_field3);
		if (number >= lo && number <= hi)
			return true;
	}
	return false;
}

PG_FUNCTION_INFO_V1(lance_change_in_flight);
Datum
lance_change_in_flight(PG_FUNCTION_ARGS)
{
	int64 lo = PG_GETARG_INT64(0);
	int64 hi = PG_GETARG_INT64(1);
	volatile bool in_flight = false;
	LOCKTAG gate;

	set_lock_tag(&gate, CHANGE_GATE_LOCK, 0);
	(void)LockAcquire(&gate, ExclusiveLock, true, false);
	PG_TRY();
	{
		if (hi >= lo && (uint64)hi - (uint64)lo >= GAP_PROBE_LIMIT)
			in_flight = entry_lock_held(lo, hi);
		else
			for (int64 number = lo; number <= hi && !in_flight; number++)
			{
				LOCKTAG entry;

				/* a gap can be large (after setval): stay cancellable */
				CHECK_FOR_INTERRUPTS();
				set_lock_tag(&entry, CHANGE_ENTRY_LOCK, number);
				if (LockAcquire(&entry, ShareLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
					in_flight = true;
				else
					LockRelease(&entry, ShareLock, true);
				if (number == PG_INT64_MAX)
					break; /* number++ would overflow */
			}
	}
	PG_FINALLY();
	{
		LockRelease(&gate, ExclusiveLock, true);
	}
	PG_END_TRY();
	PG_RETURN_BOOL(in_flight);
}
