/*
 * ops_version.h
 *		Table version operations: the handlers the operation registry names.
 */
#ifndef LN_OPS_VERSION_H
#define LN_OPS_VERSION_H

#include "../common/types.h"

extern void op_list_table_versions(const LnRequest *req, LnResponse *resp);
extern void op_create_table_version(const LnRequest *req, LnResponse *resp);
extern void op_describe_table_version(const LnRequest *req, LnResponse *resp);
extern void op_batch_delete_table_versions(const LnRequest *req, LnResponse *resp);
extern void op_batch_create_table_versions(const LnRequest *req, LnResponse *resp);

#endif /* LN_OPS_VERSION_H */
