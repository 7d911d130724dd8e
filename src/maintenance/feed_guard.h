/*
 * feed_guard.h
 *		End a transaction that holds the change feed back while it waits on
 *		its client longer than lance_namespace.change_idle_timeout.
 */
#ifndef LN_FEED_GUARD_H
#define LN_FEED_GUARD_H

extern void feed_guard_wait(long timeout_ms);

#endif /* LN_FEED_GUARD_H */
