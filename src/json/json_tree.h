/*
 * json_tree.h
 *		jsonb values as json-c trees and back, without JSON text between.
 */
#ifndef LN_JSON_TREE_H
#define LN_JSON_TREE_H

#include <json-c/json.h>

#include "utils/jsonb.h"

extern bool json_tree_from_jsonb(Jsonb *jsonb, int max_depth, json_object **root);
extern Jsonb *json_tree_to_jsonb(json_object *root);

#endif
