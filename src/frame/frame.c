/*
 * frame.c
 *		The frame every operation runs in: decode the request, begin, run
 *		the handler the registry names, record the change in the commit
 *		log, end, encode the response.  SQL calls come through
 *		frame_sql_call(), REST requests through rest.c, which decodes HTTP
 *		itself and then calls frame_execute().
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "../feed/changes.h"
#include "../json/json_edge.h"
#include "frame.h"

/*
 * An operation the catalog does not serve answers LN000 with the reason,
 * before its request is even read: the same answer from SQL and REST.
 */
void
frame_check_served(const LnOperationDef *op)
{
	if (op->handler == NULL)
		ln_error(LN_UNSUPPORTED, "%s is not supported by this catalog: %s", op->operation_id,
				 op->not_served);
}

/*
 * Run one operation called from SQL: decode the request, act, encode the
 * response.
 *
 * Any error that is not already a Lance error (a unique or foreign key
 * violation left by a concurrent writer, a serialization failure, a
 * cancelled statement) is re-raised as the Lance error that describes it, so
 * that callers only ever see LNxxx.  The re-raise happens before anything
 * else touches the database; the transaction is aborting in any case.
 */
Datum
frame_sql_call(FunctionCallInfo fcinfo, const LnOperationDef *op)
{
	MemoryContext cxt = CurrentMemoryContext;
	LnRequest req;
	LnResponse resp;
	Jsonb *result = NULL;

	ln_error_set_element(NULL);
	PG_TRY();
	{
		frame_check_served(op);
		if (PG_ARGISNULL(0))
			ln_error(LN_INVALID_INPUT, "the request must be a JSON object, not NULL");
		json_decode_request(PG_GETARG_JSONB_P(0), op->request_members, &req);
		frame_execute(op, &req, &resp);
		result = json_encode_response(&resp);
	}
	PG_CATCH();
	{
		frame_raise_as_lance_error(cxt);
	}
	PG_END_TRY();

	PG_RETURN_JSONB_P(result);
}

/*
 * Act on a decoded request: run the operation's handler against the catalog
 * and, if it changed anything, record it in the commit log and answer the
 * entry's transaction id.  The elements of a BatchCommitTables get the
 * handlers of the operations they stand for.
 */
void
frame_execute(const LnOperationDef *op, LnRequest *req, LnResponse *resp)
{
	char *transaction_id;

	/* both callers check before they decode, so that the answer does not depend on the body */
	Assert(op->handler != NULL);
	for (int i = 0; i < req->noperations; i++)
		req->operations[i].handler = registry_commit_operation(req->operations[i].kind)->handler;

	memset(resp, 0, sizeof(LnResponse));
	/* what the log keeps of them, checked before anything is done */
	req->context = ln_recorded_map(&req->context, "field \"context\"");
	req->headers = ln_recorded_map(&req->headers, "the logged headers");
	access_begin();
	catalog_begin();
	access_check_request(op, req);
	changes_begin();
	op->handler(req, resp);
	transaction_id = changes_record(op->operation_id, &req->context, &req->headers, req->key_id);
	catalog_end();
	if (transaction_id != NULL)
	{
		resp->fields |= LN_RESP_TRANSACTION_ID;
		resp->transaction_id = transaction_id;
		resp->transaction_ids = (op->flags & LN_OP_TRANSACTION_IDS) != 0;
	}
}

/*
 * In a PG_CATCH of a SQL entry point: re-raise the error as the Lance error
 * that describes it, in memory context `cxt` (the call's).
 */
void
frame_raise_as_lance_error(MemoryContext cxt)
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
