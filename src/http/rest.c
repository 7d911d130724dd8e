/*
 * rest.c
 *		The REST binding of the spec as one SQL function, so that any HTTP
 *		gateway can front the catalog as a thin pipe: it hands over method,
 *		path, query string, body and headers, and writes back the status,
 *		headers and body it gets.
 *
 *		lance_rest(method, path, query, body, headers)
 *			-> (status, response_headers, response_body, key_id)
 *
 * key_id is the id of the API key the catalog authenticated the request
 * with, NULL when none did: what the gateway logs, so that its log never
 * names a key that was only sent (a forged "lnk_<someone's id>_...").
 *
 * Each request runs in a subtransaction: a failed request is rolled back
 * and answered with its error, so that it changes nothing even when the
 * gateway runs in autocommit.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/varlena.h"

#include "../common/error.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../frame/frame.h"
#include "../frame/registry.h"
#include "../json/json_edge.h"
#include "../sql/api_keys.h"
#include "../sql/role_limits.h"
#include "../sql/stats.h"
#include "../storage/location.h"
#include "rest.h"

/*
 * lance_namespace.logged_headers: the request headers the commit log keeps
 * in an entry's headers.  Every other header stays out of the log, which
 * every catalog role and every dump can read; credentials (names that
 * ln_is_credential_name() takes for one) stay out even when listed.
 */
static char *logged_headers = NULL;

/* lance_namespace.anonymous_role: the role of requests without a key ("": refused). */
static char *anonymous_role = NULL;

void
rest_init(void)
{
	DefineCustomStringVariable(
		"lance_namespace.logged_headers",
		"Request headers that the commit log records in an entry's headers.",
		"A comma-separated list of header names.  Names that hold authoriz, cookie, credential, "
		"key, passw, secret, session, signature or token are never recorded.",
		&logged_headers, "x-request-id,x-trace-id,x-correlation-id,traceparent,tracestate",
		PGC_SUSET, GUC_LIST_INPUT, NULL, NULL, NULL);
	DefineCustomStringVariable(
		"lance_namespace.anonymous_role",
		"The role a REST request without an API key acts as; empty: such requests are refused.",
		"Grant that role only what anybody who reaches the gateway may do.", &anonymous_role, "",
		PGC_SUSET, 0, NULL, NULL, NULL);
}

