/*
 * ops_refs.c
 *		Tags and branches: ListTableTags, GetTableTagVersion, CreateTableTag,
 *		DeleteTableTag, UpdateTableTag, ListTableBranches, CreateTableBranch,
 *		DeleteTableBranch.
 *
 * Lance keeps a table's tags and branches on storage, in the table's _refs
 * folder, and the official client creates and reads tags there without
 * asking the catalog.  So that there is one truth, these operations read and
 * write those files in Lance's format (storage.c keeps them atomic and
 * undoes them on rollback), and check the versions they name against the
 * catalog's version records.  They work for tables under
 * lance_namespace.local_roots; elsewhere they answer LN000.  Refs of one
 * table are changed one transaction at a time: each takes a lock on the
 * table's entry that version commits do not wait for.
 */
#include "postgres.h"

#include <time.h>

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "pgtime.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "changes.h"
#include "error.h"
#include "json_edge.h"
#include "objects.h"
#include "operations.h"
#include "request.h"
#include "storage.h"

/*
 * Lance's rules for branch names (and, without '/', tag names): segments of
 * letters, digits, '.', '-' and '_' joined by '/', none empty, no "..", not
 * starting or ending with '.', not ending in ".lock".
 */
static void
check_ref_name(const char *name, const char *field, bool branch)
{
	size_t len = strlen(name);
	bool ok = len > 0 && name[0] != '/' && name[len - 1] != '/' && name[len - 1] != '.' &&
			  strstr(name, "//") == NULL && strstr(name, "..") == NULL && name[0] != '.' &&
			  !(len >= 5 && strcmp(name + len - 5, ".lock") == 0) &&
			  !(branch && strcmp(name, "main") == 0);

	for (const char *c = name; *c && ok; c++)
		ok = isalnum((unsigned char)*c) || *c == '.' || *c == '-' || *c == '_' ||
			 (branch && *c == '/');
	if (!ok)
		ln_error(LN_INVALID_INPUT,
				 "field \"%s\" is not a valid %s name: use letters, digits, '.', '-' and '_'%s",
				 field, branch ? "branch" : "tag", branch ? " in segments joined by '/'" : "");
}

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
	if (lock)
		catalog_lock_table_refs(table->id);
}

static void
read_ref(const LnRequest *req, const CatalogObject *table, const char *kind, const char *name,
		 LnRefContents *contents)
{
	char *text = storage_read_ref(table->location, kind, name);
	bool branch = strcmp(kind, "branches") == 0;

	if (text == NULL)
		ln_error(branch ? LN_TABLE_BRANCH_NOT_FOUND : LN_TABLE_TAG_NOT_FOUND,
				 "%s \"%s\" of table \"%s\" does not exist", branch ? "branch" : "tag", name,
				 ln_id_string(&req->id, req->id.len));
	if (!json_parse_ref_file(text, branch, contents))
		ln_error(LN_INVALID_TABLE_STATE, "the file of %s \"%s\" of table \"%s\" is not valid",
				 branch ? "branch" : "tag", name, ln_id_string(&req->id, req->id.len));
}

/* The contents of tag req->tag; LN008 if it does not exist. */
void
refs_get_tag(const LnRequest *req, const CatalogObject *table, LnRefContents *tag)
{
	check_ref_name(req->tag, "tag", false);
	if (!storage_is_managed(table->location))
		ln_error(LN_TABLE_TAG_NOT_FOUND, "tag \"%s\" of table \"%s\" does not exist", req->tag,
				 ln_id_string(&req->id, req->id.len));
	read_ref(req, table, "tags", req->tag, tag);
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
		read_ref(req, &table, kind, resp->ref_names[i], &resp->refs[i]);
	if (n - first > limit && limit > 0)
	{
		resp->fields |= LN_RESP_PAGE_TOKEN;
		resp->page_token = resp->ref_names[limit - 1];
	}
}

static void
list_table_tags(const LnRequest *req, LnResponse *resp)
{
	list_refs(req, "tags", LN_RESP_TAGS, resp);
}

