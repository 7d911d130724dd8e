/*
 * roles.c
 *		Grants and API keys follow their role: DROP ROLE removes them, and
 *		ALTER ROLE ... RENAME carries them to the new name.
 *
 * The catalog names a role by its OID and the name it had (grant.role_name,
 * api_key.role_name), and a grant or key counts only while the role with
 * that OID has that name: PostgreSQL gives the OID of a dropped role to
 * roles made later, and no event trigger fires for DROP ROLE (roles belong
 * to the cluster, not to a database).  This hook removes a dropped role's
 * grants and keys in the database it runs in, in DROP ROLE's own
 * transaction, whenever the library is loaded there (always with
 * shared_preload_libraries); elsewhere the check of the name keeps them
 * from any other role.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"

#include "../catalog/catalog.h"
#include "roles.h"

static ProcessUtility_hook_type previous_utility_hook = NULL;

/* The roles a DROP ROLE names that exist (the others it skips or refuses). */
static List *
roles_to_drop(DropRoleStmt *stmt)
{
	List *oids = NIL;
	ListCell *lc;

	foreach (lc, stmt->roles)
	{
		Oid role = get_rolespec_oid((RoleSpec *)lfirst(lc), true);

		if (OidIsValid(role))
			oids = lappend_oid(oids, role);
	}
	return oids;
}

static void
roles_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			  ProcessUtilityContext context, ParamListInfo params, QueryEnvironment *queryEnv,
			  DestReceiver *dest, QueryCompletion *qc)
{
	Node *parsetree = pstmt->utilityStmt;
	List *dropped = NIL;
	Oid renamed = InvalidOid;
	char *old_name = NULL;
	char *new_name = NULL;

	if (IsA(parsetree, DropRoleStmt))
		dropped = roles_to_drop((DropRoleStmt *)parsetree);
	else if (IsA(parsetree, RenameStmt) && ((RenameStmt *)parsetree)->renameType == OBJECT_ROLE)
	{
		RenameStmt *stmt = (RenameStmt *)parsetree;

		renamed = get_role_oid(stmt->subname, true);
		old_name = pstrdup(stmt->subname);
		new_name = pstrdup(stmt->newname);
	}

	if (previous_utility_hook)
		previous_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest,
							  qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest,
								qc);

	/* the statement succeeded: in its transaction, which an error later undoes with it */
	if (dropped != NIL && IsTransactionState())
	{
		ListCell *lc;

		foreach (lc, dropped)
			catalog_forget_role(lfirst_oid(lc));
	}
	if (OidIsValid(renamed) && IsTransactionState())
		catalog_rename_role(renamed, old_name, new_name);
}

void
roles_init(void)
{
	previous_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = roles_utility;
}
