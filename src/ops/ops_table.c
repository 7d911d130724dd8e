/*
 * ops_table.c
 *		Table catalog operations: ListTables, ListAllTables, DeclareTable,
 *		RegisterTable, DescribeTable, TableExists, DeregisterTable,
 *		RenameTable, DropTable.
 */
#include "postgres.h"

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../model/objects.h"
#include "../model/refs.h"
#include "../model/versions.h"
#include "../storage/location.h"
#include "../storage/storage.h"
#include "ops_table.h"

typedef enum RegisterMode
{
	REGISTER_MODE_CREATE,
	REGISTER_MODE_OVERWRITE
} RegisterMode;

static const LnEnumValue register_modes[] = {
	{"Create", REGISTER_MODE_CREATE}, {"Overwrite", REGISTER_MODE_OVERWRITE}, {NULL, 0}};

static char *
table_name_of(const LnRequest *req)
{
	return req->id.names[req->id.len - 1];
}

static void
raise_name_taken(const LnId *id, const CatalogObject *existing)
{
	if (existing->is_table)
		ln_error(LN_TABLE_ALREADY_EXISTS, "table \"%s\" already exists", ln_id_string(id, id->len));
	ln_error(LN_TABLE_ALREADY_EXISTS,
			 "cannot use the name of table \"%s\": a namespace of that name exists",
			 ln_id_string(id, id->len));
}

/*
 * Fill the members every answer about one table carries.  A Lance writer
 * commits through the catalog only when managed_versioning is true, which
 * it is for tables whose manifests the catalog can write.
 */
static void
describe_table_entry(const LnRequest *req, const CatalogObject *table, bool writer,
					 LnResponse *resp)
{
	resp->fields |= LN_RESP_LOCATION | LN_RESP_STORAGE_OPTIONS | LN_RESP_PROPERTIES |
					LN_RESP_MANAGED_VERSIONING;
	resp->location = table->location;
	resp->storage_options = ln_empty_map();
	resp->properties = table->properties;
	resp->managed_versioning = storage_is_managed(table->location);
	/*
	 * What a Lance client opens the table with: the caller reads
	 * (DescribeTable) or writes (DeclareTable) the table, which the frame
	 * checked, and is handed what its privilege on the table allows, as the
	 * storage setting vends it (storage_vend.c): a writer (write or manage on
	 * the table; the maker of a declared one) the writers' credentials, any
	 * other caller the readers'.  vend_credentials false asks for none.
	 */
	if (!((req->present & LN_REQ_VEND_CREDENTIALS) && !req->vend_credentials) &&
		!storage_is_local(table->location))
		(void)storage_vend_options(table->location,
								   writer || access_may(table->id, LN_PRIV_WRITE) ? LN_PRIV_WRITE
																				  : LN_PRIV_READ,
								   &resp->storage_options);
}

void
op_list_tables(const LnRequest *req, LnResponse *resp)
{
	int limit = ln_page_limit(req);
	const char *after = req->page_token ? req->page_token : "";
	CatalogObject ns;

	ln_require_id(req);
	objects_get_namespace(&req->id, req->id.len, CATALOG_NO_LOCK, &ns, NULL);

	resp->fields = LN_RESP_TABLES;
	if (limit > 0)
		resp->nnames = catalog_list_children(ns.id, true, req->include_declared, after, limit + 1,
											 access_list_reader(), &resp->names);
	ln_cut_page(resp, limit);
}

/*
 * ListAllTables pages through tables in the order they were made; the page
 * token names the last table's internal number, so that tables renamed or
 * added while a caller pages are neither skipped nor repeated.  The number
 * is sealed (catalog_page_token): as it is, it would tell how many tables
 * were made between two pages, those the caller may not see included.
 */
void
op_list_all_tables(const LnRequest *req, LnResponse *resp)
{
	int limit = ln_page_limit(req);
	int64 after_id = 0;
	int64 *ids = NULL;
	LnId *paths = NULL;
	int n = 0;

	if (req->page_token != NULL && req->page_token[0] != '\0' &&
		!catalog_page_token_position(req->page_token, &after_id))
		ln_error(LN_INVALID_INPUT, "field \"page_token\" is not a token this catalog returned");

	if (limit > 0)
		n = catalog_list_all_tables(req->include_declared, after_id, limit + 1,
									access_list_reader(), &ids, &paths);

	resp->fields = LN_RESP_TABLES;
	resp->nnames = Min(n, limit);
	resp->names = palloc(sizeof(char *) * (resp->nnames + 1));
	for (int i = 0; i < resp->nnames; i++)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		for (int j = 0; j < paths[i].len; j++)
			appendStringInfo(&buf, "%s%s", j ? req->delimiter : "", paths[i].names[j]);
		resp->names[i] = buf.data;
	}
	if (n > limit && limit > 0)
	{
		resp->fields |= LN_RESP_PAGE_TOKEN;
		resp->page_token = catalog_page_token(ids[limit - 1]);
	}
}

