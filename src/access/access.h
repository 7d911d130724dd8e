/*
 * access.h
 *		Who calls, and what the caller may do: privileges on namespaces and
 *		tables, checked before an operation acts.
 */
#ifndef LN_ACCESS_H
#define LN_ACCESS_H

#include "../common/types.h"

extern void access_begin(void);
extern void access_check_request(const LnOperationDef *op, const LnRequest *req);
extern Oid access_caller(void);
extern const char *access_caller_name(void);
extern Oid access_list_reader(void);
extern bool access_is_admin(Oid role);
extern void access_require_admin(const char *what);
extern bool access_acts_for(Oid role, const char *name);
extern bool access_may(int64 object_id, LnPrivilege privilege);
extern void access_require(int64 object_id, const LnId *id, int len, bool is_namespace,
						   LnPrivilege privilege);
extern bool access_caller_is_admin(void);
extern bool access_may_read_path(const LnId *id);
extern LnPrivilege access_parse_privilege(const char *name);

#endif /* LN_ACCESS_H */
