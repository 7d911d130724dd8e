/*
 * request.h
 *		Helpers for decoded requests: enumerated values, ids, paging, maps.
 */
#ifndef LN_REQUEST_H
#define LN_REQUEST_H

#include "types.h"

/* One accepted spelling of an enumerated request value. */
typedef struct LnEnumValue
{
	const char *name; /* PascalCase, as the spec writes it */
	int value;
} LnEnumValue;

extern int ln_parse_enum(const char *given, const char *field, const LnEnumValue *values,
						 int default_value);
extern void ln_require_id(const LnRequest *req);
extern void ln_require_table_id(const LnRequest *req);
extern char *ln_id_string(const LnId *id, int len);
extern LnId ln_id_parse(const char *text);
extern LnId ln_id_prefix(const LnId *id, int len);
extern int ln_page_limit(const LnRequest *req);
extern void ln_cut_page(LnResponse *resp, int limit);
extern LnMap ln_empty_map(void);

/* The bounds on what the commit log keeps of a request's context, and of its headers. */
#define LN_RECORDED_MAX_MEMBERS 64
#define LN_RECORDED_MAX_BYTES	16384

extern bool ln_is_credential_name(const char *name);
extern LnMap ln_recorded_map(const LnMap *map, const char *what);
extern int ln_map_index(const LnMap *map, const char *key);
extern const char *ln_map_get(const LnMap *map, const char *key);
extern int ln_compare_ids(const LnId *a, const LnId *b);

#endif /* LN_REQUEST_H */
