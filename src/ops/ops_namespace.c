/*
 * ops_namespace.c
 *		Namespace operations: CreateNamespace, ListNamespaces,
 *		DescribeNamespace, DropNamespace, NamespaceExists.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../model/objects.h"
#include "../storage/location.h"
#include "../storage/storage.h"
#include "ops_namespace.h"

typedef enum CreateMode
{
	CREATE_MODE_CREATE,
	CREATE_MODE_EXIST_OK,
	CREATE_MODE_OVERWRITE
} CreateMode;

static const LnEnumValue create_modes[] = {{"Create", CREATE_MODE_CREATE},
										   {"ExistOk", CREATE_MODE_EXIST_OK},
										   {"Overwrite", CREATE_MODE_OVERWRITE},
										   {NULL, 0}};

typedef enum DropMode
{
	DROP_MODE_FAIL,
	DROP_MODE_SKIP
} DropMode;

static const LnEnumValue drop_modes[] = {
	{"Fail", DROP_MODE_FAIL}, {"Skip", DROP_MODE_SKIP}, {NULL, 0}};

typedef enum DropBehavior
{
	DROP_RESTRICT,
	DROP_CASCADE
} DropBehavior;

static const LnEnumValue drop_behaviors[] = {
	{"Restrict", DROP_RESTRICT}, {"Cascade", DROP_CASCADE}, {NULL, 0}};

/*
 * CreateNamespace.  The parent is found with a key share lock, so that a
 * create waits for a concurrent drop of its parent and then answers that
 * the parent does not exist.  The insert itself decides whether the name is
 * free, so that of two concurrent creators exactly one creates; the other
 * then finds the winner's namespace (or table) and follows its mode.
 */
/*
 * Where the catalog manages versions (below lance_namespace.local_roots or
 * an S3 storage setting) it writes and removes files, and vends credentials
 * for the tables to their callers: which tables go there is an
 * administrator's choice.  A namespace's "location" property is where its
 * tables go, and its namespaces' tables below, one folder per level.  So
 * another role may give a namespace a location only where no managed prefix
 * is at it, above it, or below it (a child's folder would reach that one),
 * and where no table's folder is at, in or around it: its tables would go
 * into another table's folder, and a setting made later could not manage
 * both (lance_set_storage refuses tables in one another's folders).
 * Locations are compared folder by folder in one spelling
 * (location_folder_key): "s3://lake/x/../cat/" is "s3://lake/cat".
 */
static void
check_location_property(const LnRequest *req, const LnMap *properties)
{
	const char *location = ln_map_get(properties, "location");
	char *folder;
	char **roots;
	int nroots;

	if (location == NULL)
		return;
	storage_check_location_spelling(location);
	if (location[0] == '\0' || access_caller_is_admin())
		return;
	/*
	 * No local path and no S3 location: another store's, where nothing is
	 * ever managed, or a spelling the catalog cannot place, which a client
	 * may read as a managed prefix (" s3://lake/cat", "s3a://lake/cat").
	 */
	folder = location_folder_key(location);
	if (folder == NULL)
	{
		if (!location_is_other_store(location))
			ln_error_detail(LN_INVALID_INPUT,
							"Give an s3:// URI, an absolute local path or a URI of another store "
							"(gs://, az://, ...), or ask an administrator.",
							"the catalog cannot tell where location \"%s\" of namespace \"%s\" is",
							location_for_message(location), ln_id_string(&req->id, req->id.len));
		return;
	}
	if (storage_managing_prefix(location) != NULL || storage_local_root_below(location) != NULL ||
		(!storage_is_local(location) && catalog_storage_below(folder) != NULL))
		ln_error_detail(LN_PERMISSION_DENIED,
						"Create the namespace without a location, or ask an administrator.",
						"only an administrator gives namespace \"%s\" a location at, inside or "
						"around a folder where the catalog manages versions (lance_namespace."
						"local_roots or a storage setting)",
						ln_id_string(&req->id, req->id.len));
	nroots = catalog_placement_roots(&roots);
	/* a table around a root (lance_stats()'s tables_around_roots) stops nobody: ops_table.c */
	if (catalog_table_in_the_way(folder, CATALOG_ROOT_ID, (const char *const *)roots, nroots) !=
		NULL)
		ln_error_detail(LN_PERMISSION_DENIED,
						"Choose a folder apart from every table's, or ask an administrator.",
						"only an administrator gives namespace \"%s\" a location at, inside or "
						"around a table's folder",
						ln_id_string(&req->id, req->id.len));
}

