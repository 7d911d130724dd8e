/*
 * ops_refs.h
 *		Tag and branch operations: the handlers the operation registry names.
 */
#ifndef LN_OPS_REFS_H
#define LN_OPS_REFS_H

#include "../common/types.h"

extern void op_list_table_tags(const LnRequest *req, LnResponse *resp);
extern void op_get_table_tag_version(const LnRequest *req, LnResponse *resp);
extern void op_create_table_tag(const LnRequest *req, LnResponse *resp);
extern void op_delete_table_tag(const LnRequest *req, LnResponse *resp);
extern void op_update_table_tag(const LnRequest *req, LnResponse *resp);
extern void op_list_table_branches(const LnRequest *req, LnResponse *resp);
extern void op_create_table_branch(const LnRequest *req, LnResponse *resp);
extern void op_delete_table_branch(const LnRequest *req, LnResponse *resp);

#endif /* LN_OPS_REFS_H */
