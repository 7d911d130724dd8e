/*
 * objects.h
 *		Find namespaces and tables by their list-form ids, raising the
 *		spec's not-found errors.
 */
#ifndef LN_OBJECTS_H
#define LN_OBJECTS_H

#include "../catalog/catalog.h"

/* Where a namespace's tables go by default: its closest "location" property. */
typedef struct LocationBase
{
	const char *base; /* NULL when no namespace on the path has one */
	int level;		  /* names of the id below the base start here */
} LocationBase;

extern bool objects_find_namespace(const LnId *id, int len, CatalogLock lock, CatalogObject *ns,
								   LocationBase *base);
extern void objects_get_namespace(const LnId *id, int len, CatalogLock lock, CatalogObject *ns,
								  LocationBase *base);
extern void objects_get_table(const LnId *id, CatalogLock lock, CatalogObject *table);
extern int64 objects_namespace_id(const LnId *id, int len);
extern void objects_get_table_key(const LnId *id, CatalogObject *table);
extern int objects_get_table_latest(const LnId *id, int limit, CatalogObject *table,
									LnTableVersion **versions);

#endif /* LN_OBJECTS_H */
