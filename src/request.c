/*
 * request.c
 *		The frame every SQL-callable operation runs in, and the checks that
 *		operations share.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#include "catalog.h"
#include "changes.h"
#include "error.h"
#include "json_edge.h"
#include "request.h"

/* Page size when the request gives no limit, and the largest page we send. */
#define LN_DEFAULT_PAGE_LIMIT 1000
#define LN_MAX_PAGE_LIMIT	  10000

static void raise_as_lance_error(MemoryContext cxt) pg_attribute_noreturn();

/*
 * Run one operation: decode the request, act, encode the response.
 *
 * Any error that is not already a Lance error (a unique or foreign key
 * violation left by a concurrent writer, a serialization failure, a
 * cancelled statement) is re-raised as the Lance error that describes it, so
 * that callers only ever see LNxxx.  The re-raise happens before anything
 * else touches the database; the transaction is aborting in any case.
 */
Datum
ln_run_operation(FunctionCallInfo fcinfo, const LnOperationDef *op)
{
	MemoryContext cxt = CurrentMemoryContext;
	LnRequest req;
	LnResponse resp;
	Jsonb *result = NULL;

	ln_error_set_element(NULL);
	PG_TRY();
	{
		if (PG_ARGISNULL(0))
			ln_error(LN_INVALID_INPUT, "the request must be a JSON object, not NULL");
		json_decode_request(PG_GETARG_JSONB_P(0), op->known_fields, &req);
		ln_execute(op, &req, &resp);
		result = json_encode_response(&resp);
	}
	PG_CATCH();
	{
		raise_as_lance_error(cxt);
	}
	PG_END_TRY();

	PG_RETURN_JSONB_P(result);
}

/*
 * Act on a decoded request: run the operation against the catalog and, if
 * it changed anything, record it in the commit log and answer the entry's
 * transaction id.
 */
void
ln_execute(const LnOperationDef *op, const LnRequest *req, LnResponse *resp)
{
	char *transaction_id;

	memset(resp, 0, sizeof(LnResponse));
	catalog_begin();
	changes_begin();
	op->run(req, resp);
	transaction_id = changes_record(op->operation_id, &req->context);
	catalog_end();
	if (transaction_id != NULL)
	{
		resp->fields |= LN_RESP_TRANSACTION_ID;
		resp->transaction_id = transaction_id;
		resp->transaction_ids = op->transaction_ids;
	}
}

static void
raise_as_lance_error(MemoryContext cxt)
{
	ErrorData *edata;
	int code;
	char *message;
	char *detail;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	if (edata->elevel > ERROR || ln_is_lance_error(edata->sqlerrcode))
		PG_RE_THROW();

	FlushErrorState();
	ln_translate_error(edata, &code, &message, &detail);
	ln_error_detail(code, detail, "%s", message);
}

/*
 * Map an enumerated request value to its number.  Values are
 * case-insensitive and may be written in PascalCase or snake_case
 * ("ExistOk", "exist_ok", "existok").  NULL gives the default.
 */
int
ln_parse_enum(const char *given, const char *field, const LnEnumValue *values, int default_value)
{
	StringInfoData accepted;
	char *folded;
	int n = 0;

	if (given == NULL)
		return default_value;

	folded = palloc(strlen(given) + 1);
	for (const char *c = given; *c; c++)
		if (*c != '_')
			folded[n++] = pg_ascii_tolower((unsigned char)*c);
	folded[n] = '\0';

	for (const LnEnumValue *v = values; v->name != NULL; v++)
		if (pg_strcasecmp(folded, v->name) == 0)
			return v->value;

	initStringInfo(&accepted);
	for (const LnEnumValue *v = values; v->name != NULL; v++)
		appendStringInfo(&accepted, "%s%s", v == values ? "" : ", ", v->name);
	ln_error(LN_INVALID_INPUT, "field \"%s\" has unknown value \"%s\" (accepted: %s)", field, given,
			 accepted.data);
}

void
ln_require_id(const LnRequest *req)
{
	if ((req->present & LN_REQ_ID) == 0)
		ln_error(LN_INVALID_INPUT, "field \"id\" is required");
}

void
ln_require_table_id(const LnRequest *req)
{
	ln_require_id(req);
	if (req->id.len == 0)
		ln_error(LN_INVALID_INPUT, "field \"id\" must name a table, not the root namespace");
}

/*
 * The first `len` names of `id` in the spec's string form, joined by "$",
 * for messages.  The root namespace is written as the bare delimiter.
 */
char *
ln_id_string(const LnId *id, int len)
{
	StringInfoData buf;

	if (len == 0)
		return pstrdup("$");
	initStringInfo(&buf);
	for (int i = 0; i < len; i++)
		appendStringInfo(&buf, "%s%s", i ? "$" : "", id->names[i]);
	return buf.data;
}

LnId
ln_id_prefix(const LnId *id, int len)
{
	LnId prefix = {len, id->names};

	return prefix;
}

int
ln_page_limit(const LnRequest *req)
{
	if ((req->present & LN_REQ_LIMIT) == 0)
		return LN_DEFAULT_PAGE_LIMIT;
	return (int)Min(req->limit, LN_MAX_PAGE_LIMIT);
}

/*
 * Cut a list of names fetched with limit + 1 rows to one page.  When more
 * remain, the page token is the last name sent: the next page starts after
 * it, which returns every name once even as names come and go, and never
 * returns the same token twice.
 */
void
ln_cut_page(LnResponse *resp, int limit)
{
	if (resp->nnames <= limit)
		return;
	resp->nnames = limit;
	if (limit > 0)
	{
		resp->fields |= LN_RESP_PAGE_TOKEN;
		resp->page_token = resp->names[limit - 1];
	}
}

LnMap
ln_empty_map(void)
{
	LnMap map = {0, NULL, NULL};

	return map;
}