/*
 * A namespace without a "location" property places its tables below its
 * parent's location (the closest property above, or lance_namespace.root),
 * in a folder of its name; where locations are read with their escapes
 * decoded (S3, file URIs), a '/' in the name makes that several folders.
 * Another role than an administrator may not enter so a managed prefix that
 * its parent's location is not in: checked where the location is derived,
 * for every namespace made, so that no chain of them gets there either.
 */
static void
check_derived_location(const LnRequest *req, const LocationBase *base, const LnMap *properties)
{
	const char *location = ln_map_get(properties, "location");
	const char *from_base = base->base;
	int level = base->level;
	LnId parent_below;
	LnId below;
	char *from;
	char *to;
	char *prefix;
	char *from_folder;

	if ((location != NULL && location[0] != '\0') || access_caller_is_admin())
		return;
	if (from_base == NULL)
	{
		from_base = location_root();
		level = 0;
	}
	if (from_base == NULL)
		return; /* nothing is derived here */
	parent_below.names = req->id.names + level;
	parent_below.len = req->id.len - 1 - level;
	below = parent_below;
	below.len++;
	from = location_for_namespace(from_base, &parent_below);
	to = location_for_namespace(from_base, &below);
	/* a name that cannot be a folder derives nothing (DeclareTable refuses it) */
	if (from == NULL || to == NULL)
		return;
	prefix = storage_managing_prefix(to);
	if (prefix == NULL)
		return;
	from_folder = location_folder_key(from);
	if (from_folder != NULL && location_folder_within(from_folder, prefix))
		return;
	ln_error_detail(LN_PERMISSION_DENIED, "Choose another name, or ask an administrator.",
					"only an administrator creates namespace \"%s\": its tables would go inside a "
					"folder where the catalog manages versions (lance_namespace.local_roots or a "
					"storage setting) that its parent's tables are not in",
					ln_id_string(&req->id, req->id.len));
}

void
op_create_namespace(const LnRequest *req, LnResponse *resp)
{
	CreateMode mode = ln_parse_enum(req->mode, "mode", create_modes, CREATE_MODE_CREATE);
	LnMap properties = (req->present & LN_REQ_PROPERTIES) ? req->properties : ln_empty_map();
	const char *name;
	CatalogObject parent;
	CatalogObject existing;
	LocationBase base;

	ln_require_id(req);
	check_location_property(req, &properties);
	if (req->id.len == 0)
	{
		if (mode != CREATE_MODE_EXIST_OK)
			ln_error(LN_NAMESPACE_ALREADY_EXISTS, "the root namespace always exists");
		resp->fields = LN_RESP_PROPERTIES;
		resp->properties = ln_empty_map();
		return;
	}
	name = req->id.names[req->id.len - 1];

	if (!objects_find_namespace(&req->id, req->id.len - 1, CATALOG_KEY_SHARE, &parent, &base))
		ln_error(LN_NAMESPACE_NOT_FOUND, "parent namespace \"%s\" does not exist",
				 ln_id_string(&req->id, req->id.len - 1));

	resp->fields = LN_RESP_PROPERTIES;
	resp->properties = properties;
	for (;;)
	{
		int64 id = catalog_insert_object(parent.id, false, name, &properties, NULL, false, false,
										 access_caller());

		if (id != 0)
		{
			check_derived_location(req, &base, &properties);
			changes_touch(&req->id, req->id.len, true, -1, id);
			return;
		}
		/* the name is taken; by what, now that the one who took it has committed */
		if (catalog_lookup_child(
				parent.id, name,
				mode == CREATE_MODE_OVERWRITE ? CATALOG_FOR_UPDATE : CATALOG_NO_LOCK, &existing))
			break;
		/* removed by a transaction that committed since: the name is free again */
		CHECK_FOR_INTERRUPTS();
	}
	if (existing.is_table)
		ln_error(LN_NAMESPACE_ALREADY_EXISTS,
				 "cannot create namespace \"%s\": a table of that name exists",
				 ln_id_string(&req->id, req->id.len));

	switch (mode)
	{
		case CREATE_MODE_CREATE:
			ln_error(LN_NAMESPACE_ALREADY_EXISTS, "namespace \"%s\" already exists",
					 ln_id_string(&req->id, req->id.len));
		case CREATE_MODE_EXIST_OK:
			resp->properties = existing.properties;
			break;
		case CREATE_MODE_OVERWRITE:
			/* Overwrite is a drop and a create: it needs manage, as the drop does */
			access_require(existing.id, &req->id, req->id.len, true, LN_PRIV_MANAGE);
			/* the drop restricts, as by default */
			if (catalog_has_children(existing.id))
				ln_error(LN_NAMESPACE_NOT_EMPTY,
						 "cannot overwrite namespace \"%s\": it contains tables or namespaces",
						 ln_id_string(&req->id, req->id.len));
			check_derived_location(req, &base, &properties);
			catalog_set_properties(existing.id, &properties);
			changes_touch(&req->id, req->id.len, true, -1, existing.id);
			break;
	}
}

