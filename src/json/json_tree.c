/*
 * json_tree.c
 *		jsonb values as json-c trees and back, without JSON text between.
 *
 * A request arrives as jsonb and an answer leaves as jsonb; the JSON edge
 * (json_decode.c, json_encode.c) decodes and encodes json-c trees, which
 * REST bodies and Lance's files on storage arrive as.  Printing the jsonb
 * as text for json-c to parse, and json-c's text for jsonb_in to parse,
 * cost more than the decoding itself: these walk one structure and build
 * the other.
 *
 * The json-c tree is malloc'ed: the caller owns the root as soon as it
 * exists (json_tree_from_jsonb sets *root before it adds anything to it), so
 * that a guard the caller holds releases a tree left half-built by an error.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "utils/fmgroids.h"
#include "utils/numeric.h"

#include "json_tree.h"

/* utils/builtins.h, which declares it, also declares a function named json_object */
extern Datum numeric_out(PG_FUNCTION_ARGS);

static void
out_of_memory(void)
{
	ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
}

/*
 * A jsonb number as json-c reads its JSON text: an integer that fits int64
 * as one, anything else as json-c's tokener makes of it (so that doubles
 * keep their text and big integers behave as they do in a REST body).
 */
static json_object *
number_from_jsonb(Numeric number)
{
	char *text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(number)));
	const char *digits = text[0] == '-' ? text + 1 : text;
	json_object *value = NULL;

	if (digits[0] != '\0' && strspn(digits, "0123456789") == strlen(digits) && strlen(digits) < 19)
		value = json_object_new_int64(strtoi64(text, NULL, 10));
	else
		value = json_tokener_parse(text);
	pfree(text);
	if (value == NULL)
		out_of_memory();
	return value;
}

static json_object *
scalar_from_jsonb(const JsonbValue *v)
{
	json_object *value;

	switch (v->type)
	{
		case jbvNull:
			return NULL;
		case jbvString:
			value = json_object_new_string_len(v->val.string.val, v->val.string.len);
			break;
		case jbvBool:
			value = json_object_new_boolean(v->val.boolean);
			break;
		case jbvNumeric:
			return number_from_jsonb(v->val.numeric);
		default:
			elog(ERROR, "lance_namespace: unexpected jsonb value of type %d", (int)v->type);
	}
	if (value == NULL)
		out_of_memory();
	return value;
}

/* Put `value` where it goes: the root, an array's next element or an object's member. */
static void
attach(json_object **root, json_object *parent, const char *key, json_object *value)
{
	int rc = 0;

	if (parent == NULL)
		*root = value;
	else if (json_object_is_type(parent, json_type_object))
		rc = json_object_object_add(parent, key, value);
	else
		rc = json_object_array_add(parent, value);
	if (rc != 0)
	{
		json_object_put(value);
		out_of_memory();
	}
}

/*
 * Build the json-c tree of `jsonb` in *root.  False, with what was built so
 * far in *root, if a value lies deeper than `max_depth` levels below the top
 * (as json-c's tokener counts them with a depth of max_depth + 1).  A JSON
 * null gives a NULL root.
 */
