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
/* The fewest requests a second: one in 1000 s, a wait Retry-After can still say. */
#define ROLE_RATE_MIN 0.001

/* LN013 for a member of `root` that is not one of `known` (NULL-terminated). */
static void
refuse_unknown_fields(json_object *root, const char *const *known, const char *listed)
{
	struct json_object_iterator it = json_object_iter_begin(root);
	struct json_object_iterator end = json_object_iter_end(root);

	for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
	{
		const char *key = json_object_iter_peek_name(&it);
		const char *const *k = known;

		while (*k != NULL && strcmp(*k, key) != 0)
			k++;
		if (*k == NULL)
			ln_error(LN_INVALID_INPUT, "field \"%s\" is not one of this request's (%s)", key,
					 listed);
	}
}

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
	static const char *const set_fields[] = {"role", "requests_per_second", "burst", NULL};
	static const char *const list_fields[] = {"role", NULL};
	JsonTree *tree = json_request_tree(request, "the request");
	json_object *member;

	if (tree->root == NULL || !json_object_is_type(tree->root, json_type_object))
		ln_error(LN_INVALID_INPUT, "the request must be a JSON object");
	refuse_unknown_fields(tree->root, for_set ? set_fields : list_fields,
						  for_set ? "role, requests_per_second, burst" : "role");
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
		if (!(*rate >= ROLE_RATE_MIN && *rate <= ROLE_LIMIT_MAX))
			ln_error(LN_INVALID_INPUT,
					 "field \"requests_per_second\" must be from %g to %d (null removes the "
					 "role's limit)",
					 ROLE_RATE_MIN, ROLE_LIMIT_MAX);
	}
	if (json_object_object_get_ex(tree->root, "burst", &member) && member != NULL)
	{
		int64 n;

		if (*rate == 0)
			ln_error(LN_INVALID_INPUT,
					 "field \"burst\" goes with a rate: a null requests_per_second removes the "
					 "limit");
		if (!json_object_is_type(member, json_type_int))
			ln_error(LN_INVALID_INPUT, "field \"burst\" must be a whole number");
		n = json_object_get_int64(member);
		if (n < 1 || n > ROLE_LIMIT_MAX)
			ln_error(LN_INVALID_INPUT, "field \"burst\" must be from 1 to %d", ROLE_LIMIT_MAX);
		*burst = (int)n;
	}
	json_release_tree(tree);
}
