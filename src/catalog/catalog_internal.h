/*
 * catalog_internal.h
 *		What the catalog's statement files share: the statements by number,
 *		how one is defined and run (catalog.c keeps the saved plans), and the
 *		conversions between C values and statement parameters and results.
 *		Included by the catalog's own files alone.
 *
 * Each statement file (catalog_objects.c, catalog_versions.c,
 * catalog_changes.c, catalog_access.c, catalog_storage.c, catalog_undo.c,
 * catalog_identity.c, catalog_page_token.c) defines the SQL
 * of its own statements, indexed by these numbers, and runs them through
 * catalog_execute(), which prepares each once per backend and keeps it.
 */
#ifndef LN_CATALOG_INTERNAL_H
#define LN_CATALOG_INTERNAL_H

#include "postgres.h"

#include "../common/types.h"

typedef enum CatalogStatement
{
	STMT_LOOKUP_CHILD_FOR_UPDATE,
	STMT_LOOKUP_CHILD_FOR_KEY_SHARE,
	STMT_INSERT_OBJECT,
	STMT_SET_PROPERTIES,
	STMT_REREGISTER_TABLE,
	STMT_HAS_CHILDREN,
	STMT_DELETE_OBJECT,
	STMT_DELETE_SUBTREE,
	STMT_MOVE_OBJECT,
	STMT_LIST_CHILDREN,
	STMT_LIST_TABLES_WITH_DATA,
	STMT_LOOKUP_TABLES,
	STMT_INSERT_VERSIONS,
	STMT_MARK_TABLES_WITH_DATA,
	STMT_LIST_VERSIONS,
	STMT_LIST_VERSIONS_DESCENDING,
	STMT_LIST_LATEST_VERSIONS,
	STMT_INSERT_CHANGE,
	STMT_GET_CHANGE,
	STMT_GET_CHANGE_FOR_UPDATE,
	STMT_SET_CHANGE,
	STMT_LIST_QUEUED_DROPS,
	STMT_REQUEUE_FAILED_DROPS,
	STMT_LOCK_TABLE_REFS,
	STMT_INSERT_VERSION,
	STMT_LOCATION_IN_USE,
	STMT_LOCATION_TAKEN,
	STMT_GET_VERSION,
	STMT_DELETE_VERSIONS,
	STMT_TABLES_EXIST,
	STMT_LIST_TABLE_LOCATIONS,
	STMT_MAY_READ_PATH,
	STMT_FORGET_ROLE_GRANTS,
	STMT_FORGET_ROLE_KEYS,
	STMT_RENAME_ROLE,
	STMT_RENAME_ROLE_KEYS,
	STMT_INSERT_GRANT,
	STMT_DELETE_GRANT,
	STMT_LIST_GRANTS,
	STMT_INSERT_API_KEY,
	STMT_DELETE_API_KEY,
	STMT_TOUCH_API_KEY,
	STMT_LIST_API_KEYS,
	STMT_SET_ROLE_LIMIT,
	STMT_REMOVE_ROLE_LIMIT,
	STMT_LIST_ROLE_LIMITS,
	STMT_FORGET_ROLE_LIMITS,
	STMT_RENAME_ROLE_LIMITS,
	STMT_SET_STORAGE,
	STMT_REMOVE_STORAGE,
	STMT_LIST_STORAGE,
	STMT_FOLDERS_SHARED_BELOW,
	STMT_STORAGE_BELOW,
	STMT_TABLES_COMING_UNDER,
	STMT_NAMESPACES_LOCATED_NEAR,
	STMT_NAMESPACE_LOCATED_WITHIN,
	STMT_LIST_STORAGE_LOCATIONS,
	STMT_TABLES_AROUND_FOLDERS,
	STMT_TAKE_UNDO,
	STMT_LIST_DUE_UNDO,
	STMT_UNDO_DONE,
	STMT_UNDO_FAILED,
	STMT_VERSION_AT_LOCATION,
	STMT_ADOPT_STORAGE,
	STMT_PAGE_TOKEN_KEY,
	STMT_STATS,
	STMT_RECONCILE_TABLES,
	STMT_OLD_VERSIONS,
	STMT_DELETE_CLEANED_VERSION,
	NUM_CATALOG_STATEMENTS
} CatalogStatement;

/*
 * The names from the root down to object p (a row of lance_catalog.object
 * aliased p, with its parent_id and name), as a text[]: its id.
 */
#define OBJECT_PATH                                                                                \
	"(WITH RECURSIVE up(parent_id, names) AS ("                                                    \
	"   SELECT p.parent_id, ARRAY[p.name]"                                                         \
	"   UNION ALL"                                                                                 \
	"   SELECT o.parent_id, o.name OPERATOR(pg_catalog.||) up.names"                               \
	"     FROM up JOIN lance_catalog.object o ON o.id = up.parent_id"                              \
	"    WHERE up.parent_id <> 0)"                                                                 \
	" SELECT names FROM up WHERE up.parent_id = 0)"

typedef struct StatementDef
{
	const char *sql;
	int nargs;
	Oid argtypes[20];
} StatementDef;

/*
 * The memory context that was current at catalog_begin(): results are
 * copied into it, as it outlives SPI.
 */
extern MemoryContext catalog_result_cxt;

extern void catalog_check_schema_version(void);
extern int catalog_execute(CatalogStatement stmt, const StatementDef *def, Datum *values,
						   const char *nulls, long limit);

/* the results of the statement just run, copied into catalog_result_cxt */
extern Datum catalog_result_datum(int row, int col, bool *isnull);
extern char *catalog_result_text(int row, int col);
extern int catalog_result_text_array(int row, int col, char ***strings);
extern LnMap catalog_result_map(uint64 row, int col);

/* parameters */
extern Datum catalog_text_array_datum(char **strings, int n);
extern int catalog_folders_around(const char *path, char **around);
extern Datum catalog_nullable_text_array_datum(char **strings, int n);
extern Datum catalog_int8_array_datum(const int64 *values, const bool *present, int n);
extern Datum catalog_text_datum_or_null(const char *s, char *null);

extern bool catalog_is_current(void);

#endif /* LN_CATALOG_INTERNAL_H */
