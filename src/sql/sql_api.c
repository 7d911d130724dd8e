/*
 * sql_api.c
 *		The SQL entry points: one function lance_<operation>(request jsonb)
 *		per row of the operation registry, each running its row in the
 *		frame, and lance_operations(), which lists the registry so that a
 *		regression test can hold the install script to it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "../frame/frame.h"
#include "../frame/registry.h"
#include "../json/json_edge.h"

#define LN_OPERATION(id, sql, ...)                                                                 \
	PG_FUNCTION_INFO_V1(sql);                                                                      \
	Datum sql(PG_FUNCTION_ARGS)                                                                    \
	{                                                                                              \
		return frame_sql_call(fcinfo, &ln_operations[LN_OP_##id]);                                 \
	}
#include "../frame/operations.def"
#undef LN_OPERATION

/*
 * lance_operations(): one row per operation of the spec, with its SQL
 * function, REST route, whether it changes the catalog, the privilege it
 * needs, for those not served why, and the request members it reads.
 */
PG_FUNCTION_INFO_V1(lance_operations);
Datum
lance_operations(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *)fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < LN_NUM_OPERATIONS; i++)
	{
		const LnOperationDef *op = &ln_operations[i];
		Datum values[9];
		bool nulls[9] = {false};
		const char **members;
		int nmembers = json_request_member_names(op->request_members, &members);
		Datum *member_datums = palloc(sizeof(Datum) * (nmembers + 1));

		values[0] = CStringGetTextDatum(op->operation_id);
		values[1] = CStringGetTextDatum(op->sql_function);
		values[2] = CStringGetTextDatum(op->http_method);
		values[3] = CStringGetTextDatum(op->http_path);
		values[4] = BoolGetDatum((op->flags & LN_OP_CHANGES) != 0);
		values[5] = CStringGetTextDatum(ln_privilege_name(op->privilege));
		values[6] = BoolGetDatum(op->handler != NULL);
		if (op->not_served != NULL)
			values[7] = CStringGetTextDatum(op->not_served);
		else
			nulls[7] = true;
		for (int m = 0; m < nmembers; m++)
			member_datums[m] = CStringGetTextDatum(members[m]);
		values[8] = PointerGetDatum(
			construct_array(member_datums, nmembers, TEXTOID, -1, false, TYPALIGN_INT));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}
