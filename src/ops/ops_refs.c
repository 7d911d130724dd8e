/*
 * ops_refs.c
 *		Tags and branches: ListTableTags, GetTableTagVersion, CreateTableTag,
 *		DeleteTableTag, UpdateTableTag, ListTableBranches, CreateTableBranch,
 *		DeleteTableBranch.
 *
 * Lance keeps a table's tags and branches on storage, in the table's _refs
 * folder, and the official client creates and reads tags there without
 * asking the catalog.  So that there is one truth, these operations read and
 * write those files in Lance's format (storage keeps them atomic and
 * undoes them on rollback), and check the versions they name against the
 * catalog's version records.  They work for tables under
 * lance_namespace.local_roots; elsewhere they answer LN000.  Refs of one
 * table are changed one transaction at a time: each takes a lock on the
 * table's entry that version commits do not wait for.
 */
#include "postgres.h"

#include <time.h>

#include "lib/stringinfo.h"
#include "pgtime.h"
#include "utils/timestamp.h"

#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../json/json_edge.h"
#include "../model/branch_manifest.h"
#include "../model/objects.h"
#include "../model/refs.h"
#include "../model/versions.h"
#include "../storage/location.h"
#include "../storage/storage.h"
#include "ops_refs.h"

/* Find the table; its refs live on storage only under lance_namespace.local_roots. */
static void
get_local_table(const LnRequest *req, bool lock, CatalogObject *table)
{
	ln_require_table_id(req);
	objects_get_table_key(&req->id, table);
	if (!storage_is_managed(table->location))
		ln_error(LN_UNSUPPORTED,
				 "tags and branches of table \"%s\" live with its data at \"%s\", which is not "
				 "below lance_namespace.local_roots: use Lance's own tags and branches API",
				 ln_id_string(&req->id, req->id.len), table->location);
	if (lock && !catalog_lock_table_refs(table->id))
		ln_error(LN_TABLE_NOT_FOUND, "table \"%s\" does not exist",
				 ln_id_string(&req->id, req->id.len));
}

/*
 * A branch's files live in the table's tree/<name> folder, which the
 * catalog writes and, at DeleteTableBranch, removes: refuse a branch whose
 * folder is another table's, or lies in or around one.
 */
static void
check_branch_folder(const LnRequest *req, const CatalogObject *table)
{
	char *folder = psprintf("%s/tree/%s", location_folder_key(table->location), req->name);

	if (catalog_location_in_use(folder, table->id))
		ln_error(LN_INVALID_INPUT,
				 "branch \"%s\" of table \"%s\" would have its files in or around another "
				 "table's folder",
				 req->name, ln_id_string(&req->id, req->id.len));
}

/* Now as Lance writes times in ref files (RFC 3339, UTC). */
static char *
now_rfc3339(void)
{
	TimestampTz now = GetCurrentTimestamp();
	pg_time_t seconds = timestamptz_to_time_t(now);
	struct pg_tm *tm = pg_gmtime(&seconds);
	char buf[64];

	pg_strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", tm);
	return psprintf("%s.%06dZ", buf, (int)((now % USECS_PER_SEC + USECS_PER_SEC) % USECS_PER_SEC));
}

/*
 * The version a tag or branch points at must be one the catalog records;
 * answers the size of its manifest.
 */
static int64
recorded_version(const LnRequest *req, const CatalogObject *table, const char *branch,
				 int64 version)
{
	LnRequest at = *req;
	LnTableVersion v;

	at.branch = (char *)branch;
	at.version = version;
	at.present |= LN_REQ_VERSION;
	versions_get(&at, table, &v);
	return v.has_manifest_size ? v.manifest_size : 0;
}

