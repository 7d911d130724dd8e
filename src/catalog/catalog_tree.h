/*
 * catalog_tree.h
 *		The children of a namespace that a role may read only parts of,
 *		found from its grants (a helper of catalog_objects.c; the rest of
 *		catalog_tree.c, ListAllTables and the privilege check, is in
 *		catalog.h).
 */
#ifndef LN_CATALOG_TREE_H
#define LN_CATALOG_TREE_H

#include "../common/types.h"

extern int catalog_tree_children(int64 parent_id, bool tables, bool include_declared,
								 const char *after, int limit, Oid reader, char ***names);
extern int catalog_readable_all_tables(bool include_declared, int64 after_id, int limit, Oid reader,
									   int64 **ids, LnId **paths);

#endif
