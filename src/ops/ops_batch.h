/*
 * ops_batch.h
 *		BatchCommitTables: the handlers the operation registry names.
 */
#ifndef LN_OPS_BATCH_H
#define LN_OPS_BATCH_H

#include "../common/types.h"

extern void op_batch_commit_tables(const LnRequest *req, LnResponse *resp);

#endif /* LN_OPS_BATCH_H */