/*
 * A table's folder holds every folder below it: a table at or above a folder
 * where the catalog places tables (lance_namespace.root, a local root, a
 * storage setting's prefix) or a namespace's "location" would be around
 * every table placed there, and its tables' folders inside another table's
 * (which the checks below, and a storage setting made later, refuse).  Only
 * an administrator places a table so; another role's is refused (LN015) as
 * a namespace location there is (ops_namespace.c).  Any spelling counts:
 * folders are compared in location_folder_key's.
 */
static void
check_location_holds_no_root(const LnRequest *req, const char *location)
{
	char *folder;
	char *prefix;
	const char *root = location_root();
	char *root_folder;
	const char *what = NULL;

	if (access_caller_is_admin())
		return;
	folder = location_folder_key(location);
	if (folder == NULL)
		return; /* another store's: the catalog places nothing there */
	root_folder = root ? location_folder_key(root) : NULL;
	prefix = storage_managing_prefix(location);
	if (root_folder != NULL && location_folder_within(root_folder, folder))
		what = "lance_namespace.root, where the catalog places tables";
	else if ((prefix != NULL && location_folder_within(prefix, folder)) ||
			 storage_local_root_below(location) != NULL ||
			 (!storage_is_local(location) && catalog_storage_below(folder) != NULL))
		what = "a folder where the catalog manages versions (lance_namespace.local_roots or a "
			   "storage setting)";
	else if (catalog_namespace_located_within(folder))
		what = "a namespace's location";
	if (what != NULL)
		ln_error_detail(LN_PERMISSION_DENIED,
						"Give the table a folder of its own, or declare it without a location and "
						"the catalog chooses one; or ask an administrator.",
						"only an administrator places table \"%s\" at or above %s: every table "
						"placed there would be inside its folder",
						ln_id_string(&req->id, req->id.len), what);
}

/*
 * The catalog writes manifests, tags and branches in the folder of a managed
 * table: two entries on one folder would overwrite each other's.  A managed
 * location must be no other table's.
 */
static void
check_location_free(const LnRequest *req, const char *location, int64 except_id)
{
	char *path;
	char **roots;
	int nroots;
	char *in_the_way;

	storage_check_location(location);
	if (req->location != NULL)
		check_location_holds_no_root(req, location);
	if (!storage_is_managed(location))
		return;
	/*
	 * Below the local roots the catalog writes, and removes, files: a folder
	 * a caller names there could be anyone's, or where tables the catalog
	 * places will go.  Only an administrator names one; others let the
	 * catalog choose (DeclareTable without a location).
	 */
	if (req->location != NULL && !access_caller_is_admin())
		ln_error_detail(LN_PERMISSION_DENIED,
						"Declare the table without a location and the catalog chooses its folder, "
						"or ask an administrator.",
						"only an administrator places table \"%s\" at a folder of its choice below "
						"%s",
						ln_id_string(&req->id, req->id.len),
						storage_is_local(location) ? "lance_namespace.local_roots"
												   : "a storage setting");
	path = location_folder_key(location);
	/* exclusive: two registrations of one folder must not both find it free */
	storage_lock_folder(path, true);
	if (catalog_location_taken(path, except_id))
		ln_error(LN_INVALID_INPUT, "location \"%s\" of table \"%s\" is another table's folder",
				 location, ln_id_string(&req->id, req->id.len));
	/*
	 * The catalog writes manifests, tags and branches below a managed table's
	 * folder, and removes branches' folders there: a table in or around
	 * another's folder could reach into it.  Only an administrator nests
	 * tables so.
	 */
	if (access_caller_is_admin())
		return;
	nroots = catalog_placement_roots(&roots);
	in_the_way = catalog_table_in_the_way(path, except_id, (const char *const *)roots, nroots);
	if (in_the_way == NULL)
		return;
	/*
	 * The caller may not be able to see the table in the way: its name goes
	 * to the server log alone (never to the client, whatever its
	 * client_min_messages), for the administrator who can move it.
	 */
	ereport(LOG_SERVER_ONLY,
			(errmsg("lance_namespace: table \"%s\" is in the way of table \"%s\"", in_the_way,
					ln_id_string(&req->id, req->id.len)),
			 errdetail("The folder of table \"%s\" is at, inside or around \"%s\".", in_the_way,
					   location),
			 errhint("Move or deregister table \"%s\", or place \"%s\" elsewhere.", in_the_way,
					 ln_id_string(&req->id, req->id.len))));
	if (req->location == NULL)
		ln_error_detail(LN_INVALID_INPUT,
						"Declare the table in another namespace, or ask an administrator to move "
						"the table in the way (the server log names it).",
						"the folder the catalog chose for table \"%s\" (\"%s\") is inside or "
						"around another table's folder",
						ln_id_string(&req->id, req->id.len), location);
	ln_error_detail(LN_INVALID_INPUT,
					"Choose a folder apart from every other table's, or ask an administrator (the "
					"server log names the table in the way).",
					"location \"%s\" of table \"%s\" is inside or around another table's folder",
					location, ln_id_string(&req->id, req->id.len));
}

