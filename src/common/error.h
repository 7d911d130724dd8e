/*
 * error.h
 *		Lance Namespace errors, raised as PostgreSQL errors.
 *
 * Every failure a caller can see carries SQLSTATE "LN" followed by the
 * three-digit Lance error code, and a DETAIL holding the spec's
 * ErrorResponse JSON, so that a gateway can hand it to the client as is.
 */
#ifndef LN_ERROR_H
#define LN_ERROR_H

#include "postgres.h"

#include "pg_compat.h"

typedef enum LnErrorCode
{
	LN_UNSUPPORTED = 0,
	LN_NAMESPACE_NOT_FOUND = 1,
	LN_NAMESPACE_ALREADY_EXISTS = 2,
	LN_NAMESPACE_NOT_EMPTY = 3,
	LN_TABLE_NOT_FOUND = 4,
	LN_TABLE_ALREADY_EXISTS = 5,
	LN_TABLE_INDEX_NOT_FOUND = 6,
	LN_TABLE_INDEX_ALREADY_EXISTS = 7,
	LN_TABLE_TAG_NOT_FOUND = 8,
	LN_TABLE_TAG_ALREADY_EXISTS = 9,
	LN_TRANSACTION_NOT_FOUND = 10,
	LN_TABLE_VERSION_NOT_FOUND = 11,
	LN_TABLE_COLUMN_NOT_FOUND = 12,
	LN_INVALID_INPUT = 13,
	LN_CONCURRENT_MODIFICATION = 14,
	LN_PERMISSION_DENIED = 15,
	LN_UNAUTHENTICATED = 16,
	LN_SERVICE_UNAVAILABLE = 17,
	LN_INTERNAL = 18,
	LN_INVALID_TABLE_STATE = 19,
	LN_TABLE_SCHEMA_VALIDATION_ERROR = 20,
	LN_THROTTLING = 21,
	LN_TABLE_BRANCH_NOT_FOUND = 22,
	LN_TABLE_BRANCH_ALREADY_EXISTS = 23
} LnErrorCode;

#define LN_SQLSTATE(code)                                                                          \
	MAKE_SQLSTATE('L', 'N', '0' + ((code) / 100) % 10, '0' + ((code) / 10) % 10, '0' + (code) % 10)

pg_noreturn extern void ln_error_detail(LnErrorCode code, const char *detail, const char *fmt, ...)
	pg_attribute_printf(3, 4);
#define ln_error(code, ...) ln_error_detail((code), NULL, __VA_ARGS__)

extern char *ln_error_body(int code, const char *message, const char *detail);
extern void ln_error_set_element(const char *element);
extern int ln_error_code_of_sqlstate(int sqlerrcode);
extern bool ln_is_lance_error(int sqlerrcode);
extern ErrorData *ln_error_take(MemoryContext cxt);
extern void ln_translate_error(const ErrorData *edata, int *code, char **message, char **detail);

#endif /* LN_ERROR_H */
