/*
 * json_tree.h
 *		jsonb values as json-c trees and back, without JSON text between.
 */
#ifndef LN_JSON_TREE_H
#define LN_JSON_TREE_H

#include <json-c/json.h>

#include "utils/jsonb.h"

/* What json_integer_text makes of a JSON number's text. */
typedef enum JsonInteger
{
	JSON_INTEGER_OK,
	JSON_INTEGER_FRACTION,	   /* a value with digits after the point */
	JSON_INTEGER_OUT_OF_RANGE, /* an integer outside int64 */
	JSON_INTEGER_NOT_NUMBER,   /* no JSON number at all */
} JsonInteger;

extern JsonInteger json_integer_text(const char *text, int64 *value);
extern bool json_tree_from_jsonb(Jsonb *jsonb, int max_depth, json_object **root);
extern Jsonb *json_tree_to_jsonb(json_object *root);

#endif
