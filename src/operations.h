/*
 * operations.h
 *		Every operation of the spec that the catalog serves, for the SQL
 *		functions, the REST dispatch and BatchCommitTables, and the helpers
 *		operations share across files.
 */
#ifndef LN_OPERATIONS_H
#define LN_OPERATIONS_H

#include "lance_namespace.h"

extern const LnOperationDef ln_op_create_namespace;
extern const LnOperationDef ln_op_list_namespaces;
extern const LnOperationDef ln_op_describe_namespace;
extern const LnOperationDef ln_op_drop_namespace;
extern const LnOperationDef ln_op_namespace_exists;
extern const LnOperationDef ln_op_list_tables;
extern const LnOperationDef ln_op_list_all_tables;
extern const LnOperationDef ln_op_declare_table;
extern const LnOperationDef ln_op_register_table;
extern const LnOperationDef ln_op_describe_table;
extern const LnOperationDef ln_op_table_exists;
extern const LnOperationDef ln_op_deregister_table;
extern const LnOperationDef ln_op_drop_table;
extern const LnOperationDef ln_op_rename_table;
extern const LnOperationDef ln_op_list_table_versions;
extern const LnOperationDef ln_op_create_table_version;
extern const LnOperationDef ln_op_describe_table_version;
extern const LnOperationDef ln_op_batch_delete_table_versions;
extern const LnOperationDef ln_op_batch_create_table_versions;
extern const LnOperationDef ln_op_batch_commit_tables;

extern void versions_create(const LnRequest *entries, int n, bool name_elements,
							LnTableVersion *out);
extern void versions_get(const LnRequest *req, int64 table_id, LnTableVersion *out);
extern const char *branch_key(const LnRequest *req);
extern int ln_compare_ids(const LnId *a, const LnId *b);

#endif /* LN_OPERATIONS_H */
