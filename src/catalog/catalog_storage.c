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

#include "../storage/location.h"
#include "../storage/storage.h"
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
		 "              AND lance_catalog.local_path(location) COLLATE \"C\" < $1 || '0'))),"
		 " pair AS ("
		 "  SELECT a.id AS a_id, a.location AS a_location, b.id AS b_id, b.location AS b_location"
		 "    FROM below a JOIN below b ON a.id < b.id"
		 "   WHERE a.folder = b.folder OR pg_catalog.starts_with(b.folder, a.folder || '/')"
		 "      OR pg_catalog.starts_with(a.folder, b.folder || '/')"
		 "   LIMIT 1)"
		 "SELECT pair.a_location, pair.b_location,"
		 "       (SELECT pg_catalog.array_to_string(" OBJECT_PATH ", '$')"
		 "          FROM lance_catalog.object p WHERE p.id = pair.a_id),"
		 "       (SELECT pg_catalog.array_to_string(" OBJECT_PATH ", '$')"
		 "          FROM lance_catalog.object p WHERE p.id = pair.b_id)"
		 "  FROM pair",
		 1,
		 {TEXTOID}},
	/* a setting strictly below folder key $1 */
	[STMT_STORAGE_BELOW] = {"SELECT location FROM lance_catalog.storage"
							" WHERE location >= $1 || '/' AND location < $1 || '0'"
							" ORDER BY location LIMIT 1",
							1,
							{TEXTOID}},
	/*
	 * The first $2 tables, by id, at or below folder key $1 that no setting
	 * below $1 covers: a new setting at $1 would cover them.
	 */
	[STMT_TABLES_COMING_UNDER] =
		{"SELECT pg_catalog.array_to_string(" OBJECT_PATH ", '$') FROM ("
		 "  SELECT t.id, t.parent_id, t.name FROM lance_catalog.object t"
		 "   WHERE t.kind = 'table'"
		 "     AND (lance_catalog.local_path(t.location) COLLATE \"C\" = $1"
		 "          OR (lance_catalog.local_path(t.location) COLLATE \"C\" >= $1 || '/'"
		 "              AND lance_catalog.local_path(t.location) COLLATE \"C\" < $1 || '0'))"
		 "     AND NOT EXISTS ("
		 "       SELECT FROM lance_catalog.storage s"
		 "        WHERE s.location >= $1 || '/' AND s.location < $1 || '0'"
		 "          AND (lance_catalog.local_path(t.location) COLLATE \"C\" = s.location"
		 "               OR pg_catalog.starts_with(lance_catalog.local_path(t.location),"
		 "                                         s.location || '/')))"
		 "   ORDER BY t.id LIMIT $2) p"
		 " ORDER BY p.id",
		 2,
		 {TEXTOID, INT4OID}},
	/* the first $2 namespaces, by id, whose "location" is at, below or above folder key $1 */
	[STMT_NAMESPACES_LOCATED_NEAR] =
		{"SELECT pg_catalog.array_to_string(" OBJECT_PATH ", '$') FROM ("
		 "  SELECT n.id, n.parent_id, n.name FROM ("
		 "    SELECT id, parent_id, name,"
		 "           lance_catalog.local_path(properties ->> 'location') COLLATE \"C\" AS folder"
		 "      FROM lance_catalog.object WHERE kind = 'namespace') n"
		 "   WHERE n.folder = $1 OR pg_catalog.starts_with(n.folder, $1 || '/')"
		 "      OR pg_catalog.starts_with($1, n.folder || '/')"
		 "   ORDER BY n.id LIMIT $2) p"
		 " ORDER BY p.id",
		 2,
		 {TEXTOID, INT4OID}},
	/* a namespace whose "location" is at or below folder key $1 (object_namespace_location_idx) */
	[STMT_NAMESPACE_LOCATED_WITHIN] =
		{"SELECT EXISTS (SELECT FROM lance_catalog.object"
		 "  WHERE kind = 'namespace'"
		 "    AND (lance_catalog.local_path(properties ->> 'location') COLLATE \"C\" = $1"
		 "         OR (lance_catalog.local_path(properties ->> 'location') COLLATE \"C\" >= $1 || "
		 "'/'"
		 "             AND lance_catalog.local_path(properties ->> 'location') COLLATE \"C\" < $1 "
		 "|| "
		 "'0')))",
		 1,
		 {TEXTOID}},
	/* every setting's prefix, no options */
	[STMT_LIST_STORAGE_LOCATIONS] = {"SELECT location FROM lance_catalog.storage", 0, {InvalidOid}},
	/*
	 * The first $2 tables, by id, whose folder is one of the folder keys $1
	 * (by the index on local_path), with their locations, as the text of a
	 * JSON array
	 */
	[STMT_TABLES_AROUND_FOLDERS] =
		{"SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
		 "         'id', pg_catalog.to_jsonb(" OBJECT_PATH "), 'location', p.location)"
		 "         ORDER BY p.id), '[]')::pg_catalog.text"
		 "  FROM (SELECT t.id, t.parent_id, t.name, t.location FROM lance_catalog.object t"
		 "         WHERE lance_catalog.local_path(t.location) COLLATE \"C\" = ANY ($1)"
		 "           AND t.kind = 'table'"
		 "         ORDER BY t.id LIMIT $2) p",
		 2,
		 {TEXTARRAYOID, INT4OID}},
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
 * inside the other: their locations in *a and *b, their ids (joined by '$')
 * in *a_id and *b_id; false if there are none.
 */
