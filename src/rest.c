/*
 * rest.c
 *		The REST binding of the spec as one SQL function, so that any HTTP
 *		gateway can front the catalog as a thin pipe: it hands over method,
 *		path, query string, body and headers, and writes back the status,
 *		headers and body it gets.
 *
 *		lance_rest(method, path, query, body, headers)
 *			-> (status, response_headers, response_body)
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
#include "utils/builtins.h"
#include "utils/resowner.h"

#include "catalog.h"
#include "error.h"
#include "json_edge.h"
#include "operations.h"
#include "request.h"

typedef enum RouteKind
{
	ROUTE_OPERATION, /* answers the operation's response */
	ROUTE_EXISTS,	 /* answers 204 without a body */
	ROUTE_DATA		 /* data plane: reads or writes table data */
} RouteKind;

typedef struct Route
{
	const char *pattern; /* path below /v1; {id} and {index_name} match one segment */
	RouteKind kind;
	const LnOperationDef *op;
} Route;

/* Every path of the spec.  Literal routes come before the {id} ones they could be mistaken for. */
static const Route routes[] = {
	{"/v1/table/version/batch-create", ROUTE_OPERATION, &ln_op_batch_create_table_versions},
	{"/v1/table/batch-commit", ROUTE_OPERATION, &ln_op_batch_commit_tables},
	{"/v1/table", ROUTE_OPERATION, &ln_op_list_all_tables},
	{"/v1/namespace/{id}/create", ROUTE_OPERATION, &ln_op_create_namespace},
	{"/v1/namespace/{id}/list", ROUTE_OPERATION, &ln_op_list_namespaces},
	{"/v1/namespace/{id}/describe", ROUTE_OPERATION, &ln_op_describe_namespace},
	{"/v1/namespace/{id}/drop", ROUTE_OPERATION, &ln_op_drop_namespace},
	{"/v1/namespace/{id}/exists", ROUTE_EXISTS, &ln_op_namespace_exists},
	{"/v1/namespace/{id}/table/list", ROUTE_OPERATION, &ln_op_list_tables},
	{"/v1/table/{id}/register", ROUTE_OPERATION, &ln_op_register_table},
	{"/v1/table/{id}/declare", ROUTE_OPERATION, &ln_op_declare_table},
	{"/v1/table/{id}/describe", ROUTE_OPERATION, &ln_op_describe_table},
	{"/v1/table/{id}/exists", ROUTE_EXISTS, &ln_op_table_exists},
	{"/v1/table/{id}/drop", ROUTE_OPERATION, &ln_op_drop_table},
	{"/v1/table/{id}/deregister", ROUTE_OPERATION, &ln_op_deregister_table},
	{"/v1/table/{id}/rename", ROUTE_OPERATION, &ln_op_rename_table},
	{"/v1/table/{id}/version/list", ROUTE_OPERATION, &ln_op_list_table_versions},
	{"/v1/table/{id}/version/create", ROUTE_OPERATION, &ln_op_create_table_version},
	{"/v1/table/{id}/version/describe", ROUTE_OPERATION, &ln_op_describe_table_version},
	{"/v1/table/{id}/version/delete", ROUTE_OPERATION, &ln_op_batch_delete_table_versions},
	{"/v1/table/{id}/restore", ROUTE_OPERATION, &ln_op_restore_table},
	{"/v1/table/{id}/schema_metadata/update", ROUTE_OPERATION, &ln_op_update_table_schema_metadata},
	{"/v1/table/{id}/update_field_metadata", ROUTE_OPERATION, &ln_op_update_field_metadata},
	{"/v1/table/{id}/alter_columns", ROUTE_OPERATION, &ln_op_alter_table_alter_columns},
	{"/v1/table/{id}/drop_columns", ROUTE_OPERATION, &ln_op_alter_table_drop_columns},
	{"/v1/table/{id}/tags/list", ROUTE_OPERATION, &ln_op_list_table_tags},
	{"/v1/table/{id}/tags/version", ROUTE_OPERATION, &ln_op_get_table_tag_version},
	{"/v1/table/{id}/tags/create", ROUTE_OPERATION, &ln_op_create_table_tag},
	{"/v1/table/{id}/tags/delete", ROUTE_OPERATION, &ln_op_delete_table_tag},
	{"/v1/table/{id}/tags/update", ROUTE_OPERATION, &ln_op_update_table_tag},
	{"/v1/table/{id}/branches/list", ROUTE_OPERATION, &ln_op_list_table_branches},
	{"/v1/table/{id}/branches/create", ROUTE_OPERATION, &ln_op_create_table_branch},
	{"/v1/table/{id}/branches/delete", ROUTE_OPERATION, &ln_op_delete_table_branch},
	{"/v1/transaction/{id}/describe", ROUTE_OPERATION, &ln_op_describe_transaction},
	{"/v1/transaction/{id}/alter", ROUTE_OPERATION, &ln_op_alter_transaction},
	{"/v1/table/{id}/stats", ROUTE_DATA, NULL},
	{"/v1/table/{id}/insert", ROUTE_DATA, NULL},
	{"/v1/table/{id}/merge_insert", ROUTE_DATA, NULL},
	{"/v1/table/{id}/update", ROUTE_DATA, NULL},
	{"/v1/table/{id}/delete", ROUTE_DATA, NULL},
	{"/v1/table/{id}/query", ROUTE_DATA, NULL},
	{"/v1/table/{id}/count_rows", ROUTE_DATA, NULL},
	{"/v1/table/{id}/create", ROUTE_DATA, NULL},
	{"/v1/table/{id}/explain_plan", ROUTE_DATA, NULL},
	{"/v1/table/{id}/analyze_plan", ROUTE_DATA, NULL},
	{"/v1/table/{id}/add_columns", ROUTE_DATA, NULL},
	{"/v1/table/{id}/backfill_column", ROUTE_DATA, NULL},
	{"/v1/table/{id}/create_index", ROUTE_DATA, NULL},
	{"/v1/table/{id}/create_scalar_index", ROUTE_DATA, NULL},
	{"/v1/table/{id}/index/list", ROUTE_DATA, NULL},
	{"/v1/table/{id}/index/{index_name}/stats", ROUTE_DATA, NULL},
	{"/v1/table/{id}/index/{index_name}/drop", ROUTE_DATA, NULL},
	{"/v1/materialized_view/{id}/refresh", ROUTE_DATA, NULL},
	{"/v1/materialized_view/{id}/create", ROUTE_DATA, NULL},
};

