/*
 * catalog_storage.c
 *		Storage settings in the catalog (lance_catalog.storage): the options
 *		kept per folder, which an administrator sets, removes and lists and
 *		the storage layer finds for a table's location.
 *
 * A look-up reads the settings by index, once per catalog session
 * (catalog_index.c), so a change of a setting makes that session forget
 * them.  The check that no two tables at or below a folder share folders
 * sits here too: setting storage for a folder is what asks it
 * (sql/storage_settings.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "catalog.h"
#include "catalog_index.h"
#include "catalog_internal.h"

/* This file's statements, by their numbers (catalog_internal.h). */
static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	[STMT_SET_STORAGE] =
		{"INSERT INTO lance_catalog.storage (location, options, set_by, vend)"
		 " VALUES ($1, pg_catalog.jsonb_object($2, $3), $4::pg_catalog.regrole, $5)"
		 " ON CONFLICT (location) DO UPDATE"
		 "   SET options = excluded.options, set_by = excluded.set_by, set_at = pg_catalog.now(),"
		 "       vend = excluded.vend",
		 5,
		 {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, OIDOID, JSONBOID}},
	[STMT_REMOVE_STORAGE] = {"DELETE FROM lance_catalog.storage WHERE location = $1 RETURNING 1",
							 1,
							 {TEXTOID}},
	[STMT_LIST_STORAGE] = {"SELECT s.location, o.key, o.value, s.vend::pg_catalog.text"
						   "  FROM lance_catalog.storage s"
						   "  LEFT JOIN LATERAL pg_catalog.jsonb_each_text(s.options) o ON true"
						   " ORDER BY s.location, o.key COLLATE \"C\"",
						   0,
						   {InvalidOid}},
	/* two tables at or below folder key $1 whose folders are one, or one inside the other */
	[STMT_FOLDERS_SHARED_BELOW] =
		{"WITH below AS ("
		 "  SELECT id, location, lance_catalog.local_path(location) COLLATE \"C\" AS folder"
		 "    FROM lance_catalog.object"
		 "   WHERE kind = 'table'"
		 "     AND (lance_catalog.local_path(location) COLLATE \"C\" = $1"
		 "          OR (lance_catalog.local_path(location) COLLATE \"C\" >= $1 || '/'"
		 "              AND lance_catalog.local_path(location) COLLATE \"C\" < $1 || '0')))"
		 "SELECT a.location, b.location FROM below a JOIN below b ON a.id < b.id"
		 " WHERE a.folder = b.folder OR pg_catalog.starts_with(b.folder, a.folder || '/')"
		 "    OR pg_catalog.starts_with(a.folder, b.folder || '/')"
		 " LIMIT 1",
		 1,
		 {TEXTOID}},
	/* the longest prefix of folder key $1 that has a setting, with its options */
};

/* Run one of the statements above; catalog.c prepares and keeps its plan. */
static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	return catalog_execute(stmt, &statement_defs[stmt], values, nulls, limit);
}

/*
 * Keep the storage setting of `location` (a folder key), replacing one there
 * was; `vend` is how its tables' callers are handed credentials.
 */
void
catalog_set_storage(const char *location, const LnMap *options, Jsonb *vend, Oid set_by)
{
	Datum values[5] = {CStringGetTextDatum(location),
					   catalog_text_array_datum(options->keys, options->len),
					   catalog_text_array_datum(options->values, options->len),
					   ObjectIdGetDatum(set_by), JsonbPGetDatum(vend)};

	execute(STMT_SET_STORAGE, values, NULL, 0);
	catalog_index_forget_storage();
}

/* Forget the storage setting of `location`; false if there was none. */
bool
catalog_remove_storage(const char *location)
{
	Datum values[1] = {CStringGetTextDatum(location)};

	execute(STMT_REMOVE_STORAGE, values, NULL, 0);
	catalog_index_forget_storage();
	return SPI_processed > 0;
}

/*
 * Gather rows (location, key, value, vend) of one location or many into
 * settings; a setting's vend as its JSON text.
 */
static int
gather_settings(char ***locations, LnMap **options, char ***vends)
{
	int n = 0;

	*locations = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (SPI_processed + 1));
	*vends = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (SPI_processed + 1));
	*options = MemoryContextAllocZero(catalog_result_cxt, sizeof(LnMap) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char *location = catalog_result_text(i, 1);
		char *key = catalog_result_text(i, 2);
		LnMap *map;

		if (n == 0 || strcmp((*locations)[n - 1], location) != 0)
		{
			(*locations)[n] = location;
			(*vends)[n] = catalog_result_text(i, 4);
			(*options)[n].keys =
				MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (SPI_processed + 1));
			(*options)[n].values =
				MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (SPI_processed + 1));
			n++;
		}
		if (key == NULL)
			continue; /* a setting without options */
		map = &(*options)[n - 1];
		map->keys[map->len] = key;
		map->values[map->len++] = catalog_result_text(i, 3);
	}
	return n;
}

/*
 * Every storage setting, by location, with its options and its vend (JSON
 * text), secrets included.
 */
int
catalog_list_storage(char ***locations, LnMap **options, char ***vends)
{
	execute(STMT_LIST_STORAGE, NULL, NULL, 0);
	return gather_settings(locations, options, vends);
}

/*
 * The storage setting that covers folder key `folder` (location_folder_key):
 * the longest prefix that has one, its options and its vend members.  False
 * if none does.
 */
bool
catalog_find_storage(const char *folder, char **prefix, LnMap *options, LnMap *vend)
{
	catalog_check_schema_version();
	return catalog_index_find_storage(folder, prefix, options, vend, catalog_result_cxt);
}

/*
 * Two tables at or below folder key `folder` whose folders are one, or one
 * inside the other: their locations in *a and *b; false if there are none.
 */
bool
catalog_folders_shared_below(const char *folder, char **a, char **b)
{
	Datum values[1] = {CStringGetTextDatum(folder)};

	execute(STMT_FOLDERS_SHARED_BELOW, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	*a = catalog_result_text(0, 1);
	*b = catalog_result_text(0, 2);
	return true;
}
