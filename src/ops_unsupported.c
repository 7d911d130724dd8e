/*
 * ops_unsupported.c
 *		Operations of the spec that this catalog answers with LN000
 *		Unsupported, with the reason: each needs a new Lance manifest or index
 *		files, which only a Lance writer makes.  A Lance client restores a
 *		version by checking it out and committing it as a new version, which
 *		goes through CreateTableVersion and works.
 */
#include "postgres.h"

#include "fmgr.h"

#include "error.h"
#include "operations.h"

#define NEEDS_MANIFEST                                                                             \
	"it writes a new Lance manifest, which only a Lance writer makes; make the change with "       \
	"Lance, which commits the new version through CreateTableVersion"
#define NEEDS_INDEX                                                                                \
	"indexes are files that only Lance builds and reads; use Lance's index API on the table"

/* One unsupported operation: its stub, its definition and its SQL function. */
#define UNSUPPORTED_OPERATION(name, opid, reason)                                                  \
	static void name(const LnRequest *req, LnResponse *resp)                                       \
	{                                                                                              \
		(void)req;                                                                                 \
		(void)resp;                                                                                \
		ln_error(LN_UNSUPPORTED, "%s is not supported by this catalog: %s", opid, reason);         \
	}                                                                                              \
	const LnOperationDef ln_op_##name = {.operation_id = opid, .run = name};                       \
	PG_FUNCTION_INFO_V1(lance_##name);                                                             \
	Datum lance_##name(PG_FUNCTION_ARGS)                                                           \
	{                                                                                              \
		return ln_run_operation(fcinfo, &ln_op_##name);                                            \
	}

UNSUPPORTED_OPERATION(restore_table, "RestoreTable", NEEDS_MANIFEST)
UNSUPPORTED_OPERATION(update_table_schema_metadata, "UpdateTableSchemaMetadata", NEEDS_MANIFEST)
UNSUPPORTED_OPERATION(update_field_metadata, "UpdateFieldMetadata", NEEDS_MANIFEST)
UNSUPPORTED_OPERATION(alter_table_add_columns, "AlterTableAddColumns", NEEDS_MANIFEST)
UNSUPPORTED_OPERATION(alter_table_alter_columns, "AlterTableAlterColumns", NEEDS_MANIFEST)
UNSUPPORTED_OPERATION(alter_table_drop_columns, "AlterTableDropColumns", NEEDS_MANIFEST)
UNSUPPORTED_OPERATION(create_table_index, "CreateTableIndex", NEEDS_INDEX)
UNSUPPORTED_OPERATION(create_table_scalar_index, "CreateTableScalarIndex", NEEDS_INDEX)
UNSUPPORTED_OPERATION(list_table_indices, "ListTableIndices", NEEDS_INDEX)
UNSUPPORTED_OPERATION(describe_table_index_stats, "DescribeTableIndexStats", NEEDS_INDEX)
UNSUPPORTED_OPERATION(drop_table_index, "DropTableIndex", NEEDS_INDEX)
