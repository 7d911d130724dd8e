/*
 * stats.c
 *		lance_stats(): one call that tells an administrator how big the
 *		catalog is, what waits in its queues, whether the background worker
 *		keeps up, which object stores fail and who holds the change feed
 *		back.
 *
 * The catalog's part comes from one statement (catalog_stats.c); the
 * worker's rounds and the stores' errors, which no table holds, from shared
 * memory (shared_stats.c), present only while lance_namespace is in
 * shared_preload_libraries.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/shared_stats.h"
#include "../frame/frame.h"
#include "../maintenance/worker.h"
#include "stats.h"

/* `"name": <timestamp in ISO 8601>` or null when ts is 0. */
static void
append_time(StringInfo out, const char *name, TimestampTz ts)
{
	char buf[MAXDATELEN + 1];

	appendStringInfo(out, ", \"%s\": ", name);
	if (ts == 0)
		appendStringInfoString(out, "null");
	else
		appendStringInfo(out, "\"%s\"",
						 JsonEncodeDateTime(buf, TimestampTzGetDatum(ts), TIMESTAMPTZOID, NULL));
}

/* The rounds shared memory holds, as a JSON array. */
static char *
rounds_json(void)
{
	LnWorkerRound *rounds = palloc(sizeof(LnWorkerRound) * LN_STATS_MAX_DATABASES);
	int n = shared_stats_rounds(rounds, LN_STATS_MAX_DATABASES);
	StringInfoData out;

	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	for (int i = 0; i < n; i++)
	{
		LnWorkerRound *r = &rounds[i];

		appendStringInfo(&out, "%s{\"database_oid\": %u", i > 0 ? ", " : "", r->database);
		append_time(&out, "started_at", r->started_at);
		append_time(&out, "finished_at", r->finished_at);
		appendStringInfo(&out, ", \"drops\": %d, \"undo_steps\": %d, \"reconciled\": %d", r->drops,
						 r->undo_steps, r->reconciled);
		if (r->swept >= 0)
			appendStringInfo(&out, ", \"swept\": %d", r->swept);
		else
			appendStringInfoString(&out, ", \"swept\": null");
		append_time(&out, "last_error_at", r->error_at);
		appendStringInfoString(&out, ", \"last_error\": ");
		if (r->error_at != 0)
			escape_json(&out, r->error);
		else
			appendStringInfoString(&out, "null");
		appendStringInfoChar(&out, '}');
	}
	appendStringInfoChar(&out, ']');
	return out.data;
}

/* This database's store error counters, as a JSON array. */
static char *
store_errors_json(void)
{
	LnStoreErrors *errors = palloc(sizeof(LnStoreErrors) * LN_STATS_MAX_STORE_ERRORS);
	int n = shared_stats_store_errors(MyDatabaseId, errors, LN_STATS_MAX_STORE_ERRORS);
	StringInfoData out;

	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	for (int i = 0; i < n; i++)
	{
		appendStringInfoString(&out, i > 0 ? ", {\"bucket\": " : "{\"bucket\": ");
		escape_json(&out, errors[i].bucket);
		appendStringInfoString(&out, ", \"code\": ");
		escape_json(&out, errors[i].code);
		appendStringInfo(&out, ", \"count\": " INT64_FORMAT, errors[i].count);
		append_time(&out, "last_at", errors[i].last_at);
		appendStringInfoChar(&out, '}');
	}
	appendStringInfoChar(&out, ']');
	return out.data;
}

char *
stats_json_text(void)
{
	char *rounds;
	char *errors;
	char *text;

	access_begin();
	access_require_admin("lance_stats()");
	rounds = rounds_json();
	errors = store_errors_json();
	catalog_begin();
	text = catalog_stats(rounds, errors, shared_stats_available(), worker_interval_seconds());
	catalog_end();
	return text;
}

static Jsonb *
stats(void)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(stats_json_text())));
}

PG_FUNCTION_INFO_V1(lance_stats);
Datum
lance_stats(PG_FUNCTION_ARGS pg_attribute_unused())
{
	MemoryContext cxt = CurrentMemoryContext;
	Jsonb *result = NULL;

	ln_error_set_element(NULL);
	PG_TRY();
	{
		result = stats();
	}
	PG_CATCH();
	{
		frame_raise_as_lance_error(cxt);
	}
	PG_END_TRY();
	PG_RETURN_JSONB_P(result);
}

/*
 * lance_library_version(): the version of the extension's library that
 * this backend loaded (the version whose install script it reads and
 * writes the catalog as).  The gateway's /readyz compares it with the
 * installed extension's version (pg_extension.extversion): a catalog not
 * yet updated to the library (ALTER EXTENSION lance_namespace UPDATE) is
 * not ready.  Nothing secret: every role may call it.
 */
PG_FUNCTION_INFO_V1(lance_library_version);
Datum
lance_library_version(PG_FUNCTION_ARGS pg_attribute_unused())
{
	PG_RETURN_TEXT_P(cstring_to_text(LN_EXTENSION_VERSION));
}