/* Whether the commit log may keep header `name`, given the setting's names. */
static bool
is_logged(const char *name, List *logged)
{
	ListCell *lc;

	if (ln_is_credential_name(name))
		return false;
	foreach (lc, logged)
		if (pg_strcasecmp((char *)lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * The headers the request goes on with: those that carry its identity
 * (x-api-key, Authorization), which never reach the log, and those the log
 * may record.  Names are in lower case.
 */
static LnMap
kept_headers(const LnMap *headers)
{
	LnMap kept = {0, palloc(sizeof(char *) * (headers->len + 1)),
				  palloc(sizeof(char *) * (headers->len + 1))};
	List *logged = NIL;

	/* the setting's names, read once per request rather than once per header */
	if (!SplitIdentifierString(pstrdup(logged_headers ? logged_headers : ""), ',', &logged))
		logged = NIL;
	for (int i = 0; i < headers->len; i++)
	{
		const char *name = headers->keys[i];

		if (strcmp(name, "x-api-key") == 0 || strcmp(name, "authorization") == 0 ||
			is_logged(name, logged))
		{
			kept.keys[kept.len] = headers->keys[i];
			kept.values[kept.len++] = headers->values[i];
		}
	}
	return kept;
}

/*
 * The change feed over REST, our route beside the spec's:
 * GET /v1/changes?after=N&limit=M answers what lance_changes(N, M) answers
 * the request's role.
 */
#define FEED_PATH "/v1/changes"
/*
 * GET /v1/stats answers what lance_stats() answers: an administrator's
 * (403, code 15, for other keys).  The gateway's /metrics asks it with the
 * scraper's key: the database says who is an administrator.
 */
#define STATS_PATH		   "/v1/stats"
#define FEED_DEFAULT_LIMIT 100
#define FEED_MAX_LIMIT	   1000

/* The schema of lance_rest(), the extension's, where lance_changes() is too. */
static Oid rest_schema = InvalidOid;

/* An HTTP answer. */
typedef struct RestAnswer
{
	int status;
	char *body;		 /* NULL: no body */
	char *key_id;	 /* the id of the API key the request authenticated with; NULL: none */
	int retry_after; /* seconds a request refused for its role's limit waits; 0: none */
} RestAnswer;

/* The HTTP status of each Lance error code (spec's error table; 22, 23 from the reference adapter).
 */
static int
status_of_code(int code)
{
	switch (code)
	{
		case LN_UNSUPPORTED:
			return 406;
		case LN_NAMESPACE_NOT_FOUND:
		case LN_TABLE_NOT_FOUND:
		case LN_TABLE_INDEX_NOT_FOUND:
		case LN_TABLE_TAG_NOT_FOUND:
		case LN_TRANSACTION_NOT_FOUND:
		case LN_TABLE_VERSION_NOT_FOUND:
		case LN_TABLE_COLUMN_NOT_FOUND:
		case LN_TABLE_BRANCH_NOT_FOUND:
			return 404;
		case LN_NAMESPACE_ALREADY_EXISTS:
		case LN_NAMESPACE_NOT_EMPTY:
		case LN_TABLE_ALREADY_EXISTS:
		case LN_TABLE_INDEX_ALREADY_EXISTS:
		case LN_TABLE_TAG_ALREADY_EXISTS:
		case LN_CONCURRENT_MODIFICATION:
		case LN_INVALID_TABLE_STATE:
		case LN_TABLE_BRANCH_ALREADY_EXISTS:
			return 409;
		case LN_INVALID_INPUT:
		case LN_TABLE_SCHEMA_VALIDATION_ERROR:
			return 400;
		case LN_PERMISSION_DENIED:
			return 403;
		case LN_UNAUTHENTICATED:
			return 401;
		case LN_SERVICE_UNAVAILABLE:
			return 503;
		case LN_THROTTLING:
			return 429;
		default:
			return 500;
	}
}

static RestAnswer
error_answer(int code, const char *message)
{
	RestAnswer answer = {status_of_code(code), ln_error_body(code, message, NULL), NULL, 0};

	return answer;
}

/*
 * Decode %XX escapes, and '+' as a space: in the query by form encoding, and
 * in the path because the official client sends a space in an id as '+' (and
 * a '+' as %2B).
 */
static char *
percent_decode(const char *s, size_t len)
{
	char *out = location_percent_decode(s, len, true);

	if (out == NULL)
		ln_error(LN_INVALID_INPUT, "the request's path or query holds an encoded NUL byte");
	/* escapes can spell any byte: what they spell must be text we can store and dump */
	if (!pg_verify_mbstr(PG_UTF8, out, strlen(out), true))
		ln_error(LN_INVALID_INPUT, "the request's path or query is not valid UTF-8 once decoded");
	return out;
}

static LnMap
parse_query(const char *query)
{
	LnMap params = {0, NULL, NULL};
	int max = 1;

	for (const char *c = query; *c; c++)
		max += *c == '&';
	params.keys = palloc(sizeof(char *) * max);
	params.values = palloc(sizeof(char *) * max);
	while (*query)
	{
		size_t len = strcspn(query, "&");
		const char *eq = memchr(query, '=', len);

		if (len > 0)
		{
			size_t keylen = eq ? (size_t)(eq - query) : len;

			params.keys[params.len] = percent_decode(query, keylen);
			params.values[params.len] = eq ? percent_decode(eq + 1, len - keylen - 1) : pstrdup("");
			params.len++;
		}
		query += len;
		if (*query == '&')
			query++;
	}
	return params;
}

/*
 * The list-form id of a path's {id}: the string form split at the
 * delimiter, empty parts dropped; the bare delimiter is the root namespace.
 */
static LnId
parse_path_id(const char *segment, const char *delimiter)
{
	LnId id = {0, NULL};
	size_t dlen = strlen(delimiter);
	const char *c = segment;

	id.names = palloc(sizeof(char *) * (strlen(segment) + 1));
	if (strcmp(segment, delimiter) == 0)
		return id;
	while (*c)
	{
		const char *next = strstr(c, delimiter);
		size_t len = next ? (size_t)(next - c) : strlen(c);

		if (len > 0)
			id.names[id.len++] = pnstrdup(c, len);
		c += len;
		if (next)
			c += dlen;
	}
	return id;
}

/*
 * Match `path` against a route pattern.  On a match, *id_segment receives
 * the raw {id} segment (NULL if the route has none).
 */
static bool
match_route(const char *pattern, const char *path, char **id_segment)
{
	*id_segment = NULL;
	for (;;)
	{
		size_t plen = strcspn(pattern, "/");
		size_t len = strcspn(path, "/");

		if (pattern[0] == '{')
		{
			if (len == 0)
				return false;
			if (strncmp(pattern, "{id}", plen) == 0)
				*id_segment = pnstrdup(path, len);
		}
		else if (plen != len || strncmp(pattern, path, len) != 0)
			return false;
		pattern += plen;
		path += len;
		if (*pattern == '\0' || *path == '\0')
			return *pattern == '\0' && *path == '\0';
		pattern++;
		path++;
	}
}

/*
 * The role a request acts as: its API key's (x-api-key, or Authorization:
 * Bearer), or without one the anonymous role if one is set.  The key is the
 * authority: only administrators make keys, and only a superuser one for a
 * superuser role, so the role calling lance_rest() (the gateway's) needs
 * nothing but EXECUTE, and no membership in the roles it serves, which
 * would let it act as them outside the catalog too.  *key_id becomes the
 * id of the key the catalog authenticated, for the gateway's log; it stays
 * NULL for a request without a key or with one the catalog does not know.
 */
static Oid
request_role(const LnMap *headers, char **key_id)
{
	const char *key = ln_map_get(headers, "x-api-key");
	const char *authorization = ln_map_get(headers, "authorization");
	Oid role;

	if (key == NULL && authorization != NULL && pg_strncasecmp(authorization, "bearer ", 7) == 0)
		key = authorization + 7 + strspn(authorization + 7, " ");
	if (key != NULL)
	{
		bool expired;

		role = api_key_role(key, key_id, &expired);
		if (expired)
			ln_error_detail(LN_UNAUTHENTICATED, "Ask an administrator for a new key.",
							"the API key has expired");
		if (!OidIsValid(role))
			ln_error_detail(LN_UNAUTHENTICATED,
							"Ask an administrator for a key (lance_create_api_key).",
							"the API key is not valid: unknown or revoked");
	}
	else if (anonymous_role != NULL && anonymous_role[0] != '\0')
	{
		role = get_role_oid(anonymous_role, true);
		if (!OidIsValid(role))
			ln_error(LN_UNAUTHENTICATED, "requests without an API key are refused here");
	}
	else
		ln_error_detail(LN_UNAUTHENTICATED,
						"Send an API key as header x-api-key or as Authorization: Bearer <key>.",
						"this catalog needs an API key");
	return role;
}

/*
 * Query parameter `name` as a whole number from min to max; `fallback` when
 * it is not given.  Anything else is the client's mistake (400, code 13).
 */
static int64
feed_parameter(const LnMap *query, const char *name, int64 min, int64 max, int64 fallback)
{
	const char *text = ln_map_get(query, name);
	char *end;
	int64 value;

	if (text == NULL)
		return fallback;
	errno = 0;
	value = strtoi64(text, &end, 10);
	if (text[0] == '\0' || *end != '\0' || errno != 0 || value < min || value > max ||
		!isdigit((unsigned char)text[0]))
		ln_error(LN_INVALID_INPUT,
				 "query parameter \"%s\" must be a whole number from " INT64_FORMAT
				 " to " INT64_FORMAT ", not \"%s\"",
				 name, min, max, text);
	return value;
}

/* GET /v1/changes: the entries after `after` that the request's role may read. */
static char *
feed_answer(const LnMap *query)
{
	int64 after = feed_parameter(query, "after", 0, PG_INT64_MAX, 0);
	int64 limit = feed_parameter(query, "limit", 1, FEED_MAX_LIMIT, FEED_DEFAULT_LIMIT);

	return changes_read_json(rest_schema, after, (int)limit);
}

/*
 * Run a route's operation in a subtransaction and answer it (op NULL: our
 * own route own_path, FEED_PATH or STATS_PATH).  On error the
 * subtransaction is rolled back (and with it anything written on disk) and
 * the error becomes the answer.
 */
static RestAnswer
run_route(const LnOperationDef *op, const char *own_path, const char *id_segment,
		  const LnMap *query, const char *body, const LnMap *headers)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	RestAnswer answer = {200, NULL, NULL, 0};
	/* set inside PG_TRY, read after an error: a request refused after its key authenticated */
	char *volatile key_id = NULL;
	/* the same: the wait a request refused for its role's limit is told (Retry-After) */
	volatile int retry_after = 0;
	RoleLimitRefusal refusal;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		LnRequest req;
		LnResponse resp;
		LnId path_id;
		const char *delimiter = ln_map_get(query, "delimiter");

		Oid role;
		Oid gateway_user;
		int gateway_security;

		ln_error_set_element(NULL);
		/*
		 * The request runs as the role it authenticates as, until the
		 * subtransaction ends (its rollback puts the gateway's role back).
		 */
		{
			char *authenticated = NULL;

			/* in cxt, which outlives the subtransaction */
			role = request_role(headers, &authenticated);
			key_id = authenticated;
		}
		/* a role over its request limit is refused before anything runs (429) */
		if (!role_limits_admit(role, &refusal))
		{
			retry_after = refusal.wait_seconds;
			role_limits_refuse(role, &refusal);
		}
		GetUserIdAndSecContext(&gateway_user, &gateway_security);
		SetUserIdAndSecContext(role, gateway_security | SECURITY_LOCAL_USERID_CHANGE);
		if (op == NULL && strcmp(own_path, STATS_PATH) == 0)
			answer.body = stats_json_text();
		else if (op == NULL)
			answer.body = feed_answer(query);
		else
		{
			frame_check_served(op);
			if (id_segment != NULL)
				path_id = parse_path_id(percent_decode(id_segment, strlen(id_segment)),
										delimiter && delimiter[0] ? delimiter : "$");
			json_decode_http_request(body, id_segment ? &path_id : NULL, query, headers,
									 op->request_members, &req);
			/* the commit log names the key the request authenticated with */
			req.key_id = key_id;
			frame_execute(op, &req, &resp);
			if (op->flags & LN_OP_EMPTY_ANSWER)
				answer.status = 204;
			else
				answer.body = json_encode_response_text(&resp);
		}

		SetUserIdAndSecContext(gateway_user, gateway_security);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData *edata;
		int code;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;

		/*
		 * A cancel or a shutdown ends the statement, not the request: the
		 * caller's statement_timeout or pg_cancel_backend must be obeyed,
		 * not answered as a 503 while the statement goes on.
		 */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
			ReThrowError(edata);
		if (ln_is_lance_error(edata->sqlerrcode) && edata->detail != NULL)
			answer = (RestAnswer){status_of_code(ln_error_code_of_sqlstate(edata->sqlerrcode)),
								  pstrdup(edata->detail), NULL, 0};
		else
		{
			char *message;
			char *detail;

			ln_translate_error(edata, &code, &message, &detail);
			/* only an internal error's detail is kept, for the server log */
			answer = (RestAnswer){status_of_code(code),
								  ln_error_body(code, message, code == LN_INTERNAL ? detail : NULL),
								  NULL, 0};
		}
		FreeErrorData(edata);
	}
	PG_END_TRY();
	answer.key_id = key_id;
	answer.retry_after = retry_after;
	return answer;
}

/*
 * The operation whose REST path `path` matches, with its raw {id} segment.
 * A path with fewer placeholders wins, so that a literal route
 * ("/v1/table/version/batch-create") is never taken for an {id} one.
 */
static const LnOperationDef *
find_route(const char *path, char **id_segment)
{
	const LnOperationDef *best = NULL;
	int best_placeholders = INT_MAX;

	*id_segment = NULL;
	for (int i = 0; i < LN_NUM_OPERATIONS; i++)
	{
		const LnOperationDef *op = &ln_operations[i];
		char *segment;
		int placeholders = 0;

		if (!match_route(op->http_path, path, &segment))
			continue;
		for (const char *c = op->http_path; *c; c++)
			placeholders += *c == '{';
		if (placeholders < best_placeholders)
		{
			best = op;
			best_placeholders = placeholders;
			*id_segment = segment;
		}
	}
	return best;
}

static RestAnswer
dispatch(const char *method, const char *path, const char *query_text, const char *body,
		 const LnMap *headers)
{
	size_t path_len = strcspn(path, "?");
	char *clean_path = pnstrdup(path, path_len);
	size_t len = strlen(clean_path);
	LnMap query;
	const LnOperationDef *op;
	char *id_segment;
	RestAnswer answer;

	/* a query left on the path (a gateway that passes the raw URI) counts like the given one */
	if (path[path_len] == '?')
		query_text =
			query_text ? psprintf("%s&%s", path + path_len + 1, query_text) : path + path_len + 1;
	query = parse_query(query_text ? query_text : "");

	/* tolerate a trailing slash, as the reference server does */
	if (len > 1 && clean_path[len - 1] == '/')
		clean_path[len - 1] = '\0';

	/* the change feed and the statistics read and never change: GET alone */
	if (strcmp(clean_path, FEED_PATH) == 0 || strcmp(clean_path, STATS_PATH) == 0)
	{
		if (strcmp(method, "GET") == 0)
			return run_route(NULL, clean_path, NULL, &query, body, headers);
		answer = error_answer(
			LN_UNSUPPORTED,
			psprintf("method %s is not allowed on %s (its method is GET)", method, clean_path));
		answer.status = 405;
		return answer;
	}

	op = find_route(clean_path, &id_segment);
	if (op == NULL)
	{
		answer = error_answer(LN_UNSUPPORTED, psprintf("no route for %s %s", method, clean_path));
		answer.status = 404;
		return answer;
	}

	/*
	 * Every route answers POST, and the spec's GET routes (the three
	 * listings) GET too.  A change never answers GET, which a web page could
	 * send to a local gateway without the user knowing.
	 */
	if (strcmp(method, "POST") != 0 && strcmp(method, op->http_method) != 0)
	{
		answer = error_answer(LN_UNSUPPORTED,
							  psprintf("method %s is not allowed on %s (the spec's method is %s)",
									   method, clean_path, op->http_method));
		answer.status = 405;
		return answer;
	}
	return run_route(op, NULL, id_segment, &query, body, headers);
}

PG_FUNCTION_INFO_V1(lance_rest);
Datum
lance_rest(PG_FUNCTION_ARGS)
{
	const char *method = PG_ARGISNULL(0) ? "GET" : text_to_cstring(PG_GETARG_TEXT_PP(0));
	const char *path = PG_ARGISNULL(1) ? "/" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	const char *query = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	const char *body = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	LnMap headers = {0, NULL, NULL};
	LnMap response_headers = {0, NULL, NULL};
	char *header_keys[2] = {"content-type", "retry-after"};
	char *header_values[2] = {"application/json", NULL};
	RestAnswer answer;
	TupleDesc tupdesc;
	Datum values[4];
	bool nulls[4] = {false, false, false, false};
	MemoryContext call_cxt = CurrentMemoryContext;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "lance_rest must return a record");
	rest_schema = get_func_namespace(fcinfo->flinfo->fn_oid);

	/* malformed headers or path escapes are the client's error, answered as such */
	PG_TRY();
	{
		if (!PG_ARGISNULL(4))
		{
			LnMap given = json_decode_headers(PG_GETARG_JSONB_P(4));

			headers = kept_headers(&given);
		}
		answer = dispatch(method, path, query, body, &headers);
	}
	PG_CATCH();
	{
		ErrorData *edata;

		/* the call's own context, not the query-long fn_mcxt: errors here must not pile up */
		MemoryContextSwitchTo(call_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		if (!ln_is_lance_error(edata->sqlerrcode))
		{
			int code;
			char *message;
			char *detail;

			/* nothing holds resources out here: raise it as the Lance error it stands for */
			ln_translate_error(edata, &code, &message, &detail);
			ln_error_detail(code, detail, "%s", message);
		}
		answer = (RestAnswer){status_of_code(ln_error_code_of_sqlstate(edata->sqlerrcode)),
							  edata->detail, NULL, 0};
	}
	PG_END_TRY();

	values[0] = Int32GetDatum(answer.status);
	response_headers.keys = header_keys;
	response_headers.values = header_values;
	if (answer.body != NULL)
	{
		response_headers.len = 1;
		values[2] = CStringGetTextDatum(answer.body);
	}
	else
		nulls[2] = true;
	/* a request refused for its role's limit is told when to try again (role_limits.c) */
	if (answer.retry_after > 0 && answer.body != NULL)
	{
		header_values[1] = psprintf("%d", answer.retry_after);
		response_headers.len = 2;
	}
	values[1] = JsonbPGetDatum(json_encode_map(&response_headers));
	/* a catalog not yet updated to 0.6.0 declares three columns: heap_form_tuple reads those */
	if (answer.key_id != NULL)
		values[3] = CStringGetTextDatum(answer.key_id);
	else
		nulls[3] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
