/*
 * ops_transaction.h
 *		Transaction operations: the handlers the operation registry names.
 */
#ifndef LN_OPS_TRANSACTION_H
#define LN_OPS_TRANSACTION_H

#include "../common/types.h"

extern void op_describe_transaction(const LnRequest *req, LnResponse *resp);
extern void op_alter_transaction(const LnRequest *req, LnResponse *resp);

#endif /* LN_OPS_TRANSACTION_H */
