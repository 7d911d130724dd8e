/*
 * ops_batch.c
 *		BatchCommitTables: declare tables, create and delete versions and
 *		deregister tables, all in one transaction, all or none.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "../common/error.h"
#include "../common/request.h"
#include "ops_batch.h"

static const char *const commit_kind_names[] = {
	[LN_COMMIT_DECLARE_TABLE] = "declare_table",
	[LN_COMMIT_CREATE_TABLE_VERSION] = "create_table_version",
	[LN_COMMIT_DELETE_TABLE_VERSIONS] = "delete_table_versions",
	[LN_COMMIT_DEREGISTER_TABLE] = "deregister_table",
};

static const LnCommitOperation *sorting_operations;

/*
 * Operations run in one canonical order: by table id, and in request order
 * for one table.  Two batches over the same tables then take their locks in
 * the same order and cannot deadlock, while the operations on one table
 * (declare, then create a version) keep the order the caller gave.
 */
static int
compare_operations(const void *a, const void *b)
{
	int x = *(const int *)a;
	int y = *(const int *)b;
	const LnRequest *rx = &sorting_operations[x].request;
	const LnRequest *ry = &sorting_operations[y].request;
	int c = 0;

	if ((rx->present & LN_REQ_ID) && (ry->present & LN_REQ_ID))
		c = ln_compare_ids(&rx->id, &ry->id);
	return c != 0 ? c : x - y;
}

void
op_batch_commit_tables(const LnRequest *req, LnResponse *resp)
{
	int n = req->noperations;
	int *order = palloc(sizeof(int) * (n + 1));

	if ((req->present & LN_REQ_OPERATIONS) == 0)
		ln_error(LN_INVALID_INPUT, "field \"operations\" is required");

	for (int i = 0; i < n; i++)
		order[i] = i;
	sorting_operations = req->operations;
	qsort(order, n, sizeof(int), compare_operations);

	resp->fields = LN_RESP_RESULTS;
	resp->nresults = n;
	resp->results = palloc0(sizeof(LnCommitResult) * (n + 1));
	for (int k = 0; k < n; k++)
	{
		int i = order[k];
		const LnCommitOperation *op = &req->operations[i];

		CHECK_FOR_INTERRUPTS();
		ln_error_set_element(psprintf("operations[%d].%s", i, commit_kind_names[op->kind]));
		resp->results[i].kind = op->kind;
		op->handler(&op->request, &resp->results[i].response);
	}
	ln_error_set_element(NULL);
}
