/*
 * ops_transaction.c
 *		DescribeTransaction and AlterTransaction: the status and properties
 *		of the commit log's entries.
 */
#include "postgres.h"

#include "../access/access.h"
#include "../catalog/catalog.h"
#include "../common/error.h"
#include "../common/request.h"
#include "ops_transaction.h"

static const LnEnumValue statuses[] = {{"Queued", 0}, {"Running", 1},  {"Succeeded", 2},
									   {"Failed", 3}, {"Canceled", 4}, {NULL, 0}};

typedef enum SetMode
{
	SET_OVERWRITE,
	SET_FAIL,
	SET_SKIP
} SetMode;

static const LnEnumValue set_modes[] = {
	{"Overwrite", SET_OVERWRITE}, {"Fail", SET_FAIL}, {"Skip", SET_SKIP}, {NULL, 0}};

typedef enum UnsetMode
{
	UNSET_SKIP,
	UNSET_FAIL
} UnsetMode;

static const LnEnumValue unset_modes[] = {{"Skip", UNSET_SKIP}, {"Fail", UNSET_FAIL}, {NULL, 0}};

/*
 * The transaction id a request names: `id` holds it as its only name (the
 * REST path's {id}).  Anything that is not a UUID names no transaction.
 */
static const char *
transaction_id_of(const LnRequest *req)
{
	const char *id;
	size_t len;

	ln_require_id(req);
	if (req->id.len != 1)
		ln_error(LN_INVALID_INPUT, "field \"id\" must hold one transaction id");
	id = req->id.names[0];
	len = strlen(id);
	if (len != 36 || strspn(id, "0123456789abcdefABCDEF-") != len || id[8] != '-' ||
		id[13] != '-' || id[18] != '-' || id[23] != '-')
		ln_error(LN_TRANSACTION_NOT_FOUND, "transaction \"%s\" does not exist", id);
	return id;
}

static void
get_transaction(const char *id, bool for_update, LnResponse *resp)
{
	char *role;
	Oid role_id;

	/* a caller sees and changes the entries of its own roles, as if no others existed */
	if (!catalog_get_change(id, for_update, &resp->status, &resp->properties, &role, &role_id) ||
		!access_acts_for(role_id, role))
		ln_error(LN_TRANSACTION_NOT_FOUND, "transaction \"%s\" does not exist", id);
	resp->fields = LN_RESP_STATUS | LN_RESP_PROPERTIES;
}

void
op_describe_transaction(const LnRequest *req, LnResponse *resp)
{
	get_transaction(transaction_id_of(req), false, resp);
}

/*
 * A change that committed (Succeeded), or a drop that failed, is history:
 * its status is final, or a caller could rewrite what the commit log says
 * happened (a commit marked Failed, a removal marked Canceled).  Setting
 * the status it has is no change.  The one way back is the documented
 * requeue of a failed drop, an administrator's (lance_retry_drops() does
 * the same for the processor's failures).  Queued, Running and Canceled
 * are a drop's states before the processor ends it, and stay open; but
 * that its data is gone (Succeeded) only the processor says, or an
 * administrator.
 */
static void
check_status_change(const char *id, const char *recorded, const char *status)
{
	bool final = strcmp(recorded, "Succeeded") == 0 || strcmp(recorded, "Failed") == 0;

	if (strcmp(recorded, status) == 0)
		return;
	/* an open drop's removal is the processor's to report, or an administrator's */
	if (!final && strcmp(status, "Succeeded") == 0 && !access_caller_is_admin())
		ln_error_detail(LN_PERMISSION_DENIED,
						"Set it Canceled or Failed to stop it; the drop processor sets Succeeded "
						"once the data is removed.",
						"only the drop processor or an administrator sets transaction \"%s\" "
						"Succeeded: it is %s",
						id, recorded);
	if (!final)
		return;
	if (strcmp(recorded, "Failed") == 0 && strcmp(status, "Queued") == 0 &&
		access_caller_is_admin())
		return;
	ln_error_detail(LN_INVALID_TABLE_STATE,
					"A transaction that ended keeps its status; record notes with "
					"setPropertyAction instead.",
					"transaction \"%s\" is %s, which is final: its status cannot become %s", id,
					recorded, status);
}

