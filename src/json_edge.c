/*
 * json_edge.c
 *		Decode jsonb requests into LnRequest and encode LnResponse as jsonb,
 *		with json-c.
 *
 * json-c allocates with malloc, and ereport(ERROR) leaves a function
 * without running its cleanup.  Every json-c tree made here is therefore
 * tied to the current memory context by a reset callback, so that an error
 * anywhere cannot leak it; on the normal path the tree is released as soon
 * as its contents have been copied into palloc'ed memory.
 */
#include "postgres.h"

#include <json-c/json.h>

/*
 * utils/builtins.h is left out on purpose: PostgreSQL declares a function
 * named json_object, which json-c uses as its type name.
 */
#include "utils/fmgroids.h"
#include "utils/jsonb.h"

#include "error.h"
#include "json_edge.h"

/* Longest object name we accept; longer names could not be indexed. */
#define LN_MAX_NAME_BYTES 1024

typedef struct JsonTree
{
	MemoryContextCallback callback;
	json_object *root;
} JsonTree;

typedef enum FieldType
{
	FIELD_ID,					/* array of names */
	FIELD_NAME,					/* non-empty string of at most LN_MAX_NAME_BYTES */
	FIELD_TEXT,					/* non-empty string */
	FIELD_STRING,				/* any string */
	FIELD_BOOL,
	FIELD_COUNT,				/* integer >= 0 */
	FIELD_MAP					/* object of strings */
} FieldType;

typedef struct RequestField
{
	const char *key;
	uint32		bit;
	FieldType	type;
	size_t		offset;
} RequestField;

static const RequestField request_fields[] = {
	{"id", LN_REQ_ID, FIELD_ID, offsetof(LnRequest, id)},
	{"mode", LN_REQ_MODE, FIELD_STRING, offsetof(LnRequest, mode)},
	{"behavior", LN_REQ_BEHAVIOR, FIELD_STRING, offsetof(LnRequest, behavior)},
	{"properties", LN_REQ_PROPERTIES, FIELD_MAP, offsetof(LnRequest, properties)},
	{"page_token", LN_REQ_PAGE_TOKEN, FIELD_STRING, offsetof(LnRequest, page_token)},
	{"limit", LN_REQ_LIMIT, FIELD_COUNT, offsetof(LnRequest, limit)},
	{"include_declared", LN_REQ_INCLUDE_DECLARED, FIELD_BOOL, offsetof(LnRequest, include_declared)},
	{"location", LN_REQ_LOCATION, FIELD_TEXT, offsetof(LnRequest, location)},
	{"new_table_name", LN_REQ_NEW_TABLE_NAME, FIELD_NAME, offsetof(LnRequest, new_table_name)},
	{"new_namespace_id", LN_REQ_NEW_NAMESPACE_ID, FIELD_ID, offsetof(LnRequest, new_namespace_id)},
	{"with_table_uri", LN_REQ_WITH_TABLE_URI, FIELD_BOOL, offsetof(LnRequest, with_table_uri)},
	{"check_declared", LN_REQ_CHECK_DECLARED, FIELD_BOOL, offsetof(LnRequest, check_declared)},
	{"load_detailed_metadata", LN_REQ_LOAD_DETAILED, FIELD_BOOL,
	offsetof(LnRequest, load_detailed_metadata)},
	{"version", LN_REQ_VERSION, FIELD_COUNT, offsetof(LnRequest, version)},
	{"delimiter", LN_REQ_DELIMITER, FIELD_TEXT, offsetof(LnRequest, delimiter)},
	{"vend_credentials", LN_REQ_VEND_CREDENTIALS, FIELD_BOOL, offsetof(LnRequest, vend_credentials)},
};

static void
release_tree(void *arg)
{
	JsonTree   *tree = (JsonTree *) arg;

	if (tree->root != NULL)
		json_object_put(tree->root);
	tree->root = NULL;
}

/* Make `root` owned by the current memory context. */
static JsonTree *
guard_tree(json_object *root)
{
	JsonTree   *tree = palloc0(sizeof(JsonTree));

	tree->callback.func = release_tree;
	tree->callback.arg = tree;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &tree->callback);
	tree->root = root;
	return tree;
}

