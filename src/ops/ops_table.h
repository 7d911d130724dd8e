/*
 * ops_table.h
 *		Table operations: the handlers the operation registry names.
 */
#ifndef LN_OPS_TABLE_H
#define LN_OPS_TABLE_H

#include "../common/types.h"

extern void op_list_tables(const LnRequest *req, LnResponse *resp);
extern void op_list_all_tables(const LnRequest *req, LnResponse *resp);
extern void op_declare_table(const LnRequest *req, LnResponse *resp);
extern void op_register_table(const LnRequest *req, LnResponse *resp);
extern void op_describe_table(const LnRequest *req, LnResponse *resp);
extern void op_table_exists(const LnRequest *req, LnResponse *resp);
extern void op_deregister_table(const LnRequest *req, LnResponse *resp);
extern void op_drop_table(const LnRequest *req, LnResponse *resp);
extern void op_rename_table(const LnRequest *req, LnResponse *resp);

#endif /* LN_OPS_TABLE_H */
