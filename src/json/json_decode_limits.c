/*
 * json_decode_limits.c
 *		The request of lance_set_role_limits and lance_list_role_limits.
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "../common/error.h"
#include "json_edge.h"
#include "json_internal.h"

/* The most requests a second, and the largest burst, a role limit may name. */
#define ROLE_LIMIT_MAX 1000000

/*
 * A request of lance_set_role_limits (for_set) or lance_list_role_limits:
 * {"role": "name", "requests_per_second": n or null, "burst": n}.  For a
 * set, "role" is required and so is "requests_per_second" (null: remove
 * the limit; *rate 0 then), "burst" optional (*burst 0: not given); for a
 * listing, "role" alone, optional (*role NULL).  Other fields are refused:
 * a misspelt one must not leave a role unlimited unnoticed.
 */
void
json_decode_role_limits(Jsonb *request, bool for_set, char **role, double *rate, int *burst)
{
	JsonTree *tree = json_request_tree(request, "the request");
	json_object *member;

	if (tree->root == NULL || !json_object_is_type(tree->root, json_type_object))
		ln_error(LN_INVALID_INPUT, "the request must be a JSON object");
	{json_object_object_foreach(tree->root, key, value){(void)value;
	if (strcmp(key, "role") != 0 &&
		(!for_set || (strcmp(key, "requests_per_second") != 0 && strcmp(key, "burst") != 0)))
		ln_error(LN_INVALID_INPUT, "field \"%s\" is not one of this request's (%s)", key,
				 for_set ? "role, requests_per_second, burst" : "role");
}
}
*role = NULL;
*rate = 0;
*burst = 0;
if (for_set || (json_object_object_get_ex(tree->root, "role", &member) && member != NULL))
	*role = json_required_name(tree->root, "role");
if (!for_set)
{
	json_release_tree(tree);
	return;
}
if (!json_object_object_get_ex(tree->root, "requests_per_second", &member))
	ln_error(LN_INVALID_INPUT,
			 "field \"requests_per_second\" is required (null removes the role's limit)");
if (member != NULL)
{
	if (!json_object_is_type(member, json_type_int) &&
		!json_object_is_type(member, json_type_double))
		ln_error(LN_INVALID_INPUT, "field \"requests_per_second\" must be a number or null");
	*rate = json_object_get_double(member);
	if (!(*rate > 0 && *rate <= ROLE_LIMIT_MAX))
		ln_error(LN_INVALID_INPUT,
				 "field \"requests_per_second\" must be above 0 and at most %d (null removes "
				 "the role's limit)",
				 ROLE_LIMIT_MAX);
}
if (json_object_object_get_ex(tree->root, "burst", &member) && member != NULL)
{
	int64 n;

	if (!json_object_is_type(member, json_type_int))
		ln_error(LN_INVALID_INPUT, "field \"burst\" must be a whole number");
	n = json_object_get_int64(member);
	if (n < 1 || n > ROLE_LIMIT_MAX)
		ln_error(LN_INVALID_INPUT, "field \"burst\" must be from 1 to %d", ROLE_LIMIT_MAX);
	*burst = (int)n;
}
json_release_tree(tree);
}