/*
 * A table's name may spell several folders where locations are read with
 * their escapes decoded (a '/' in it, on S3 or in a file URI): another role
 * than an administrator may not enter so a managed prefix that the table's
 * namespace is not in (CreateNamespace checks each namespace's own name).
 * One look-up of the setting that covers the location, which the answer
 * needs anyway: no statement.
 */
static void
check_name_stays_out(const LnRequest *req, const char *ns_location, const char *location)
{
	char *prefix = storage_managing_prefix(location);
	char *ns_folder;

	if (prefix == NULL)
		return;
	ns_folder = location_folder_key(ns_location);
	if (ns_folder != NULL && location_folder_within(ns_folder, prefix))
		return;
	ln_error_detail(LN_PERMISSION_DENIED, "Choose another name, or ask an administrator.",
					"only an administrator declares table \"%s\": its name would take it inside a "
					"folder where the catalog manages versions (lance_namespace.local_roots or a "
					"storage setting) that its namespace's tables are not in",
					ln_id_string(&req->id, req->id.len));
}

/* The location a declared table gets when the request gives none. */
static char *
derive_location(const LnRequest *req, int64 ns_id, const LocationBase *base)
{
	LnId below;
	char *location;
	const char *root = base->base;
	int level = base->level;
	CatalogObject existing;

	/* a name that is taken answers as taken, whatever the location would have been */
	if (catalog_lookup_child(ns_id, table_name_of(req), CATALOG_NO_LOCK, &existing))
		raise_name_taken(&req->id, &existing);

	if (root == NULL)
	{
		root = location_root();
		level = 0;
	}
	if (root == NULL || root[0] == '\0')
		ln_error_detail(LN_INVALID_INPUT,
						"Give a location, set a \"location\" property on one of its namespaces, "
						"or set lance_namespace.root.",
						"no location for table \"%s\"", ln_id_string(&req->id, req->id.len));

	below.len = req->id.len - 1 - level;
	below.names = req->id.names + level;
	location = location_for_new_table(root, &below, table_name_of(req));
	if (!access_caller_is_admin())
		check_name_stays_out(req, location_for_namespace(root, &below), location);
	return location;
}

/*
 * DeclareTable.  The namespace is found with a key share lock: a declaration
 * waits for a concurrent drop of it and then answers that it does not
 * exist.  The insert decides whether the name is free (LN005 if not, the
 * operation's own precondition) before the location is checked, so that a
 * table declared again answers that it exists, not that its folder is
 * taken (by itself).
 */
void
op_declare_table(const LnRequest *req, LnResponse *resp)
{
	LnMap properties = (req->present & LN_REQ_PROPERTIES) ? req->properties : ln_empty_map();
	CatalogObject ns;
	CatalogObject table;
	LocationBase base;

	ln_require_table_id(req);
	objects_get_namespace(&req->id, req->id.len - 1, CATALOG_KEY_SHARE, &ns, &base);

	memset(&table, 0, sizeof(table));
	table.is_table = true;
	table.declared = true;
	table.properties = properties;
	table.location = req->location ? req->location : derive_location(req, ns.id, &base);

	for (;;)
	{
		CatalogObject existing;

		table.id =
			catalog_insert_object(ns.id, true, table_name_of(req), &properties, table.location,
								  true, req->location == NULL, access_caller());
		if (table.id != 0)
			break;
		/* the name is taken; by what, now that the one who took it has committed */
		if (catalog_lookup_child(ns.id, table_name_of(req), CATALOG_NO_LOCK, &existing))
			raise_name_taken(&req->id, &existing);
		/* removed by a transaction that committed since: the name is free again */
		CHECK_FOR_INTERRUPTS();
	}
	check_location_free(req, table.location, table.id);
	changes_touch(&req->id, req->id.len, false, -1, table.id);
	describe_table_entry(req, &table, true, resp);
}

