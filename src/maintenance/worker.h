/*
 * worker.h
 *		The background worker that removes dropped tables' data and sweeps
 *		crash leftovers.
 */
#ifndef LN_WORKER_H
#define LN_WORKER_H

extern void worker_init(void);
extern int worker_interval_seconds(void);

#endif /* LN_WORKER_H */
