/*
 * access.c
 *		Who calls, and what the caller may do.
 *
 * The caller is a PostgreSQL role: current_user in SQL, the role of the API
 * key through REST (rest.c switches to it).  A role holds read, write or
 * manage on a namespace, and then on everything below it, or on a table
 * (lance_catalog.grant); each privilege includes the ones before it.
 * Superusers and members of lance_admin pass every check.
 *
 * What a caller cannot read does not exist for it: describing it, or
 * anything below it, answers not-found, as for a name nobody uses, so that
 * names do not leak.  What it can read but not change answers code 15, and
 * so does the root namespace, which exists for every caller.  A
 * batch that touches one object the caller may not write fails whole with
 * code 15.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "access.h"

#define ADMIN_ROLE "lance_admin"

/* The current call's caller, and whether its listings are filtered. */
static Oid caller = InvalidOid;
static bool caller_is_admin = false;
static Oid list_reader = InvalidOid;

LnPrivilege
access_parse_privilege(const char *name)
{
	for (int i = LN_PRIV_READ; i <= LN_PRIV_MANAGE; i++)
		if (name != NULL && strcmp(name, ln_privilege_name((LnPrivilege)i)) == 0)
			return (LnPrivilege)i;
	ln_error(LN_INVALID_INPUT, "field \"privilege\" must be one of read, write, manage");
}

/* Superusers and members of lance_admin administer the catalog. */
bool
access_is_admin(Oid role)
{
	Oid admin;

	if (superuser_arg(role))
		return true;
	admin = get_role_oid(ADMIN_ROLE, true);
	return OidIsValid(admin) && has_privs_of_role(role, admin);
}

/*
 * Note the caller of the call that starts: the current user, before the
 * catalog acts as its owner.
 */
void
access_begin(void)
{
	caller = GetUserId();
	caller_is_admin = access_is_admin(caller);
	list_reader = InvalidOid;
}

Oid
access_caller(void)
{
	return caller;
}

const char *
access_caller_name(void)
{
	return GetUserNameFromId(caller, false);
}

/* The role whose readable objects a listing shows, or InvalidOid: all of them. */
Oid
access_list_reader(void)
{
	return list_reader;
}

void
access_require_admin(const char *what)
{
	if (!caller_is_admin)
		ln_error_detail(LN_PERMISSION_DENIED,
						"Ask a superuser to grant you role " ADMIN_ROLE " (GRANT " ADMIN_ROLE
						" TO ...).",
						"%s needs a superuser or a member of role " ADMIN_ROLE, what);
}

/*
 * True if the caller has the privileges of the role that made a change
 * log entry: OID `role` named `name` then.  Identity is both: the OID of a
 * dropped role can be given to a new one, which is not the one that made
 * the entry (nor is a role renamed since, as far as the log can tell).
 */
bool
access_acts_for(Oid role, const char *name)
{
	if (caller_is_admin)
		return true;
	return OidIsValid(role) && catalog_role_is(role, name) && has_privs_of_role(caller, role);
}

bool
access_may(int64 object_id, LnPrivilege privilege)
{
	return caller_is_admin || catalog_has_privilege(object_id, caller, privilege);
}

bool
access_caller_is_admin(void)
{
	return caller_is_admin;
}

/*
 * Walk from the root down the first `len` names of `id`.  Returns how many
 * names exist; *object is the last one found (the root if none).
 */
static int
resolve(const LnId *id, int len, int64 *object, bool *is_table)
{
	int found = 0;

	*object = CATALOG_ROOT_ID;
	*is_table = false;
	while (found < len && !*is_table)
	{
		int64 child;

		if (!catalog_lookup_child_id(*object, id->names[found], &child, is_table))
			break;
		*object = child;
		found++;
	}
	return found;
}

/* True if the caller may read the object `id` names, or where it would be. */
bool
access_may_read_path(const LnId *id)
{
	int64 object;
	bool is_table;

	if (caller_is_admin)
		return true;
	(void)resolve(id, id->len, &object, &is_table);
	return access_may(object, LN_PRIV_READ);
}

static void
raise_not_found(const LnId *id, int len, bool is_namespace)
{
	if (is_namespace)
		ln_error(LN_NAMESPACE_NOT_FOUND, "namespace \"%s\" does not exist", ln_id_string(id, len));
	ln_error(LN_TABLE_NOT_FOUND, "table \"%s\" does not exist", ln_id_string(id, len));
}

static void
raise_denied(const LnId *id, int len, bool is_namespace, LnPrivilege privilege)
{
	ln_error_detail(
		LN_PERMISSION_DENIED, "Ask a role with manage on it to run lance_grant for your role.",
		"role \"%s\" may not %s %s \"%s\"", access_caller_name(), ln_privilege_name(privilege),
		is_namespace ? "namespace" : "table", ln_id_string(id, len));
}

/*
 * An operation that found object `object_id` (the first `len` names of `id`,
 * which the caller can read) needs `privilege` on it.
 */
