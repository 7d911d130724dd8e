/*
 * ops_namespace.h
 *		Namespace operations: the handlers the operation registry names.
 */
#ifndef LN_OPS_NAMESPACE_H
#define LN_OPS_NAMESPACE_H

#include "../common/types.h"

extern void op_create_namespace(const LnRequest *req, LnResponse *resp);
extern void op_list_namespaces(const LnRequest *req, LnResponse *resp);
extern void op_describe_namespace(const LnRequest *req, LnResponse *resp);
extern void op_drop_namespace(const LnRequest *req, LnResponse *resp);
extern void op_namespace_exists(const LnRequest *req, LnResponse *resp);

#endif /* LN_OPS_NAMESPACE_H */
