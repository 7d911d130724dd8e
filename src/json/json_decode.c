/*
 * json_decode.c
 *		Requests into LnRequest, from jsonb or from an HTTP request of the
 *		REST binding, and Lance's ref files into LnRefContents, read through
 *		json-c trees (json_edge.c ties them to the memory context).
 *
 * Every way a request arrives ends in one table of request fields
 * (request_fields), so that SQL and REST callers are held to the same
 * checks: the type of each member, valid UTF-8 without NUL, bounded names,
 * nesting and array sizes.  An error names the field by its path, so that
 * a client can find the element of a batch that was refused.
 */
#include "postgres.h"

#include <json-c/json.h>

/*
 * utils/builtins.h is left out on purpose: PostgreSQL declares a function
 * named json_object, which json-c uses as its type name.
 */
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"

#include "../common/error.h"
#include "../common/pg_compat.h"
#include "../common/request.h"
#include "json_edge.h"
#include "json_internal.h"
#include "json_tree.h"

/* Longest object name we accept; longer names could not be indexed. */
#define LN_MAX_NAME_BYTES 1024

/* Deepest nesting of arrays and objects a request, body or header may have. */
#define LN_MAX_JSON_DEPTH 32

/*
 * The most entries, operations, ranges or actions one request may hold,
 * and the most levels an id may have: every element costs catalog work in
 * the caller's transaction, so a request's cost stays bounded.
 */
#define LN_MAX_ARRAY_ITEMS 1000
#define LN_MAX_ID_LEVELS   64

typedef enum FieldType
{
	FIELD_ID,	  /* array of names */
	FIELD_NAME,	  /* non-empty string of at most LN_MAX_NAME_BYTES */
	FIELD_TEXT,	  /* non-empty string */
	FIELD_STRING, /* any string */
	FIELD_BOOL,
	FIELD_COUNT,	  /* integer >= 0 */
	FIELD_MAP,		  /* object of strings */
	FIELD_RANGES,	  /* array of VersionRange */
	FIELD_ENTRIES,	  /* array of CreateTableVersionEntry */
	FIELD_OPERATIONS, /* array of CommitTableOperation */
	FIELD_IDENTITY,	  /* the spec's Identity */
	FIELD_ACTIONS	  /* array of AlterTransactionAction */
} FieldType;

typedef struct RequestField
{
	const char *key;
	uint64 bit;
	FieldType type;
	size_t offset;
} RequestField;

static const RequestField request_fields[] = {
	{"id", LN_REQ_ID, FIELD_ID, offsetof(LnRequest, id)},
	{"mode", LN_REQ_MODE, FIELD_STRING, offsetof(LnRequest, mode)},
	{"behavior", LN_REQ_BEHAVIOR, FIELD_STRING, offsetof(LnRequest, behavior)},
	{"properties", LN_REQ_PROPERTIES, FIELD_MAP, offsetof(LnRequest, properties)},
	{"page_token", LN_REQ_PAGE_TOKEN, FIELD_STRING, offsetof(LnRequest, page_token)},
	{"limit", LN_REQ_LIMIT, FIELD_COUNT, offsetof(LnRequest, limit)},
	{"include_declared", LN_REQ_INCLUDE_DECLARED, FIELD_BOOL,
	 offsetof(LnRequest, include_declared)},
	{"location", LN_REQ_LOCATION, FIELD_TEXT, offsetof(LnRequest, location)},
	{"new_table_name", LN_REQ_NEW_TABLE_NAME, FIELD_NAME, offsetof(LnRequest, new_table_name)},
	{"new_namespace_id", LN_REQ_NEW_NAMESPACE_ID, FIELD_ID, offsetof(LnRequest, new_namespace_id)},
	{"with_table_uri", LN_REQ_WITH_TABLE_URI, FIELD_BOOL, offsetof(LnRequest, with_table_uri)},
	{"check_declared", LN_REQ_CHECK_DECLARED, FIELD_BOOL, offsetof(LnRequest, check_declared)},
	{"load_detailed_metadata", LN_REQ_LOAD_DETAILED, FIELD_BOOL,
	 offsetof(LnRequest, load_detailed_metadata)},
	{"version", LN_REQ_VERSION, FIELD_COUNT, offsetof(LnRequest, version)},
	{"delimiter", LN_REQ_DELIMITER, FIELD_TEXT, offsetof(LnRequest, delimiter)},
	{"vend_credentials", LN_REQ_VEND_CREDENTIALS, FIELD_BOOL,
	 offsetof(LnRequest, vend_credentials)},
	{"branch", LN_REQ_BRANCH, FIELD_STRING, offsetof(LnRequest, branch)},
	{"manifest_path", LN_REQ_MANIFEST_PATH, FIELD_TEXT, offsetof(LnRequest, manifest_path)},
	{"manifest_size", LN_REQ_MANIFEST_SIZE, FIELD_COUNT, offsetof(LnRequest, manifest_size)},
	{"e_tag", LN_REQ_E_TAG, FIELD_STRING, offsetof(LnRequest, e_tag)},
	{"metadata", LN_REQ_METADATA, FIELD_MAP, offsetof(LnRequest, metadata)},
	{"naming_scheme", LN_REQ_NAMING_SCHEME, FIELD_STRING, offsetof(LnRequest, naming_scheme)},
	{"descending", LN_REQ_DESCENDING, FIELD_BOOL, offsetof(LnRequest, descending)},
	{"ranges", LN_REQ_RANGES, FIELD_RANGES, offsetof(LnRequest, nranges)},
	{"entries", LN_REQ_ENTRIES, FIELD_ENTRIES, offsetof(LnRequest, nentries)},
	{"operations", LN_REQ_OPERATIONS, FIELD_OPERATIONS, offsetof(LnRequest, noperations)},
	{"identity", LN_REQ_IDENTITY, FIELD_IDENTITY, offsetof(LnRequest, api_key)},
	{"actions", LN_REQ_ACTIONS, FIELD_ACTIONS, offsetof(LnRequest, nactions)},
	{"tag", LN_REQ_TAG, FIELD_NAME, offsetof(LnRequest, tag)},
	{"name", LN_REQ_NAME, FIELD_NAME, offsetof(LnRequest, name)},
	{"from_branch", LN_REQ_FROM_BRANCH, FIELD_STRING, offsetof(LnRequest, from_branch)},
	{"from_version", LN_REQ_FROM_VERSION, FIELD_COUNT, offsetof(LnRequest, from_version)},
	{"context", LN_REQ_CONTEXT, FIELD_MAP, offsetof(LnRequest, context)},
};

