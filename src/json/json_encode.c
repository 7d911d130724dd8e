/*
 * json_encode.c
 *		LnResponse and the other answers (grants, storage settings, a map)
 *		as jsonb or JSON text, and ref contents as the files Lance writes.
 *
 * Each answer is built as a json-c tree, then turned into jsonb directly
 * (json_tree.c) or printed as text for an HTTP body or a ref file.  The
 * tree is tied to the memory context while that happens (json_edge.c), so
 * that an error in between cannot leak it.
 */
#include "postgres.h"

#include <json-c/json.h>
#include <json-c/printbuf.h>

/*
 * utils/builtins.h is left out on purpose: PostgreSQL declares a function
 * named json_object, which json-c uses as its type name.
 */
#include "utils/fmgroids.h"
#include "utils/jsonb.h"

#include "json_edge.h"
#include "json_internal.h"
#include "json_tree.h"

static json_object *
new_map(const LnMap *map)
{
	json_object *obj = json_object_new_object();

	for (int i = 0; i < map->len; i++)
		json_object_object_add(obj, map->keys[i], json_object_new_string(map->values[i]));
	return obj;
}

/* A json-c tree's JSON text, palloc'ed. */
static char *
tree_text(json_object *root)
{
	return pstrdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
															JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Turn a finished json-c tree into palloc'ed JSON text and release the tree. */
static char *
tree_to_text(json_object *root)
{
	JsonTree *tree = json_guard_tree(root);
	char *text = tree_text(root);

	json_release_tree(tree);
	return text;
}

/* Turn a finished json-c tree into jsonb, directly where it can, and release the tree. */
static Jsonb *
tree_to_jsonb(json_object *root)
{
	JsonTree *tree = json_guard_tree(root);
	Jsonb *jsonb = json_tree_to_jsonb(root);
	char *text;

	if (jsonb != NULL)
	{
		json_release_tree(tree);
		return jsonb;
	}
	/* what only JSON text says the same way (json_tree_to_jsonb): through jsonb_in */
	text = tree_text(root);
	json_release_tree(tree);
	return DatumGetJsonbP(OidFunctionCall1(F_JSONB_IN, CStringGetDatum(text)));
}

static json_object *
new_table_version(const LnTableVersion *v)
{
	json_object *obj = json_object_new_object();

	json_object_object_add(obj, "version", json_object_new_int64(v->version));
	json_object_object_add(obj, "manifest_path", json_object_new_string(v->manifest_path));
	if (v->has_manifest_size)
		json_object_object_add(obj, "manifest_size", json_object_new_int64(v->manifest_size));
	if (v->e_tag != NULL)
		json_object_object_add(obj, "e_tag", json_object_new_string(v->e_tag));
	json_object_object_add(obj, "timestamp_millis", json_object_new_int64(v->timestamp_millis));
	if (v->metadata.len > 0)
		json_object_object_add(obj, "metadata", new_map(&v->metadata));
	return obj;
}

/*
 * A tag's contents: the spec's TagContents, or (as_file) the whole of what
 * Lance writes in _refs/tags/<name>.json.
 */
static json_object *
new_tag_contents(const LnRefContents *c, bool as_file)
{
	json_object *obj = json_object_new_object();

	if (c->branch != NULL || as_file)
		json_object_object_add(obj, "branch", c->branch ? json_object_new_string(c->branch) : NULL);
	json_object_object_add(obj, "version", json_object_new_int64(c->version));
	if (as_file)
	{
		json_object_object_add(obj, "createdAt", json_object_new_string(c->created_at));
		json_object_object_add(obj, "updatedAt", json_object_new_string(c->updated_at));
	}
	json_object_object_add(obj, "manifestSize", json_object_new_int64(c->manifest_size));
	if (as_file)
		json_object_object_add(obj, "metadata", new_map(&c->metadata));
	return obj;
}

/* A branch's contents: the spec's BranchContents, or (as_file) Lance's _refs/branches file. */
static json_object *
new_branch_contents(const LnRefContents *c, bool as_file)
{
	json_object *obj = json_object_new_object();

	if (c->branch != NULL || as_file)
		json_object_object_add(obj, "parentBranch",
							   c->branch ? json_object_new_string(c->branch) : NULL);
	if (as_file)
	{
		json_object *identifier = json_object_new_object();
		json_object *mapping = json_object_new_array_ext(c->nmapping);

		for (int i = 0; i < c->nmapping; i++)
		{
			json_object *pair = json_object_new_array_ext(2);

			json_object_array_add(pair, json_object_new_int64(c->mapping_versions[i]));
			json_object_array_add(pair, json_object_new_string(c->mapping_ids[i]));
			json_object_array_add(mapping, pair);
		}
		json_object_object_add(identifier, "version_mapping", mapping);
		json_object_object_add(obj, "identifier", identifier);
	}
	json_object_object_add(obj, "parentVersion", json_object_new_int64(c->version));
	json_object_object_add(obj, "createAt", json_object_new_int64(c->create_at));
	json_object_object_add(obj, "manifestSize", json_object_new_int64(c->manifest_size));
	json_object_object_add(obj, "metadata", new_map(&c->metadata));
	return obj;
}

/*
 * An empty object as "{}", as Lance (serde_json) prints it, whichever
 * json-c the library links: before 0.17 json-c's pretty printer puts an
 * empty object's closing brace on a line of its own.
 */
static int
print_empty_object(json_object *obj pg_attribute_unused(), struct printbuf *pb,
				   int level pg_attribute_unused(), int flags pg_attribute_unused())
{
	return printbuf_memappend(pb, "{}", 2);
}

/* A ref file's text, pretty-printed as Lance writes it. */
char *
json_ref_file(const LnRefContents *contents, bool branch)
{
	json_object *obj =
		branch ? new_branch_contents(contents, true) : new_tag_contents(contents, true);
	JsonTree *tree = json_guard_tree(obj);
	json_object *metadata;
	char *text;

	if (json_object_object_get_ex(obj, "metadata", &metadata) &&
		json_object_object_length(metadata) == 0)
		json_object_set_serializer(metadata, print_empty_object, NULL, NULL);
	text = pstrdup(json_object_to_json_string_ext(
		obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE));

	json_release_tree(tree);
	return text;
}

static json_object *
new_response(const LnResponse *resp)
{
	json_object *obj = json_object_new_object();

	if (resp->fields & LN_RESP_ID)
		json_object_object_add(obj, "id", json_new_string_array(resp->id.len, resp->id.names));
	if (resp->fields & LN_RESP_NAMESPACES)
		json_object_object_add(obj, "namespaces", json_new_string_array(resp->nnames, resp->names));
	if (resp->fields & LN_RESP_TABLES)
		json_object_object_add(obj, "tables", json_new_string_array(resp->nnames, resp->names));
	if (resp->fields & LN_RESP_PAGE_TOKEN)
		json_object_object_add(obj, "page_token",
							   resp->page_token ? json_object_new_string(resp->page_token) : NULL);
	if (resp->fields & LN_RESP_LOCATION)
		json_object_object_add(obj, "location", json_object_new_string(resp->location));
	if (resp->fields & LN_RESP_TABLE_URI)
		json_object_object_add(obj, "table_uri", json_object_new_string(resp->table_uri));
	if (resp->fields & LN_RESP_STORAGE_OPTIONS)
		json_object_object_add(obj, "storage_options", new_map(&resp->storage_options));
	if (resp->fields & LN_RESP_PROPERTIES)
		json_object_object_add(obj, "properties", new_map(&resp->properties));
	if (resp->fields & LN_RESP_MANAGED_VERSIONING)
		json_object_object_add(obj, "managed_versioning",
							   json_object_new_boolean(resp->managed_versioning));
	if (resp->fields & LN_RESP_IS_ONLY_DECLARED)
		json_object_object_add(obj, "is_only_declared",
							   json_object_new_boolean(resp->is_only_declared));
	if (resp->fields & LN_RESP_TABLE)
		json_object_object_add(obj, "table", json_object_new_string(resp->table));
	if (resp->fields & LN_RESP_NAMESPACE)
		json_object_object_add(
			obj, "namespace",
			json_new_string_array(resp->namespace_id.len, resp->namespace_id.names));
	if (resp->fields & LN_RESP_TRANSACTION_ID)
	{
		json_object *id = json_object_new_string(resp->transaction_id);

		if (resp->transaction_ids)
		{
			json_object *ids = json_object_new_array_ext(1);

			json_object_array_add(ids, id);
			id = ids;
		}
		json_object_object_add(obj, "transaction_id", id);
	}
	if (resp->fields & LN_RESP_BRANCH)
		json_object_object_add(obj, "branch", json_object_new_string(resp->branch));
	if (resp->fields & (LN_RESP_TAGS | LN_RESP_BRANCHES))
	{
		json_object *refs = json_object_new_object();

		for (int i = 0; i < resp->nrefs; i++)
			json_object_object_add(refs, resp->ref_names[i],
								   (resp->fields & LN_RESP_TAGS)
									   ? new_tag_contents(&resp->refs[i], false)
									   : new_branch_contents(&resp->refs[i], false));
		json_object_object_add(obj, (resp->fields & LN_RESP_TAGS) ? "tags" : "branches", refs);
	}
	if (resp->fields & LN_RESP_STATUS)
		json_object_object_add(obj, "status", json_object_new_string(resp->status));
	if (resp->fields & LN_RESP_VERSION_NUMBER)
		json_object_object_add(obj, "version", json_object_new_int64(resp->version_number));
	if (resp->fields & LN_RESP_VERSION)
		json_object_object_add(obj, "version", new_table_version(&resp->version));
	if (resp->fields & LN_RESP_VERSIONS)
	{
		json_object *array = json_object_new_array_ext(resp->nversions);

		for (int i = 0; i < resp->nversions; i++)
			json_object_array_add(array, new_table_version(&resp->versions[i]));
		json_object_object_add(obj, "versions", array);
	}
	if (resp->fields & LN_RESP_DELETED_COUNT)
		json_object_object_add(obj, "deleted_count", json_object_new_int64(resp->deleted_count));
	if (resp->fields & LN_RESP_RESULTS)
	{
		json_object *array = json_object_new_array_ext(resp->nresults);

		for (int i = 0; i < resp->nresults; i++)
		{
			json_object *result = json_object_new_object();

			json_object_object_add(result, json_commit_kinds[resp->results[i].kind].key,
								   new_response(&resp->results[i].response));
			json_object_array_add(array, result);
		}
		json_object_object_add(obj, "results", array);
	}
	return obj;
}

Jsonb *
json_encode_response(const LnResponse *resp)
{
	return tree_to_jsonb(new_response(resp));
}

/* The response as JSON text, for an HTTP body. */
char *
json_encode_response_text(const LnResponse *resp)
{
	return tree_to_text(new_response(resp));
}

Jsonb *
json_encode_map(const LnMap *map)
{
	return tree_to_jsonb(new_map(map));
}

/* lance_grant's and lance_revoke's answer. */
Jsonb *
json_encode_grant(const LnId *id, const char *role, const char *privilege, bool changed,
				  const char *transaction_id)
{
	json_object *root = json_object_new_object();

	json_object_object_add(root, "id", json_new_string_array(id->len, id->names));
	json_object_object_add(root, "role", json_object_new_string(role));
	json_object_object_add(root, "privilege", json_object_new_string(privilege));
	json_object_object_add(root, "changed", json_object_new_boolean(changed));
	if (transaction_id != NULL)
		json_object_object_add(root, "transaction_id", json_object_new_string(transaction_id));
	return tree_to_jsonb(root);
}

/* lance_list_grants' answer: {"id": [...], "grants": [{"role", "privilege"}, ...]}. */
Jsonb *
json_encode_grants(const LnId *id, int n, char **roles, char **privileges)
{
	json_object *root = json_object_new_object();
	json_object *grants = json_object_new_array_ext(n);

	for (int i = 0; i < n; i++)
	{
		json_object *grant = json_object_new_object();

		json_object_object_add(grant, "role", json_object_new_string(roles[i]));
		json_object_object_add(grant, "privilege", json_object_new_string(privileges[i]));
		json_object_array_add(grants, grant);
	}
	json_object_object_add(root, "id", json_new_string_array(id->len, id->names));
	json_object_object_add(root, "grants", grants);
	return tree_to_jsonb(root);
}

/*
 * A vend map (json_decode_storage_setting's) as a json-c object: a key pair
 * kept as JSON text is an object again, the duration a number.
 */
static json_object *
new_vend(const LnMap *vend)
{
	json_object *obj = json_object_new_object();

	for (int i = 0; i < vend->len; i++)
	{
		json_object *value = NULL;

		if (strcmp(vend->keys[i], "read") == 0 || strcmp(vend->keys[i], "write") == 0)
			value = json_tokener_parse(vend->values[i]);
		else if (strcmp(vend->keys[i], "duration_seconds") == 0)
			value = json_object_new_int64(strtoll(vend->values[i], NULL, 10));
		if (value == NULL)
			value = json_object_new_string(vend->values[i]);
		json_object_object_add(obj, vend->keys[i], value);
	}
	return obj;
}

/* A setting's vend map as the jsonb the catalog keeps (lance_catalog.storage.vend). */
Jsonb *
json_encode_vend(const LnMap *vend)
{
	return tree_to_jsonb(new_vend(vend));
}

/*
 * lance_list_storage's answer, and lance_set_storage's and
 * lance_remove_storage's (one setting, not in a list; without options: only
 * its location): {"storage": [{"location": ..., "options": {...}, "vend":
 * {...}}, ...]}.
 */
Jsonb *
json_encode_storage_settings(int n, char **locations, const LnMap *options, const LnMap *vends,
							 bool one)
{
	json_object *list = json_object_new_array_ext(n);
	json_object *root;

	for (int i = 0; i < n; i++)
	{
		json_object *setting = json_object_new_object();

		json_object_object_add(setting, "location", json_object_new_string(locations[i]));
		if (options != NULL)
			json_object_object_add(setting, "options", new_map(&options[i]));
		if (vends != NULL)
			json_object_object_add(setting, "vend", new_vend(&vends[i]));
		json_object_array_add(list, setting);
	}
	if (one && n == 1)
	{
		root = json_object_get(json_object_array_get_idx(list, 0));
		json_object_put(list);
		return tree_to_jsonb(root);
	}
	root = json_object_new_object();
	json_object_object_add(root, "storage", list);
	return tree_to_jsonb(root);
}

/*
 * An inline session policy for the token service (storage_vend.c): list the
 * bucket `bucket_arn` below `prefix` (the prefix itself and what is under
 * it), get the objects `objects_arn` names, and with `write` put and delete
 * them too, except the `ndenied` resources of `denied`.  The ARNs come with
 * their wildcards escaped as the policy language wants them.
 */
char *
json_encode_session_policy(const char *bucket_arn, const char *prefix, const char *objects_arn,
						   bool write, char **denied, int ndenied)
{
	json_object *root = json_object_new_object();
	json_object *statements = json_object_new_array();
	json_object *list = json_object_new_object();
	json_object *read = json_object_new_object();
	json_object *condition = json_object_new_object();
	json_object *like = json_object_new_object();
	json_object *prefixes = json_object_new_array();

	json_object_object_add(root, "Version", json_object_new_string("2012-10-17"));
	json_object_object_add(list, "Sid", json_object_new_string("ListTable"));
	json_object_object_add(list, "Effect", json_object_new_string("Allow"));
	json_object_object_add(list, "Action", json_object_new_string("s3:ListBucket"));
	json_object_object_add(list, "Resource", json_object_new_string(bucket_arn));
	json_object_array_add(prefixes, json_object_new_string(prefix));
	json_object_array_add(prefixes, json_object_new_string(psprintf("%s/*", prefix)));
	json_object_object_add(like, "s3:prefix", prefixes);
	json_object_object_add(condition, "StringLike", like);
	json_object_object_add(list, "Condition", condition);
	json_object_array_add(statements, list);

	json_object_object_add(read, "Sid", json_object_new_string("ReadTable"));
	json_object_object_add(read, "Effect", json_object_new_string("Allow"));
	json_object_object_add(read, "Action", json_object_new_string("s3:GetObject"));
	json_object_object_add(read, "Resource", json_object_new_string(objects_arn));
	json_object_array_add(statements, read);
	if (write)
	{
		json_object *put = json_object_new_object();
		json_object *actions = json_object_new_array();

		json_object_object_add(put, "Sid", json_object_new_string("WriteTable"));
		json_object_object_add(put, "Effect", json_object_new_string("Allow"));
		json_object_array_add(actions, json_object_new_string("s3:PutObject"));
		json_object_array_add(actions, json_object_new_string("s3:DeleteObject"));
		json_object_array_add(actions, json_object_new_string("s3:AbortMultipartUpload"));
		json_object_object_add(put, "Action", actions);
		json_object_object_add(put, "Resource", json_object_new_string(objects_arn));
		json_object_array_add(statements, put);
	}
	if (write && ndenied > 0)
	{
		json_object *deny = json_object_new_object();
		json_object *actions = json_object_new_array();
		json_object *resources = json_object_new_array();

		json_object_object_add(deny, "Sid", json_object_new_string("CatalogManifests"));
		json_object_object_add(deny, "Effect", json_object_new_string("Deny"));
		json_object_array_add(actions, json_object_new_string("s3:PutObject"));
		json_object_array_add(actions, json_object_new_string("s3:DeleteObject"));
		json_object_object_add(deny, "Action", actions);
		for (int i = 0; i < ndenied; i++)
			json_object_array_add(resources, json_object_new_string(denied[i]));
		json_object_object_add(deny, "Resource", resources);
		json_object_array_add(statements, deny);
	}
	json_object_object_add(root, "Statement", statements);
	return tree_to_text(root);
}
