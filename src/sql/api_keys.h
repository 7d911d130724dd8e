/*
 * api_keys.h
 *		API keys: how a REST caller names the role it acts as.
 */
#ifndef LN_API_KEYS_H
#define LN_API_KEYS_H

#include "postgres.h"

extern Oid api_key_role(const char *key, char **key_id, bool *expired);

#endif /* LN_API_KEYS_H */
