/*
 * versions.h
 *		Table versions, shared by the handlers.
 */
#ifndef LN_VERSIONS_H
#define LN_VERSIONS_H

#include "../catalog/catalog.h"

extern bool ln_is_main_branch(const char *branch);
extern const char *branch_key(const LnRequest *req, const char *location);
extern void versions_create(const LnRequest *entries, int n, bool name_elements,
							LnTableVersion *out);
extern bool versions_find(const LnRequest *req, const CatalogObject *table, LnTableVersion *out);
extern void versions_get(const LnRequest *req, const CatalogObject *table, LnTableVersion *out);

#endif /* LN_VERSIONS_H */