static void decode_request_object(json_object *obj, const char *prefix, uint64 known_fields,
								  LnRequest *req);

/*
 * A JSON string member as a palloc'ed C string.  Whatever way a request
 * arrives, what it names must be storable and dumpable: valid UTF-8 with no
 * NUL byte, which a C string would silently cut short.
 */
static char *
decode_string(json_object *value, const char *prefix, const char *field)
{
	const char *str;
	int len;

	if (!json_object_is_type(value, json_type_string))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be a string", prefix, field);
	str = json_object_get_string(value);
	len = json_object_get_string_len(value);
	if ((int)strlen(str) != len)
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must not contain a NUL character", prefix,
				 field);
	if (!pg_verify_mbstr(PG_UTF8, str, len, true))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" is not valid UTF-8", prefix, field);
	return pnstrdup(str, len);
}

static char *
decode_name(json_object *value, const char *prefix, const char *field, bool bounded)
{
	char *name;

	name = decode_string(value, prefix, field);
	if (name[0] == '\0')
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must not be empty", prefix, field);
	if (bounded && strlen(name) > (size_t)LN_MAX_NAME_BYTES)
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" is longer than %d bytes", prefix, field,
				 LN_MAX_NAME_BYTES);
	return name;
}

static void
decode_id(json_object *value, const char *prefix, const char *field, LnId *id)
{
	if (!json_object_is_type(value, json_type_array))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an array of names", prefix, field);
	id->len = (int)json_object_array_length(value);
	if (id->len > LN_MAX_ID_LEVELS)
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" has %d levels; an id has at most %d", prefix,
				 field, id->len, LN_MAX_ID_LEVELS);
	id->names = palloc(sizeof(char *) * (id->len + 1));
	for (int i = 0; i < id->len; i++)
	{
		char element[64];

		snprintf(element, sizeof(element), "%s[%d]", field, i);
		id->names[i] = decode_name(json_object_array_get_idx(value, i), prefix, element, true);
	}
}

static void
decode_map(json_object *value, const char *prefix, const char *field, LnMap *map)
{
	int n = 0;

	if (!json_object_is_type(value, json_type_object))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an object of strings", prefix, field);
	map->len = json_object_object_length(value);
	map->keys = palloc(sizeof(char *) * (map->len + 1));
	map->values = palloc(sizeof(char *) * (map->len + 1));
	{
		/* the macro declares its loop variables, so it opens a block of its own */
		json_object_object_foreach(value, key, member)
		{
			char *inner;

			if (!pg_verify_mbstr(PG_UTF8, key, strlen(key), true))
				ln_error(LN_INVALID_INPUT, "field \"%s%s\" has a key that is not valid UTF-8",
						 prefix, field);
			inner = psprintf("%s%s.", prefix, field);
			map->keys[n] = pstrdup(key);
			map->values[n] = decode_string(member, inner, key);
			n++;
		}
	}
}

/*
 * An integer field: an int64 json-c value, or a double's exact text (what
 * json_tree.c makes of any other number) read by json_integer_text, so that
 * a fraction, an exponent that leaves one, and a value past int64 are
 * refused alike from SQL and REST, never rounded or clamped.
 */
static int64
decode_integer(json_object *value, const char *prefix, const char *field)
{
	int64 n = 0;

	if (json_object_is_type(value, json_type_int))
	{
		/* json-c keeps integers above INT64_MAX as unsigned */
		if (json_object_get_int64(value) == PG_INT64_MAX &&
			json_object_get_uint64(value) > (uint64)PG_INT64_MAX)
			ln_error(LN_INVALID_INPUT, "field \"%s%s\" is out of range", prefix, field);
		return json_object_get_int64(value);
	}
	if (!json_object_is_type(value, json_type_double))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an integer", prefix, field);
	switch (json_integer_text(json_object_get_string(value), &n))
	{
		case JSON_INTEGER_OK:
			break;
		case JSON_INTEGER_OUT_OF_RANGE:
			ln_error(LN_INVALID_INPUT, "field \"%s%s\" is out of range", prefix, field);
			break;
		case JSON_INTEGER_FRACTION:
		case JSON_INTEGER_NOT_NUMBER:
			ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an integer", prefix, field);
			break;
	}
	return n;
}

static int64
decode_count(json_object *value, const char *prefix, const char *field)
{
	int64 n = decode_integer(value, prefix, field);

	if (n < 0)
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must not be negative", prefix, field);
	return n;
}

