/*
 * catalog_index.h
 *		The catalog's key look-ups by direct index scans (helpers of
 *		catalog.c and the statement files for the hot paths).
 *
 * It uses the catalog's types (catalog_types.h), never catalog.h: the
 * catalog's files call this module, and it calls none of them back.
 */
#ifndef LN_CATALOG_INDEX_H
#define LN_CATALOG_INDEX_H

#include "datatype/timestamp.h"

#include "../common/types.h"
#include "catalog_types.h"

/* a namespace's or table's row as a look-up by key reads it */
typedef struct CatalogChild
{
	int64 id;
	bool is_table;
	char *location; /* tables only, when asked for */
	bool declared;	/* tables only, when asked for */
} CatalogChild;

/* The relations and indexes of direct scans (catalog_tree.c's too). */
extern Oid catalog_find_relation(Oid schema, const char *name);
extern void catalog_find_columns(Oid relid, int n, const char *const *names, AttrNumber *attnums);
extern Oid catalog_check_index(Oid indexid, Oid relid, int n, const AttrNumber *attnums, bool exact,
							   int collation_of);

extern bool catalog_index_find_child(int64 parent_id, const char *name, CatalogChild *child,
									 MemoryContext cxt);
extern bool catalog_index_read_child(int64 parent_id, const char *name, CatalogObject *out,
									 MemoryContext cxt);
extern Oid catalog_index_authenticate(const char *id, const uint8 *hash, int hash_len,
									  TimestampTz *expires_at, TimestampTz *last_used_at);
extern int catalog_index_find_table(int64 grandparent_id, const char *ns_name,
									const char *table_name, CatalogChild *table, int limit,
									LnTableVersion **versions, int *nversions, MemoryContext cxt);
extern bool catalog_index_find_storage(const char *folder, char **location, LnMap *options,
									   LnMap *vend, MemoryContext cxt);
extern void catalog_index_forget_storage(void);
extern bool catalog_index_role_is(Oid role, const char *name);
extern bool catalog_index_role_limit(Oid role, double *requests_per_second, int *burst);

#endif
