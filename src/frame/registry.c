/*
 * registry.c
 *		The operation registry: the rows of operations.def as one array.
 */
#include "postgres.h"

#include "../ops/ops_batch.h"
#include "../ops/ops_namespace.h"
#include "../ops/ops_refs.h"
#include "../ops/ops_table.h"
#include "../ops/ops_transaction.h"
#include "../ops/ops_version.h"
#include "registry.h"

const LnOperationDef ln_operations[LN_NUM_OPERATIONS] = {
#define LN_OPERATION(id, sql, handler, members, method, path, flags, privilege, not_served)        \
	[LN_OP_##id] = {LN_OP_##id, #id,  #sql,	 handler,	members,                                   \
					method,		path, flags, privilege, not_served},
#include "operations.def"
#undef LN_OPERATION
};

/* The operation a BatchCommitTables element of each kind runs. */
const LnOperationDef *
registry_commit_operation(LnCommitKind kind)
{
	switch (kind)
	{
		case LN_COMMIT_DECLARE_TABLE:
			return &ln_operations[LN_OP_DeclareTable];
		case LN_COMMIT_CREATE_TABLE_VERSION:
			return &ln_operations[LN_OP_CreateTableVersion];
		case LN_COMMIT_DELETE_TABLE_VERSIONS:
			return &ln_operations[LN_OP_BatchDeleteTableVersions];
		case LN_COMMIT_DEREGISTER_TABLE:
			return &ln_operations[LN_OP_DeregisterTable];
	}
	pg_unreachable();
}
