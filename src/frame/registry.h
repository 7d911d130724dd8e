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

/* Row flags. */
#define LN_OP_CHANGES		  (1u << 0) /* may change the catalog (or table refs) */
#define LN_OP_EMPTY_ANSWER	  (1u << 1) /* REST answers 204 without a body (the Exists calls) */
#define LN_OP_TRANSACTION_IDS (1u << 2) /* answers transaction_id as an array */
#define LN_OP_ON_PARENT                                                                            \
	(1u << 3)				  /* makes its object: the privilege is on the namespace it goes in */
#define LN_OP_LISTS (1u << 4) /* lists what is in its namespace: each item needs read */
#define LN_OP_ON_PARENT                                                                            \
	(1u << 3)				  /* makes its object: the privilege is on the namespace it goes in */
#define LN_OP_LISTS (1u << 4) /* lists what is in its namespace: each item needs read */

/* One operation of the spec. */
typedef struct LnOperationDef
{
	const char *operation_id; /* the spec's operationId */
	const char *sql_function; /* lance_<operation>(request jsonb) RETURNS jsonb */
	LnOperation handler;	  /* NULL: not served, and not_served says why */
	uint64 request_members;	  /* LN_REQ_* bits of the request members it reads */
	const char *http_method;  /* "GET" or "POST", as the spec routes it */
	const char *http_path;	  /* below the server root; {id} and {index_name} are one segment */
	uint32 flags;			  /* LN_OP_* */
	LnPrivilege privilege;
	const char *not_served;
} LnOperationDef;

/* Indexes into ln_operations, LN_OP_<operationId>. */
typedef enum LnOperationIndex
{
#define LN_OPERATION(id, ...) LN_OP_##id,
#include "operations.def"
#undef LN_OPERATION
	LN_NUM_OPERATIONS
} LnOperationIndex;

extern const LnOperationDef ln_operations[LN_NUM_OPERATIONS];

extern const LnOperationDef *registry_commit_operation(LnCommitKind kind);

#endif /* LN_REGISTRY_H */
