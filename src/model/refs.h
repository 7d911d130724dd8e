/*
 * refs.h
 *		Tags and branches in a table's _refs folder, shared by the handlers.
 */
#ifndef LN_REFS_H
#define LN_REFS_H

#include "../catalog/catalog.h"

extern void refs_check_name(const char *name, const char *field, bool branch);
extern void refs_read(const LnRequest *req, const CatalogObject *table, const char *kind,
					  const char *name, LnRefContents *contents);
extern void refs_get_tag(const LnRequest *req, const CatalogObject *table, LnRefContents *tag);
extern int refs_tags_on_branch(const LnRequest *req, const CatalogObject *table, const char *branch,
							   char ***tag_names, int64 **versions);

#endif /* LN_REFS_H */
