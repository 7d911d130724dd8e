/*
 * versions.c
 *		Table versions, shared by the handlers: create them (all or none,
 *		the core of CreateTableVersion, BatchCreateTableVersions and
 *		BatchCommitTables), find one, and name the branch a request means.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../storage/location.h"
#include "../storage/storage.h"
#include "objects.h"
#include "versions.h"

typedef enum NamingScheme
{
	NAMING_V1,
	NAMING_V2
} NamingScheme;

static const LnEnumValue naming_schemes[] = {{"V1", NAMING_V1}, {"V2", NAMING_V2}, {NULL, 0}};

/* One entry of a version create, with what resolving it found. */
typedef struct VersionEntry
{
	const LnRequest *req;
	int index; /* in the request */
	int64 parent_id;
	int64 table_id;
	char *location;
	bool declared;
	NamingScheme scheme;
	ManifestCopy copy;
	bool managed;
} VersionEntry;

/* Whether a request's branch field names main: absent, "" or "main". */
bool
ln_is_main_branch(const char *branch)
{
	return branch == NULL || branch[0] == '\0' || strcmp(branch, "main") == 0;
}

/*
 * The catalog's key for the branch a request names in `branch`, of the table
 * at `location`: absent, "" and "main" are main (""); a named branch exists
 * when Lance's branch file or branch folder does, so that a branch made by
 * Lance is a branch for the catalog too (Lance commits a branch's first
 * version before it writes the branch file).  Else LN022.
 */
const char *
branch_key(const LnRequest *req, const char *location)
{
	if (ln_is_main_branch(req->branch))
		return "";
	/* a branch being deleted waits for the calls that use it, and they for it */
	if (storage_is_managed(location))
		storage_lock_folder(psprintf("%s/tree/%s", location_folder_key(location), req->branch),
							false);
	if (!storage_is_managed(location) || !storage_branch_exists(location, req->branch))
		ln_error(LN_TABLE_BRANCH_NOT_FOUND, "branch \"%s\" of table \"%s\" does not exist",
				 req->branch, ln_id_string(&req->id, req->id.len));
	return req->branch;
}

/* The canonical order in which a batch takes its keys: table, then version. */
static int
compare_entries(const void *a, const void *b)
{
	const VersionEntry *x = (const VersionEntry *)a;
	const VersionEntry *y = (const VersionEntry *)b;
	int c = ln_compare_ids(&x->req->id, &y->req->id);

	if (c != 0)
		return c;
	/* the branch too, so that two batches over one table's branches take keys alike */
	c = strcmp(ln_is_main_branch(x->req->branch) ? "" : x->req->branch,
			   ln_is_main_branch(y->req->branch) ? "" : y->req->branch);
	if (c != 0)
		return c;
	if (x->req->version != y->req->version)
		return x->req->version < y->req->version ? -1 : 1;
	return x->index - y->index;
}

/* True if tables a and b are in the same namespace. */
static bool
same_namespace(const LnId *a, const LnId *b)
{
	if (a->len != b->len)
		return false;
	for (int i = 0; i < a->len - 1; i++)
		if (strcmp(a->names[i], b->names[i]) != 0)
			return false;
	return true;
}

/* Of the flagged entries, the one that comes first in the request; -1 if none. */
static int
first_in_request_order(const VersionEntry *e, int n, const bool *flagged)
{
	int first = -1;

	for (int i = 0; i < n; i++)
		if (flagged[i] && (first < 0 || e[i].index < e[first].index))
			first = i;
	return first;
}

static void
name_element(bool name_elements, int index)
{
	if (name_elements)
		ln_error_set_element(psprintf("entries[%d]", index));
}

/*
 * Create versions, all or none: the core of CreateTableVersion,
 * BatchCreateTableVersions and BatchCommitTables.  Keys are taken in one
 * canonical order (table id, then version), so that two batches over the
 * same tables never wait for each other in a cycle, and inserted in one
 * statement.  For tables whose versions the catalog manages, every staging
 * manifest is checked before anything is written, and materialized once
 * the version's key is held.  out[i] answers entries[i].
 */