/* An array member's elements; `*n` receives their number. */
static json_object *
decode_array(json_object *value, const char *prefix, const char *field, int *n)
{
	if (!json_object_is_type(value, json_type_array))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an array", prefix, field);
	*n = (int)json_object_array_length(value);
	if (*n > LN_MAX_ARRAY_ITEMS)
		ln_error_detail(LN_INVALID_INPUT, "Split the request into several.",
						"field \"%s%s\" holds %d items; one request takes at most %d", prefix,
						field, *n, LN_MAX_ARRAY_ITEMS);
	return value;
}

static json_object *
decode_element(json_object *array, int i, const char *prefix, const char *field, char **element)
{
	json_object *obj = json_object_array_get_idx(array, i);

	*element = psprintf("%s%s[%d]", prefix, field, i);
	if (!json_object_is_type(obj, json_type_object))
		ln_error(LN_INVALID_INPUT, "field \"%s\" must be an object", *element);
	return obj;
}

static json_object *
required_member(json_object *obj, const char *element, const char *key)
{
	json_object *value;

	if (!json_object_object_get_ex(obj, key, &value) || value == NULL)
		ln_error(LN_INVALID_INPUT, "field \"%s.%s\" is required", element, key);
	return value;
}

static void
decode_ranges(json_object *value, const char *prefix, const char *field, LnRequest *req)
{
	decode_array(value, prefix, field, &req->nranges);
	req->ranges = palloc(sizeof(LnVersionRange) * (req->nranges + 1));
	for (int i = 0; i < req->nranges; i++)
	{
		char *element;
		json_object *obj = decode_element(value, i, prefix, field, &element);
		char *dotted = psprintf("%s.", element);

		req->ranges[i].start_version =
			decode_count(required_member(obj, element, "start_version"), dotted, "start_version");
		req->ranges[i].end_version =
			decode_integer(required_member(obj, element, "end_version"), dotted, "end_version");
	}
}

static void
decode_entries(json_object *value, const char *prefix, const char *field, LnRequest *req)
{
	decode_array(value, prefix, field, &req->nentries);
	req->entries = palloc(sizeof(LnRequest) * (req->nentries + 1));
	for (int i = 0; i < req->nentries; i++)
	{
		char *element;
		json_object *obj = decode_element(value, i, prefix, field, &element);

		decode_request_object(obj, psprintf("%s.", element), LN_REQ_CREATE_TABLE_VERSION,
							  &req->entries[i]);
	}
}

/* Each CommitTableOperation sets exactly one of its four members. */
static void
decode_operations(json_object *value, const char *prefix, const char *field, LnRequest *req)
{
	decode_array(value, prefix, field, &req->noperations);
	req->operations = palloc(sizeof(LnCommitOperation) * (req->noperations + 1));
	for (int i = 0; i < req->noperations; i++)
	{
		char *element;
		json_object *obj = decode_element(value, i, prefix, field, &element);
		int found = -1;

		for (int k = 0; k < (int)lengthof(json_commit_kinds); k++)
		{
			json_object *member;

			if (!json_object_object_get_ex(obj, json_commit_kinds[k].key, &member) ||
				member == NULL)
				continue;
			if (found != -1)
				found = -2; /* two or more: refused below */
			else
			{
				found = k;
				decode_request_object(member, psprintf("%s.%s.", element, json_commit_kinds[k].key),
									  json_commit_kinds[k].known_fields,
									  &req->operations[i].request);
			}
		}
		if (found < 0)
			ln_error(LN_INVALID_INPUT,
					 "field \"%s\" must set exactly one of declare_table, create_table_version, "
					 "delete_table_versions, deregister_table",
					 element);
		req->operations[i].kind = (LnCommitKind)found;
	}
}

static void
decode_identity(json_object *value, const char *prefix, const char *field, LnRequest *req)
{
	char *dotted = psprintf("%s%s.", prefix, field);
	json_object *member;

	if (!json_object_is_type(value, json_type_object))
		ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be an object", prefix, field);
	if (json_object_object_get_ex(value, "api_key", &member) && member != NULL)
		req->api_key = decode_name(member, dotted, "api_key", false);
	if (json_object_object_get_ex(value, "auth_token", &member) && member != NULL)
		req->auth_token = decode_name(member, dotted, "auth_token", false);
}

/* An optional string member of an action object; NULL when absent or null. */
static char *
optional_string(json_object *obj, const char *element, const char *key)
{
	json_object *value;

	if (!json_object_object_get_ex(obj, key, &value) || value == NULL)
		return NULL;
	return decode_name(value, psprintf("%s.", element), key, false);
}

/* AlterTransaction's actions: each sets exactly one of three camelCase members. */
static void
decode_actions(json_object *value, const char *prefix, const char *field, LnRequest *req)
{
	static const char *const kinds[] = {
		[LN_ACTION_SET_STATUS] = "setStatusAction",
		[LN_ACTION_SET_PROPERTY] = "setPropertyAction",
		[LN_ACTION_UNSET_PROPERTY] = "unsetPropertyAction",
	};

	decode_array(value, prefix, field, &req->nactions);
	req->actions = palloc0(sizeof(LnTransactionAction) * (req->nactions + 1));
	for (int i = 0; i < req->nactions; i++)
	{
		char *element;
		json_object *obj = decode_element(value, i, prefix, field, &element);
		LnTransactionAction *action = &req->actions[i];
		int found = -1;

		for (int k = 0; k < (int)lengthof(kinds); k++)
		{
			json_object *member;
			char *inner;

			if (!json_object_object_get_ex(obj, kinds[k], &member) || member == NULL)
				continue;
			if (found >= 0)
				ln_error(LN_INVALID_INPUT, "field \"%s\" must set exactly one action", element);
			found = k;
			inner = psprintf("%s.%s", element, kinds[k]);
			if (!json_object_is_type(member, json_type_object))
				ln_error(LN_INVALID_INPUT, "field \"%s\" must be an object", inner);
			action->kind = (LnActionKind)k;
			if (k == LN_ACTION_SET_STATUS)
				action->status = decode_name(required_member(member, inner, "status"),
											 psprintf("%s.", inner), "status", false);
			else
			{
				action->key = decode_name(required_member(member, inner, "key"),
										  psprintf("%s.", inner), "key", false);
				action->mode = optional_string(member, inner, "mode");
			}
			if (k == LN_ACTION_SET_PROPERTY)
			{
				json_object *v = required_member(member, inner, "value");

				action->value = decode_string(v, psprintf("%s.", inner), "value");
			}
		}
		if (found < 0)
			ln_error(LN_INVALID_INPUT,
					 "field \"%s\" must set one of setStatusAction, setPropertyAction, "
					 "unsetPropertyAction",
					 element);
	}
}

