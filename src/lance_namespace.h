/*
 * lance_namespace.h
 *		Types shared by the layers of the lance_namespace extension.
 *
 * A request flows one way: the JSON edge (json_edge.c) decodes the jsonb
 * request into an LnRequest, an operation (ops_*.c) checks it and acts on
 * the catalog (catalog.c) and the storage helpers (location.c), and fills an
 * LnResponse, which the JSON edge encodes.  Only json_edge.c knows JSON.
 */
#ifndef LANCE_NAMESPACE_H
#define LANCE_NAMESPACE_H

#include "postgres.h"

#include "fmgr.h"

/* An object identifier in list form: the names below the root. */
typedef struct LnId
{
	int			len;
	char	  **names;
} LnId;

/* A map<string,string>, kept in the order the request gave it. */
typedef struct LnMap
{
	int			len;
	char	  **keys;
	char	  **values;
} LnMap;

/*
 * The request members an operation reads.  Each member has a bit; an
 * operation names the bits it knows, and the decoder ignores every other key,
 * so that a field known to one operation is an unknown (ignored) key to the
 * next.
 */
#define LN_REQ_ID					(1u << 0)
#define LN_REQ_MODE					(1u << 1)
#define LN_REQ_BEHAVIOR				(1u << 2)
#define LN_REQ_PROPERTIES			(1u << 3)
#define LN_REQ_PAGE_TOKEN			(1u << 4)
#define LN_REQ_LIMIT				(1u << 5)
#define LN_REQ_INCLUDE_DECLARED		(1u << 6)
#define LN_REQ_LOCATION				(1u << 7)
#define LN_REQ_NEW_TABLE_NAME		(1u << 8)
#define LN_REQ_NEW_NAMESPACE_ID		(1u << 9)
#define LN_REQ_WITH_TABLE_URI		(1u << 10)
#define LN_REQ_CHECK_DECLARED		(1u << 11)
#define LN_REQ_LOAD_DETAILED		(1u << 12)
#define LN_REQ_VERSION				(1u << 13)
#define LN_REQ_DELIMITER			(1u << 14)
#define LN_REQ_VEND_CREDENTIALS		(1u << 15)

#define LN_REQ_LIST (LN_REQ_ID | LN_REQ_PAGE_TOKEN | LN_REQ_LIMIT)

typedef struct LnRequest
{
	uint32		present;		/* LN_REQ_* bits of the members given */
	LnId		id;
	char	   *mode;
	char	   *behavior;
	LnMap		properties;
	char	   *page_token;		/* NULL or "" means the first page */
	int64		limit;
	bool		include_declared;	/* defaults to true */
	char	   *location;
	char	   *new_table_name;
	LnId		new_namespace_id;
	bool		with_table_uri;
	bool		check_declared;
	bool		load_detailed_metadata;
	int64		version;
	char	   *delimiter;		/* defaults to "$" */
	bool		vend_credentials;
} LnRequest;

/* The response members an operation fills; only members with a bit set are sent. */
#define LN_RESP_PROPERTIES			(1u << 0)
#define LN_RESP_NAMESPACES			(1u << 1)
#define LN_RESP_TABLES				(1u << 2)
#define LN_RESP_PAGE_TOKEN			(1u << 3)
#define LN_RESP_LOCATION			(1u << 4)
#define LN_RESP_STORAGE_OPTIONS		(1u << 5)
#define LN_RESP_TABLE_URI			(1u << 6)
#define LN_RESP_IS_ONLY_DECLARED	(1u << 7)
#define LN_RESP_ID					(1u << 8)
#define LN_RESP_TABLE				(1u << 9)
#define LN_RESP_NAMESPACE			(1u << 10)

typedef struct LnResponse
{
	uint32		fields;			/* LN_RESP_* bits of the members to send */
	LnMap		properties;
	LnMap		storage_options;
	int			nnames;			/* "namespaces" or "tables" */
	char	  **names;
	char	   *page_token;		/* NULL: sent as null, no more pages */
	char	   *location;
	char	   *table_uri;
	bool		is_only_declared;
	LnId		id;
	char	   *table;
	LnId		namespace_id;
} LnResponse;

typedef void (*LnOperation) (const LnRequest *req, LnResponse *resp);

/* request.c: the frame every SQL-callable operation runs in */
extern Datum ln_run_operation(FunctionCallInfo fcinfo, LnOperation op, uint32 known_fields);

/* lance_namespace.c: settings */
extern char *ln_root_location;

#endif							/* LANCE_NAMESPACE_H */
