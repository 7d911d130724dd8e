/*
 * location.h
 *		Table locations: where a declared table's files go, and their URIs.
 */
#ifndef LN_LOCATION_H
#define LN_LOCATION_H

#include "lance_namespace.h"

extern char *location_for_new_table(const char *base, const LnId *below_base,
									const char *table_name);
extern char *location_to_uri(const char *location);

#endif /* LN_LOCATION_H */