static void
get_table_tag_version(const LnRequest *req, LnResponse *resp)
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
	check_ref_name(req->tag, "tag", false);
	get_local_table(req, true, &table);

	memset(&tag, 0, sizeof(tag));
	tag.branch = (char *)branch;
	tag.version = req->version;
	tag.manifest_size = recorded_version(req, &table, branch, req->version);
	tag.created_at = tag.updated_at = now_rfc3339();
	tag.metadata = ln_empty_map();
	if (!create)
	{
		read_ref(req, &table, "tags", req->tag, &old);
		if (old.created_at != NULL)
			tag.created_at = old.created_at;
		tag.metadata = old.metadata;
	}
	if (!storage_write_ref(table.location, "tags", req->tag, json_ref_file(&tag, false), create))
		ln_error(create ? LN_TABLE_TAG_ALREADY_EXISTS : LN_TABLE_TAG_NOT_FOUND,
				 "tag \"%s\" of table \"%s\" %s", req->tag, ln_id_string(&req->id, req->id.len),
				 create ? "already exists" : "does not exist");
	changes_touch(&req->id, req->id.len, false, req->version);
}

static void
create_table_tag(const LnRequest *req, LnResponse *resp)
{
	write_tag(req, true);
	resp->fields = 0;
}

static void
update_table_tag(const LnRequest *req, LnResponse *resp)
{
	write_tag(req, false);
	resp->fields = 0;
}

static void
delete_table_tag(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;

	if (req->tag == NULL)
		ln_error(LN_INVALID_INPUT, "field \"tag\" is required");
	check_ref_name(req->tag, "tag", false);
	get_local_table(req, true, &table);
	if (!storage_delete_ref(table.location, "tags", req->tag))
		ln_error(LN_TABLE_TAG_NOT_FOUND, "tag \"%s\" of table \"%s\" does not exist", req->tag,
				 ln_id_string(&req->id, req->id.len));
	changes_touch(&req->id, req->id.len, false, -1);
	resp->fields = 0;
}

static void
list_table_branches(const LnRequest *req, LnResponse *resp)
{
	list_refs(req, "branches", LN_RESP_BRANCHES, resp);
}

/*
 * CreateTableBranch: fork `name` from `version` (default: the latest) of
 * `from_branch` (default: main).  The branch's versions continue from the
 * fork point, which the catalog records as the branch's first version,
 * pointing at the source's manifest.
 */