void
versions_create(const LnRequest *entries, int n, bool name_elements, LnTableVersion *out)
{
	VersionEntry *e = palloc0(sizeof(VersionEntry) * (n + 1));
	int64 *parent_ids = palloc(sizeof(int64) * (n + 1));
	char **names = palloc(sizeof(char *) * (n + 1));
	int64 *table_ids = palloc(sizeof(int64) * (n + 1));
	char **locations = palloc0(sizeof(char *) * (n + 1));
	bool *declared = palloc0(sizeof(bool) * (n + 1));
	CatalogVersionInsert *rows = palloc0(sizeof(CatalogVersionInsert) * (n + 1));
	bool *inserted = palloc(sizeof(bool) * (n + 1));
	int64 *newly_with_data = palloc(sizeof(int64) * (n + 1));
	bool *missing = palloc(sizeof(bool) * (n + 1));
	int nnewly = 0;
	int at; /* the first entry, in request order, of those a check flags */

	/* check each entry, and find its namespace */
	for (int i = 0; i < n; i++)
	{
		const LnRequest *req = &entries[i];

		CHECK_FOR_INTERRUPTS();
		name_element(name_elements, i);
		e[i].req = req;
		e[i].index = i;
		ln_require_table_id(req);
		if ((req->present & LN_REQ_VERSION) == 0)
			ln_error(LN_INVALID_INPUT, "field \"version\" is required");
		if (req->manifest_path == NULL)
			ln_error(LN_INVALID_INPUT, "field \"manifest_path\" is required");
		e[i].scheme = ln_parse_enum(req->naming_scheme, "naming_scheme", naming_schemes, NAMING_V2);

		/* one entry: its namespace and table are found together below */
		if (n == 1)
			continue;

		/* entries of one batch mostly share namespaces: reuse what an earlier one found */
		e[i].parent_id = -1;
		for (int j = 0; j < i && e[i].parent_id < 0; j++)
			if (same_namespace(&req->id, &e[j].req->id))
				e[i].parent_id = e[j].parent_id;
		if (e[i].parent_id < 0)
		{
			e[i].parent_id = objects_namespace_id(&req->id, req->id.len - 1);
			if (e[i].parent_id < 0)
				ln_error(LN_NAMESPACE_NOT_FOUND, "namespace \"%s\" does not exist",
						 ln_id_string(&req->id, req->id.len - 1));
		}
	}

	qsort(e, n, sizeof(VersionEntry), compare_entries);

	if (n == 1)
	{
		/* CreateTableVersion: the namespace and the table in one statement */
		CatalogObject table;

		name_element(name_elements, 0);
		objects_get_table_key(&e[0].req->id, &table);
		table_ids[0] = table.id;
		locations[0] = table.location;
		declared[0] = table.declared;
	}
	else
	{
		/* find every table in one statement */
		for (int i = 0; i < n; i++)
		{
			parent_ids[i] = e[i].parent_id;
			names[i] = e[i].req->id.names[e[i].req->id.len - 1];
		}
		catalog_lookup_tables(n, parent_ids, names, table_ids, locations, declared);
	}
	for (int i = 0; i < n; i++)
		missing[i] = table_ids[i] == 0;
	if ((at = first_in_request_order(e, n, missing)) >= 0)
	{
		name_element(name_elements, e[at].index);
		ln_error(LN_TABLE_NOT_FOUND, "table \"%s\" does not exist",
				 ln_id_string(&e[at].req->id, e[at].req->id.len));
	}
	for (int i = 0; i < n; i++)
	{
		const LnRequest *req = e[i].req;

		name_element(name_elements, e[i].index);
		e[i].table_id = table_ids[i];
		e[i].location = locations[i];
		e[i].declared = declared[i];
		e[i].managed = storage_is_managed(locations[i]);

		rows[i].table_id = table_ids[i];
		rows[i].branch = (char *)branch_key(req, locations[i]);
		rows[i].naming_scheme = e[i].scheme == NAMING_V1 ? "V1" : "V2";
		rows[i].version.version = req->version;
		rows[i].version.manifest_path = req->manifest_path;
		rows[i].version.has_manifest_size = (req->present & LN_REQ_MANIFEST_SIZE) != 0;
		rows[i].version.manifest_size = req->manifest_size;
		rows[i].version.e_tag = req->e_tag;
		rows[i].version.metadata =
			(req->present & LN_REQ_METADATA) ? req->metadata : ln_empty_map();

		if (e[i].managed)
		{
			/*
			 * The staging file's e_tag does not describe the final manifest,
			 * so none is recorded: a wrong tag would fail a conditional read.
			 */
			storage_check_manifest(e[i].location, rows[i].branch[0] ? rows[i].branch : NULL,
								   req->version, e[i].scheme == NAMING_V1, req->manifest_path,
								   (req->present & LN_REQ_MANIFEST_SIZE) ? req->manifest_size : -1,
								   &e[i].copy);
			rows[i].version.manifest_path = e[i].copy.final_path;
			rows[i].version.has_manifest_size = true;
			rows[i].version.manifest_size = e[i].copy.size;
			rows[i].version.e_tag = NULL;
		}
	}

	if (name_elements)
		ln_error_set_element(NULL);
	catalog_insert_versions(n, rows, inserted);
	for (int i = 0; i < n; i++)
		missing[i] = !inserted[i];
	if (first_in_request_order(e, n, missing) >= 0)
	{
		/*
		 * A version left out is of a table deleted meanwhile (the insert
		 * waited for the transaction that deleted it: the table does not
		 * exist), or one another writer took (a retry with the next
		 * version succeeds).  The first is what is true whatever else.
		 */
		bool *exists = palloc(sizeof(bool) * (n + 1));

		catalog_tables_exist(n, table_ids, exists);
		for (int i = 0; i < n; i++)
			missing[i] = !exists[i];
		if ((at = first_in_request_order(e, n, missing)) >= 0)
		{
			name_element(name_elements, e[at].index);
			ln_error(LN_TABLE_NOT_FOUND, "table \"%s\" does not exist",
					 ln_id_string(&e[at].req->id, e[at].req->id.len));
		}
		for (int i = 0; i < n; i++)
			missing[i] = !inserted[i];
		at = first_in_request_order(e, n, missing);
		name_element(name_elements, e[at].index);
		ln_error(LN_CONCURRENT_MODIFICATION,
				 "version " INT64_FORMAT " of table \"%s\" already exists", e[at].req->version,
				 ln_id_string(&e[at].req->id, e[at].req->id.len));
	}

	for (int i = 0; i < n; i++)
	{
		if (e[i].declared)
		{
			newly_with_data[nnewly++] = e[i].table_id;
			for (int j = i + 1; j < n; j++)
				if (e[j].table_id == e[i].table_id)
					e[j].declared = false;
		}
	}
	if (nnewly > 0)
		catalog_mark_tables_with_data(nnewly, newly_with_data);

	for (int i = 0; i < n; i++)
	{
		if (e[i].managed)
		{
			name_element(name_elements, e[i].index);
			storage_materialize_manifest(&e[i].copy);
		}
		out[e[i].index] = rows[i].version;
		changes_touch(&e[i].req->id, e[i].req->id.len, false, e[i].req->version, e[i].table_id);
	}
	if (name_elements)
		ln_error_set_element(NULL);
}

/* The requested version of a table (on its branch), or its latest; false if there is none. */
bool
versions_find(const LnRequest *req, const CatalogObject *table, LnTableVersion *out)
{
	const char *branch = branch_key(req, table->location);
	LnTableVersion *latest;

	if (req->present & LN_REQ_VERSION)
		return catalog_get_version(table->id, branch, req->version, out);
	if (catalog_list_versions(table->id, branch, true, -1, 1, &latest) == 0)
		return false;
	*out = latest[0];
	return true;
}

/* As versions_find, raising LN011 if there is no such version. */
void
versions_get(const LnRequest *req, const CatalogObject *table, LnTableVersion *out)
{
	if (versions_find(req, table, out))
		return;
	if (req->present & LN_REQ_VERSION)
		ln_error(LN_TABLE_VERSION_NOT_FOUND,
				 "version " INT64_FORMAT " of table \"%s\" does not exist", req->version,
				 ln_id_string(&req->id, req->id.len));
	ln_error(LN_TABLE_VERSION_NOT_FOUND, "table \"%s\" has no versions",
			 ln_id_string(&req->id, req->id.len));
}