void
op_register_table(const LnRequest *req, LnResponse *resp)
{
	RegisterMode mode = ln_parse_enum(req->mode, "mode", register_modes, REGISTER_MODE_CREATE);
	LnMap properties = (req->present & LN_REQ_PROPERTIES) ? req->properties : ln_empty_map();
	CatalogObject ns;
	CatalogObject existing;
	int64 id;

	ln_require_table_id(req);
	if (req->location == NULL)
		ln_error(LN_INVALID_INPUT, "field \"location\" is required");
	/* as DeclareTable: the namespace with a key share lock, the name before the location */
	objects_get_namespace(&req->id, req->id.len - 1, CATALOG_KEY_SHARE, &ns, NULL);

	for (;;)
	{
		id = catalog_insert_object(ns.id, true, table_name_of(req), &properties, req->location,
								   false, false, access_caller());
		if (id != 0)
			break;
		if (catalog_lookup_child(ns.id, table_name_of(req), CATALOG_FOR_UPDATE, &existing))
		{
			if (mode != REGISTER_MODE_OVERWRITE || !existing.is_table)
				raise_name_taken(&req->id, &existing);
			/* pointing another's table elsewhere needs manage on it */
			access_require(existing.id, &req->id, req->id.len, false, LN_PRIV_MANAGE);
			catalog_reregister_table(existing.id, req->location, &properties);
			id = existing.id;
			break;
		}
		/* removed by a transaction that committed since: the name is free again */
		CHECK_FOR_INTERRUPTS();
	}
	check_location_free(req, req->location, id);
	changes_touch(&req->id, req->id.len, false, -1, id);

	resp->fields = LN_RESP_LOCATION | LN_RESP_PROPERTIES;
	resp->location = req->location;
	resp->properties = properties;
}

/*
 * The version DescribeTable and TableExists ask about: `version` on
 * `branch`, or the version `tag` names (not with either), or nothing to
 * check.  Answers its number in resp, if not NULL.
 */
static void
describe_table_at(const LnRequest *req, const CatalogObject *table, LnResponse *resp)
{
	LnRequest at = *req;
	LnTableVersion version;

	if (req->tag != NULL)
	{
		LnRefContents tag;

		if (req->present & LN_REQ_VERSION)
			ln_error(LN_INVALID_INPUT, "give \"tag\" or \"version\", not both");
		if (req->branch != NULL)
			ln_error(LN_INVALID_INPUT, "give \"tag\" or \"branch\", not both");
		refs_get_tag(req, table, &tag);
		at.present |= LN_REQ_VERSION;
		at.version = tag.version;
		at.branch = tag.branch;
	}
	else if ((req->present & LN_REQ_VERSION) == 0)
	{
		(void)branch_key(req, table->location); /* a branch that does not exist is LN022 */
		return;
	}
	versions_get(&at, table, &version);
	if (resp != NULL)
	{
		resp->fields |= LN_RESP_VERSION_NUMBER;
		resp->version_number = version.version;
	}
}

void
op_describe_table(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;

	ln_require_table_id(req);
	objects_get_table(&req->id, CATALOG_NO_LOCK, &table);
	describe_table_entry(req, &table, false, resp);
	describe_table_at(req, &table, resp);
	if (req->with_table_uri)
	{
		resp->fields |= LN_RESP_TABLE_URI;
		resp->table_uri = location_to_uri(table.location);
	}
	if (req->check_declared)
	{
		resp->fields |= LN_RESP_IS_ONLY_DECLARED;
		resp->is_only_declared = table.declared;
	}
	if (req->load_detailed_metadata)
	{
		/* the catalog never opens the dataset: it answers what it knows */
		resp->fields |= LN_RESP_TABLE | LN_RESP_NAMESPACE;
		resp->table = table.name;
		resp->namespace_id = ln_id_prefix(&req->id, req->id.len - 1);
	}
}

void
op_table_exists(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;

	ln_require_table_id(req);
	objects_get_table(&req->id, CATALOG_NO_LOCK, &table);
	describe_table_at(req, &table, NULL);
	resp->fields = 0; /* exists: an empty answer */
}

