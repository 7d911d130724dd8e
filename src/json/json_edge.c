/*
 * json_edge.c
 *		What the JSON edge's two halves share: json-c trees tied to the
 *		current memory context, arrays of strings, and the keys of commit
 *		operations.  json_decode.c decodes requests into LnRequest and
 *		json_encode.c encodes LnResponse as jsonb or JSON text, both through
 *		json-c trees (json_tree.c turns jsonb into them and back).
 *
 * json-c allocates with malloc, and ereport(ERROR) leaves a function
 * without running its cleanup.  Every json-c tree the edge makes is
 * therefore tied to the current memory context by a reset callback, so that
 * an error anywhere cannot leak it; on the normal path the tree is released
 * as soon as its contents have been copied into palloc'ed memory.
 */
#include "postgres.h"

#include <json-c/json.h>

#include "json_internal.h"

/* The keys of a CommitTableOperation, in LnCommitKind order, with what each knows. */
const CommitKind json_commit_kinds[] = {
	[LN_COMMIT_DECLARE_TABLE] = {"declare_table", LN_REQ_DECLARE_TABLE},
	[LN_COMMIT_CREATE_TABLE_VERSION] = {"create_table_version", LN_REQ_CREATE_TABLE_VERSION},
	[LN_COMMIT_DELETE_TABLE_VERSIONS] = {"delete_table_versions", LN_REQ_DELETE_TABLE_VERSIONS},
	[LN_COMMIT_DEREGISTER_TABLE] = {"deregister_table", LN_REQ_DEREGISTER_TABLE},
};

void
json_release_tree(void *arg)
{
	JsonTree *tree = (JsonTree *)arg;

	if (tree->root != NULL)
		json_object_put(tree->root);
	tree->root = NULL;
}

/* Make `root` owned by the current memory context. */
JsonTree *
json_guard_tree(json_object *root)
{
	JsonTree *tree = palloc0(sizeof(JsonTree));

	tree->callback.func = json_release_tree;
	tree->callback.arg = tree;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &tree->callback);
	tree->root = root;
	return tree;
}

json_object *
json_new_string_array(int n, char **strings)
{
	json_object *array = json_object_new_array_ext(n);

	for (int i = 0; i < n; i++)
		json_object_array_add(array, json_object_new_string(strings[i]));
	return array;
}
