/*
 * extension_guard.h
 *		Refuse DROP EXTENSION while the catalog holds objects.
 */
#ifndef LN_EXTENSION_GUARD_H
#define LN_EXTENSION_GUARD_H

extern void extension_guard_init(void);

#endif /* LN_EXTENSION_GUARD_H */
