/*
 * registry.h
 *		The operation registry: one row per operation of the spec, the
 *		single source from which the SQL functions (sql_api.c), the REST
 *		routes (rest.c) and BatchCommitTables' dispatch (frame.c) are
 *		derived.  The rows themselves are in operations.def.
 */
#ifndef LN_REGISTRY_H
#define LN_REGISTRY_H

#include "../common/types.h"

extern const LnOperationDef ln_operations[LN_NUM_OPERATIONS];

extern const LnOperationDef *registry_commit_operation(LnCommitKind kind);

#endif /* LN_REGISTRY_H */
