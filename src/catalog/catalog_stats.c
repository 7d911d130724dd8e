/*
 * catalog_stats.c
 *		The catalog's side of lance_stats(): how much it holds, what waits
 *		in its queues and who holds its change feed back, in one statement.
 *
 * Counts stay cheap on a large catalog: a table (or, for tables, the
 * partial index that holds one entry per table) that the statistics say
 * holds fewer than COUNT_EXACTLY_BELOW rows is counted exactly, a larger
 * one is estimated as the planner does (pg_class.reltuples scaled to the
 * relation's current size) and named in "estimated".  The queues are
 * counted through their partial indexes (queued and failed drops), and
 * the change feed's holder by one pass over the lock table
 * (lance_catalog.change_holder from 1 to the last entry).  Branches are
 * counted exactly only while the version table is small (a distinct count
 * scans it) and tags not at all: they live with each table's data.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "../common/error.h"
#include "catalog.h"
#include "catalog_internal.h"

#define COUNT_EXACTLY_BELOW "100000"

/* a count: exact while `estimate` (the statistics' rows) is small or unknown */
#define COUNTED(estimate, exact)                                                                   \
	"CASE WHEN " estimate " IS NULL OR " estimate " < " COUNT_EXACTLY_BELOW " THEN (" exact        \
	") ELSE " estimate " END"
#define ESTIMATED(name, estimate)                                                                  \
	"CASE WHEN " estimate " >= " COUNT_EXACTLY_BELOW " THEN '" name "' END"

static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	[STMT_STATS] = {"WITH e AS ("
					"  SELECT lance_catalog.estimated_rows('lance_catalog.object') AS objects,"
					"         lance_catalog.estimated_rows('lance_catalog.object_table_id_idx') AS "
					"tables,"
					"         lance_catalog.estimated_rows('lance_catalog.version') AS versions,"
					"         lance_catalog.estimated_rows('lance_catalog.grant') AS grants,"
					"         lance_catalog.estimated_rows('lance_catalog.change') AS changes),"
					" last AS (SELECT pg_catalog.max(c.seq) AS seq FROM lance_catalog.change c),"
					" holder AS (SELECT h.* FROM last,"
					"            lance_catalog.change_holder(1, COALESCE(last.seq, 0)) h),"
					" queued AS (SELECT pg_catalog.count(*) AS n, pg_catalog.min(c.made_at) AS "
					"oldest"
					"              FROM lance_catalog.change c WHERE c.status "
					"OPERATOR(pg_catalog.=) 'Queued'),"
					" settings AS ("
					"  SELECT s.location, pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
					"           'code', x.code, 'count', x.count, 'last_at', x.last_at)"
					"           ORDER BY x.code) FILTER (WHERE x.code IS NOT NULL) AS errors"
					"    FROM lance_catalog.storage s"
					"    LEFT JOIN pg_catalog.jsonb_to_recordset($2) AS x(bucket text, code text, "
					"count bigint,"
					"                                                    last_at timestamptz)"
					"      ON pg_catalog.split_part(pg_catalog.substr(s.location, 6), '/', 1)"
					"         OPERATOR(pg_catalog.=) x.bucket"
					"   GROUP BY s.location)"
					" SELECT pg_catalog.jsonb_build_object("
					"  'counts', pg_catalog.jsonb_build_object("
					"    'namespaces', " COUNTED("(e.objects - e.tables)",
												 "SELECT pg_catalog.count(*) FROM "
												 "lance_catalog.object o"
												 " WHERE o.kind OPERATOR(pg_catalog.=) 'namespace' "
												 "AND o.id OPERATOR(pg_catalog.<>) 0") ","
																					   "    "
																					   "'tables',"
																					   " " COUNTED("e.tables", "SELECT pg_catalog.count(*) FROM lance_catalog.object o"
																											   " WHERE o.kind OPERATOR(pg_catalog.=) 'table'") ","
																																							   "    'versions', " COUNTED("e.versions",
																																														  "SELECT pg_catalog.count(*) FROM lance_catalog.version v") ","
																																																													 "    'branches', CASE WHEN e.versions IS NULL OR e.versions < " COUNT_EXACTLY_BELOW
																																																													 "      THEN (SELECT pg_catalog.count(*) FROM (SELECT DISTINCT v.table_id, v.branch"
																																																													 "             FROM lance_catalog.version v WHERE v.branch OPERATOR(pg_catalog.<>) '') b) END,"
																																																													 "    'tags', NULL,"
																																																													 "    'api_keys', (SELECT pg_catalog.count(*) FROM lance_catalog.api_key),"
																																																													 "    'grants', " COUNTED("e.grants", "SELECT pg_catalog.count(*) FROM lance_catalog.grant") ","
																																																																																				 "    'storage_settings', (SELECT pg_catalog.count(*) FROM lance_catalog.storage),"
																																																																																				 "    'changes', " COUNTED("e.changes",
																																																																																										   "SELECT pg_catalog.count(*) FROM lance_catalog.change") "),"
																																																																																																								   "  'estimated', pg_catalog.to_jsonb(pg_catalog.array_remove(ARRAY[" ESTIMATED("namespaces", "e.objects") ", " ESTIMATED("tables",
																																																																																																																																						   "e.tables") ", " ESTIMATED("versions",
																																																																																																																																													  "e.versions") ", " ESTIMATED("grants", "e.grants") ", " ESTIMATED("changes",
																																																																																																																																																														"e.changes") "]::text[], NULL)),"
																																																																																																																																																																	 "  'not_counted', pg_catalog.to_jsonb(pg_catalog.array_remove(ARRAY["
																																																																																																																																																																	 "    CASE WHEN e.versions >= " COUNT_EXACTLY_BELOW
																																																																																																																																																																	 " THEN 'branches' END, 'tags'], NULL)),"
																																																																																																																																																																	 "  'drop_queue', pg_catalog.jsonb_build_object("
																																																																																																																																																																	 "    'queued', queued.n,"
																																																																																																																																																																	 "    'failed', (SELECT pg_catalog.count(*) FROM lance_catalog.change c WHERE c.drop_failed"
																																																																																																																																																																	 "                  AND c.status OPERATOR(pg_catalog.=) 'Failed'),"
																																																																																																																																																																	 "    'oldest_queued_at', queued.oldest,"
																																																																																																																																																																	 "    'oldest_queued_seconds', pg_catalog.floor(pg_catalog.date_part('epoch',"
																																																																																																																																																																	 "                               pg_catalog.now() OPERATOR(pg_catalog.-) queued.oldest))),"
																																																																																																																																																																	 "  'undo_queue', (SELECT pg_catalog.jsonb_build_object("
																																																																																																																																																																	 "    'steps', pg_catalog.count(*),"
																																																																																																																																																																	 "    'due', pg_catalog.count(*) FILTER (WHERE u.next_attempt OPERATOR(pg_catalog.<=) pg_catalog.now()),"
																																																																																																																																																																	 "    'oldest_taken_at', pg_catalog.min(u.taken_at),"
																																																																																																																																																																	 "    'most_attempts', pg_catalog.max(u.attempts))"
																																																																																																																																																																	 "    FROM lance_catalog.storage_undo u),"
																																																																																																																																																																	 "  'change_feed', pg_catalog.jsonb_build_object("
																																																																																																																																																																	 "    'last_seq', last.seq,"
																																																																																																																																																																	 "    'held_back', CASE WHEN holder.seq IS NOT NULL THEN pg_catalog.jsonb_build_object("
																																																																																																																																																																	 "      'at_seq', holder.seq, 'pid', holder.pid, 'since', holder.since,"
																																																																																																																																																																	 "      'seconds', pg_catalog.floor(pg_catalog.date_part('epoch',"
																																																																																																																																																																	 "                   pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) holder.since))) END),"
																																																																																																																																																																	 "  'worker', pg_catalog.jsonb_build_object("
																																																																																																																																																																	 "    'preloaded', $3, 'interval_seconds', $4,"
																																																																																																																																																																	 "    'rounds', (SELECT COALESCE(pg_catalog.jsonb_agg("
																																																																																																																																																																	 "        pg_catalog.jsonb_build_object('database', d.datname) OPERATOR(pg_catalog.||) r.round"
																																																																																																																																																																	 "        ORDER BY d.datname), '[]')"
																																																																																																																																																																	 "      FROM pg_catalog.jsonb_array_elements($1) AS r(round)"
																																																																																																																																																																	 "      JOIN pg_catalog.pg_database d"
																																																																																																																																																																	 "        ON d.oid OPERATOR(pg_catalog.=) (r.round OPERATOR(pg_catalog.->>) 'database_oid')::pg_catalog.oid)),"
																																																																																																																																																																	 "  'storage', (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
																																																																																																																																																																	 "      'location', settings.location, 'errors', COALESCE(settings.errors, '[]'))"
																																																																																																																																																																	 "      ORDER BY settings.location), '[]') FROM settings))"
																																																																																																																																																																	 " FROM e, last, holder, queued",
					4,
					{JSONBOID, JSONBOID, BOOLOID, INT4OID}},
};