/*
 * Decode the members of request object `obj` that `known_fields` names.
 * `prefix` is put before field names in error messages, so that an error in
 * an element of a batch names the element.
 */
static void
decode_request_object(json_object *obj, const char *prefix, uint64 known_fields, LnRequest *req)
{
	memset(req, 0, sizeof(LnRequest));
	known_fields |= LN_REQ_IDENTITY | LN_REQ_CONTEXT;
	req->include_declared = true;
	req->delimiter = "$";

	if (!json_object_is_type(obj, json_type_object))
	{
		if (prefix[0] == '\0')
			ln_error(LN_INVALID_INPUT, "the request must be a JSON object");
		ln_error(LN_INVALID_INPUT, "field \"%.*s\" must be an object", (int)strlen(prefix) - 1,
				 prefix);
	}

	for (size_t i = 0; i < lengthof(request_fields); i++)
	{
		const RequestField *f = &request_fields[i];
		char *member = (char *)req + f->offset;
		json_object *value;

		if ((known_fields & f->bit) == 0 || !json_object_object_get_ex(obj, f->key, &value) ||
			value == NULL)
			continue; /* absent, null and unknown are all ignored */

		switch (f->type)
		{
			case FIELD_ID:
				decode_id(value, prefix, f->key, (LnId *)member);
				break;
			case FIELD_NAME:
			case FIELD_TEXT:
				*(char **)member = decode_name(value, prefix, f->key, f->type == FIELD_NAME);
				break;
			case FIELD_STRING:
				*(char **)member = decode_string(value, prefix, f->key);
				break;
			case FIELD_BOOL:
				if (!json_object_is_type(value, json_type_boolean))
					ln_error(LN_INVALID_INPUT, "field \"%s%s\" must be true or false", prefix,
							 f->key);
				*(bool *)member = json_object_get_boolean(value);
				break;
			case FIELD_COUNT:
				*(int64 *)member = decode_count(value, prefix, f->key);
				break;
			case FIELD_MAP:
				decode_map(value, prefix, f->key, (LnMap *)member);
				break;
			case FIELD_RANGES:
				decode_ranges(value, prefix, f->key, req);
				break;
			case FIELD_ENTRIES:
				decode_entries(value, prefix, f->key, req);
				break;
			case FIELD_OPERATIONS:
				decode_operations(value, prefix, f->key, req);
				break;
			case FIELD_IDENTITY:
				decode_identity(value, prefix, f->key, req);
				break;
			case FIELD_ACTIONS:
				decode_actions(value, prefix, f->key, req);
				break;
		}
		req->present |= f->bit;
	}
}

/*
 * A jsonb value as a json-c tree owned by the current memory context, read
 * without JSON text in between, nesting bounded by LN_MAX_JSON_DEPTH.
 */
JsonTree *
json_request_tree(Jsonb *jsonb, const char *what)
{
	JsonTree *tree = json_guard_tree(NULL);

	if (!json_tree_from_jsonb(jsonb, LN_MAX_JSON_DEPTH, &tree->root))
		ln_error(LN_INVALID_INPUT, "%s: JSON nested deeper than %d levels", what,
				 LN_MAX_JSON_DEPTH);
	return tree;
}

/*
 * True if JSON text nests arrays and objects more than `limit` deep (outside
 * strings).  One pass, no recursion: PostgreSQL's JSON parser recurses per
 * level, and a body of megabytes of '[' would exhaust its stack ("stack depth
 * limit exceeded", PostgreSQL's error, not the client's mistake named).
 */
