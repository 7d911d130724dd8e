/*
 * roles.h
 *		Grants and API keys follow their role through DROP ROLE and renames.
 */
#ifndef LN_ROLES_H
#define LN_ROLES_H

extern void roles_init(void);

#endif /* LN_ROLES_H */