/* A json-c string as a palloc'ed C string, or NULL if it holds a NUL byte. */
static char *
copy_string(json_object *value)
{
	const char *str = json_object_get_string(value);
	int			len = json_object_get_string_len(value);

	if ((int) strlen(str) != len)
		return NULL;
	return pnstrdup(str, len);
}

static char *
decode_name(json_object *value, const char *prefix, const char *field, bool bounded)
{
	char	   *name;

	if (!json_object_is_type(value, json_type_string))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be a string", prefix, field);
	name = copy_string(value);
	if (name == NULL)
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must not contain a NUL character", prefix, field);
	if (name[0] == '\0')
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must not be empty", prefix, field);
	if (bounded && strlen(name) > (size_t) LN_MAX_NAME_BYTES)
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" is longer than %d bytes",
				 prefix, field, LN_MAX_NAME_BYTES);
	return name;
}

static void
decode_id(json_object *value, const char *prefix, const char *field, LnId *id)
{
	if (!json_object_is_type(value, json_type_array))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an array of names", prefix, field);
	id->len = (int) json_object_array_length(value);
	id->names = palloc(sizeof(char *) * (id->len + 1));
	for (int i = 0; i < id->len; i++)
	{
		char		element[64];

		snprintf(element, sizeof(element), "%s[%d]", field, i);
		id->names[i] = decode_name(json_object_array_get_idx(value, i), prefix, element, true);
	}
}

static void
decode_map(json_object *value, const char *prefix, const char *field, LnMap *map)
{
	int			n = 0;

	if (!json_object_is_type(value, json_type_object))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an object of strings", prefix, field);
	map->len = json_object_object_length(value);
	map->keys = palloc(sizeof(char *) * (map->len + 1));
	map->values = palloc(sizeof(char *) * (map->len + 1));
	{
		/* the macro declares its loop variables, so it opens a block of its own */
		json_object_object_foreach(value, key, member)
		{
			if (!json_object_is_type(member, json_type_string))
				ln_error(LN_INVALID_INPUT, "field \"%s%s.%s\" must be a string", prefix, field,
						 key);
			map->keys[n] = pstrdup(key);
			map->values[n] = copy_string(member);
			if (map->values[n] == NULL)
				ln_error(LN_INVALID_INPUT, "field \"%s%s.%s\" must not contain a NUL character",
						 prefix, field, key);
			n++;
		}
	}
}

static int64
decode_count(json_object *value, const char *prefix, const char *field)
{
	int64		n;

	if (json_object_is_type(value, json_type_int))
		n = json_object_get_int64(value);
	else if (json_object_is_type(value, json_type_double) &&
			 json_object_get_double(value) == (double) (int64) json_object_get_double(value))
		n = (int64) json_object_get_double(value);
	else
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an integer", prefix, field);
	if (n < 0)
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must not be negative", prefix, field);
	return n;
}

/*
 * Decode the members of request object `obj` that `known_fields` names.
 * `prefix` is put before field names in error messages, so that an error in
 * an element of a batch names the element.
 */
static void
decode_request_object(json_object *obj, const char *prefix, uint32 known_fields, LnRequest *req)
{
	memset(req, 0, sizeof(LnRequest));
	req->include_declared = true;
	req->delimiter = "$";

	if (!json_object_is_type(obj, json_type_object))
		ln_error(LN_INVALID_INPUT, "the request%s%s must be a JSON object",
				 prefix[0] ? " " : "", prefix);

	for (size_t i = 0; i < lengthof(request_fields); i++)
	{
		const RequestField *f = &request_fields[i];
		char	   *member = (char *) req + f->offset;
		json_object *value;

		if ((known_fields & f->bit) == 0 ||
			!json_object_object_get_ex(obj, f->key, &value) || value == NULL)
			continue;			/* absent, null and unknown are all ignored */

		switch (f->type)
		{
			case FIELD_ID:
				decode_id(value, prefix, f->key, (LnId *) member);
				break;
			case FIELD_NAME:
			case FIELD_TEXT:
				*(char **) member = decode_name(value, prefix, f->key, f->type == FIELD_NAME);
				break;
			case FIELD_STRING:
				if (!json_object_is_type(value, json_type_string))
					ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be a string", prefix, f->key);
				*(char **) member = copy_string(value);
				if (*(char **) member == NULL)
					ln_error(LN_INVALID_INPUT, "field \"%s%s\" must not contain a NUL character",
							 prefix, f->key);
				break;
			case FIELD_BOOL:
				if (!json_object_is_type(value, json_type_boolean))
					ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be true or false",
							 prefix, f->key);
				*(bool *) member = json_object_get_boolean(value);
				break;
			case FIELD_COUNT:
				*(int64 *) member = decode_count(value, prefix, f->key);
				break;
			case FIELD_MAP:
				decode_map(value, prefix, f->key, (LnMap *) member);
				break;
		}
		req->present |= f->bit;
	}
}

