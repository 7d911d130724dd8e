/*
 * storage_xact.c
 *		Storage at the transaction's end: at pre-commit the pending tag and
 *		branch changes of both backends are written; on commit what served
 *		its purpose is removed, and on abort what the transaction made is
 *		undone, for a savepoint as for the whole transaction.
 *
 * This is the one place that knows every backend's pending work, so that
 * the backends below it never call each other (storage_local.c keeps the
 * local undo list, storage_refs.c the local ref changes, storage_s3.c the
 * S3 ones, storage_spool.c the undo steps that failed, kept for later).
 */
#include "postgres.h"

#include "access/xact.h"

#include "../common/error.h"
#include "s3_client.h"
#include "storage.h"
#include "storage_internal.h"

static void storage_xact_callback(XactEvent event, void *arg);
static void storage_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									 SubTransactionId parentSubid, void *arg);

void
storage_init(void)
{
	storage_local_init();
	s3_init();
	RegisterXactCallback(storage_xact_callback, NULL);
	RegisterSubXactCallback(storage_subxact_callback, NULL);
}

static void
storage_xact_callback(XactEvent event, void *arg pg_attribute_unused())
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (storage_local_pending() || storage_refs_pending() || s3_has_pending())
				ln_error(LN_UNSUPPORTED, "cannot prepare a transaction that changed files on "
										 "storage (versions, tags or branches)");
			break;
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			storage_refs_apply();
			s3_apply_pending();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			fs_release(true, InvalidSubTransactionId);
			storage_local_end_transaction(true);
			fs_release(true, InvalidSubTransactionId); /* what a failed step left open */
			s3_end_transaction(true);
			storage_spool_end_transaction(true);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			fs_release(true, InvalidSubTransactionId);
			storage_refs_discard(true, InvalidSubTransactionId);
			storage_local_end_transaction(false);
			fs_release(true, InvalidSubTransactionId); /* what a failed step left open */
			s3_end_transaction(false);
			/* what the undo could not do waits, durably, for the next maintenance round */
			storage_spool_write();
			storage_spool_end_transaction(false);
			break;
		default:
			break;
	}
}

static void
storage_subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
						 void *arg pg_attribute_unused())
{
	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	s3_end_subtransaction(event == SUBXACT_EVENT_COMMIT_SUB, mySubid, parentSubid);
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		fs_release(false, mySubid);
		storage_refs_discard(false, mySubid);
	}
	else
	{
		fs_reassign(mySubid, parentSubid);
		storage_refs_reassign(mySubid, parentSubid);
	}
	storage_local_end_subtransaction(event == SUBXACT_EVENT_COMMIT_SUB, mySubid, parentSubid);
	if (event == SUBXACT_EVENT_ABORT_SUB)
		storage_spool_write();
}
