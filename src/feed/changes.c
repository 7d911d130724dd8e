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
 * before it looks at the entry locks.  The lock goes with the savepoint
 * that took it if that rolls back: the transaction then has no entry left.
 *
 * A transaction that holds an entry's lock holds every reader back, so it
 * may idle at most lance_namespace.change_idle_timeout: taking the lock sets
 * idle_in_transaction_session_timeout to that bound for the rest of the
 * transaction.  That does not reach a writer that sets the timeout again,
 * nor one that never sends Sync (its backend waits for the next message
 * "active"): the background worker ends those (maintenance/feed_guard.c,
 * with changes_entry_holds()).  A reader held back anyway is told who holds
 * it (lance_catalog.change_holder(), used by lance_changes()).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/pg_compat.h"
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
	int64 *object_ids;
	LnId *paths; /* each object's names, to find the namespaces above it */
	const char *status;
	LnMap properties;
	const char *drop_location;
} ChangeState;

static ChangeState change;

/*
 * The local transaction whose first entry is locked already, the entry's
 * number, and the subtransaction that holds the lock's fate: the one that
 * took it, or the one it has been handed to by its children's commits.
 */
static LocalTransactionId locked_lxid = InvalidLocalTransactionId;
static int64 locked_number;
static SubTransactionId locked_subxact = InvalidSubTransactionId;

/* lance_namespace.notify: announce each committed change. */
static bool notify_changes = true;

/* lance_namespace.change_idle_timeout: how long a holder of an entry may idle (ms; 0: no bound). */
static int change_idle_timeout = 60000;

