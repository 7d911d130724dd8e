/*
 * objects.c
 *		Find namespaces and tables by their list-form ids.
 */
#include "postgres.h"

#include "../common/error.h"
#include "../common/request.h"
#include "objects.h"

/*
 * The id of the namespace the first `len` names of `id` name, or -1 if a
 * name is missing or names a table.  Reads only keys: no properties.
 */
int64
objects_namespace_id(const LnId *id, int len)
{
	int64 ns = CATALOG_ROOT_ID;

	for (int i = 0; i < len; i++)
	{
		bool is_table;

		if (!catalog_lookup_child_id(ns, id->names[i], &ns, &is_table) || is_table)
			return -1;
	}
	return ns;
}

/*
 * Walk from the root down the first `len` names of `id`.  Returns false if a
 * name is missing or names a table.  The last namespace gets the row lock
 * `lock`: FOR_UPDATE (to drop it) waits for (and then sees) any concurrent
 * transaction that is adding a child to it; KEY_SHARE (to add a child)
 * waits for a concurrent drop, after which the namespace is not found, and
 * keeps it from being dropped until the caller's transaction ends.  The
 * root needs no lock: it is never dropped.  `base`, if not NULL, receives
 * the closest "location" property on the way.
 */
bool
objects_find_namespace(const LnId *id, int len, CatalogLock lock, CatalogObject *ns,
					   LocationBase *base)
{
	memset(ns, 0, sizeof(CatalogObject));
	ns->id = CATALOG_ROOT_ID;
	ns->name = "";
	ns->properties = ln_empty_map();
	if (base != NULL)
	{
		base->base = NULL;
		base->level = 0;
	}

	/* without a base to find, the namespaces above the last one need only their keys */
	if (base == NULL && len > 1)
	{
		ns->id = objects_namespace_id(id, len - 1);
		if (ns->id < 0)
			return false;
	}
	for (int i = (base == NULL && len > 1) ? len - 1 : 0; i < len; i++)
	{
		if (!catalog_lookup_child(ns->id, id->names[i], i == len - 1 ? lock : CATALOG_NO_LOCK,
								  ns) ||
			ns->is_table)
			return false;
		if (base != NULL)
		{
			const char *location = ln_map_get(&ns->properties, "location");

			if (location != NULL && location[0] != '\0')
			{
				base->base = location;
				base->level = i + 1;
			}
		}
	}
	return true;
}

void
objects_get_namespace(const LnId *id, int len, CatalogLock lock, CatalogObject *ns,
					  LocationBase *base)
{
	if (!objects_find_namespace(id, len, lock, ns, base))
		ln_error(LN_NAMESPACE_NOT_FOUND, "namespace \"%s\" does not exist", ln_id_string(id, len));
}

/* Find the table `id` names; its namespace must exist (else LN001) and so must it (LN004). */
void
objects_get_table(const LnId *id, CatalogLock lock, CatalogObject *table)
{
	int64 ns = objects_namespace_id(id, id->len - 1);

	if (ns < 0)
		ln_error(LN_NAMESPACE_NOT_FOUND, "namespace \"%s\" does not exist",
				 ln_id_string(id, id->len - 1));
	if (!catalog_lookup_child(ns, id->names[id->len - 1], lock, table) || !table->is_table)
		ln_error(LN_TABLE_NOT_FOUND, "table \"%s\" does not exist", ln_id_string(id, id->len));
}

/*
 * The namespace above the table's namespace (the root for a table one or
 * two levels down): the table's namespace and the table are then found in
 * one statement.
 */
static int64
grandparent_of(const LnId *id)
{
	int64 grandparent = CATALOG_ROOT_ID;

	if (id->len >= 2)
	{
		grandparent = objects_namespace_id(id, id->len - 2);
		if (grandparent < 0)
			ln_error(LN_NAMESPACE_NOT_FOUND, "namespace \"%s\" does not exist",
					 ln_id_string(id, id->len - 1));
	}
	return grandparent;
}

/* A look-up's answer (0: no namespace, 1: no table, 2: found), raised if not found. */
static void
check_found(const LnId *id, int found)
{
	if (found == 0)
		ln_error(LN_NAMESPACE_NOT_FOUND, "namespace \"%s\" does not exist",
				 ln_id_string(id, id->len - 1));
	if (found == 1)
		ln_error(LN_TABLE_NOT_FOUND, "table \"%s\" does not exist", ln_id_string(id, id->len));
}

/*
 * As objects_get_table, reading only the table's keys, location and
 * declared state (no properties): the look-up version operations need, with
 * the table's namespace and the table found in one statement.
 */
void
objects_get_table_key(const LnId *id, CatalogObject *table)
{
	int64 grandparent = grandparent_of(id);

	check_found(id,
				catalog_lookup_table_key(grandparent, id->len >= 2 ? id->names[id->len - 2] : NULL,
										 id->names[id->len - 1], table));
}

/*
 * As objects_get_table_key, and the table's latest versions on main, at
 * most `limit`, newest first (their number is returned), in the same
 * statement.
 */
int
objects_get_table_latest(const LnId *id, int limit, CatalogObject *table, LnTableVersion **versions)
{
	int64 grandparent = grandparent_of(id);
	int n;

	check_found(
		id, catalog_lookup_table_latest(grandparent, id->len >= 2 ? id->names[id->len - 2] : NULL,
										id->names[id->len - 1], limit, table, versions, &n));
	return n;
}
