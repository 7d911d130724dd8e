/*
 * ops_version.c
 *		Table version operations: ListTableVersions, CreateTableVersion,
 *		DescribeTableVersion, BatchDeleteTableVersions,
 *		BatchCreateTableVersions.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../model/objects.h"
#include "../model/refs.h"
#include "../model/versions.h"
#include "../storage/storage.h"
#include "ops_version.h"

void
op_create_table_version(const LnRequest *req, LnResponse *resp)
{
	versions_create(req, 1, false, &resp->version);
	resp->fields = LN_RESP_VERSION;
}

void
op_batch_create_table_versions(const LnRequest *req, LnResponse *resp)
{
	if ((req->present & LN_REQ_ENTRIES) == 0)
		ln_error(LN_INVALID_INPUT, "field \"entries\" is required");
	resp->fields = LN_RESP_VERSIONS;
	resp->nversions = req->nentries;
	resp->versions = palloc0(sizeof(LnTableVersion) * (req->nentries + 1));
	versions_create(req->entries, req->nentries, true, resp->versions);
}

static void
get_table(const LnRequest *req, CatalogObject *table)
{
	ln_require_table_id(req);
	objects_get_table_key(&req->id, table);
}

/*
 * ListTableVersions.  The page token is the last version sent, and a full
 * page carries one, so that `{"descending": true, "limit": 1}`, Lance's
 * look-up of the latest version, reads one row and no more.
 */
void
op_list_table_versions(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;
	int limit = ln_page_limit(req);
	int64 after = -1;
	const char *branch;

	/* the latest versions of main (Lance's look-up of the latest): one statement */
	if (req->descending && ln_is_main_branch(req->branch) && limit > 0 &&
		(req->page_token == NULL || req->page_token[0] == '\0'))
	{
		ln_require_table_id(req);
		resp->fields = LN_RESP_VERSIONS;
		resp->nversions = objects_get_table_latest(&req->id, limit, &table, &resp->versions);
		if (resp->nversions == limit)
		{
			resp->fields |= LN_RESP_PAGE_TOKEN;
			resp->page_token = psprintf(INT64_FORMAT, resp->versions[limit - 1].version);
		}
		return;
	}

	get_table(req, &table);
	branch = branch_key(req, table.location);
	if (req->page_token != NULL && req->page_token[0] != '\0')
	{
		char *end;

		errno = 0;
		after = strtoi64(req->page_token, &end, 10);
		if (errno != 0 || *end != '\0' || after < 0)
			ln_error(LN_INVALID_INPUT, "field \"page_token\" is not a token this catalog returned");
	}

	resp->fields = LN_RESP_VERSIONS;
	if (limit > 0)
		resp->nversions =
			catalog_list_versions(table.id, branch, req->descending, after, limit, &resp->versions);
	if (limit > 0 && resp->nversions == limit)
	{
		resp->fields |= LN_RESP_PAGE_TOKEN;
		resp->page_token = psprintf(INT64_FORMAT, resp->versions[limit - 1].version);
	}
}

void
op_describe_table_version(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;

	/* the latest version of main: the table and it in one statement */
	if ((req->present & LN_REQ_VERSION) == 0 && ln_is_main_branch(req->branch))
	{
		LnTableVersion *latest;

		ln_require_table_id(req);
		if (objects_get_table_latest(&req->id, 1, &table, &latest) == 0)
			ln_error(LN_TABLE_VERSION_NOT_FOUND, "table \"%s\" has no versions",
					 ln_id_string(&req->id, req->id.len));
		resp->version = latest[0];
		resp->fields = LN_RESP_VERSION;
		return;
	}

	get_table(req, &table);
	versions_get(req, &table, &resp->version);
	resp->fields = LN_RESP_VERSION;
}

/* BatchDeleteTableVersions: ranges are start-inclusive, end-exclusive; end -1 runs through the
 * latest. */
void
op_batch_delete_table_versions(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;
	const char *branch;
	char **tag_names;
	int64 *tagged;
	int ntags;

	get_table(req, &table);
	branch = branch_key(req, table.location);
	if ((req->present & LN_REQ_RANGES) == 0)
		ln_error(LN_INVALID_INPUT, "field \"ranges\" is required");
	/* no tag may be made on a version while it is being deleted */
	if (storage_is_managed(table.location) && !catalog_lock_table_refs(table.id))
		ln_error(LN_TABLE_NOT_FOUND, "table \"%s\" does not exist",
				 ln_id_string(&req->id, req->id.len));

	/* Lance keeps tagged versions too: a tag must not point at nothing */
	ntags = refs_tags_on_branch(req, &table, branch[0] ? branch : NULL, &tag_names, &tagged);

	resp->fields = LN_RESP_DELETED_COUNT;
	for (int i = 0; i < req->nranges; i++)
	{
		const LnVersionRange *r = &req->ranges[i];
		int64 last = r->end_version < 0 ? PG_INT64_MAX : r->end_version - 1;

		CHECK_FOR_INTERRUPTS();
		for (int t = 0; t < ntags; t++)
			if (tagged[t] >= r->start_version && tagged[t] <= last)
				ln_error_detail(LN_INVALID_TABLE_STATE, "Delete or move the tag first.",
								"versions of table \"%s\" in range %d are tagged (\"%s\")",
								ln_id_string(&req->id, req->id.len), i, tag_names[t]);
		if (last >= r->start_version)
			resp->deleted_count +=
				catalog_delete_versions(table.id, branch, r->start_version, last);
	}
	if (resp->deleted_count > 0)
		changes_touch(&req->id, req->id.len, false, -1, table.id);
	else
	{
		bool exists;

		/* nothing deleted: the table may have gone while this waited for it */
		catalog_tables_exist(1, &table.id, &exists);
		if (!exists)
			ln_error(LN_TABLE_NOT_FOUND, "table \"%s\" does not exist",
					 ln_id_string(&req->id, req->id.len));
	}
}
