/*
 * operations.h
 *		The operations that BatchCommitTables runs as elements of one batch.
 */
#ifndef LN_OPERATIONS_H
#define LN_OPERATIONS_H

#include "lance_namespace.h"

extern void op_declare_table(const LnRequest *req, LnResponse *resp);
extern void op_deregister_table(const LnRequest *req, LnResponse *resp);
extern void op_create_table_version(const LnRequest *req, LnResponse *resp);
extern void op_delete_table_versions(const LnRequest *req, LnResponse *resp);
extern void versions_create(const LnRequest *entries, int n, bool name_elements,
							LnTableVersion *out);
extern void versions_get(const LnRequest *req, int64 table_id, LnTableVersion *out);
extern int	ln_compare_ids(const LnId *a, const LnId *b);

#endif							/* LN_OPERATIONS_H */