void
access_require(int64 object_id, const LnId *id, int len, bool is_namespace, LnPrivilege privilege)
{
	if (!access_may(object_id, privilege))
		raise_denied(id, len, is_namespace, privilege);
}

/*
 * The object the first `len` names of `id` name needs `privilege`.  One the
 * caller cannot read answers not-found; one that does not exist is left to
 * the operation (which answers its own not-found, or succeeds, as a drop in
 * mode Skip does) when the caller can read where it would be.  In a batch,
 * every refusal is code 15.
 */
static void
check_object(const LnId *id, int len, bool is_namespace, LnPrivilege privilege, bool in_batch)
{
	int64 object;
	bool is_table;

	if (resolve(id, len, &object, &is_table) < len || is_table == is_namespace)
	{
		if (access_may(object, LN_PRIV_READ))
			return;
		if (in_batch)
			raise_denied(id, len, is_namespace, privilege);
		raise_not_found(id, len, is_namespace);
	}
	if (access_may(object, privilege))
		return;
	/* the root exists for every caller (it is where each starts): no name to hide */
	if (in_batch || len == 0 || (privilege != LN_PRIV_READ && access_may(object, LN_PRIV_READ)))
		raise_denied(id, len, is_namespace, privilege);
	raise_not_found(id, len, is_namespace);
}

/*
 * A listing of the namespace `id` names.  A caller who can read it lists
 * all of it.  The root, where every caller starts, lists what the caller
 * can read; any other namespace the caller cannot read does not exist for
 * it, listed or described alike (ListAllTables finds what it can read
 * below).
 */
static void
check_listing(const LnId *id)
{
	if (id->len == 0 && !access_may(CATALOG_ROOT_ID, LN_PRIV_READ))
		list_reader = caller;
	else
		check_object(id, id->len, true, LN_PRIV_READ, false);
}

/*
 * An operation that makes `id` needs write on the namespace it goes in; one
 * that replaces an existing object (mode Overwrite) also manage on that,
 * which the operation checks once it has found it (access_require).
 */
static void
check_make(const LnId *id, bool in_batch)
{
	if (id->len < 1)
		return; /* the operation refuses it */
	check_object(id, id->len - 1, true, LN_PRIV_WRITE, in_batch);
}

static void
check_batch_commit(const LnRequest *req)
{
	for (int i = 0; i < req->noperations; i++)
	{
		const LnCommitOperation *element = &req->operations[i];
		const LnRequest *r = &element->request;

		CHECK_FOR_INTERRUPTS();
		switch (element->kind)
		{
			case LN_COMMIT_DECLARE_TABLE:
				check_make(&r->id, true);
				break;
			case LN_COMMIT_CREATE_TABLE_VERSION:
			case LN_COMMIT_DELETE_TABLE_VERSIONS:
				check_object(&r->id, r->id.len, false, LN_PRIV_WRITE, true);
				break;
			case LN_COMMIT_DEREGISTER_TABLE:
				check_object(&r->id, r->id.len, false, LN_PRIV_MANAGE, true);
				break;
		}
	}
}

/*
 * Check that the caller may run operation `op` on what `req` names, before
 * the operation acts.  Runs inside catalog_begin().
 */
void
access_check_request(const LnOperationDef *op, const LnRequest *req)
{
	bool is_namespace = strncmp(op->http_path, "/v1/namespace/", 14) == 0;

	if (caller_is_admin)
		return;

	switch (op->index)
	{
		case LN_OP_ListAllTables:
			if (!access_may(CATALOG_ROOT_ID, LN_PRIV_READ))
				list_reader = caller;
			return;
		case LN_OP_BatchCreateTableVersions:
			for (int i = 0; i < req->nentries; i++)
			{
				CHECK_FOR_INTERRUPTS();
				check_object(&req->entries[i].id, req->entries[i].id.len, false, LN_PRIV_WRITE,
							 true);
			}
			return;
		case LN_OP_BatchCommitTables:
			check_batch_commit(req);
			return;
		case LN_OP_DescribeTransaction:
		case LN_OP_AlterTransaction:
			/* the operation checks the entry's role (access_acts_for) */
			return;
		default:
			break;
	}

	/* a table operation without a table's id is refused by the operation itself */
	if (!is_namespace && req->id.len < 1)
		return;
	if (op->flags & LN_OP_LISTS)
		check_listing(&req->id);
	else if (op->flags & LN_OP_ON_PARENT)
		check_make(&req->id, false);
	else
		check_object(&req->id, req->id.len, is_namespace, op->privilege, false);

	/* a rename also makes a name in the namespace it moves the table to, or in its own */
	if (op->index == LN_OP_RenameTable)
	{
		if (req->present & LN_REQ_NEW_NAMESPACE_ID)
			check_object(&req->new_namespace_id, req->new_namespace_id.len, true, LN_PRIV_WRITE,
						 false);
		else
			check_object(&req->id, req->id.len - 1, true, LN_PRIV_WRITE, false);
	}
}