bool
catalog_folders_shared_below(const char *folder, char **a, char **b, char **a_id, char **b_id)
{
	Datum values[1] = {CStringGetTextDatum(folder)};

	execute(STMT_FOLDERS_SHARED_BELOW, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	*a = catalog_result_text(0, 1);
	*b = catalog_result_text(0, 2);
	*a_id = catalog_result_text(0, 3);
	*b_id = catalog_result_text(0, 4);
	return true;
}

/* A setting strictly below folder key `folder`: its prefix, or NULL. */
char *
catalog_storage_below(const char *folder)
{
	Datum values[1] = {CStringGetTextDatum(folder)};

	execute(STMT_STORAGE_BELOW, values, NULL, 1);
	return SPI_processed > 0 ? catalog_result_text(0, 1) : NULL;
}

/* The ids (joined by '$') statement `stmt` answers for folder key `folder`, at most `limit`. */
static int
object_ids_near(CatalogStatement stmt, const char *folder, int limit, char ***ids)
{
	Datum values[2] = {CStringGetTextDatum(folder), Int32GetDatum(limit)};
	int n;

	execute(stmt, values, NULL, 0);
	n = (int)SPI_processed;
	*ids = MemoryContextAlloc(catalog_result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
		(*ids)[i] = catalog_result_text(i, 1);
	return n;
}

/*
 * The tables a new setting at folder key `folder` would cover: those at or
 * below it that no setting below it covers, at most `limit`, as ids joined by
 * '$', in the order they were made.
 */
int
catalog_tables_coming_under(const char *folder, int limit, char ***ids)
{
	return object_ids_near(STMT_TABLES_COMING_UNDER, folder, limit, ids);
}

/*
 * The folders where the catalog places tables, as folder keys: the folder
 * of lance_namespace.root, the local roots and every storage setting's
 * prefix.  A table at or above one of them holds every table placed there.
 */
int
catalog_placement_roots(char ***roots)
{
	char **local;
	int nlocal = storage_local_root_list(&local);
	char **settings;
	int nsettings;
	const char *root = location_root();
	char *root_folder = root ? location_folder_key(root) : NULL;
	int n = 0;

	/* the prefixes alone: their options hold secrets */
	execute(STMT_LIST_STORAGE_LOCATIONS, NULL, NULL, 0);
	nsettings = (int)SPI_processed;
	settings = palloc(sizeof(char *) * (nsettings + 1));
	for (int i = 0; i < nsettings; i++)
		settings[i] = catalog_result_text(i, 1);
	*roots = palloc(sizeof(char *) * (nlocal + nsettings + 1));
	if (root_folder != NULL)
		(*roots)[n++] = root_folder;
	for (int i = 0; i < nlocal; i++)
		(*roots)[n++] = local[i];
	for (int i = 0; i < nsettings; i++)
		(*roots)[n++] = settings[i];
	return n;
}

/* True if a namespace's "location" property is at or below folder key `folder`. */
bool
catalog_namespace_located_within(const char *folder)
{
	Datum values[1] = {CStringGetTextDatum(folder)};
	bool isnull;

	execute(STMT_NAMESPACE_LOCATED_WITHIN, values, NULL, 1);
	return DatumGetBool(catalog_result_datum(0, 1, &isnull));
}

/*
 * The tables at or above any of the `n` folder keys `folders`, at most
 * `limit`, as a JSON array of {"id": [...], "location": ...} in the order
 * they were made (lance_stats()).  Looked up by the folders themselves and
 * those around them, through the index on the tables' folders: no scan.
 */
char *
catalog_tables_around_folders(const char *const *folders, int n, int limit)
{
	Datum values[2];
	char **around = NULL;
	int naround = 0;

	for (int i = 0; i < n; i++)
	{
		size_t room = naround + strlen(folders[i]) + 1;

		around = around ? repalloc(around, sizeof(char *) * room) : palloc(sizeof(char *) * room);
		naround += catalog_folders_around(folders[i], around + naround);
		around[naround++] = pstrdup(folders[i]);
	}
	values[0] = catalog_text_array_datum(around, naround);
	values[1] = Int32GetDatum(limit);
	execute(STMT_TABLES_AROUND_FOLDERS, values, NULL, 1);
	return catalog_result_text(0, 1);
}

/*
 * The namespaces whose "location" property is at, below or above folder key
 * `folder`, at most `limit`, as ids joined by '$', in the order they were
 * made.
 */
int
catalog_namespaces_located_near(const char *folder, int limit, char ***ids)
{
	return object_ids_near(STMT_NAMESPACES_LOCATED_NEAR, folder, limit, ids);
}
