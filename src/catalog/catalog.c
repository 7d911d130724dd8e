/*
 * catalog.c
 *		Read and write the catalog tables through SPI with saved plans: the
 *		catalog session (catalog_begin to catalog_end) and the running of
 *		every statement.
 *
 * Every statement is prepared once per backend and kept, so that a call
 * never parses or plans SQL text.  Results are copied into the memory
 * context that was current at catalog_begin(), which outlives SPI.
 *
 * The statements themselves live by what they read and write, each file's
 * SQL next to the C that binds its parameters and reads its rows:
 * catalog_objects.c (namespaces and tables), catalog_versions.c (table
 * versions), catalog_changes.c (the commit log), catalog_access.c (grants
 * and API keys) and catalog_storage.c (storage settings).  This file keeps
 * what they share (catalog_internal.h): the plans, one per statement
 * number, and the conversions of parameters and results.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "../common/error.h"
#include "../common/pg_compat.h"
#include "catalog.h"
#include "catalog_index.h"
#include "catalog_internal.h"

static SPIPlanPtr plans[NUM_CATALOG_STATEMENTS];
MemoryContext catalog_result_cxt;

/* The caller's identity and settings, while the catalog acts as its owner. */
static Oid caller_user;
static int caller_security;

/*
 * Whether a catalog session is open, and in which subtransaction it began:
 * sessions do not nest (one would put back the other's identity), and an
 * error ends the session with the (sub)transaction it began in.
 */
static bool session_open = false;
static SubTransactionId session_subxact = InvalidSubTransactionId;
/* What puts the caller's search path back (pg_compat.h). */
static int session_search_path;

static void
end_session_with_transaction(XactEvent event, void *arg pg_attribute_unused())
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE)
		session_open = false;
}

static void
end_session_on_subabort(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid pg_attribute_unused(),
						void *arg pg_attribute_unused())
{
	if (event == SUBXACT_EVENT_ABORT_SUB && mySubid == session_subxact)
		session_open = false;
}

/* The owner of schema lance_catalog, or InvalidOid until looked up again. */
static Oid catalog_owner_id = InvalidOid;

static void
forget_catalog_owner(Datum arg pg_attribute_unused(), int cacheid pg_attribute_unused(),
					 uint32 hashvalue pg_attribute_unused())
{
	catalog_owner_id = InvalidOid;
}

static Oid
catalog_owner(void)
{
	static bool callback_registered = false;

	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(NAMESPACEOID, forget_catalog_owner, (Datum)0);
		callback_registered = true;
	}
	if (!OidIsValid(catalog_owner_id))
	{
		Oid schema = get_namespace_oid("lance_catalog", false);
		HeapTuple tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(schema));

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for schema %u", schema);
		catalog_owner_id = ((Form_pg_namespace)GETSTRUCT(tuple))->nspowner;
		ReleaseSysCache(tuple);
	}
	return catalog_owner_id;
}

/*
 * Start using the catalog.  Its tables are not the callers' to read or
 * write: the statements run as the owner of schema lance_catalog, as a
 * SECURITY DEFINER function would, searching pg_catalog alone so that no
 * object a caller made is ever found in its place.  Callers check
 * privileges (access.c) and name the caller where the catalog records one.
 * An error ends both switches with the (sub)transaction.
 */
void
catalog_begin(void)
{
	static bool callbacks_registered = false;

	if (!callbacks_registered)
	{
		RegisterXactCallback(end_session_with_transaction, NULL);
		RegisterSubXactCallback(end_session_on_subabort, NULL);
		callbacks_registered = true;
	}
	if (session_open)
		elog(ERROR, "lance_namespace: catalog sessions do not nest");
	session_open = true;
	session_subxact = GetCurrentSubTransactionId();
	catalog_result_cxt = CurrentMemoryContext;
	/* the settings a session reads live in its memory (catalog_index.c) */
	catalog_index_forget_storage();
	GetUserIdAndSecContext(&caller_user, &caller_security);
	SetUserIdAndSecContext(catalog_owner(), caller_security | SECURITY_LOCAL_USERID_CHANGE);
	/*
	 * Only pg_catalog is searched while the catalog acts (pg_compat.h says
	 * how each release does it); catalog_end, or the (sub)transaction's
	 * abort, puts the caller's search path back.  The plans, made and kept
	 * under this same path, stay valid.
	 */
	LN_PUSH_CATALOG_SEARCH_PATH(session_search_path);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/*
	 * SPI_connect switches to a context that SPI_finish deletes; the
	 * operation's own allocations (its response) must outlive that.
	 */
	MemoryContextSwitchTo(catalog_result_cxt);
}

void
catalog_end(void)
{
	/*
	 * Whatever the operation made since catalog_begin must outlive
	 * SPI_finish: a context left current by a catalog call would be freed
	 * with SPI's under the caller.
	 */
	if (CurrentMemoryContext != catalog_result_cxt)
		elog(ERROR, "lance_namespace: a catalog call left another memory context current");
	SPI_finish();
	LN_POP_CATALOG_SEARCH_PATH(session_search_path);
	SetUserIdAndSecContext(caller_user, caller_security);
	session_open = false;
}

/*
 * The library reads and writes the catalog's tables as the install script
 * of its own version makes them.  A catalog made by an older script must be
 * updated first: say so, rather than fail on a missing column.  Checked
 * once per backend, before the first statement is prepared.
 */
