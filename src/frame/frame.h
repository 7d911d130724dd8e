/*
 * frame.h
 *		The frame every operation runs in, from SQL or REST: decode, begin,
 *		run the handler, record the change, end, encode.
 */
#ifndef LN_FRAME_H
#define LN_FRAME_H

#include "fmgr.h"

#include "../common/pg_compat.h"

#include "registry.h"

extern Datum frame_sql_call(FunctionCallInfo fcinfo, const LnOperationDef *op);
extern void frame_check_served(const LnOperationDef *op);
extern void frame_execute(const LnOperationDef *op, LnRequest *req, LnResponse *resp);
pg_noreturn extern void frame_raise_as_lance_error(MemoryContext cxt);

/* Run `body` for a SQL entry point, answering only Lance errors. */
#define LANCE_SQL_ENTRY(result, body)                                                              \
	do                                                                                             \
	{                                                                                              \
		MemoryContext call_cxt_ = CurrentMemoryContext;                                            \
		ln_error_set_element(NULL);                                                                \
		PG_TRY();                                                                                  \
		{                                                                                          \
			if (PG_ARGISNULL(0))                                                                   \
				ln_error(LN_INVALID_INPUT, "the request must be a JSON object, not NULL");         \
			(result) = (body);                                                                     \
		}                                                                                          \
		PG_CATCH();                                                                                \
		{                                                                                          \
			frame_raise_as_lance_error(call_cxt_);                                                 \
		}                                                                                          \
		PG_END_TRY();                                                                              \
	} while (0)

#endif /* LN_FRAME_H */