static bool
nests_deeper(const char *text, int limit)
{
	int depth = 0;
	bool in_string = false;

	for (const char *c = text; *c; c++)
	{
		if (((c - text) & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (in_string)
		{
			if (*c == '\\' && c[1] != '\0')
				c++;
			else if (*c == '"')
				in_string = false;
		}
		else if (*c == '"')
			in_string = true;
		else if (*c == '[' || *c == '{')
		{
			if (++depth > limit)
				return true;
		}
		else if (*c == ']' || *c == '}')
			depth--;
	}
	return false;
}

/*
 * Numbers PostgreSQL's numeric (and so jsonb) can hold: at most 16,383
 * digits after the point and 131,072 before it.  Larger ones are refused
 * here as the client's mistake (jsonb_in would raise its own error).
 */
#define LN_MAX_NUMBER_SCALE	 16383
#define LN_MAX_NUMBER_WEIGHT 131000

static LN_JSON_ACTION_RESULT
check_number(void *state, char *token, JsonTokenType type)
{
	const char *what = state;
	const char *p = token;
	int64 int_len;
	int64 frac_len = 0;
	int64 exponent = 0;

	if (type != JSON_TOKEN_NUMBER)
		return LN_JSON_ACTION_DONE;
	p += (*p == '-');
	int_len = strspn(p, "0123456789");
	p += int_len;
	if (*p == '.')
	{
		frac_len = strspn(p + 1, "0123456789");
		p += 1 + frac_len;
	}
	if (*p == 'e' || *p == 'E')
	{
		bool negative = false;

		p++;
		if (*p == '+' || *p == '-')
			negative = *p++ == '-';
		for (; *p >= '0' && *p <= '9'; p++)
			if (exponent < 1000000000)
				exponent = exponent * 10 + (*p - '0');
		if (negative)
			exponent = -exponent;
	}
	if (frac_len - exponent > LN_MAX_NUMBER_SCALE || int_len + exponent > LN_MAX_NUMBER_WEIGHT)
		ln_error(LN_INVALID_INPUT, "%s: the number %.40s%s has more digits than a request may hold",
				 what, token, strlen(token) > 40 ? "..." : "");
	return LN_JSON_ACTION_DONE;
}

/*
 * JSON text from outside (a REST body) must be JSON that PostgreSQL itself
 * would store: no \u0000 (a C string would cut it short, a key silently),
 * no lone surrogate, no number jsonb cannot hold, nesting within
 * LN_MAX_JSON_DEPTH (json_tree_from_jsonb then counts it exactly).
 * PostgreSQL's parser checks, so that jsonb_in then reads it without error.
 */
static void
check_json_text(const char *text, const char *what)
{
	JsonLexContext *lex;
	JsonSemAction sem = {0};
	JsonParseErrorType result;

	/* a container may hold one more, empty (as json_tree_from_jsonb counts) */
	if (nests_deeper(text, LN_MAX_JSON_DEPTH + 1))
		ln_error(LN_INVALID_INPUT, "%s: JSON nested deeper than %d levels", what,
				 LN_MAX_JSON_DEPTH);
	lex = ln_make_json_lex_context(text, strlen(text), GetDatabaseEncoding(), true);
	sem.semstate = (void *)what;
	sem.scalar = check_number;
	result = pg_parse_json(lex, &sem);
	if (result != JSON_SUCCESS)
		ln_error(LN_INVALID_INPUT, "%s is not valid JSON: %s", what, json_errdetail(result, lex));
}

/*
 * The names of the request members whose LN_REQ_* bits `members` has, in
 * the order requests usually give them; answers how many.
 */
int
json_request_member_names(uint64 members, const char ***names)
{
	int n = 0;

	*names = palloc(sizeof(char *) * lengthof(request_fields));
	for (size_t i = 0; i < lengthof(request_fields); i++)
		if (members & request_fields[i].bit)
			(*names)[n++] = request_fields[i].key;
	return n;
}

void
json_decode_request(Jsonb *request, uint64 known_fields, LnRequest *req)
{
	JsonTree *tree = json_request_tree(request, "the request");

	if (tree->root == NULL || !json_object_is_type(tree->root, json_type_object))
		ln_error(LN_INVALID_INPUT, "the request must be a JSON object");
	decode_request_object(tree->root, "", known_fields, req);
	json_release_tree(tree);
}

/* The request field named `key` that `known_fields` includes, or NULL. */
static const RequestField *
find_field(const char *key, uint64 known_fields)
{
	for (size_t i = 0; i < lengthof(request_fields); i++)
		if ((known_fields & request_fields[i].bit) && strcmp(request_fields[i].key, key) == 0)
			return &request_fields[i];
	return NULL;
}

/* A query parameter's text as the JSON value its request field takes. */
static json_object *
query_value(const RequestField *f, const char *value)
{
	if (f->type == FIELD_BOOL)
	{
		if (pg_strcasecmp(value, "true") == 0)
			return json_object_new_boolean(true);
		if (pg_strcasecmp(value, "false") == 0)
			return json_object_new_boolean(false);
		ln_error(LN_INVALID_INPUT, "query parameter \"%s\" must be true or false", f->key);
	}
	if (f->type == FIELD_COUNT)
	{
		int64 n = 0;

		/* spelled as in a body: the same rule, json_integer_text's */
		switch (json_integer_text(value, &n))
		{
			case JSON_INTEGER_OK:
				break;
			case JSON_INTEGER_OUT_OF_RANGE:
				ln_error(LN_INVALID_INPUT, "query parameter \"%s\" is out of range", f->key);
				break;
			case JSON_INTEGER_FRACTION:
			case JSON_INTEGER_NOT_NUMBER:
				ln_error(LN_INVALID_INPUT, "query parameter \"%s\" must be an integer", f->key);
				break;
		}
		return json_object_new_int64(n);
	}
	return json_object_new_string(value);
}

static bool
same_id(json_object *array, const LnId *id)
{
	if (!json_object_is_type(array, json_type_array) ||
		(int)json_object_array_length(array) != id->len)
		return false;
	for (int i = 0; i < id->len; i++)
	{
		json_object *name = json_object_array_get_idx(array, i);

		if (!json_object_is_type(name, json_type_string) ||
			strcmp(json_object_get_string(name), id->names[i]) != 0)
			return false;
	}
	return true;
}

/*
 * Decode an HTTP request of the REST binding: the JSON body (none or "null"
 * is {}), with the query parameters that are request fields merged in and
 * winning, the path's id (a body id that differs is an error), identity from
 * the x-api-key and Authorization headers, and the other headers in
 * req->headers, apart from the body's context: a body cannot pass what it
 * says off as headers the request carried.  `path_id` is NULL for routes
 * without one.
 */
void
json_decode_http_request(const char *body, const LnId *path_id, const LnMap *query,
						 const LnMap *headers, uint64 known_fields, LnRequest *req)
{
	static const char *const plain_headers[] = {"accept",	  "accept-encoding", "authorization",
												"connection", "content-length",	 "content-type",
												"host",		  "user-agent",		 "x-api-key"};
	JsonTree *tree;
	json_object *root = NULL;
	json_object *identity;
	json_object *id;
	LnMap recorded = {0, palloc(sizeof(char *) * (headers->len + 1)),
					  palloc(sizeof(char *) * (headers->len + 1))};

	known_fields |= LN_REQ_IDENTITY | LN_REQ_CONTEXT;
	if (body != NULL && body[strspn(body, " \t\r\n")] != '\0')
	{
		/*
		 * Through jsonb, as a request from SQL arrives: one reading of
		 * numbers (json_tree.c), keys and duplicates for both ways.
		 */
		check_json_text(body, "the request body");
		tree =
			json_request_tree(DatumGetJsonbP(OidFunctionCall1(F_JSONB_IN, CStringGetDatum(body))),
							  "the request body");
		root = tree->root;
	}
	if (root == NULL) /* no body, or the literal null */
		tree = json_guard_tree(root = json_object_new_object());
	if (!json_object_is_type(root, json_type_object))
		ln_error(LN_INVALID_INPUT, "the request body must be a JSON object");

	for (int i = 0; i < query->len; i++)
	{
		const RequestField *f = find_field(query->keys[i], known_fields);

		if (f != NULL && f->type != FIELD_ID && f->type != FIELD_MAP && f->type < FIELD_RANGES)
			json_object_object_add(root, f->key, query_value(f, query->values[i]));
	}

	if (path_id != NULL)
	{
		if (json_object_object_get_ex(root, "id", &id) && id != NULL && !same_id(id, path_id))
			ln_error(LN_INVALID_INPUT, "the body's id does not match the id in the path \"%s\"",
					 ln_id_string(path_id, path_id->len));
		json_object_object_add(root, "id", json_new_string_array(path_id->len, path_id->names));
	}

	/* identity from headers wins over the body's */
	if (!json_object_object_get_ex(root, "identity", &identity) ||
		!json_object_is_type(identity, json_type_object))
	{
		identity = json_object_new_object();
		json_object_object_add(root, "identity", identity);
	}
	for (int i = 0; i < headers->len; i++)
	{
		const char *name = headers->keys[i];
		const char *value = headers->values[i];
		bool plain = false;

		if (strcmp(name, "x-api-key") == 0)
			json_object_object_add(identity, "api_key", json_object_new_string(value));
		else if (strcmp(name, "authorization") == 0 && pg_strncasecmp(value, "bearer ", 7) == 0)
			json_object_object_add(identity, "auth_token", json_object_new_string(value + 7));
		for (size_t k = 0; k < lengthof(plain_headers); k++)
			plain = plain || strcmp(name, plain_headers[k]) == 0;
		if (!plain)
		{
			recorded.keys[recorded.len] = (char *)name;
			recorded.values[recorded.len++] = (char *)value;
		}
	}

	decode_request_object(root, "", known_fields, req);
	req->headers = recorded;
	json_release_tree(tree);
}

/* The request headers given to the REST dispatch as a jsonb object, names in lower case. */
LnMap
json_decode_headers(Jsonb *headers)
{
	LnRequest holder;
	JsonTree *tree = json_request_tree(headers, "the headers");

	if (tree->root == NULL)
		ln_error(LN_INVALID_INPUT, "the headers must be a JSON object of strings");
	decode_map(tree->root, "", "headers", &holder.properties);
	json_release_tree(tree);
	for (int i = 0; i < holder.properties.len; i++)
		for (char *c = holder.properties.keys[i]; *c; c++)
			*c = pg_ascii_tolower((unsigned char)*c);
	return holder.properties;
}

static json_object *
get_member(json_object *obj, const char *key, json_type type)
{
	json_object *value;

	if (!json_object_object_get_ex(obj, key, &value) || !json_object_is_type(value, type))
		return NULL;
	return value;
}

/*
 * Read a ref file written by Lance or by the catalog.  False if it is not
 * one: not JSON, or its version or manifest size missing.
 */
bool
json_parse_ref_file(const char *text, bool branch, LnRefContents *out)
{
	JsonTree *tree = json_guard_tree(json_tokener_parse(text));
	json_object *obj = tree->root;
	json_object *value;
	bool ok = false;

	memset(out, 0, sizeof(LnRefContents));
	out->metadata.keys = out->metadata.values = NULL;
	if (obj != NULL && json_object_is_type(obj, json_type_object) &&
		(value = get_member(obj, branch ? "parentVersion" : "version", json_type_int)) != NULL)
	{
		out->version = json_object_get_int64(value);
		if ((value = get_member(obj, "manifestSize", json_type_int)) != NULL)
		{
			out->manifest_size = json_object_get_int64(value);
			ok = true;
		}
		if ((value = get_member(obj, branch ? "parentBranch" : "branch", json_type_string)))
			out->branch = pstrdup(json_object_get_string(value));
		if ((value = get_member(obj, "createAt", json_type_int)) != NULL)
			out->create_at = json_object_get_int64(value);
		if ((value = get_member(obj, "createdAt", json_type_string)) != NULL)
			out->created_at = pstrdup(json_object_get_string(value));
		if ((value = get_member(obj, "metadata", json_type_object)) != NULL)
		{
			out->metadata.keys = palloc(sizeof(char *) * (json_object_object_length(value) + 1));
			out->metadata.values = palloc(sizeof(char *) * (json_object_object_length(value) + 1));
			{
				/* the macro declares its loop variables, so it opens a block of its own */
				json_object_object_foreach(value, key, member)
				{
					if (!json_object_is_type(member, json_type_string))
						continue;
					out->metadata.keys[out->metadata.len] = pstrdup(key);
					out->metadata.values[out->metadata.len++] =
						pstrdup(json_object_get_string(member));
				}
			}
		}
		if ((value = get_member(obj, "identifier", json_type_object)) != NULL &&
			(value = get_member(value, "version_mapping", json_type_array)) != NULL)
		{
			int n = (int)json_object_array_length(value);

			out->mapping_versions = palloc(sizeof(int64) * (n + 1));
			out->mapping_ids = palloc(sizeof(char *) * (n + 1));
			for (int i = 0; i < n; i++)
			{
				json_object *pair = json_object_array_get_idx(value, i);

				if (!json_object_is_type(pair, json_type_array) ||
					json_object_array_length(pair) != 2 ||
					!json_object_is_type(json_object_array_get_idx(pair, 1), json_type_string))
					continue;
				out->mapping_versions[out->nmapping] =
					json_object_get_int64(json_object_array_get_idx(pair, 0));
				out->mapping_ids[out->nmapping++] =
					pstrdup(json_object_get_string(json_object_array_get_idx(pair, 1)));
			}
		}
	}
	json_release_tree(tree);
	return ok;
}

/* A required string member of the top-level request object. */
char *
json_required_name(json_object *root, const char *key)
{
	json_object *member;

	if (!json_object_object_get_ex(root, key, &member) || member == NULL)
		ln_error(LN_INVALID_INPUT, "field \"%s\" is required", key);
	return decode_name(member, "", key, true);
}

/*
 * A request of lance_grant, lance_revoke (with_grantee) or
 * lance_list_grants: {"id": [...], "role": "name", "privilege": "..."}.
 */
void
json_decode_grant(Jsonb *request, bool with_grantee, LnId *id, char **role, char **privilege)
{
	JsonTree *tree = json_request_tree(request, "the request");
	json_object *member;

	if (tree->root == NULL || !json_object_is_type(tree->root, json_type_object))
		ln_error(LN_INVALID_INPUT, "the request must be a JSON object");
	if (!json_object_object_get_ex(tree->root, "id", &member) || member == NULL)
		ln_error(LN_INVALID_INPUT, "field \"id\" is required (the root namespace is [])");
	decode_id(member, "", "id", id);
	if (with_grantee)
	{
		*role = json_required_name(tree->root, "role");
		*privilege = json_required_name(tree->root, "privilege");
	}
	json_release_tree(tree);
}

/*
 * An object of storage options (a setting's "options", a key pair of its
 * "vend"): values are strings, as Lance takes them; a boolean or a number is
 * taken as its JSON text ("allow_http": true is "true").
 */
static void
decode_option_map(json_object *member, const char *field, LnMap *options)
{
	int n = 0;

	if (member == NULL || !json_object_is_type(member, json_type_object))
		ln_error(LN_INVALID_INPUT, "field \"%s\" must be an object of storage options", field);
	options->len = json_object_object_length(member);
	options->keys = palloc(sizeof(char *) * (options->len + 1));
	options->values = palloc(sizeof(char *) * (options->len + 1));
	{
		json_object_object_foreach(member, key, value)
		{
			char *prefix = psprintf("%s.", field);

			if (!pg_verify_mbstr(PG_UTF8, key, strlen(key), true) || key[0] == '\0')
				ln_error(LN_INVALID_INPUT, "field \"%s\" has a key that is empty or not UTF-8",
						 field);
			options->keys[n] = pstrdup(key);
			if (json_object_is_type(value, json_type_boolean) ||
				json_object_is_type(value, json_type_int) ||
				json_object_is_type(value, json_type_double))
				options->values[n] = pstrdup(json_object_to_json_string(value));
			else
				options->values[n] = decode_string(value, prefix, key);
			n++;
		}
	}
}

/* An LnMap's JSON text: an object of strings. */
char *
json_map_text(const LnMap *map)
{
	json_object *obj = json_object_new_object();
	JsonTree *tree = json_guard_tree(obj);
	char *text;

	for (int i = 0; i < map->len; i++)
		json_object_object_add(obj, map->keys[i], json_object_new_string(map->values[i]));
	text = pstrdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
	json_release_tree(tree);
	return text;
}

/*
 * A setting's "vend" member as a flat map: "mode" and the mode's members,
 * each a string; a key pair ("read", "write") as its JSON text.  Absent, it
 * is {"mode": "none"}.  The members each mode takes, and their types, are
 * checked here; what they mean (a key pair's options, an endpoint) is the
 * storage layer's to check.
 */
static void
decode_vend(json_object *member, LnMap *vend)
{
	static const char *const modes[] = {"none", "keys", "sts", "catalog_keys", NULL};
	json_object *mode_member;
	char *mode;
	int n = 0;

	vend->keys = palloc(sizeof(char *) * 8);
	vend->values = palloc(sizeof(char *) * 8);
	vend->len = 0;
	if (member == NULL)
	{
		vend->keys[0] = "mode";
		vend->values[0] = "none";
		vend->len = 1;
		return;
	}
	if (!json_object_is_type(member, json_type_object))
		ln_error(LN_INVALID_INPUT, "field \"vend\" must be an object: {\"mode\": ...}");
	if (!json_object_object_get_ex(member, "mode", &mode_member) || mode_member == NULL)
		ln_error_detail(LN_INVALID_INPUT, "Give \"none\", \"keys\", \"sts\" or \"catalog_keys\".",
						"field \"vend.mode\" is required");
	mode = decode_string(mode_member, "vend.", "mode");
	for (n = 0; modes[n] != NULL && strcmp(modes[n], mode) != 0; n++)
		;
	if (modes[n] == NULL)
		ln_error_detail(LN_INVALID_INPUT, "Give \"none\", \"keys\", \"sts\" or \"catalog_keys\".",
						"field \"vend.mode\" is \"%s\", which is no mode", mode);
	vend->keys[vend->len] = "mode";
	vend->values[vend->len++] = mode;
	{
		json_object_object_foreach(member, key, value)
		{
			bool pair = strcmp(mode, "keys") == 0 &&
						(strcmp(key, "read") == 0 || strcmp(key, "write") == 0);
			bool sts_text = strcmp(mode, "sts") == 0 &&
							(strcmp(key, "role_arn") == 0 || strcmp(key, "sts_endpoint") == 0 ||
							 strcmp(key, "external_id") == 0);
			bool sts_number = strcmp(mode, "sts") == 0 && strcmp(key, "duration_seconds") == 0;

			if (strcmp(key, "mode") == 0)
				continue;
			if (vend->len >= 7 || !(pair || sts_text || sts_number))
				ln_error(LN_INVALID_INPUT, "field \"vend.%s\" is not a member of mode \"%s\"",
						 pg_verify_mbstr(PG_UTF8, key, strlen(key), true) ? key : "?", mode);
			vend->keys[vend->len] = pstrdup(key);
			if (pair)
			{
				LnMap options;

				decode_option_map(value, psprintf("vend.%s", key), &options);
				vend->values[vend->len++] = json_map_text(&options);
			}
			else if (sts_text)
				vend->values[vend->len++] = decode_name(value, "vend.", key, true);
			else
			{
				int64 seconds;

				if (!json_object_is_type(value, json_type_int) ||
					json_integer_text(json_object_to_json_string(value), &seconds) !=
						JSON_INTEGER_OK ||
					seconds < 900 || seconds > 43200)
					ln_error(LN_INVALID_INPUT,
							 "field \"vend.duration_seconds\" must be a whole number of seconds "
							 "from 900 to 43200, as the token service takes");
				vend->values[vend->len++] = psprintf(INT64_FORMAT, seconds);
			}
		}
	}
}

/*
 * A request of lance_set_storage (with_options) or lance_remove_storage:
 * {"location": "s3://bucket/prefix", "options": {"name": "value", ...},
 * "vend": {"mode": ...}, "take_over": true}.  `vend` gets the flat map of
 * decode_vend; take_over (lance_set_storage alone) is false when absent.
 */
void
json_decode_storage_setting(Jsonb *request, bool with_options, char **location, LnMap *options,
							LnMap *vend, bool *take_over)
{
	JsonTree *tree = json_request_tree(request, "the request");
	json_object *member;

	if (tree->root == NULL || !json_object_is_type(tree->root, json_type_object))
		ln_error(LN_INVALID_INPUT, "the request must be a JSON object");
	*location = json_required_name(tree->root, "location");
	if (!with_options)
	{
		json_release_tree(tree);
		return;
	}
	*take_over = false;
	if (json_object_object_get_ex(tree->root, "take_over", &member) && member != NULL)
	{
		if (!json_object_is_type(member, json_type_boolean))
			ln_error(LN_INVALID_INPUT, "field \"take_over\" must be true or false");
		*take_over = json_object_get_boolean(member);
	}
	if (!json_object_object_get_ex(tree->root, "options", &member) || member == NULL ||
		!json_object_is_type(member, json_type_object))
		ln_error(LN_INVALID_INPUT, "field \"options\" is required: an object of storage options");
	decode_option_map(member, "options", options);
	if (!json_object_object_get_ex(tree->root, "vend", &member))
		member = NULL;
	decode_vend(member, vend);
	json_release_tree(tree);
}

/* A JSON object of strings (a vended key pair as decode_vend keeps it) as an LnMap. */
LnMap
json_decode_option_text(const char *text)
{
	json_object *root = json_tokener_parse(text);
	JsonTree *tree = root != NULL ? json_guard_tree(root) : NULL;
	LnMap map;

	if (root == NULL)
		ln_error(LN_INTERNAL, "a stored key pair is not JSON");
	decode_option_map(root, "vend", &map);
	json_release_tree(tree);
	return map;
}

/*
 * A vend member as the catalog keeps it (lance_catalog.storage.vend, JSON
 * text) as the flat map json_decode_storage_setting makes: a key pair as its
 * JSON text, any other member as its string or its JSON text.
 */
LnMap
json_decode_vend_text(const char *text)
{
	json_object *root = json_tokener_parse(text);
	JsonTree *tree = root != NULL ? json_guard_tree(root) : NULL;
	LnMap map = {0, NULL, NULL};
	int n = 0;

	if (root == NULL || !json_object_is_type(root, json_type_object))
		ln_error(LN_INTERNAL, "a stored vend setting is not a JSON object");
	map.keys = palloc(sizeof(char *) * (json_object_object_length(root) + 1));
	map.values = palloc(sizeof(char *) * (json_object_object_length(root) + 1));
	{
		json_object_object_foreach(root, key, value)
		{
			map.keys[n] = pstrdup(key);
			map.values[n++] =
				pstrdup(json_object_is_type(value, json_type_string)
							? json_object_get_string(value)
							: json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN));
		}
	}
	map.len = n;
	json_release_tree(tree);
	return map;
}