/* An HTTP answer. */
typedef struct RestAnswer
{
	int status;
	char *body; /* NULL: no body */
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
	RestAnswer answer = {status_of_code(code), json_error_body(code, message, NULL)};

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
	char *out = palloc(len + 1);
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
	{
		if (s[i] == '%' && i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
			isxdigit((unsigned char)s[i + 2]))
		{
			char hex[3] = {s[i + 1], s[i + 2], '\0'};

			out[n++] = (char)strtol(hex, NULL, 16);
			i += 2;
		}
		else
			out[n++] = s[i] == '+' ? ' ' : s[i];
	}
	out[n] = '\0';
	if (strlen(out) != n)
		ln_error(LN_INVALID_INPUT, "the request's path or query holds an encoded NUL byte");
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

static const char *
query_param(const LnMap *query, const char *key)
{
	for (int i = 0; i < query->len; i++)
		if (strcmp(query->keys[i], key) == 0)
			return query->values[i];
	return NULL;
}

/*
 * Run a route's operation in a subtransaction and answer it.  On error the
 * subtransaction is rolled back (and with it anything written on disk) and
 * the error becomes the answer.
 */
static RestAnswer
run_route(const Route *route, const char *id_segment, const LnMap *query, const char *body,
		  const LnMap *headers)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	RestAnswer answer = {200, NULL};

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		LnRequest req;
		LnResponse resp;
		LnId path_id;
		const char *delimiter = query_param(query, "delimiter");

		ln_error_set_element(NULL);
		if (id_segment != NULL)
			path_id = parse_path_id(percent_decode(id_segment, strlen(id_segment)),
									delimiter && delimiter[0] ? delimiter : "$");
		json_decode_http_request(body, id_segment ? &path_id : NULL, query, headers,
								 route->op->known_fields, &req);
		ln_execute(route->op, &req, &resp);
		if (route->kind == ROUTE_EXISTS)
			answer.status = 204;
		else
			answer.body = json_encode_response_text(&resp);

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

		if (ln_is_lance_error(edata->sqlerrcode) && edata->detail != NULL)
			answer = (RestAnswer){status_of_code(ln_error_code_of_sqlstate(edata->sqlerrcode)),
								  pstrdup(edata->detail)};
		else
		{
			char *message;
			char *detail;

			ln_translate_error(edata, &code, &message, &detail);
			answer = error_answer(code, message);
		}
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return answer;
}

