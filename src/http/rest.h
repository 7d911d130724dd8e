/*
 * rest.h
 *		The REST binding, lance_rest().
 */
#ifndef LN_REST_H
#define LN_REST_H

extern void rest_init(void);

#endif /* LN_REST_H */
