/*
 * rate_buckets.h
 *		Token buckets in shared memory: how many requests a role may make
 *		through lance_rest() now, per database (role_limits.c).
 */
#ifndef LN_RATE_BUCKETS_H
#define LN_RATE_BUCKETS_H

#include "postgres.h"

/* How many (database, role) buckets are kept; a full area reuses the one used longest ago. */
#define LN_RATE_BUCKETS 1024

extern void rate_buckets_init(void);
extern bool rate_buckets_available(void);
extern bool rate_bucket_take(Oid database, Oid role, double rate, int burst, double *wait_seconds);

#endif /* LN_RATE_BUCKETS_H */
