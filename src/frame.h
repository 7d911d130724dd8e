/*
 * frame.h
 *		The frame every operation runs in, from SQL or REST: decode, begin,
 *		run the handler, record the change, end, encode.
 */
#ifndef LN_FRAME_H
#define LN_FRAME_H

#include "fmgr.h"

#include "registry.h"

extern Datum frame_sql_call(FunctionCallInfo fcinfo, const LnOperationDef *op);
extern void frame_check_served(const LnOperationDef *op);
extern void frame_execute(const LnOperationDef *op, LnRequest *req, LnResponse *resp);
extern void frame_raise_as_lance_error(MemoryContext cxt) pg_attribute_noreturn();

#endif /* LN_FRAME_H */
