/*
 * role_limits.h
 *		Request limits per role through lance_rest(): a rate and a burst an
 *		administrator sets, counted per server in shared memory.
 */
#ifndef LN_ROLE_LIMITS_H
#define LN_ROLE_LIMITS_H

#include "postgres.h"

extern void role_limits_admit(Oid role);
extern int role_limits_retry_after(void);

#endif /* LN_ROLE_LIMITS_H */
