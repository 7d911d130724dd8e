/*
 * catalog_identity.c
 *		Whether this catalog is the one of record for its tables' storage
 *		(lance_catalog.identity), and lance_adopt_storage()'s statement.
 *
 * A catalog restored from a dump into another database holds the storage
 * settings and locations of the one it came from.  Removing a dropped
 * table's data there, or writing a manifest, a tag or a branch, would act on
 * the live catalog's tables: so the catalog records where it was installed
 * (the cluster's system identifier and the database's oid) and acts on
 * storage only where it is.
 *
 * The rule, which errs on the side of not acting: the catalog is the one of
 * record when lance_catalog.identity holds at least one row, all its rows
 * name one identity, and that identity's database oid is this database's.
 *   - A restore runs CREATE EXTENSION, which records the restored database,
 *     and then copies the dumped rows, which name the original: two
 *     identities, never of record until lance_adopt_storage().
 *   - CREATE DATABASE ... TEMPLATE copies the rows: another database oid.
 *   - A promoted standby (or any physical copy) has the same system
 *     identifier and database oid: of record, as it must be after a
 *     failover.
 *   - pg_upgrade keeps the rows and the database oid (PostgreSQL 15 on) and
 *     makes a new system identifier: of record.  The system identifier is
 *     kept for the administrator to see (and in the error), not to decide.
 *
 * The hot path (every managed commit) asks once per session: being of
 * record, a session stays so (the rows change only by an adoption, which
 * makes it so, or by a restore into this very database, which records it
 * again), unless the (sub)transaction that found it so rolls back, as an
 * adoption in it would.  Not being of record is asked again each time, so
 * that an adoption elsewhere is seen by the next call.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "../common/error.h"
#include "catalog.h"
#include "catalog_internal.h"

/* Set once this session found the catalog of record; forgotten on a rollback. */
static bool of_record = false;
static bool callbacks_registered = false;

static void
forget_on_abort(XactEvent event, void *arg pg_attribute_unused())
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		of_record = false;
}

static void
forget_on_subabort(SubXactEvent event, SubTransactionId mySubid pg_attribute_unused(),
				   SubTransactionId parentSubid pg_attribute_unused(),
				   void *arg pg_attribute_unused())
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		of_record = false;
}

/*
 * Read lance_catalog.identity: whether all its rows name one identity, and
 * which (*system_identifier, *database); false if it has none or several.
 * A direct scan of a table of a row or two, under the snapshot an SPI
 * statement of this transaction would take now.
 */
static bool
read_identity(int64 *system_identifier, Oid *database)
{
	Oid schema = get_namespace_oid("lance_catalog", false);
	Oid relid = get_relname_relid("identity", schema);
	Relation rel;
	SysScanDesc scan;
	HeapTuple tuple;
	AttrNumber sys_attnum;
	AttrNumber db_attnum;
	int n = 0;
	bool one = true;

	if (!OidIsValid(relid))
		ln_error_detail(LN_SERVICE_UNAVAILABLE,
						"An administrator runs ALTER EXTENSION lance_namespace UPDATE.",
						"the catalog has no table lance_catalog.identity: it is older than the "
						"installed library");
	sys_attnum = get_attnum(relid, "system_identifier");
	db_attnum = get_attnum(relid, "database_oid");
	if (sys_attnum == InvalidAttrNumber || db_attnum == InvalidAttrNumber)
		elog(ERROR, "lance_namespace: lance_catalog.identity lacks its columns");
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	rel = table_open(relid, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, GetActiveSnapshot(), 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool sys_null;
		bool db_null;
		int64 sys =
			DatumGetInt64(heap_getattr(tuple, sys_attnum, RelationGetDescr(rel), &sys_null));
		Oid db = DatumGetObjectId(heap_getattr(tuple, db_attnum, RelationGetDescr(rel), &db_null));

		CHECK_FOR_INTERRUPTS();
		if (sys_null || db_null)
			one = false;
		else if (n == 0)
		{
			*system_identifier = sys;
			*database = db;
		}
		else if (sys != *system_identifier || db != *database)
			one = false;
		n++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	return n > 0 && one;
}

/*
 * True if this catalog is the one of record for its storage (see the rule
 * above): it may remove dropped tables' data and write on storage.
 */
bool
catalog_is_of_record(void)
{
	int64 system_identifier = 0;
	Oid database = InvalidOid;

	if (of_record)
		return true;
	if (!callbacks_registered)
	{
		RegisterXactCallback(forget_on_abort, NULL);
		RegisterSubXactCallback(forget_on_subabort, NULL);
		callbacks_registered = true;
	}
	of_record = read_identity(&system_identifier, &database) && database == MyDatabaseId;
	return of_record;
}

/*
 * Refuse (LN015) a write on storage in a catalog that is not the one of
 * record: the storage is another catalog's until an administrator adopts it.
 */
void
catalog_require_of_record(void)
{
	if (!catalog_is_of_record())
		ln_error_detail(LN_PERMISSION_DENIED,
						"If this catalog is to own its tables' storage from now on (the one it "
						"was copied from no longer does), an administrator runs "
						"lance_adopt_storage() here.",
						"this catalog is a copy (restored or copied from another database or "
						"cluster): it writes nothing on its tables' storage until "
						"lance_adopt_storage() makes it the catalog of record");
}

/* This catalog's identity: the cluster's system identifier and the database's oid. */
void
catalog_current_identity(int64 *system_identifier, Oid *database)
{
	*system_identifier = (int64)GetSystemIdentifier();
	*database = MyDatabaseId;
}

/* This file's statement, by its number (catalog_internal.h). */
static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	[STMT_ADOPT_STORAGE] = {"WITH gone AS (DELETE FROM lance_catalog.identity)"
							" INSERT INTO lance_catalog.identity"
							"   (system_identifier, database_oid, recorded_how, recorded_by)"
							" VALUES ($1, $2, 'adopt', pg_catalog.pg_get_userbyid($3))",
							3,
							{INT8OID, OIDOID, OIDOID}},
};

/*
 * Make this catalog the one of record: its identity replaces every one
 * recorded (lance_adopt_storage(), in a catalog session).
 */
void
catalog_adopt_storage(Oid adopted_by)
{
	int64 system_identifier;
	Oid database;
	Datum values[3];

	catalog_current_identity(&system_identifier, &database);
	values[0] = Int64GetDatum(system_identifier);
	values[1] = ObjectIdGetDatum(database);
	values[2] = ObjectIdGetDatum(adopted_by);
	catalog_execute(STMT_ADOPT_STORAGE, &statement_defs[STMT_ADOPT_STORAGE], values, NULL, 0);
}
