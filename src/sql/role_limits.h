/*
 * role_limits.h
 *		Request limits per role through lance_rest(): a rate and a burst an
 *		administrator sets, counted per server in shared memory.
 */
#ifndef LN_ROLE_LIMITS_H
#define LN_ROLE_LIMITS_H

#include "postgres.h"

#include "../common/error.h"

/* Why a request was refused: the role's limit, and the seconds until a request may pass. */
typedef struct RoleLimitRefusal
{
	double requests_per_second;
	int burst;
	int wait_seconds;
} RoleLimitRefusal;

extern bool role_limits_admit(Oid role, RoleLimitRefusal *refusal);
pg_noreturn extern void role_limits_refuse(Oid role, const RoleLimitRefusal *refusal);

#endif /* LN_ROLE_LIMITS_H */
