/*
 * lance_namespace.c
 *		Module entry point: each module defines its own settings and
 *		callbacks, and this file only starts them.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "catalog.h"
#include "changes.h"
#include "extension_guard.h"
#include "location.h"
#include "rest.h"
#include "storage.h"
#include "worker.h"

PG_MODULE_MAGIC;

void _PG_init(void);

void
_PG_init(void)
{
	location_init();
	storage_init();
	/* storage finds S3 settings in the catalog without knowing it */
	storage_set_settings_finder(catalog_find_storage);
	changes_init();
	rest_init();
	extension_guard_init();
	worker_init();
	MarkGUCPrefixReserved("lance_namespace");
}