void
catalog_check_schema_version(void)
{
	static bool checked = false;
	MemoryContext caller_cxt;
	char *version;

	if (checked)
		return;
	caller_cxt = CurrentMemoryContext;
	if (SPI_execute("SELECT e.extversion FROM pg_catalog.pg_extension e"
					" WHERE e.extname OPERATOR(pg_catalog.=) 'lance_namespace'",
					true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "extension lance_namespace is not installed in this database");
	version = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	/* SPI leaves its own context current, which SPI_finish deletes (see catalog_execute) */
	MemoryContextSwitchTo(caller_cxt);
	if (strcmp(version, LN_EXTENSION_VERSION) != 0)
		ln_error_detail(LN_SERVICE_UNAVAILABLE,
						"An administrator runs ALTER EXTENSION lance_namespace UPDATE.",
						"the catalog is at version %s, the installed library needs %s", version,
						LN_EXTENSION_VERSION);
	checked = true;
}

/*
 * True if this database holds the extension at the library's version: what
 * a hook that runs outside the API's calls (a DROP ROLE) checks before it
 * touches the catalog, where catalog_check_schema_version would refuse.
 */
bool
catalog_is_current(void)
{
	Relation rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	bool current = false;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("lance_namespace"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool isnull;
		Datum version =
			heap_getattr(tuple, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);

		current = !isnull && strcmp(TextDatumGetCString(version), LN_EXTENSION_VERSION) == 0;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return current;
}

/*
 * Run a catalog statement, preparing and keeping its plan on first use.
 * `def` is the statement's definition in the file that runs it.
 */
int
catalog_execute(CatalogStatement stmt, const StatementDef *def, Datum *values, const char *nulls,
				long limit)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	int rc;

	if (plans[stmt] == NULL)
	{
		SPIPlanPtr plan;

		catalog_check_schema_version();
		/*
		 * A generic plan, always: every statement looks rows up by key, so a
		 * plan made for one set of values serves all, and planning anew per
		 * call (a custom plan) would cost more than the statement itself.
		 */
		plan =
			SPI_prepare_cursor(def->sql, def->nargs, (Oid *)def->argtypes, CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			elog(ERROR, "could not prepare catalog statement %d: %s", stmt,
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		plans[stmt] = plan;
	}
	rc = SPI_execute_plan(plans[stmt], values, nulls, false, limit);

	/*
	 * SPI leaves CurrentMemoryContext on its procedure context, which
	 * SPI_finish deletes.  The catalog layer never changes the caller's
	 * context: whatever the caller allocates after a statement must outlive
	 * catalog_end(), since it may be part of the operation's response.
	 */
	MemoryContextSwitchTo(caller_cxt);
	if (rc < 0)
		elog(ERROR, "catalog statement %d failed: %s", stmt, SPI_result_code_string(rc));
	return rc;
}

Datum
catalog_result_datum(int row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

char *
catalog_result_text(int row, int col)
{
	bool isnull;
	Datum d = catalog_result_datum(row, col, &isnull);

	if (isnull)
		return NULL;
	return MemoryContextStrdup(catalog_result_cxt, TextDatumGetCString(d));
}

/* A text[] result as palloc'ed strings in the result context. */
int
catalog_result_text_array(int row, int col, char ***strings)
{
	bool isnull;
	Datum d = catalog_result_datum(row, col, &isnull);
	Datum *elems;
	bool *nulls;
	int n;

	*strings = NULL;
	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	*strings = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
		(*strings)[i] =
			nulls[i] ? NULL
					 : MemoryContextStrdup(catalog_result_cxt, TextDatumGetCString(elems[i]));
	return n;
}

/*
 * A flattened [key, value] pairs text[] result as an LnMap in the result
 * context.  A pair whose value is NULL (a JSON null, which only a direct
 * UPDATE can store) is left out: a map holds strings.
 */
LnMap
catalog_result_map(uint64 row, int col)
{
	LnMap map;
	char **pairs;
	int npairs = catalog_result_text_array(row, col, &pairs) / 2;

	map.len = 0;
	map.keys = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (npairs + 1));
	map.values = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (npairs + 1));
	for (int i = 0; i < npairs; i++)
	{
		if (pairs[2 * i + 1] == NULL)
			continue;
		map.keys[map.len] = pairs[2 * i];
		map.values[map.len++] = pairs[2 * i + 1];
	}
	return map;
}

Datum
catalog_text_array_datum(char **strings, int n)
{
	Datum *elems = palloc(sizeof(Datum) * (n + 1));

	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(strings[i]);
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* A text[] or bigint[] whose NULL strings (or unset flags) are SQL NULLs. */
static Datum
nullable_array_datum(Datum *elems, bool *nulls, int n, Oid elemtype)
{
	int dims[1] = {n};
	int lbs[1] = {1};
	int16 typlen;
	bool typbyval;
	char typalign;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	return PointerGetDatum(
		construct_md_array(elems, nulls, 1, dims, lbs, elemtype, typlen, typbyval, typalign));
}

Datum
catalog_nullable_text_array_datum(char **strings, int n)
{
	Datum *elems = palloc0(sizeof(Datum) * (n + 1));
	bool *nulls = palloc0(sizeof(bool) * (n + 1));

	for (int i = 0; i < n; i++)
	{
		nulls[i] = strings[i] == NULL;
		if (!nulls[i])
			elems[i] = CStringGetTextDatum(strings[i]);
	}
	return nullable_array_datum(elems, nulls, n, TEXTOID);
}

Datum
catalog_int8_array_datum(const int64 *values, const bool *present, int n)
{
	Datum *elems = palloc0(sizeof(Datum) * (n + 1));
	bool *nulls = palloc0(sizeof(bool) * (n + 1));

	for (int i = 0; i < n; i++)
	{
		nulls[i] = present != NULL && !present[i];
		elems[i] = Int64GetDatum(values[i]);
	}
	return nullable_array_datum(elems, nulls, n, INT8OID);
}

Datum
catalog_text_datum_or_null(const char *s, char *null)
{
	*null = s ? ' ' : 'n';
	return s ? CStringGetTextDatum(s) : (Datum)0;
}