void
op_list_namespaces(const LnRequest *req, LnResponse *resp)
{
	int limit = ln_page_limit(req);
	const char *after = req->page_token ? req->page_token : "";
	CatalogObject ns;

	ln_require_id(req);
	objects_get_namespace(&req->id, req->id.len, CATALOG_NO_LOCK, &ns, NULL);

	resp->fields = LN_RESP_NAMESPACES;
	resp->nnames = catalog_list_children(ns.id, false, true, after, limit + 1, access_list_reader(),
										 &resp->names);
	ln_cut_page(resp, limit);
}

void
op_describe_namespace(const LnRequest *req, LnResponse *resp)
{
	CatalogObject ns;

	ln_require_id(req);
	objects_get_namespace(&req->id, req->id.len, CATALOG_NO_LOCK, &ns, NULL);
	resp->fields = LN_RESP_PROPERTIES;
	resp->properties = ns.properties;
}

void
op_namespace_exists(const LnRequest *req, LnResponse *resp)
{
	CatalogObject ns;

	ln_require_id(req);
	objects_get_namespace(&req->id, req->id.len, CATALOG_NO_LOCK, &ns, NULL);
	resp->fields = 0; /* exists: an empty answer */
}

/*
 * DropNamespace.  The namespace row is locked first: a transaction adding a
 * child holds a key lock on it, so the lock waits for that transaction and the
 * emptiness check then sees its child.
 */
void
op_drop_namespace(const LnRequest *req, LnResponse *resp)
{
	DropMode mode = ln_parse_enum(req->mode, "mode", drop_modes, DROP_MODE_FAIL);
	DropBehavior behavior = ln_parse_enum(req->behavior, "behavior", drop_behaviors, DROP_RESTRICT);
	CatalogObject ns;

	ln_require_id(req);
	if (req->id.len == 0)
		ln_error(LN_INVALID_INPUT, "the root namespace cannot be dropped");

	if (!objects_find_namespace(&req->id, req->id.len, CATALOG_FOR_UPDATE, &ns, NULL))
	{
		if (mode == DROP_MODE_SKIP)
			return;
		ln_error(LN_NAMESPACE_NOT_FOUND, "namespace \"%s\" does not exist",
				 ln_id_string(&req->id, req->id.len));
	}

	if (behavior == DROP_RESTRICT)
	{
		if (catalog_has_children(ns.id))
			ln_error_detail(LN_NAMESPACE_NOT_EMPTY,
							"Drop its tables and namespaces first, or drop with behavior Cascade.",
							"namespace \"%s\" is not empty", ln_id_string(&req->id, req->id.len));
		catalog_delete_object(ns.id);
	}
	else
		catalog_delete_subtree(ns.id);
	changes_touch(&req->id, req->id.len, true, -1, ns.id);

	resp->fields = LN_RESP_PROPERTIES;
	resp->properties = ns.properties;
}