static void
create_table_branch(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;
	LnRefContents branch;
	LnRequest source = *req;
	LnTableVersion fork;
	CatalogVersionInsert row;
	bool inserted;
	uint8 uuid[16];

	if (req->name == NULL)
		ln_error(LN_INVALID_INPUT, "field \"name\" is required");
	check_ref_name(req->name, "name", true);
	get_local_table(req, true, &table);

	memset(&branch, 0, sizeof(branch));
	source.branch = req->from_branch;
	if (!ln_is_main_branch(source.branch))
	{
		LnRefContents parent;

		if (storage_read_ref(table.location, "branches", source.branch) == NULL)
			ln_error(LN_INVALID_INPUT, "source branch \"%s\" of table \"%s\" does not exist",
					 source.branch, ln_id_string(&req->id, req->id.len));
		read_ref(req, &table, "branches", source.branch, &parent);
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

	if (!storage_write_ref(table.location, "branches", req->name, json_ref_file(&branch, true),
						   true))
		ln_error(LN_TABLE_BRANCH_ALREADY_EXISTS, "branch \"%s\" of table \"%s\" already exists",
				 req->name, ln_id_string(&req->id, req->id.len));

	memset(&row, 0, sizeof(row));
	row.table_id = table.id;
	row.branch = req->name;
	row.version = fork;
	catalog_insert_versions(1, &row, &inserted);
	if (!inserted)
		ln_error(LN_TABLE_BRANCH_ALREADY_EXISTS,
				 "branch \"%s\" of table \"%s\" already has versions in the catalog", req->name,
				 ln_id_string(&req->id, req->id.len));
	changes_touch(&req->id, req->id.len, false, fork.version);
	resp->fields = 0;
}

/*
 * DeleteTableBranch: refused while a branch forks from it or a tag points at
 * it, as Lance refuses; removes the branch file, its versions in the catalog
 * and its folder (all undone on rollback).
 */
static void
delete_table_branch(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;
	char **names;
	int n;
	bool has_children = false;

	if (req->name == NULL)
		ln_error(LN_INVALID_INPUT, "field \"name\" is required");
	check_ref_name(req->name, "name", true);
	get_local_table(req, true, &table);
	/* wait for the version calls in flight on the branch, and keep new ones out */
	storage_lock_folder(psprintf("%s/tree/%s", storage_local_path(table.location), req->name),
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
		read_ref(req, &table, "branches", names[i], &other);
		if (other.branch != NULL && strcmp(other.branch, req->name) == 0)
			ln_error(LN_INVALID_TABLE_STATE,
					 "branch \"%s\" cannot be deleted: branch \"%s\" forks from it", req->name,
					 names[i]);
	}
	n = storage_list_refs(table.location, "tags", &names);
	for (int i = 0; i < n; i++)
	{
		LnRefContents tag;

		read_ref(req, &table, "tags", names[i], &tag);
		if (tag.branch != NULL && strcmp(tag.branch, req->name) == 0)
			ln_error(LN_INVALID_TABLE_STATE,
					 "branch \"%s\" cannot be deleted: tag \"%s\" points at it", req->name,
					 names[i]);
	}

	(void)storage_delete_ref(table.location, "branches", req->name);
	storage_delete_branch_data(table.location, req->name, has_children);
	(void)catalog_delete_versions(table.id, req->name, 0, PG_INT64_MAX);
	changes_touch(&req->id, req->id.len, false, -1);
	resp->fields = 0;
}

/* The tags of a table that point at versions first to last of `branch` (NULL main). */
int
refs_tags_on_versions(const LnRequest *req, const CatalogObject *table, const char *branch,
					  int64 first, int64 last, char **one)
{
	char **names;
	int n;
	int found = 0;

	if (!storage_is_managed(table->location))
		return 0;
	n = storage_list_refs(table->location, "tags", &names);
	for (int i = 0; i < n; i++)
	{
		LnRefContents tag;

		read_ref(req, table, "tags", names[i], &tag);
		if (tag.version >= first && tag.version <= last &&
			((tag.branch == NULL && branch == NULL) ||
			 (tag.branch != NULL && branch != NULL && strcmp(tag.branch, branch) == 0)))
		{
			*one = names[i];
			found++;
		}
	}
	return found;
}

#define REFS_OPERATION(name, opid, fields)                                                         \
	const LnOperationDef ln_op_##name = {                                                          \
		.operation_id = opid, .run = name, .known_fields = LN_REQ_ID | (fields)};                  \
	PG_FUNCTION_INFO_V1(lance_##name);                                                             \
	Datum lance_##name(PG_FUNCTION_ARGS)                                                           \
	{                                                                                              \
		return ln_run_operation(fcinfo, &ln_op_##name);                                            \
	}

REFS_OPERATION(list_table_tags, "ListTableTags", LN_REQ_PAGE_TOKEN | LN_REQ_LIMIT)
REFS_OPERATION(get_table_tag_version, "GetTableTagVersion", LN_REQ_TAG)
REFS_OPERATION(create_table_tag, "CreateTableTag", LN_REQ_TAG | LN_REQ_VERSION | LN_REQ_BRANCH)
REFS_OPERATION(delete_table_tag, "DeleteTableTag", LN_REQ_TAG)
REFS_OPERATION(update_table_tag, "UpdateTableTag", LN_REQ_TAG | LN_REQ_VERSION | LN_REQ_BRANCH)
REFS_OPERATION(list_table_branches, "ListTableBranches", LN_REQ_PAGE_TOKEN | LN_REQ_LIMIT)
REFS_OPERATION(create_table_branch, "CreateTableBranch",
			   LN_REQ_NAME | LN_REQ_FROM_BRANCH | LN_REQ_FROM_VERSION)
REFS_OPERATION(delete_table_branch, "DeleteTableBranch", LN_REQ_NAME)