void
changes_init(void)
{
	DefineCustomBoolVariable("lance_namespace.notify",
							 "Announce each committed change with NOTIFY lance_namespace_changes.",
							 "PostgreSQL serializes the commits of transactions that notify; turn "
							 "it off when nobody listens and commit throughput matters.",
							 &notify_changes, true, PGC_SUSET, 0, NULL, NULL, NULL);
	/*
	 * Superusers only: a holder idles at the expense of every reader of the
	 * feed, so that no role lifts the bound for its own sessions.
	 */
	DefineCustomIntVariable(
		"lance_namespace.change_idle_timeout",
		"How long a transaction that made a change may idle before it is ended.",
		"Until it ends, such a transaction holds back lance_changes() for every reader.  "
		"0 sets no bound.",
		&change_idle_timeout, 60000, 0, INT_MAX, PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
}

void
changes_begin(void)
{
	memset(&change, 0, sizeof(change));
	change.status = "Succeeded";
	change.properties = ln_empty_map();
}

/* A copy of `old` (n elements of `size` bytes) in an array of `capacity`. */
static void *
grown(void *old, int n, int capacity, Size size)
{
	void *array = palloc(size * capacity);

	if (n > 0)
		memcpy(array, old, size * n);
	return array;
}

/*
 * Note that the current call changed object `object_id`, named by the
 * first `len` names of `id`: a namespace, or a table (and its `version`, or
 * -1).  The id is the caller's: a dropped object is no longer there to find.
 */
void
changes_touch(const LnId *id, int len, bool is_namespace, int64 version, int64 object_id)
{
	int n = change.nobjects;

	if (n == change.capacity)
	{
		int capacity = Max(8, change.capacity * 2);

		change.objects = grown(change.objects, n, capacity, sizeof(char *));
		change.versions = grown(change.versions, n, capacity, sizeof(int64));
		change.has_version = grown(change.has_version, n, capacity, sizeof(bool));
		change.is_namespace = grown(change.is_namespace, n, capacity, sizeof(bool));
		change.object_ids = grown(change.object_ids, n, capacity, sizeof(int64));
		change.paths = grown(change.paths, n, capacity, sizeof(LnId));
		change.capacity = capacity;
	}
	change.objects[n] = ln_id_string(id, len);
	change.versions[n] = version;
	change.has_version[n] = version >= 0;
	change.is_namespace[n] = is_namespace;
	change.object_ids[n] = object_id;
	change.paths[n].len = len;
	change.paths[n].names = palloc(sizeof(char *) * (len + 1));
	for (int i = 0; i < len; i++)
		change.paths[n].names[i] = pstrdup(id->names[i]);
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

/*
 * The entry's lock goes with the subtransaction that took it when that one
 * aborts: its entry, the transaction's first, is gone, and so is every
 * later one (all made inside it).  The next entry takes a lock again.
 * Kept, the lock would hold the feed back with no entry behind it, and no
 * longer under the idle bound, which the abort set back too.
 */
static void
release_entry_lock_on_subabort(SubXactEvent event, SubTransactionId subxact,
							   SubTransactionId parent, void *arg pg_attribute_unused())
{
	if (locked_lxid != LN_MY_LXID() || subxact != locked_subxact)
		return;
	if (event == SUBXACT_EVENT_COMMIT_SUB)
		locked_subxact = parent;
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		ResourceOwner owner = CurrentResourceOwner;
		LOCKTAG entry;

		set_lock_tag(&entry, CHANGE_ENTRY_LOCK, locked_number);
		CurrentResourceOwner = TopTransactionResourceOwner;
		LockRelease(&entry, ExclusiveLock, false);
		CurrentResourceOwner = owner;
		locked_lxid = InvalidLocalTransactionId;
	}
}

/*
 * Bound how long the current transaction, which now holds an entry's lock,
 * may idle: idle_in_transaction_session_timeout for the rest of it, unless
 * that is set lower already.  SET LOCAL's semantics: it ends with the
 * transaction, or with the subtransaction that took the lock if that aborts
 * (and the lock with it).  A caller that sets it again afterwards is ended by
 * the background worker if it is preloaded; one that keeps running
 * statements still holds readers back: lance_changes() names its process to
 * them.  Outside a transaction block the transaction ends with the
 * statement, or at the extended protocol's Sync, which a client may withhold
 * while the backend counts as "active": no idle timeout of PostgreSQL's
 * reaches that, the background worker does.
 */
static void
bound_idle_time(void)
{
	if (change_idle_timeout <= 0 || !IsTransactionBlock() ||
		(IdleInTransactionSessionTimeout > 0 &&
		 IdleInTransactionSessionTimeout <= change_idle_timeout))
		return;
	(void)set_config_option("idle_in_transaction_session_timeout",
							psprintf("%d", change_idle_timeout), PGC_USERSET, PGC_S_SESSION,
							GUC_ACTION_LOCAL, true, 0, false);
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
 * The namespaces above each touched object by id: per object 0 (the root)
 * and the ids of the namespaces between the root and it, found by name
 * when the call records its entry (they are there: the call holds a lock on
 * the namespace it worked in, which a drop of any namespace above needs).
 * A prefix shared with the object before is looked up once.
 */
static int
namespace_ids(int64 **ids)
{
	int n = 0;
	int capacity = 8;
	const LnId *previous = NULL;
	int64 *previous_ids = NULL;

	*ids = palloc(sizeof(int64) * capacity);
	for (int i = 0; i < change.nobjects; i++)
	{
		const LnId *path = &change.paths[i];
		int above = Max(path->len - 1, 0);
		int64 *chain = palloc(sizeof(int64) * (above + 1));
		int64 parent = CATALOG_ROOT_ID;

		chain[0] = CATALOG_ROOT_ID;
		for (int k = 0; k < above; k++)
		{
			bool is_table;

			CHECK_FOR_INTERRUPTS();
			if (previous != NULL && k < previous->len - 1 &&
				strcmp(previous->names[k], path->names[k]) == 0 && chain[k] == previous_ids[k])
				chain[k + 1] = previous_ids[k + 1];
			else if (!catalog_lookup_child_id(parent, path->names[k], &chain[k + 1], &is_table))
				elog(ERROR, "lance_namespace: namespace \"%s\" of a change is missing",
					 ln_id_string(path, k + 1));
			parent = chain[k + 1];
		}
		if (n + above + 1 > capacity)
		{
			capacity = Max(capacity * 2, n + above + 1);
			*ids = repalloc(*ids, sizeof(int64) * capacity);
		}
		memcpy(*ids + n, chain, sizeof(int64) * (above + 1));
		n += above + 1;
		previous = path;
		previous_ids = chain;
	}
	return n;
}

/*
 * Record the current call in the log if it changed anything, and return
 * its transaction id (NULL if it changed nothing).
 */
char *
changes_record(const char *operation, const LnMap *context, const LnMap *headers,
			   const char *key_id)
{
	static bool callback_registered = false;
	LOCKTAG gate;
	char **namespaces;
	int nnamespaces;
	int64 *ns_ids;
	int nns_ids;
	char *volatile transaction_id = NULL;
	volatile bool locked = false;

	if (change.nobjects == 0)
		return NULL;
	if (!callback_registered)
	{
		RegisterSubXactCallback(release_entry_lock_on_subabort, NULL);
		callback_registered = true;
	}
	nnamespaces = touched_namespaces(&namespaces);
	nns_ids = namespace_ids(&ns_ids);

	set_lock_tag(&gate, CHANGE_GATE_LOCK, 0);
	(void)LockAcquire(&gate, ShareLock, true, false);
	PG_TRY();
	{
		int64 number;

		transaction_id = catalog_insert_change(
			operation, change.nobjects, change.objects, change.versions, change.has_version,
			nnamespaces, namespaces, change.object_ids, nns_ids, ns_ids, context, headers,
			change.status, &change.properties, change.drop_location, access_caller(),
			access_caller_name(), key_id, &number);
		if (LN_MY_LXID() != locked_lxid)
		{
			/* held by the top transaction: a subtransaction's end must not drop it */
			ResourceOwner owner = CurrentResourceOwner;
			LOCKTAG entry;

			set_lock_tag(&entry, CHANGE_ENTRY_LOCK, number);
			CurrentResourceOwner = TopTransactionResourceOwner;
			(void)LockAcquire(&entry, ExclusiveLock, false, false);
			CurrentResourceOwner = owner;
			locked_lxid = LN_MY_LXID();
			locked_number = number;
			locked_subxact = GetCurrentSubTransactionId();
			locked = true;
		}
	}
	PG_FINALLY();
	{
		LockRelease(&gate, ShareLock, true);
	}
	PG_END_TRY();
	if (locked)
		bound_idle_time();

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

/*
 * The backend's transaction start, 0 if unknown, from the activity
 * statistics; *visible says whether the caller may see it as
 * pg_stat_activity shows it (the backend's role's privileges, or
 * pg_read_all_stats).  Nothing of what the backend runs.
 */
static TimestampTz
transaction_start(int pid, bool *visible)
{
	int n;

	/*
	 * The statistics are read once per transaction otherwise: a reader that
	 * polls in one transaction would be told of an older holder, or of none.
	 */
	pgstat_clear_backend_activity_snapshot();
	n = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = LN_LOCAL_BEENTRY(i);

		if (local != NULL && local->backendStatus.st_procpid == pid)
		{
			Oid holder_role = local->backendStatus.st_userid;

			*visible = has_privs_of_role(GetUserId(), holder_role) ||
					   has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
			return local->backendStatus.st_xact_start_timestamp;
		}
	}
	*visible = false;
	return 0;
}

/*
 * The lowest-numbered entry lock from lo to hi that another backend holds:
 * false if none, else true with its number and the holder's pid.  A
 * prepared transaction has no backend and is left out (pg_prepared_xacts
 * lists it).
 */
static bool
entry_lock_holder(int64 lo, int64 hi, int64 *number, int *pid)
{
	bool found = false;

	if (hi >= lo && (uint64)hi - (uint64)lo >= GAP_PROBE_LIMIT)
	{
		/* a large gap: one pass over the lock table, as entry_lock_held() */
		LockData *locks = GetLockStatusData();

		for (int i = 0; i < locks->nelements; i++)
		{
			const LockInstanceData *lock = &locks->locks[i];
			const LOCKTAG *tag = &lock->locktag;
			int64 n;

			if (tag->locktag_type != LOCKTAG_ADVISORY || tag->locktag_field1 != MyDatabaseId ||
				tag->locktag_field4 != CHANGE_ENTRY_LOCK || lock->pid == MyProcPid ||
				lock->pid == 0 || (lock->holdMask & LOCKBIT_ON(ExclusiveLock)) == 0)
				continue;
			n = (int64)(((uint64)tag->locktag_field2 << 32) | tag->locktag_field3);
			if (n >= lo && n <= hi && (!found || n < *number))
			{
				found = true;
				*number = n;
				*pid = lock->pid;
			}
		}
		return found;
	}
	for (int64 n = lo; n <= hi; n++)
	{
		LOCKTAG entry;
		VirtualTransactionId *holders;
		int nholders;

		CHECK_FOR_INTERRUPTS();
		set_lock_tag(&entry, CHANGE_ENTRY_LOCK, n);
		/* a holder of ExclusiveLock conflicts with ShareLock; our own backend is left out */
		holders = GetLockConflicts(&entry, ShareLock, &nholders);
		if (nholders > 0)
		{
			PGPROC *proc = LN_VXID_PROC(holders[0]);

			/* unless its transaction ended meanwhile (and another took its slot) */
			if (proc != NULL && LN_PROC_LXID(proc) == holders[0].localTransactionId)
			{
				*number = n;
				*pid = proc->pid;
				return true;
			}
		}
		if (n == PG_INT64_MAX)
			break; /* n++ would overflow */
	}
	return false;
}

/*
 * lance_catalog.change_holder(lo, hi) -> (seq, pid, since): the lowest
 * entry numbered lo to hi whose transaction is still in flight, the process
 * that runs that transaction and when the transaction began; all NULL if
 * none (since alone if unknown).  What lance_changes() tells a reader held
 * back at a gap.
 */
PG_FUNCTION_INFO_V1(lance_change_holder);
Datum
lance_change_holder(PG_FUNCTION_ARGS)
{
	int64 lo = PG_GETARG_INT64(0);
	int64 hi = PG_GETARG_INT64(1);
	TupleDesc desc;
	Datum values[4] = {0};
	bool nulls[4] = {true, true, true, true};
	int64 number = 0;
	int pid = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "lance_change_holder must return a record");
	if (entry_lock_holder(lo, hi, &number, &pid))
	{
		bool visible = false;
		TimestampTz since = pid != 0 ? transaction_start(pid, &visible) : 0;

		values[0] = Int64GetDatum(number);
		values[1] = Int32GetDatum(pid);
		nulls[0] = nulls[1] = false;
		/* when it began, to a caller that may see it in pg_stat_activity */
		if (since != 0 && visible)
		{
			values[2] = TimestampTzGetDatum(since);
			nulls[2] = false;
		}
		/* whether it began longer ago than a writer may idle, to all */
		if (since != 0)
		{
			values[3] =
				BoolGetDatum(since <= GetCurrentTimestamp() - (int64)change_idle_timeout * 1000);
			nulls[3] = false;
		}
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/*
 * lance_namespace.change_idle_timeout as this process has it (ms; 0: no
 * bound): the background worker's launcher, which has no database, reads
 * the server's setting (postgresql.conf, ALTER SYSTEM).
 */
int
changes_idle_bound(void)
{
	return change_idle_timeout;
}

/*
 * Every entry lock a backend holds, in every database: one pass over the
 * lock table, whose size the server's settings bound.  Prepared
 * transactions (no process) are left out.  The array is palloc'd in the
 * current context; the count is returned.
 */
int
changes_entry_holds(ChangeEntryHold **holds)
{
	LockData *locks = GetLockStatusData();
	int n = 0;

	*holds = palloc(sizeof(ChangeEntryHold) * Max(locks->nelements, 1));
	for (int i = 0; i < locks->nelements; i++)
	{
		const LockInstanceData *lock = &locks->locks[i];
		const LOCKTAG *tag = &lock->locktag;

		if (tag->locktag_type != LOCKTAG_ADVISORY || tag->locktag_field4 != CHANGE_ENTRY_LOCK ||
			lock->pid == 0 || (lock->holdMask & LOCKBIT_ON(ExclusiveLock)) == 0)
			continue;
		(*holds)[n].pid = lock->pid;
		(*holds)[n].database = tag->locktag_field1;
		(*holds)[n].number = (int64)(((uint64)tag->locktag_field2 << 32) | tag->locktag_field3);
		n++;
	}
	return n;
}

/*
 * The change log as GET /v1/changes answers it: the entries lance_changes()
 * answers the current user (the request's role) after `after`, at most
 * `limit`, as {"changes": [<entry>, ...], "next_after": <seq>};
 * lance_changes() is the one in `schema`, the extension's.  Reading
 * through lance_changes() itself gives the REST reader exactly the SQL
 * reader's order, gaps and filtering.  next_after is what to ask after
 * next: the last entry's number, or the position row's (entries the role
 * may not see, passed over), or `after` when nothing came.  The plan is
 * kept, and made again should the extension move to another schema.
 */
char *
changes_read_json(Oid schema, int64 after, int limit)
{
	static SPIPlanPtr plan = NULL;
	static Oid plan_schema = InvalidOid;
	MemoryContext caller_cxt = CurrentMemoryContext;
	Datum values[2];
	bool isnull;
	char *answer;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (plan == NULL || plan_schema != schema)
	{
		Oid argtypes[2] = {INT8OID, INT4OID};
		char *sql = psprintf(
			"SELECT pg_catalog.jsonb_build_object("
			"  'changes', COALESCE(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(c) ORDER BY c.seq)"
			"                        FILTER (WHERE c.operation IS NOT NULL), '[]'),"
			"  'next_after', COALESCE(pg_catalog.max(c.seq), $1))::pg_catalog.text"
			"  FROM %s.lance_changes($1, $2) c",
			quote_identifier(get_namespace_name(schema)));
		SPIPlanPtr made = SPI_prepare(sql, 2, argtypes);

		if (made == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (plan != NULL)
			SPI_freeplan(plan);
		if (SPI_keepplan(made) != 0)
			elog(ERROR, "SPI_keepplan failed");
		plan = made;
		plan_schema = schema;
	}
	values[0] = Int64GetDatum(after);
	values[1] = Int32GetDatum(limit);
	if (SPI_execute_plan(plan, values, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "reading the change log failed");
	answer = TextDatumGetCString(
		SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	/* copied out of SPI's memory before SPI_finish frees it */
	answer = MemoryContextStrdup(caller_cxt, answer);
	SPI_finish();
	return answer;
}