/* Page through sorted ref names after page_token; the token is the last name sent. */
static void
list_refs(const LnRequest *req, const char *kind, uint32 field, LnResponse *resp)
{
	CatalogObject table;
	char **names;
	int n;
	int first = 0;
	int limit = ln_page_limit(req);

	get_local_table(req, false, &table);
	n = storage_list_refs(table.location, kind, &names);
	if (req->page_token != NULL)
		while (first < n && strcmp(names[first], req->page_token) <= 0)
			first++;

	resp->fields = field;
	resp->nrefs = Min(n - first, limit);
	resp->ref_names = names + first;
	resp->refs = palloc0(sizeof(LnRefContents) * (resp->nrefs + 1));
	for (int i = 0; i < resp->nrefs; i++)
		refs_read(req, &table, kind, resp->ref_names[i], &resp->refs[i]);
	if (n - first > limit && limit > 0)
	{
		resp->fields |= LN_RESP_PAGE_TOKEN;
		resp->page_token = resp->ref_names[limit - 1];
	}
}

void
op_list_table_tags(const LnRequest *req, LnResponse *resp)
{
	list_refs(req, "tags", LN_RESP_TAGS, resp);
}

void
op_get_table_tag_version(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;
	LnRefContents tag;

	if (req->tag == NULL)
		ln_error(LN_INVALID_INPUT, "field \"tag\" is required");
	get_local_table(req, false, &table);
	refs_get_tag(req, &table, &tag);
	resp->fields = LN_RESP_VERSION_NUMBER;
	resp->version_number = tag.version;
	if (tag.branch != NULL)
	{
		resp->fields |= LN_RESP_BRANCH;
		resp->branch = tag.branch;
	}
}

/* CreateTableTag and UpdateTableTag: point tag `tag` at `version` of `branch`. */
static void
write_tag(const LnRequest *req, bool create)
{
	CatalogObject table;
	LnRefContents tag;
	LnRefContents old;
	const char *branch = ln_is_main_branch(req->branch) ? NULL : req->branch;

	if (req->tag == NULL)
		ln_error(LN_INVALID_INPUT, "field \"tag\" is required");
	if ((req->present & LN_REQ_VERSION) == 0)
		ln_error(LN_INVALID_INPUT, "field \"version\" is required");
	refs_check_name(req->tag, "tag", false);
	get_local_table(req, true, &table);

	memset(&tag, 0, sizeof(tag));
	tag.branch = (char *)branch;
	tag.version = req->version;
	tag.manifest_size = recorded_version(req, &table, branch, req->version);
	tag.created_at = tag.updated_at = now_rfc3339();
	tag.metadata = ln_empty_map();
	if (!create)
	{
		refs_read(req, &table, "tags", req->tag, &old);
		if (old.created_at != NULL)
			tag.created_at = old.created_at;
		tag.metadata = old.metadata;
	}
	if (!storage_write_ref(table.location, "tags", req->tag, json_ref_file(&tag, false), create))
		ln_error(create ? LN_TABLE_TAG_ALREADY_EXISTS : LN_TABLE_TAG_NOT_FOUND,
				 "tag \"%s\" of table \"%s\" %s", req->tag, ln_id_string(&req->id, req->id.len),
				 create ? "already exists" : "does not exist");
	changes_touch(&req->id, req->id.len, false, req->version, table.id);
}

void
op_create_table_tag(const LnRequest *req, LnResponse *resp)
{
	write_tag(req, true);
	resp->fields = 0;
}

void
op_update_table_tag(const LnRequest *req, LnResponse *resp)
{
	write_tag(req, false);
	resp->fields = 0;
}

void
op_delete_table_tag(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;

	if (req->tag == NULL)
		ln_error(LN_INVALID_INPUT, "field \"tag\" is required");
	refs_check_name(req->tag, "tag", false);
	get_local_table(req, true, &table);
	if (!storage_delete_ref(table.location, "tags", req->tag))
		ln_error(LN_TABLE_TAG_NOT_FOUND, "tag \"%s\" of table \"%s\" does not exist", req->tag,
				 ln_id_string(&req->id, req->id.len));
	changes_touch(&req->id, req->id.len, false, -1, table.id);
	resp->fields = 0;
}

