/*
 * error.c
 *		Raise Lance Namespace errors.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/json.h"

#include "error.h"

pg_noreturn static void ln_raise(LnErrorCode code, const char *detail, const char *message);

/*
 * The batch element being worked on, named at the start of every message:
 * a copy, since an error that is not raised here (a cancel, a deadlock)
 * leaves it set past the call whose memory named it.
 */
static char error_element_name[128];
static const char *error_element = NULL;

/*
 * Name the element of a batch that the following errors belong to ("entries[2]"),
 * or no element (NULL).  The operation frame clears it before each call.
 */
void
ln_error_set_element(const char *element)
{
	if (element == NULL)
		error_element = NULL;
	else
	{
		strlcpy(error_element_name, element, sizeof(error_element_name));
		error_element = error_element_name;
	}
}

/*
 * Raise Lance error `code` with a message formatted from fmt.  The message
 * should name the object in words a person understands; it becomes both the
 * PostgreSQL message and the ErrorResponse's "error".  `detail`, if not
 * NULL, is a longer explanation for the ErrorResponse's "detail".
 */
void
ln_error_detail(LnErrorCode code, const char *detail, const char *fmt, ...)
{
	StringInfoData message;

	initStringInfo(&message);
	for (;;)
	{
		va_list args;
		int needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&message, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&message, needed);
	}
	ln_raise(code, detail, message.data);
}

/*
 * An internal error: the server log gets the details under a random id, and
 * the caller a message with that id and nothing else, since the details may
 * name paths, process ids or the catalog's internals.
 */
static char *
log_internal_error(const char *message, const char *detail)
{
	uint32 id;

	if (!pg_strong_random(&id, sizeof(id)))
		id = (uint32)random();
	ereport(LOG, (errmsg_internal("lance_namespace: internal error %08x: %s", id, message),
				  detail ? errdetail_internal("%s", detail) : 0));
	return psprintf("internal error %08x; the server log has the details", id);
}

/* The ErrorResponse as JSON text, as it is: no check of what it says. */
static char *
build_body(int code, const char *message, const char *detail)
{
	StringInfoData body;

	initStringInfo(&body);
	appendStringInfo(&body, "{\"code\":%d,\"error\":", code);
	escape_json(&body, message);
	if (detail != NULL)
	{
		appendStringInfoString(&body, ",\"detail\":");
		escape_json(&body, detail);
	}
	appendStringInfoChar(&body, '}');
	return body.data;
}

/*
 * The spec's ErrorResponse, {"code": N, "error": "...", "detail": "..."}, as
 * JSON text, for the REST answers that are not raised.  An internal error's
 * message and detail go to the server log, not into the answer.
 */
char *
ln_error_body(int code, const char *message, const char *detail)
{
	if (code == LN_INTERNAL)
		return build_body(code, log_internal_error(message, detail), NULL);
	return build_body(code, message, detail);
}

/*
 * The one place every Lance error is raised: SQLSTATE LNxxx, the message,
 * and the ErrorResponse as DETAIL, so that a gateway can hand it on as is.
 */
static void
ln_raise(LnErrorCode code, const char *detail, const char *message)
{
	/* one error per naming: the element's memory may not outlive this call */
	if (error_element != NULL)
		message = psprintf("%s: %s", error_element, message);
	error_element = NULL;
	if (code == LN_INTERNAL)
	{
		message = log_internal_error(message, detail);
		detail = NULL;
	}
	ereport(ERROR, (errcode(LN_SQLSTATE(code)), errmsg_internal("%s", message),
					errdetail_internal("%s", build_body(code, message, detail))));
	pg_unreachable();
}

/*
 * The Lance error code that describes a PostgreSQL error, so that no raw
 * PostgreSQL error reaches a caller of the API.  The errors that reach here
 * are races the catalog's constraints stopped, or the server refusing work.
 */
int
ln_error_code_of_sqlstate(int sqlerrcode)
{
	const char *state = unpack_sql_state(sqlerrcode);

	if (state[0] == 'L' && state[1] == 'N')
		return (state[2] - '0') * 100 + (state[3] - '0') * 10 + (state[4] - '0');

	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION: /* a concurrent writer won */
		case ERRCODE_TRANSACTION_ROLLBACK:			 /* serialization failure, deadlock */
			return LN_CONCURRENT_MODIFICATION;
		case ERRCODE_DATA_EXCEPTION:
		case ERRCODE_PROGRAM_LIMIT_EXCEEDED:
			return LN_INVALID_INPUT;
		case ERRCODE_INSUFFICIENT_RESOURCES:
		case ERRCODE_OPERATOR_INTERVENTION:
		case ERRCODE_INVALID_TRANSACTION_STATE: /* a read-only transaction or standby */
			return LN_SERVICE_UNAVAILABLE;
		default:
			break;
	}
	if (sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
		return LN_PERMISSION_DENIED;
	if (sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		return LN_SERVICE_UNAVAILABLE;
	return LN_INTERNAL;
}

/* True if sqlerrcode is a Lance error (SQLSTATE class LN). */
bool
ln_is_lance_error(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == MAKE_SQLSTATE('L', 'N', '0', '0', '0');
}

/*
 * In a PG_CATCH block: a Lance error is taken as handled and returned,
 * copied into `cxt` for the caller to read and free; any other error (a
 * cancel, running out of memory) is thrown on, as the caller's callers
 * must see it.
 */
ErrorData *
ln_error_take(MemoryContext cxt)
{
	ErrorData *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	if (!ln_is_lance_error(edata->sqlerrcode))
	{
		FreeErrorData(edata);
		PG_RE_THROW();
	}
	FlushErrorState();
	return edata;
}

/*
 * The Lance error that stands for a PostgreSQL error (not itself a Lance
 * error): its code, a message a person can act on, and the PostgreSQL error
 * as the detail.  An internal error is logged when it is raised or answered.
 */
void
ln_translate_error(const ErrorData *edata, int *code, char **message, char **detail)
{
	*code = ln_error_code_of_sqlstate(edata->sqlerrcode);
	if (*code == LN_INTERNAL)
	{
		/* for the log only: ln_error_body() keeps it from the caller */
		*message = edata->message;
		*detail = psprintf("SQLSTATE %s%s%s", unpack_sql_state(edata->sqlerrcode),
						   edata->detail ? ": " : "", edata->detail ? edata->detail : "");
	}
	else if (*code == LN_CONCURRENT_MODIFICATION)
	{
		*message = "the catalog was changed by a concurrent transaction; retry the request";
		*detail = psprintf("SQLSTATE %s: %s", unpack_sql_state(edata->sqlerrcode), edata->message);
	}
	else if (edata->sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION)
	{
		*message = "the catalog cannot be changed here (a hot standby or a read-only "
				   "transaction): send changes to the primary";
		*detail = psprintf("SQLSTATE %s: %s", unpack_sql_state(edata->sqlerrcode), edata->message);
	}
	else
	{
		*message = edata->message;
		*detail = psprintf("SQLSTATE %s", unpack_sql_state(edata->sqlerrcode));
	}
}
