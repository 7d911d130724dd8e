/*
 * catalog_versions.c
 *		The catalog's table versions (lance_catalog.version): inserting a
 *		batch of them under their tables' key locks, and listing, reading
 *		and deleting a branch's versions.
 *
 * Versions are the hot write path (every Lance commit inserts one, and a
 * batch inserts many in one statement), with statements and a row layout
 * (VERSION_COLUMNS) of their own; the statements sit next to the C that
 * binds their parameters, and catalog.c runs them with saved plans.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog.h"
#include "catalog_internal.h"

#define VERSION_COLUMNS                                                                            \
	"version, manifest_path, manifest_size, e_tag, "                                               \
	"(extract(epoch FROM created_at) * 1000)::bigint, "                                            \
	"ARRAY(SELECT ARRAY[key, value] FROM pg_catalog.jsonb_each_text(metadata))"

/* This file's statements, by their numbers (catalog_internal.h). */
static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	[STMT_INSERT_VERSIONS] =
		{/*
		  * One statement for a whole batch, inserting in the given order; a
		  * key that exists is skipped and missing from RETURNING.  Metadata
		  * comes as (entry, key, value) triples.
		  */
		 "INSERT INTO lance_catalog.version"
		 "       (table_id, branch, version, manifest_path, manifest_size, e_tag, naming_scheme,"
		 "        metadata)"
		 " SELECT e.table_id, e.branch, e.version, e.manifest_path, e.manifest_size, e.e_tag,"
		 "        e.naming_scheme,"
		 "        coalesce((SELECT pg_catalog.jsonb_object_agg(m.key, m.value)"
		 "                    FROM ROWS FROM (pg_catalog.unnest($8::int8[]),"
		 "                                    pg_catalog.unnest($9::text[]),"
		 "                                    pg_catalog.unnest($10::text[]))"
		 "                         AS m(entry, key, value)"
		 "                   WHERE m.entry = e.ord), '{}')"
		 "   FROM ROWS FROM (pg_catalog.unnest($1::int8[]), pg_catalog.unnest($2::text[]),"
		 "                   pg_catalog.unnest($3::int8[]), pg_catalog.unnest($4::text[]),"
		 "                   pg_catalog.unnest($5::int8[]), pg_catalog.unnest($6::text[]),"
		 "                   pg_catalog.unnest($7::text[])) WITH ORDINALITY"
		 "        AS e(table_id, branch, version, manifest_path, manifest_size, e_tag,"
		 "             naming_scheme, ord)"
		 "   JOIN lance_catalog.object o ON o.id = e.table_id"
		 "  ORDER BY e.ord"
		 "    FOR KEY SHARE OF o"
		 " ON CONFLICT DO NOTHING"
		 " RETURNING table_id, branch, version, (extract(epoch FROM created_at) * 1000)::bigint",
		 10,
		 {INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID,
		  TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID}},
	[STMT_MARK_TABLES_WITH_DATA] =
		{"UPDATE lance_catalog.object SET declared = false WHERE id = ANY($1) AND declared",
		 1,
		 {INT8ARRAYOID}},
	[STMT_LIST_VERSIONS] = {"SELECT " VERSION_COLUMNS " FROM lance_catalog.version"
							" WHERE table_id = $1 AND branch = $2 AND version > $3"
							" ORDER BY version LIMIT $4",
							4,
							{INT8OID, TEXTOID, INT8OID, INT4OID}},
	[STMT_LIST_VERSIONS_DESCENDING] = {"SELECT " VERSION_COLUMNS " FROM lance_catalog.version"
									   " WHERE table_id = $1 AND branch = $2 AND version < $3"
									   " ORDER BY version DESC LIMIT $4",
									   4,
									   {INT8OID, TEXTOID, INT8OID, INT4OID}},
	[STMT_LIST_LATEST_VERSIONS] = {"SELECT " VERSION_COLUMNS " FROM lance_catalog.version"
								   " WHERE table_id = $1 AND branch = $2"
								   " ORDER BY version DESC LIMIT $3",
								   3,
								   {INT8OID, TEXTOID, INT4OID}},
	[STMT_GET_VERSION] = {"SELECT " VERSION_COLUMNS " FROM lance_catalog.version"
						  " WHERE table_id = $1 AND branch = $2 AND version = $3",
						  3,
						  {INT8OID, TEXTOID, INT8OID}},
	[STMT_DELETE_VERSIONS] =
		{"DELETE FROM lance_catalog.version"
		 " WHERE table_id = $1 AND branch = $2 AND version >= $3 AND version <= $4",
		 4,
		 {INT8OID, TEXTOID, INT8OID, INT8OID}},
	/* one version: its table found by key and locked, as in STMT_INSERT_VERSIONS */
	[STMT_INSERT_VERSION] =
		{"INSERT INTO lance_catalog.version"
		 "       (table_id, branch, version, manifest_path, manifest_size, e_tag,"
		 "        naming_scheme, metadata)"
		 " SELECT o.id, $2, $3, $4, $5, $6, $7, pg_catalog.jsonb_object($8, $9)"
		 "   FROM lance_catalog.object o WHERE o.id = $1"
		 "    FOR KEY SHARE"
		 " ON CONFLICT DO NOTHING"
		 " RETURNING table_id, branch, version,"
		 "           (extract(epoch FROM created_at) * 1000)::bigint",
		 9,
		 {INT8OID, TEXTOID, INT8OID, TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTARRAYOID,
		  TEXTARRAYOID}},
	[STMT_TABLES_EXIST] = {"SELECT o.id FROM lance_catalog.object o"
						   " WHERE o.id = ANY ($1) AND o.kind = 'table'",
						   1,
						   {INT8ARRAYOID}},
};

