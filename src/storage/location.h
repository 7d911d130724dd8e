/*
 * location.h
 *		Locations, paths and URIs: the one module that derives table
 *		locations, percent-encodes and decodes, and resolves a location to
 *		a local path.  It knows nothing of the catalog or of files.
 */
#ifndef LN_LOCATION_H
#define LN_LOCATION_H

#include "../common/types.h"

extern void location_init(void);
extern const char *location_root(void);

extern char *location_for_namespace(const char *base, const LnId *below_base);
extern char *location_for_new_table(const char *base, const LnId *below_base,
									const char *table_name);
extern bool location_folder_within(const char *folder, const char *parent);
extern char *location_to_uri(const char *location);
extern char *location_local_path(const char *location);
extern const char *location_s3_authority_extra(const char *location);
extern char *location_for_message(const char *location);
extern bool location_s3_parse(const char *location, char **bucket, char **key);
extern char *location_folder_key(const char *location);
extern bool location_is_other_store(const char *location);
extern bool location_path_is_plain(const char *path);
extern char *location_percent_decode(const char *s, size_t len, bool plus_is_space);

#endif /* LN_LOCATION_H */
