/*
 * catalog_types.h
 *		The types of the catalog's interface: an object's row, the row lock
 *		a look-up takes, and a version to insert.
 *
 * A header of its own, with no source file, so that the catalog's modules
 * that catalog.c calls (catalog_index.c) can use these types without
 * depending on catalog.h, the module above them.  Callers get them through
 * catalog.h.
 */
#ifndef LN_CATALOG_TYPES_H
#define LN_CATALOG_TYPES_H

#include "../common/types.h"

/* The root namespace's row; it always exists. */
#define CATALOG_ROOT_ID 0

typedef struct CatalogObject
{
	int64 id;
	bool is_table;
	char *name;
	LnMap properties;
	char *location;		   /* tables only */
	bool declared;		   /* tables only: declared, no data registered yet */
	bool location_derived; /* tables only: the catalog chose the location */
} CatalogObject;

/*
 * The row lock a look-up takes on the row it finds.  A lock waits for a
 * concurrent transaction that deletes the row (or changes its key), and the
 * look-up then answers what is true once that transaction has ended: a row
 * deleted meanwhile is not found.  KEY_SHARE keeps the row from being
 * deleted (the lock an insert below it needs); FOR_UPDATE is for the
 * operations that delete it or change its key.
 */
typedef enum CatalogLock
{
	CATALOG_NO_LOCK,
	CATALOG_KEY_SHARE,
	CATALOG_FOR_UPDATE
} CatalogLock;

/* One version to insert: the TableVersion with the keys it belongs under. */
typedef struct CatalogVersionInsert
{
	int64 table_id;
	char *branch; /* "" is main */
	char *naming_scheme;
	LnTableVersion version;
} CatalogVersionInsert;

#endif /* LN_CATALOG_TYPES_H */