/* Remove the table's entry, and answer what it was. */
static void
remove_table_entry(const LnRequest *req, LnResponse *resp, CatalogObject *table)
{
	ln_require_table_id(req);
	objects_get_table(&req->id, CATALOG_FOR_UPDATE, table);
	catalog_delete_object(table->id);
	changes_touch(&req->id, req->id.len, false, -1, table->id);

	resp->fields = LN_RESP_ID | LN_RESP_LOCATION | LN_RESP_PROPERTIES;
	resp->id = req->id;
	resp->location = table->location;
	resp->properties = table->properties;
}

/* DeregisterTable: the entry goes, the data stays. */
void
op_deregister_table(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;

	remove_table_entry(req, resp, &table);
}

/*
 * DropTable: the entry goes in the caller's transaction.  The data of a
 * table under lance_namespace.local_roots at a location the catalog chose
 * (DeclareTable without one) is queued for removal: the log entry's status
 * is Queued, and lance_process_drops() removes it later, outside any user
 * transaction.  A folder a caller named (RegisterTable, DeclareTable with a
 * location) may hold anything, so the catalog never removes it: there, and
 * elsewhere, the caller removes the data at the location the answer carries.
 */
void
op_drop_table(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;

	remove_table_entry(req, resp, &table);
	if (table.location_derived && storage_is_managed(table.location))
		changes_queue_drop(table.location);
}

/*
 * RenameTable.  Locks are taken namespace first, then table, as a Cascade
 * drop takes them, so that the two never wait for each other in a cycle:
 * the target namespace with a key share lock (a rename into a namespace
 * dropped meanwhile answers that it does not exist), then the table FOR
 * UPDATE (a table deregistered or renamed meanwhile does not exist).  The
 * new name is checked, and the update itself decides: a name another
 * transaction took meanwhile (a rename, a declaration, a namespace) answers
 * LN005 once that transaction has committed.
 */
void
op_rename_table(const LnRequest *req, LnResponse *resp)
{
	CatalogObject table;
	CatalogObject target;
	CatalogObject existing;
	const LnId *target_id =
		(req->present & LN_REQ_NEW_NAMESPACE_ID) ? &req->new_namespace_id : &req->id;
	int target_len =
		(req->present & LN_REQ_NEW_NAMESPACE_ID) ? req->new_namespace_id.len : req->id.len - 1;

	ln_require_table_id(req);
	if (req->new_table_name == NULL)
		ln_error(LN_INVALID_INPUT, "field \"new_table_name\" is required");

	/* the table first, unlocked, so that a missing table is reported before a missing target */
	objects_get_table(&req->id, CATALOG_NO_LOCK, &table);
	objects_get_namespace(target_id, target_len, CATALOG_KEY_SHARE, &target, NULL);
	objects_get_table(&req->id, CATALOG_FOR_UPDATE, &table);
	for (int attempt = 0;; attempt++)
	{
		if (catalog_lookup_child(target.id, req->new_table_name, CATALOG_NO_LOCK, &existing))
		{
			char *target_ns = ln_id_string(target_id, target_len);

			ln_error(LN_TABLE_ALREADY_EXISTS,
					 "cannot rename table \"%s\": namespace \"%s\" already has a %s named \"%s\"",
					 ln_id_string(&req->id, req->id.len), target_ns,
					 existing.is_table ? "table" : "namespace", req->new_table_name);
		}
		if (catalog_move_object(table.id, target.id, req->new_table_name))
			break;
		/*
		 * Taken by a transaction that committed meanwhile: the look-up now
		 * sees what took it, unless this transaction's snapshot predates it
		 * (REPEATABLE READ, SERIALIZABLE), where it never will.
		 */
		if (IsolationUsesXactSnapshot() || attempt >= 2)
			ln_error(LN_TABLE_ALREADY_EXISTS,
					 "cannot rename table \"%s\": the name \"%s\" was taken by a concurrent "
					 "transaction",
					 ln_id_string(&req->id, req->id.len), req->new_table_name);
		CHECK_FOR_INTERRUPTS();
	}
	changes_touch(&req->id, req->id.len, false, -1, table.id);
	{
		LnId renamed = {target_len + 1, palloc(sizeof(char *) * (target_len + 1))};

		memcpy(renamed.names, target_id->names, sizeof(char *) * target_len);
		renamed.names[target_len] = req->new_table_name;
		changes_touch(&renamed, renamed.len, false, -1, table.id);
	}
	resp->fields = 0;
}
