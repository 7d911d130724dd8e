/*
 * operations.h
 *		Every operation of the spec that the catalog serves, for the SQL
 *		functions, the REST dispatch and BatchCommitTables, and the helpers
 *		operations share across files.
 */
#ifndef LN_OPERATIONS_H
#define LN_OPERATIONS_H

#include "catalog.h"

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
extern const LnOperationDef ln_op_describe_transaction;
extern const LnOperationDef ln_op_alter_transaction;
extern const LnOperationDef ln_op_list_table_tags;
extern const LnOperationDef ln_op_get_table_tag_version;
extern const LnOperationDef ln_op_create_table_tag;
extern const LnOperationDef ln_op_delete_table_tag;
extern const LnOperationDef ln_op_update_table_tag;
extern const LnOperationDef ln_op_list_table_branches;
extern const LnOperationDef ln_op_create_table_branch;
extern const LnOperationDef ln_op_delete_table_branch;
extern const LnOperationDef ln_op_restore_table;
extern const LnOperationDef ln_op_update_table_schema_metadata;
extern const LnOperationDef ln_op_update_field_metadata;
extern const LnOperationDef ln_op_alter_table_add_columns;
extern const LnOperationDef ln_op_alter_table_alter_columns;
extern const LnOperationDef ln_op_alter_table_drop_columns;
extern const LnOperationDef ln_op_create_table_index;
extern const LnOperationDef ln_op_create_table_scalar_index;
extern const LnOperationDef ln_op_list_table_indices;
extern const LnOperationDef ln_op_describe_table_index_stats;
extern const LnOperationDef ln_op_drop_table_index;

extern void versions_create(const LnRequest *entries, int n, bool name_elements,
							LnTableVersion *out);
extern bool versions_find(const LnRequest *req, const CatalogObject *table, LnTableVersion *out);
extern void versions_get(const LnRequest *req, const CatalogObject *table, LnTableVersion *out);
extern int refs_tags_on_versions(const LnRequest *req, const CatalogObject *table,
								 const char *branch, int64 first, int64 last, char **one);
extern void refs_get_tag(const LnRequest *req, const CatalogObject *table, LnRefContents *tag);
extern bool ln_is_main_branch(const char *branch);
extern const char *branch_key(const LnRequest *req, const char *location);
extern int ln_compare_ids(const LnId *a, const LnId *b);

#endif /* LN_OPERATIONS_H */