/* The spec's GET routes: the three listings. */
static bool
is_listing(const Route *route)
{
	return route->op == &ln_op_list_namespaces || route->op == &ln_op_list_tables ||
		   route->op == &ln_op_list_all_tables;
}

static RestAnswer
dispatch(const char *method, const char *path, const char *query_text, const char *body,
		 const LnMap *headers)
{
	LnMap query = parse_query(query_text ? query_text : "");
	char *clean_path = pnstrdup(path, strcspn(path, "?"));
	size_t len = strlen(clean_path);

	/* tolerate a trailing slash, as the reference server does */
	if (len > 1 && clean_path[len - 1] == '/')
		clean_path[len - 1] = '\0';

	for (size_t i = 0; i < lengthof(routes); i++)
	{
		const Route *route = &routes[i];
		char *id_segment;

		if (!match_route(route->pattern, clean_path, &id_segment))
			continue;
		/*
		 * The spec's GET routes are the three listings; every other route is
		 * POST.  A change never answers GET, which a web page could send to
		 * a local gateway without the user knowing.
		 */
		if (strcmp(method, "POST") != 0 && !(strcmp(method, "GET") == 0 && is_listing(route)))
		{
			RestAnswer answer = error_answer(
				LN_UNSUPPORTED, psprintf("method %s is not allowed on %s (the spec's method is %s)",
										 method, clean_path, is_listing(route) ? "GET" : "POST"));

			answer.status = 405;
			return answer;
		}
		switch (route->kind)
		{
			case ROUTE_OPERATION:
			case ROUTE_EXISTS:
				return run_route(route, id_segment, &query, body, headers);
			case ROUTE_DATA:
				return error_answer(LN_UNSUPPORTED,
									psprintf("%s reads or writes table data, and lance_namespace "
											 "is a catalog: Lance and LanceDB read and write "
											 "the data at the table's location themselves",
											 clean_path));
		}
	}
	{
		RestAnswer answer =
			error_answer(LN_UNSUPPORTED, psprintf("no route for %s %s", method, clean_path));

		answer.status = 404;
		return answer;
	}
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
	RestAnswer answer;
	TupleDesc tupdesc;
	Datum values[3];
	bool nulls[3] = {false, false, false};
	char *content_type_key = "content-type";
	char *content_type = "application/json";

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "lance_rest must return a record");

	/* malformed headers or path escapes are the client's error, answered as such */
	PG_TRY();
	{
		if (!PG_ARGISNULL(4))
			headers = json_decode_headers(PG_GETARG_JSONB_P(4));
		answer = dispatch(method, path, query, body, &headers);
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
		edata = CopyErrorData();
		if (!ln_is_lance_error(edata->sqlerrcode))
			PG_RE_THROW();
		FlushErrorState();
		answer = (RestAnswer){status_of_code(ln_error_code_of_sqlstate(edata->sqlerrcode)),
							  edata->detail};
	}
	PG_END_TRY();

	values[0] = Int32GetDatum(answer.status);
	if (answer.body != NULL)
	{
		response_headers.len = 1;
		response_headers.keys = &content_type_key;
		response_headers.values = &content_type;
		values[2] = CStringGetTextDatum(answer.body);
	}
	else
		nulls[2] = true;
	values[1] = JsonbPGetDatum(json_encode_map(&response_headers));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