/*
 * AlterTransaction: apply every action to the entry, in order, all or none
 * (an error leaves the entry as it was: the caller's transaction aborts).
 */
void
op_alter_transaction(const LnRequest *req, LnResponse *resp)
{
	const char *id = transaction_id_of(req);
	LnMap *props = &resp->properties;
	ChangeSetter setter = CHANGE_SET_PROPERTIES;
	const char *recorded_status;

	if ((req->present & LN_REQ_ACTIONS) == 0 || req->nactions == 0)
		ln_error(LN_INVALID_INPUT, "field \"actions\" must hold at least one action");
	get_transaction(id, true, resp);
	recorded_status = pstrdup(resp->status);

	/* room for every property an action may add */
	{
		char **keys = palloc(sizeof(char *) * (props->len + req->nactions + 1));
		char **values = palloc(sizeof(char *) * (props->len + req->nactions + 1));

		memcpy(keys, props->keys, sizeof(char *) * props->len);
		memcpy(values, props->values, sizeof(char *) * props->len);
		props->keys = keys;
		props->values = values;
	}

	for (int i = 0; i < req->nactions; i++)
	{
		const LnTransactionAction *a = &req->actions[i];
		int at;

		ln_error_set_element(psprintf("actions[%d]", i));
		switch (a->kind)
		{
			case LN_ACTION_SET_STATUS:
				resp->status =
					(char *)statuses[ln_parse_enum(a->status, "status", statuses, 0)].name;
				/* Queued hands a folder to lance_process_drops(): an administrator's call */
				if (strcmp(resp->status, "Queued") == 0 && !access_caller_is_admin())
					ln_error(LN_PERMISSION_DENIED,
							 "only an administrator sets a transaction's status to Queued");
				check_status_change(id, recorded_status, resp->status);
				break;
			case LN_ACTION_SET_PROPERTY:
				at = ln_map_index(props, a->key);
				if (at < 0)
				{
					(void)ln_parse_enum(a->mode, "mode", set_modes, SET_OVERWRITE);
					props->keys[props->len] = a->key;
					props->values[props->len++] = a->value;
				}
				else
					switch ((SetMode)ln_parse_enum(a->mode, "mode", set_modes, SET_OVERWRITE))
					{
						case SET_OVERWRITE:
							props->values[at] = a->value;
							break;
						case SET_FAIL:
							ln_error(LN_CONCURRENT_MODIFICATION,
									 "property \"%s\" of transaction \"%s\" is set already", a->key,
									 id);
						case SET_SKIP:
							break;
					}
				break;
			case LN_ACTION_UNSET_PROPERTY:
				at = ln_map_index(props, a->key);
				if (ln_parse_enum(a->mode, "mode", unset_modes, UNSET_SKIP) == UNSET_FAIL && at < 0)
					ln_error(LN_INVALID_INPUT, "property \"%s\" of transaction \"%s\" is not set",
							 a->key, id);
				if (at >= 0)
				{
					props->keys[at] = props->keys[props->len - 1];
					props->values[at] = props->values[props->len - 1];
					props->len--;
				}
				break;
		}
	}
	ln_error_set_element(NULL);
	/*
	 * A drop set Failed here is the caller's stop: lance_retry_drops() leaves
	 * it.  The status it had already is no change, and keeps who set it (a
	 * processor's Failed stays one to retry).
	 */
	if (strcmp(resp->status, recorded_status) != 0)
		setter = CHANGE_SET_BY_CALLER;
	catalog_set_change(id, resp->status, props, setter);
}