void
json_decode_request(Jsonb *request, uint32 known_fields, LnRequest *req)
{
	char	   *text = JsonbToCString(NULL, &request->root, VARSIZE(request));
	JsonTree   *tree;
	enum json_tokener_error jerr;

	/* jsonb is always valid JSON, so this parse cannot fail short of memory */
	tree = guard_tree(json_tokener_parse_verbose(text, &jerr));
	if (tree->root == NULL)
		ln_error(LN_INTERNAL, "could not parse the request: %s", json_tokener_error_desc(jerr));
	decode_request_object(tree->root, "", known_fields, req);
	release_tree(tree);
}

static json_object *
new_string_array(int n, char **strings)
{
	json_object *array = json_object_new_array_ext(n);

	for (int i = 0; i < n; i++)
		json_object_array_add(array, json_object_new_string(strings[i]));
	return array;
}

static json_object *
new_map(const LnMap *map)
{
	json_object *obj = json_object_new_object();

	for (int i = 0; i < map->len; i++)
		json_object_object_add(obj, map->keys[i], json_object_new_string(map->values[i]));
	return obj;
}

/* Turn a finished json-c tree into jsonb and release the tree. */
static Jsonb *
tree_to_jsonb(json_object *root)
{
	JsonTree   *tree = guard_tree(root);
	char	   *text;

	text = pstrdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
												  JSON_C_TO_STRING_NOSLASHESCAPE));
	release_tree(tree);
	return DatumGetJsonbP(OidFunctionCall1(F_JSONB_IN, CStringGetDatum(text)));
}

Jsonb *
json_encode_response(const LnResponse *resp)
{
	json_object *obj = json_object_new_object();

	if (resp->fields & LN_RESP_ID)
		json_object_object_add(obj, "id", new_string_array(resp->id.len, resp->id.names));
	if (resp->fields & LN_RESP_NAMESPACES)
		json_object_object_add(obj, "namespaces", new_string_array(resp->nnames, resp->names));
	if (resp->fields & LN_RESP_TABLES)
		json_object_object_add(obj, "tables", new_string_array(resp->nnames, resp->names));
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
	if (resp->fields & LN_RESP_IS_ONLY_DECLARED)
		json_object_object_add(obj, "is_only_declared",
							   json_object_new_boolean(resp->is_only_declared));
	if (resp->fields & LN_RESP_TABLE)
		json_object_object_add(obj, "table", json_object_new_string(resp->table));
	if (resp->fields & LN_RESP_NAMESPACE)
		json_object_object_add(obj, "namespace",
							   new_string_array(resp->namespace_id.len, resp->namespace_id.names));
	return tree_to_jsonb(obj);
}

/* The spec's ErrorResponse, {"code": N, "error": "..."}, as JSON text. */
char *
json_error_body(int code, const char *message, const char *detail)
{
	json_object *obj = json_object_new_object();
	JsonTree   *tree = guard_tree(obj);
	char	   *text;

	json_object_object_add(obj, "code", json_object_new_int(code));
	json_object_object_add(obj, "error", json_object_new_string(message));
	if (detail != NULL)
		json_object_object_add(obj, "detail", json_object_new_string(detail));
	text = pstrdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
												  JSON_C_TO_STRING_NOSLASHESCAPE));
	release_tree(tree);
	return text;
}
