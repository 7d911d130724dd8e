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

#include <ctype.h>

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
 * Whether the JSON number `text` is an integer, by its exact decimal value:
 * digits with an optional '-', then optionally a fraction and an exponent
 * (numeric_out writes no exponent; JSON text may).  1e2 and 10.0 are the
 * integers 100 and 10; 1.5 and 1e-400 are no integers, whatever a double
 * would round them to; -1e30 and 9223372036854775808 are out of int64's
 * range.  Both ways a request arrives (jsonb from SQL, JSON text through
 * REST, which becomes jsonb too) read their integers with this one rule.
 */
JsonInteger
json_integer_text(const char *text, int64 *value)
{
	const char *p = text;
	bool negative = false;
	const char *int_digits;
	size_t int_len;
	const char *frac_digits = "";
	size_t frac_len = 0;
	int64 exponent = 0;
	char digits[24];
	int n = 0;
	int64 scale;
	size_t first;
	size_t last;
	size_t total;

	if (*p == '-')
	{
		negative = true;
		p++;
	}
	int_digits = p;
	int_len = strspn(p, "0123456789");
	if (int_len == 0)
		return JSON_INTEGER_NOT_NUMBER;
	p += int_len;
	if (*p == '.')
	{
		frac_digits = ++p;
		frac_len = strspn(p, "0123456789");
		if (frac_len == 0)
			return JSON_INTEGER_NOT_NUMBER;
		p += frac_len;
	}
	if (*p == 'e' || *p == 'E')
	{
		bool exp_negative = false;

		p++;
		if (*p == '+' || *p == '-')
			exp_negative = *p++ == '-';
		if (!isdigit((unsigned char)*p))
			return JSON_INTEGER_NOT_NUMBER;
		/* past a billion the answer is the same: no integer, or out of range */
		for (; isdigit((unsigned char)*p); p++)
			if (exponent < 1000000000)
				exponent = exponent * 10 + (*p - '0');
		if (exp_negative)
			exponent = -exponent;
	}
	if (*p != '\0')
		return JSON_INTEGER_NOT_NUMBER;

	/*
	 * The digits, integer part then fraction, as one string of `total`;
	 * the value is that string times 10^(exponent - frac_len).  Without its
	 * leading and trailing zeros (first to last), it is an integer when
	 * the zeros cut off and the exponent leave no digit after the point.
	 */
	total = int_len + frac_len;
#define DIGIT(i) ((i) < int_len ? int_digits[i] : frac_digits[(i)-int_len])
	for (first = 0; first < total && DIGIT(first) == '0'; first++)
		;
	if (first == total)
	{
		*value = 0;
		return JSON_INTEGER_OK;
	}
	for (last = total - 1; DIGIT(last) == '0'; last--)
		;
	/* the value is digits first..last times 10^scale */
	scale = exponent - (int64)frac_len + (int64)(total - 1 - last);
	if (scale < 0)
		return JSON_INTEGER_FRACTION;
	/* more than 19 digits is past int64's range */
	if ((int64)(last - first + 1) + scale > 19)
		return JSON_INTEGER_OUT_OF_RANGE;
	if (negative)
		digits[n++] = '-';
	for (size_t i = first; i <= last; i++)
		digits[n++] = DIGIT(i);
	for (int64 i = 0; i < scale; i++)
		digits[n++] = '0';
	digits[n] = '\0';
#undef DIGIT
	errno = 0;
	*value = strtoi64(digits, NULL, 10);
	return errno == 0 ? JSON_INTEGER_OK : JSON_INTEGER_OUT_OF_RANGE;
}

/*
 * A jsonb number as a json-c value: an integer that fits int64 (by
 * json_integer_text's rule) as one, anything else as a double that keeps
 * numeric_out's text, exact, for its JSON and for json_integer_text to read
 * again (json-c's own parser would clamp a big integer to int64 silently).
 */
static json_object *
number_from_jsonb(Numeric number)
{
	char *text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(number)));
	json_object *value;
	int64 n;

	if (json_integer_text(text, &n) == JSON_INTEGER_OK)
		value = json_object_new_int64(n);
	else
		value = json_object_new_double_s(strtod(text, NULL), text);
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