/*
 * {"tables_around_roots": [...]}: the tables at or above a folder where the
 * catalog places tables (catalog_placement_roots), at most
 * TABLES_AROUND_ROOTS_SHOWN, for an administrator to move.  Such a table
 * holds every table placed there (a non-administrator can no longer make
 * one; the conflict check of a derived folder passes over it).
 */
#define TABLES_AROUND_ROOTS_SHOWN 100

static Datum
tables_around_roots(void)
{
	char **roots;
	int nroots = catalog_placement_roots(&roots);
	char *tables = catalog_tables_around_folders((const char *const *)roots, nroots,
												 TABLES_AROUND_ROOTS_SHOWN);

	return DirectFunctionCall1(jsonb_in,
							   CStringGetDatum(psprintf("{\"tables_around_roots\": %s}", tables)));
}

/*
 * The statistics as jsonb text, given the worker's rounds (a JSON array of
 * objects with "database_oid") and the store errors (an array of objects
 * with bucket, code, count, last_at) that shared memory holds.
 */
char *
catalog_stats(const char *rounds_json, const char *store_errors_json, bool preloaded,
			  int interval_seconds)
{
	Datum values[4];
	bool isnull;
	/* before the statement below: its result lives until the next one */
	Datum around = tables_around_roots();
	Datum result;

	values[0] = DirectFunctionCall1(jsonb_in, CStringGetDatum(rounds_json));
	values[1] = DirectFunctionCall1(jsonb_in, CStringGetDatum(store_errors_json));
	values[2] = BoolGetDatum(preloaded);
	values[3] = Int32GetDatum(interval_seconds);
	catalog_execute(STMT_STATS, &statement_defs[STMT_STATS], values, NULL, 1);
	if (SPI_processed != 1)
		ln_error(LN_INTERNAL, "the catalog's statistics answered no row");
	result = catalog_result_datum(0, 1, &isnull);
	result = DirectFunctionCall2(jsonb_concat, result, around);
	return DatumGetCString(DirectFunctionCall1(jsonb_out, result));
}