void
op_list_table_branches(const LnRequest *req, LnResponse *resp)
{
	list_refs(req, "branches", LN_RESP_BRANCHES, resp);
}

/*
 * CreateTableBranch: fork `name` from `version` (default: the latest) of
 * `from_branch` (default: main), as Lance does: the branch's first manifest,
 * tree/<name>/_versions/<fork version>, is the source's rewritten to find
 * the source's files through a base path (branch_manifest.c), and then the
 * branch file.  The catalog records that manifest as the branch's first
 * version; its versions continue from there.  Both files appear at commit.
 */
void
op_create_table_branch(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;
	LnRefContents branch;
	LnRequest source = *req;
	LnTableVersion fork;
	LnTableVersion first;
	CatalogVersionInsert row;
	bool inserted;
	uint8 uuid[16];
	char *source_manifest;
	size_t source_len;
	char *manifest;
	size_t manifest_len;
	char *source_folder;

	if (req->name == NULL)
		ln_error(LN_INVALID_INPUT, "field \"name\" is required");
	refs_check_name(req->name, "name", true);
	get_local_table(req, true, &table);
	check_branch_folder(req, &table);
	/*
	 * As DeleteTableBranch: a deletion of a branch of this name that has
	 * committed may still be removing its objects; wait for it.
	 */
	storage_lock_folder(psprintf("%s/tree/%s", location_folder_key(table.location), req->name),
						true);

	memset(&branch, 0, sizeof(branch));
	source.branch = req->from_branch;
	if (!ln_is_main_branch(source.branch))
	{
		LnRefContents parent;

		if (storage_read_ref(table.location, "branches", source.branch) == NULL)
			ln_error(LN_INVALID_INPUT, "source branch \"%s\" of table \"%s\" does not exist",
					 source.branch, ln_id_string(&req->id, req->id.len));
		refs_read(req, &table, "branches", source.branch, &parent);
		branch.branch = source.branch;
		branch.nmapping = parent.nmapping;
		branch.mapping_versions = parent.mapping_versions;
		branch.mapping_ids = parent.mapping_ids;
	}
	else
		source.branch = NULL;

	/* the fork point: the source's version, which must exist (else the source does not) */
	if (req->present & LN_REQ_FROM_VERSION)
	{
		source.present |= LN_REQ_VERSION;
		source.version = req->from_version;
	}
	else
		source.present &= ~LN_REQ_VERSION;
	if (!versions_find(&source, &table, &fork))
		ln_error(LN_INVALID_INPUT, "the source version of branch \"%s\" does not exist", req->name);

	/* Lance's branch identifier: the parent's, and (fork version, a new uuid) */
	if (!pg_strong_random(uuid, sizeof(uuid)))
		ln_error(LN_INTERNAL, "could not generate a branch identifier");
	branch.mapping_versions =
		branch.nmapping ? repalloc(branch.mapping_versions, sizeof(int64) * (branch.nmapping + 1))
						: palloc(sizeof(int64));
	branch.mapping_ids = branch.nmapping
							 ? repalloc(branch.mapping_ids, sizeof(char *) * (branch.nmapping + 1))
							 : palloc(sizeof(char *));
	branch.mapping_versions[branch.nmapping] = fork.version;
	branch.mapping_ids[branch.nmapping] = palloc(33);
	for (int i = 0; i < 16; i++)
		sprintf(branch.mapping_ids[branch.nmapping] + 2 * i, "%02x", uuid[i]);
	branch.nmapping++;
	branch.version = fork.version;
	branch.create_at = (int64)time(NULL);
	branch.manifest_size = fork.has_manifest_size ? fork.manifest_size : 0;
	branch.metadata = ln_empty_map();

	if (storage_read_ref(table.location, "branches", req->name) != NULL)
		ln_error(LN_TABLE_BRANCH_ALREADY_EXISTS, "branch \"%s\" of table \"%s\" already exists",
				 req->name, ln_id_string(&req->id, req->id.len));

	/* the branch's own first manifest, finding the source's files where they are */
	source_manifest = storage_read_table_manifest(table.location, fork.manifest_path, &source_len);
	source_folder = location_folder_key(table.location);
	if (source.branch != NULL)
		source_folder = psprintf("%s/tree/%s", source_folder, source.branch);
	manifest = branch_manifest_make(source_manifest, source_len, req->name, source.branch,
									source_folder, &manifest_len);
	first = fork;
	first.manifest_path = storage_write_branch_manifest(table.location, req->name, fork.version,
														manifest, manifest_len, fork.manifest_path);
	first.has_manifest_size = true;
	first.manifest_size = (int64)manifest_len;
	first.e_tag = NULL;

	if (!storage_write_ref(table.location, "branches", req->name, json_ref_file(&branch, true),
						   true))
		ln_error(LN_TABLE_BRANCH_ALREADY_EXISTS, "branch \"%s\" of table \"%s\" already exists",
				 req->name, ln_id_string(&req->id, req->id.len));

	memset(&row, 0, sizeof(row));
	row.table_id = table.id;
	row.branch = req->name;
	row.naming_scheme = "V2";
	row.version = first;
	catalog_insert_versions(1, &row, &inserted);
	if (!inserted)
		ln_error(LN_TABLE_BRANCH_ALREADY_EXISTS,
				 "branch \"%s\" of table \"%s\" already has versions in the catalog", req->name,
				 ln_id_string(&req->id, req->id.len));
	changes_touch(&req->id, req->id.len, false, fork.version, table.id);
	resp->fields = 0;
}

