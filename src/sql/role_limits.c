/*
 * role_limits.c
 *		lance_set_role_limits and lance_list_role_limits, and the check of
 *		every REST request of a limited role (role_limits_admit).
 *
 * One tenant's key may send more than the catalog can serve for all: an
 * administrator gives its role a rate, requests_per_second, with bursts of
 * up to burst (default: one second's worth, at least 1).  A request over it
 * is refused before it runs: 429 with code 21 (Throttling) and Retry-After.
 * Limits are rows of lance_catalog.role_limit, dumped with the catalog and
 * kept by role as grants are (its OID and the name it had); the tokens are
 * counted per server and database in shared memory (rate_buckets.c), so
 * each standby and the primary count apart, and only while the library is
 * preloaded.  SQL callers are not limited here: they hold a connection of
 * their own, which PostgreSQL's CONNECTION LIMIT bounds.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/rate_buckets.h"
#include "../frame/frame.h"
#include "../json/json_edge.h"
#include "role_limits.h"

/* The longest wait a refusal tells (Retry-After), in seconds. */
#define MAX_WAIT_SECONDS 3600

/* One limit as JSON: {"role", "requests_per_second", "burst"[, "set_by", "set_at"]}. */
static void
append_limit(StringInfo out, const char *role, double rate, int burst, const CatalogRoleLimit *l)
{
	appendStringInfoString(out, "{\"role\": ");
	escape_json(out, role);
	if (rate > 0)
		appendStringInfo(out, ", \"requests_per_second\": %.15g, \"burst\": %d", rate, burst);
	else
		appendStringInfoString(out, ", \"requests_per_second\": null, \"burst\": null");
	if (l != NULL)
	{
		appendStringInfoString(out, ", \"set_by\": ");
		if (l->set_by != NULL)
			escape_json(out, l->set_by);
		else
			appendStringInfoString(out, "null");
		appendStringInfoString(out, ", \"set_at\": ");
		escape_json(out, l->set_at);
	}
	appendStringInfoChar(out, '}');
}

static Jsonb *
jsonb_of(StringInfo text)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text->data)));
}

/*
 * lance_set_role_limits({"role", "requests_per_second", "burst"}): set or
 * replace the role's limit, or with "requests_per_second": null remove it.
 * Answers the limit now in force (nulls when none) and whether it changed.
 */
static Jsonb *
set_role_limits(Jsonb *request)
{
	char *role_name;
	double rate;
	int burst;
	Oid role;
	bool changed = true;
	StringInfoData out;

	access_begin();
	access_require_admin("lance_set_role_limits()");
	json_decode_role_limits(request, true, &role_name, &rate, &burst);
	role = get_role_oid(role_name, true);
	if (!OidIsValid(role))
		ln_error(LN_INVALID_INPUT, "role \"%s\" does not exist", role_name);
	if (rate > 0 && burst == 0)
		burst = rate < 1 ? 1 : (int)ceil(rate);
	catalog_begin();
	if (rate > 0)
		changed = catalog_set_role_limit(role, role_name, rate, burst, access_caller());
	else
		changed = catalog_remove_role_limit(role);
	catalog_end();
	if (rate > 0 && !rate_buckets_available())
		ereport(
			WARNING,
			(errmsg("lance_namespace: the limit is kept but not enforced: the library is not "
					"in shared_preload_libraries"),
			 errhint("Add lance_namespace to shared_preload_libraries and restart the server.")));
	initStringInfo(&out);
	append_limit(&out, role_name, rate, burst, NULL);
	out.len--; /* the closing brace */
	appendStringInfo(&out, ", \"changed\": %s}", changed ? "true" : "false");
	return jsonb_of(&out);
}

/* lance_list_role_limits({"role": ...}): the limits, by role name; every role's without "role". */
static Jsonb *
list_role_limits(Jsonb *request)
{
	char *role_name;
	double rate;
	int burst;
	CatalogRoleLimit *limits;
	int n;
	StringInfoData out;

	access_begin();
	access_require_admin("lance_list_role_limits()");
	json_decode_role_limits(request, false, &role_name, &rate, &burst);
	catalog_begin();
	n = catalog_list_role_limits(role_name, &limits);
	catalog_end();
	initStringInfo(&out);
	appendStringInfoString(&out, "{\"limits\": [");
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoString(&out, ", ");
		append_limit(&out, limits[i].role_name, limits[i].requests_per_second, limits[i].burst,
					 &limits[i]);
	}
	appendStringInfo(&out, "], \"enforced\": %s}", rate_buckets_available() ? "true" : "false");
	return jsonb_of(&out);
}

/*
 * Whether a REST request of `role` may run now: true, or false with the
 * role's limit and the wait in *refusal.  One index look-up for a role
 * without a limit.
 */
bool
role_limits_admit(Oid role, RoleLimitRefusal *refusal)
{
	double wait;
	bool limited;

	catalog_begin();
	limited = catalog_role_limit(role, &refusal->requests_per_second, &refusal->burst);
	catalog_end();
	if (!limited ||
		rate_bucket_take(MyDatabaseId, role, refusal->requests_per_second, refusal->burst, &wait))
		return true;
	refusal->wait_seconds = wait < 1				  ? 1
							: wait > MAX_WAIT_SECONDS ? MAX_WAIT_SECONDS
													  : (int)ceil(wait);
	return false;
}

/* Refuse a request of `role` that role_limits_admit did not admit: LN021. */
void
role_limits_refuse(Oid role, const RoleLimitRefusal *refusal)
{
	ln_error_detail(LN_THROTTLING,
					psprintf("Wait %d s and try again, or ask an administrator to raise the "
							 "limit (lance_set_role_limits).",
							 refusal->wait_seconds),
					"role \"%s\" is over its limit of %.15g requests a second (bursts of %d)",
					GetUserNameFromId(role, false), refusal->requests_per_second, refusal->burst);
}

PG_FUNCTION_INFO_V1(lance_set_role_limits);
Datum
lance_set_role_limits(PG_FUNCTION_ARGS)
{
	Jsonb *result = NULL;

	LANCE_SQL_ENTRY(result, set_role_limits(PG_GETARG_JSONB_P(0)));
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(lance_list_role_limits);
Datum
lance_list_role_limits(PG_FUNCTION_ARGS)
{
	Jsonb *result = NULL;

	LANCE_SQL_ENTRY(result, list_role_limits(PG_GETARG_JSONB_P(0)));
	PG_RETURN_JSONB_P(result);
}
