/*
 * json_internal.h
 *		What the JSON edge's files share: json-c trees tied to the current
 *		memory context, arrays of strings, and the keys of commit operations,
 *		all in json_edge.c, and json_decode.c's request trees.  Included by
 *		the JSON edge's files alone; callers outside include json_edge.h.
 */
#ifndef LN_JSON_INTERNAL_H
#define LN_JSON_INTERNAL_H

#include "postgres.h"

#include <json-c/json.h>

#include "utils/jsonb.h"

#include "../common/types.h"

typedef struct JsonTree
{
	MemoryContextCallback callback;
	json_object *root;
} JsonTree;

/* The keys of a CommitTableOperation, in LnCommitKind order, with what each knows. */
typedef struct CommitKind
{
	const char *key;
	uint64 known_fields;
} CommitKind;

extern const CommitKind json_commit_kinds[LN_COMMIT_DEREGISTER_TABLE + 1];

extern void json_release_tree(void *arg);
extern JsonTree *json_guard_tree(json_object *root);
extern json_object *json_new_string_array(int n, char **strings);
/* in json_decode.c */
extern JsonTree *json_request_tree(Jsonb *jsonb, const char *what);
extern char *json_required_name(json_object *root, const char *key);

#endif /* LN_JSON_INTERNAL_H */
