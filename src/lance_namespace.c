/*
 * lance_namespace.c
 *		Module entry point: each module defines its own settings and
 *		callbacks, and this file only starts them.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "catalog/catalog.h"
#include "common/rate_buckets.h"
#include "common/shared_stats.h"
#include "feed/changes.h"
#include "http/rest.h"
#include "maintenance/extension_guard.h"
#include "maintenance/worker.h"
#include "sql/roles.h"
#include "storage/location.h"
#include "storage/storage.h"

PG_MODULE_MAGIC;

void _PG_init(void);

void
_PG_init(void)
{
	location_init();
	storage_init();
	/* storage finds S3 settings in the catalog without knowing it */
	storage_set_settings_finder(catalog_find_storage);
	/* and writes on storage only where the catalog is the one of record */
	storage_set_write_guard(catalog_require_of_record);
	changes_init();
	rest_init();
	extension_guard_init();
	worker_init();
	shared_stats_init();
	rate_buckets_init();
	roles_init();
	MarkGUCPrefixReserved("lance_namespace");
}