/* Run one of the statements above; catalog.c prepares and keeps its plan. */
static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	return catalog_execute(stmt, &statement_defs[stmt], values, nulls, limit);
}

/*
 * Insert the versions in `rows`, in that order, in one statement.  A version
 * whose key exists already, in the catalog or earlier in `rows`, is not
 * inserted: inserted[i] tells, and each inserted row's timestamp_millis is
 * set.  The primary key decides, so that of two writers of one version
 * exactly one inserts it; the other waits for the first to finish.
 *
 * The statement finds each version's table by key and locks it FOR KEY
 * SHARE, in the order of `rows`, before inserting: a table being deleted
 * (deregistered, dropped) is waited for, and a version of a table deleted
 * meanwhile is not inserted either (catalog_tables_exist() then tells the
 * two apart), rather than failing on the foreign key.  A rename changes no
 * table's key, so a version follows its table through one.
 */
void
catalog_insert_versions(int n, CatalogVersionInsert *rows, bool *inserted)
{
	Datum values[10];
	int64 *table_ids = palloc(sizeof(int64) * (n + 1));
	char **branches = palloc(sizeof(char *) * (n + 1));
	int64 *versions = palloc(sizeof(int64) * (n + 1));
	char **paths = palloc(sizeof(char *) * (n + 1));
	int64 *sizes = palloc(sizeof(int64) * (n + 1));
	bool *has_size = palloc(sizeof(bool) * (n + 1));
	char **e_tags = palloc(sizeof(char *) * (n + 1));
	char **schemes = palloc(sizeof(char *) * (n + 1));
	int npairs = 0;
	int64 *pair_entry;
	char **pair_keys;
	char **pair_values;
	uint64 row = 0;
	bool isnull;

	for (int i = 0; i < n; i++)
		npairs += rows[i].version.metadata.len;
	pair_entry = palloc(sizeof(int64) * (npairs + 1));
	pair_keys = palloc(sizeof(char *) * (npairs + 1));
	pair_values = palloc(sizeof(char *) * (npairs + 1));

	npairs = 0;
	for (int i = 0; i < n; i++)
	{
		const LnTableVersion *v = &rows[i].version;

		table_ids[i] = rows[i].table_id;
		branches[i] = rows[i].branch;
		versions[i] = v->version;
		paths[i] = v->manifest_path;
		sizes[i] = v->manifest_size;
		has_size[i] = v->has_manifest_size;
		e_tags[i] = v->e_tag;
		schemes[i] = rows[i].naming_scheme;
		for (int k = 0; k < v->metadata.len; k++)
		{
			pair_entry[npairs] = i + 1;
			pair_keys[npairs] = v->metadata.keys[k];
			pair_values[npairs] = v->metadata.values[k];
			npairs++;
		}
	}
	if (n == 1)
	{
		/* one version (CreateTableVersion): a plain VALUES insert, no arrays to unnest */
		const LnTableVersion *v = &rows[0].version;
		char nulls[9];

		memset(nulls, ' ', sizeof(nulls));
		values[0] = Int64GetDatum(rows[0].table_id);
		values[1] = CStringGetTextDatum(rows[0].branch);
		values[2] = Int64GetDatum(v->version);
		values[3] = CStringGetTextDatum(v->manifest_path);
		values[4] = Int64GetDatum(v->manifest_size);
		nulls[4] = v->has_manifest_size ? ' ' : 'n';
		values[5] = catalog_text_datum_or_null(v->e_tag, &nulls[5]);
		values[6] = catalog_text_datum_or_null(rows[0].naming_scheme, &nulls[6]);
		values[7] = catalog_text_array_datum(v->metadata.keys, v->metadata.len);
		values[8] = catalog_text_array_datum(v->metadata.values, v->metadata.len);
		execute(STMT_INSERT_VERSION, values, nulls, 0);
	}
	else
	{
		values[0] = catalog_int8_array_datum(table_ids, NULL, n);
		values[1] = catalog_nullable_text_array_datum(branches, n);
		values[2] = catalog_int8_array_datum(versions, NULL, n);
		values[3] = catalog_nullable_text_array_datum(paths, n);
		values[4] = catalog_int8_array_datum(sizes, has_size, n);
		values[5] = catalog_nullable_text_array_datum(e_tags, n);
		values[6] = catalog_nullable_text_array_datum(schemes, n);
		values[7] = catalog_int8_array_datum(pair_entry, NULL, npairs);
		values[8] = catalog_nullable_text_array_datum(pair_keys, npairs);
		values[9] = catalog_nullable_text_array_datum(pair_values, npairs);
		execute(STMT_INSERT_VERSIONS, values, NULL, 0);
	}

	/* RETURNING keeps the insert order, so the rows line up with `rows`, gaps aside */
	for (int i = 0; i < n; i++)
	{
		inserted[i] = false;
		if (row < SPI_processed &&
			DatumGetInt64(catalog_result_datum(row, 1, &isnull)) == rows[i].table_id &&
			DatumGetInt64(catalog_result_datum(row, 3, &isnull)) == rows[i].version.version)
		{
			char *branch = TextDatumGetCString(catalog_result_datum(row, 2, &isnull));

			if (strcmp(branch, rows[i].branch) == 0)
			{
				inserted[i] = true;
				rows[i].version.timestamp_millis =
					DatumGetInt64(catalog_result_datum(row, 4, &isnull));
				row++;
			}
		}
	}
}