/*
 * DeleteTableBranch: refused while a branch forks from it or a tag points at
 * it, as Lance refuses; removes the branch file, its versions in the catalog
 * and its folder (all undone on rollback).
 */
void
op_delete_table_branch(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;
	char **names;
	int n;
	bool has_children = false;

	if (req->name == NULL)
		ln_error(LN_INVALID_INPUT, "field \"name\" is required");
	refs_check_name(req->name, "name", true);
	get_local_table(req, true, &table);
	check_branch_folder(req, &table);
	/* wait for the version calls in flight on the branch, and keep new ones out */
	storage_lock_folder(psprintf("%s/tree/%s", location_folder_key(table.location), req->name),
						true);
	if (storage_read_ref(table.location, "branches", req->name) == NULL)
		ln_error(LN_TABLE_BRANCH_NOT_FOUND, "branch \"%s\" of table \"%s\" does not exist",
				 req->name, ln_id_string(&req->id, req->id.len));

	n = storage_list_refs(table.location, "branches", &names);
	for (int i = 0; i < n; i++)
	{
		LnRefContents other;
		size_t len = strlen(req->name);

		if (strncmp(names[i], req->name, len) == 0 && names[i][len] == '/')
			has_children = true;
		refs_read(req, &table, "branches", names[i], &other);
		if (other.branch != NULL && strcmp(other.branch, req->name) == 0)
			ln_error(LN_INVALID_TABLE_STATE,
					 "branch \"%s\" cannot be deleted: branch \"%s\" forks from it", req->name,
					 names[i]);
	}
	n = storage_list_refs(table.location, "tags", &names);
	for (int i = 0; i < n; i++)
	{
		LnRefContents tag;

		refs_read(req, &table, "tags", names[i], &tag);
		if (tag.branch != NULL && strcmp(tag.branch, req->name) == 0)
			ln_error(LN_INVALID_TABLE_STATE,
					 "branch \"%s\" cannot be deleted: tag \"%s\" points at it", req->name,
					 names[i]);
	}

	(void)storage_delete_ref(table.location, "branches", req->name);
	storage_delete_branch_data(table.location, req->name, has_children);
	(void)catalog_delete_versions(table.id, req->name, 0, PG_INT64_MAX);
	changes_touch(&req->id, req->id.len, false, -1, table.id);
	resp->fields = 0;
}