bool
json_tree_from_jsonb(Jsonb *jsonb, int max_depth, json_object **root)
{
	JsonbIterator *it = JsonbIteratorInit(&jsonb->root);
	json_object **open = palloc(sizeof(json_object *) * (max_depth + 1));
	int level = 0;
	bool raw_scalar = false;
	char *key = NULL;
	JsonbValue v;
	JsonbIteratorToken token;

	*root = NULL;
	while ((token = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		json_object *parent = level > 0 ? open[level - 1] : NULL;
		json_object *value;

		CHECK_FOR_INTERRUPTS();
		switch (token)
		{
			case WJB_BEGIN_ARRAY:
			case WJB_BEGIN_OBJECT:
				if (token == WJB_BEGIN_ARRAY && v.val.array.rawScalar)
				{
					raw_scalar = true;
					break;
				}
				if (level > max_depth)
					return false;
				value =
					token == WJB_BEGIN_ARRAY ? json_object_new_array() : json_object_new_object();
				if (value == NULL)
					out_of_memory();
				attach(root, parent, key, value);
				open[level++] = value;
				break;
			case WJB_END_ARRAY:
			case WJB_END_OBJECT:
				if (!raw_scalar)
					level--;
				break;
			case WJB_KEY:
				if (key != NULL)
					pfree(key);
				key = pnstrdup(v.val.string.val, v.val.string.len);
				break;
			case WJB_VALUE:
			case WJB_ELEM:
				if (level > max_depth)
					return false;
				attach(root, parent, key, scalar_from_jsonb(&v));
				break;
			default:
				break;
		}
	}
	pfree(open);
	return true;
}

/*
 * Text jsonb can hold: valid in the database's encoding and free of NUL,
 * which jsonb_in refuses (as \u0000).  Strings from Lance's files on storage
 * are json-c's and have not been checked.
 */
static bool
storable_string(const char *s, int len)
{
	return memchr(s, '\0', len) == NULL && pg_verifymbstr(s, len, true);
}

static bool push_value(JsonbParseState **state, json_object *value, JsonbIteratorToken as,
					   JsonbValue **result);

static bool
push_object(JsonbParseState **state, json_object *object, JsonbValue **result)
{
	struct json_object_iterator it = json_object_iter_begin(object);
	struct json_object_iterator end = json_object_iter_end(object);

	pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
	for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
	{
		JsonbValue key;

		key.type = jbvString;
		key.val.string.val = (char *)json_object_iter_peek_name(&it);
		key.val.string.len = strlen(key.val.string.val);
		if (!storable_string(key.val.string.val, key.val.string.len))
			return false;
		pushJsonbValue(state, WJB_KEY, &key);
		if (!push_value(state, json_object_iter_peek_value(&it), WJB_VALUE, result))
			return false;
	}
	*result = pushJsonbValue(state, WJB_END_OBJECT, NULL);
	return true;
}

static bool
push_container(JsonbParseState **state, json_object *value, JsonbValue **result)
{
	size_t n;

	if (json_object_is_type(value, json_type_object))
		return push_object(state, value, result);
	n = json_object_array_length(value);
	pushJsonbValue(state, WJB_BEGIN_ARRAY, NULL);
	for (size_t i = 0; i < n; i++)
		if (!push_value(state, json_object_array_get_idx(value, i), WJB_ELEM, result))
			return false;
	*result = pushJsonbValue(state, WJB_END_ARRAY, NULL);
	return true;
}

/* A json-c scalar as a JsonbValue; false if jsonb cannot hold it as it is. */
static bool
scalar_value(json_object *value, JsonbValue *v)
{
	switch (json_object_get_type(value))
	{
		case json_type_null:
			v->type = jbvNull;
			return true;
		case json_type_boolean:
			v->type = jbvBool;
			v->val.boolean = json_object_get_boolean(value);
			return true;
		case json_type_int:
			/* json-c keeps integers above INT64_MAX as unsigned: their text says it */
			if (json_object_get_int64(value) == PG_INT64_MAX)
				return false;
			v->type = jbvNumeric;
			v->val.numeric = int64_to_numeric(json_object_get_int64(value));
			return true;
		case json_type_string:
			v->type = jbvString;
			v->val.string.val = (char *)json_object_get_string(value);
			v->val.string.len = json_object_get_string_len(value);
			return storable_string(v->val.string.val, v->val.string.len);
		default:
			/* doubles: their JSON text, as json-c prints it, is what jsonb_in would read */
			return false;
	}
}

static bool
push_value(JsonbParseState **state, json_object *value, JsonbIteratorToken as, JsonbValue **result)
{
	JsonbValue v;

	check_stack_depth();
	if (json_object_is_type(value, json_type_object) || json_object_is_type(value, json_type_array))
		return push_container(state, value, result);
	if (!scalar_value(value, &v))
		return false;
	*result = pushJsonbValue(state, as, &v);
	return true;
}

/*
 * The jsonb of a json-c tree (which stays the caller's), or NULL if the
 * tree holds what only its JSON text can say the same way: a double, an
 * integer beyond int64, a string jsonb cannot hold.  The caller then goes
 * the way of text, with jsonb_in's own checks and errors.
 */
Jsonb *
json_tree_to_jsonb(json_object *root)
{
	JsonbParseState *state = NULL;
	JsonbValue *result = NULL;
	JsonbValue v;

	if (root == NULL || !(json_object_is_type(root, json_type_object) ||
						  json_object_is_type(root, json_type_array)))
	{
		if (root != NULL && !scalar_value(root, &v))
			return NULL;
		if (root == NULL)
			v.type = jbvNull;
		return JsonbValueToJsonb(&v);
	}
	if (!push_container(&state, root, &result))
		return NULL;
	return JsonbValueToJsonb(result);
}