/*
 * Which of the tables table_ids[] exist: exists[i].  Asked only after an
 * insert of versions left some out, in a new snapshot that sees any
 * deletion the insert waited for.
 */
void
catalog_tables_exist(int n, const int64 *table_ids, bool *exists)
{
	Datum values[1] = {catalog_int8_array_datum(table_ids, NULL, n)};
	bool isnull;

	execute(STMT_TABLES_EXIST, values, NULL, 0);
	for (int i = 0; i < n; i++)
	{
		exists[i] = false;
		for (uint64 row = 0; row < SPI_processed && !exists[i]; row++)
			exists[i] = DatumGetInt64(catalog_result_datum(row, 1, &isnull)) == table_ids[i];
	}
}

/* Tables that were only declared have data once they have a version. */
void
catalog_mark_tables_with_data(int n, const int64 *table_ids)
{
	Datum values[1] = {catalog_int8_array_datum(table_ids, NULL, n)};

	execute(STMT_MARK_TABLES_WITH_DATA, values, NULL, 0);
}

/* The VERSION_COLUMNS of result row `row`, from column `first` on. */
static void
result_version_at(uint64 row, int first, LnTableVersion *v)
{
	bool isnull;

	v->version = DatumGetInt64(catalog_result_datum(row, first, &isnull));
	v->manifest_path = catalog_result_text(row, first + 1);
	v->manifest_size = DatumGetInt64(catalog_result_datum(row, first + 2, &isnull));
	v->has_manifest_size = !isnull;
	v->e_tag = catalog_result_text(row, first + 3);
	v->timestamp_millis = DatumGetInt64(catalog_result_datum(row, first + 4, &isnull));
	v->metadata = catalog_result_map(row, first + 5);
}

static void
result_version(uint64 row, LnTableVersion *v)
{
	result_version_at(row, 1, v);
}

/*
 * Versions of a table's branch after `after` (before it, descending), at
 * most `limit`; `after` -1 starts at the first (descending: the latest).
 * The primary key index answers it, reading only the rows returned: the
 * latest version costs one row.
 */
int
catalog_list_versions(int64 table_id, const char *branch, bool descending, int64 after, int limit,
					  LnTableVersion **versions)
{
	Datum values[4] = {Int64GetDatum(table_id), CStringGetTextDatum(branch), Int64GetDatum(after),
					   Int32GetDatum(limit)};
	int n;

	if (descending && after < 0)
	{
		/* the latest first: no bound, so that no version, however high, is left out */
		values[2] = values[3];
		execute(STMT_LIST_LATEST_VERSIONS, values, NULL, 0);
	}
	else
		execute(descending ? STMT_LIST_VERSIONS_DESCENDING : STMT_LIST_VERSIONS, values, NULL, 0);
	n = (int)SPI_processed;
	*versions = MemoryContextAllocZero(catalog_result_cxt, sizeof(LnTableVersion) * (n + 1));
	for (int i = 0; i < n; i++)
		result_version(i, &(*versions)[i]);
	return n;
}

bool
catalog_get_version(int64 table_id, const char *branch, int64 version, LnTableVersion *out)
{
	Datum values[3] = {Int64GetDatum(table_id), CStringGetTextDatum(branch),
					   Int64GetDatum(version)};

	execute(STMT_GET_VERSION, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	result_version(0, out);
	return true;
}

/* Delete a branch's versions from `first` to `last`, both included; returns how many. */
int64
catalog_delete_versions(int64 table_id, const char *branch, int64 first, int64 last)
{
	Datum values[4] = {Int64GetDatum(table_id), CStringGetTextDatum(branch), Int64GetDatum(first),
					   Int64GetDatum(last)};

	execute(STMT_DELETE_VERSIONS, values, NULL, 0);
	return (int64)SPI_processed;
}
