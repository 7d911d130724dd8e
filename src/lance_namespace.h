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
	int len;
	char **names;
} LnId;

/* A map<string,string>, kept in the order the request gave it. */
typedef struct LnMap
{
	int len;
	char **keys;
	char **values;
} LnMap;

/*
 * The request members an operation reads.  Each member has a bit; an
 * operation names the bits it knows, and the decoder ignores every other key,
 * so that a field known to one operation is an unknown (ignored) key to the
 * next.
 */
#define LN_REQ_ID				(1u << 0)
#define LN_REQ_MODE				(1u << 1)
#define LN_REQ_BEHAVIOR			(1u << 2)
#define LN_REQ_PROPERTIES		(1u << 3)
#define LN_REQ_PAGE_TOKEN		(1u << 4)
#define LN_REQ_LIMIT			(1u << 5)
#define LN_REQ_INCLUDE_DECLARED (1u << 6)
#define LN_REQ_LOCATION			(1u << 7)
#define LN_REQ_NEW_TABLE_NAME	(1u << 8)
#define LN_REQ_NEW_NAMESPACE_ID (1u << 9)
#define LN_REQ_WITH_TABLE_URI	(1u << 10)
#define LN_REQ_CHECK_DECLARED	(1u << 11)
#define LN_REQ_LOAD_DETAILED	(1u << 12)
#define LN_REQ_VERSION			(1u << 13)
#define LN_REQ_DELIMITER		(1u << 14)
#define LN_REQ_VEND_CREDENTIALS (1u << 15)
#define LN_REQ_BRANCH			(1u << 16)
#define LN_REQ_MANIFEST_PATH	(1u << 17)
#define LN_REQ_MANIFEST_SIZE	(1u << 18)
#define LN_REQ_E_TAG			(1u << 19)
#define LN_REQ_METADATA			(1u << 20)
#define LN_REQ_NAMING_SCHEME	(1u << 21)
#define LN_REQ_DESCENDING		(1u << 22)
#define LN_REQ_RANGES			(1u << 23)
#define LN_REQ_ENTRIES			(1u << 24)
#define LN_REQ_OPERATIONS		(1u << 25)
/* identity and context belong to every request */
#define LN_REQ_IDENTITY (1u << 26)
#define LN_REQ_CONTEXT	(1u << 27)

#define LN_REQ_LIST (LN_REQ_ID | LN_REQ_PAGE_TOKEN | LN_REQ_LIMIT)

/* The members each operation that can stand in a batch knows. */
#define LN_REQ_DECLARE_TABLE                                                                       \
	(LN_REQ_ID | LN_REQ_LOCATION | LN_REQ_PROPERTIES | LN_REQ_VEND_CREDENTIALS)
#define LN_REQ_CREATE_TABLE_VERSION                                                                \
	(LN_REQ_ID | LN_REQ_VERSION | LN_REQ_BRANCH | LN_REQ_MANIFEST_PATH | LN_REQ_MANIFEST_SIZE |    \
	 LN_REQ_E_TAG | LN_REQ_METADATA | LN_REQ_NAMING_SCHEME)
#define LN_REQ_DELETE_TABLE_VERSIONS (LN_REQ_ID | LN_REQ_BRANCH | LN_REQ_RANGES)
#define LN_REQ_DEREGISTER_TABLE		 LN_REQ_ID

typedef struct LnVersionRange
{
	int64 start_version; /* inclusive */
	int64 end_version;	 /* exclusive; negative: through the latest */
} LnVersionRange;

/* The four operations a BatchCommitTables element can hold. */
typedef enum LnCommitKind
{
	LN_COMMIT_DECLARE_TABLE,
	LN_COMMIT_CREATE_TABLE_VERSION,
	LN_COMMIT_DELETE_TABLE_VERSIONS,
	LN_COMMIT_DEREGISTER_TABLE
} LnCommitKind;

typedef struct LnCommitOperation LnCommitOperation;

typedef struct LnRequest
{
	uint32 present; /* LN_REQ_* bits of the members given */
	LnId id;
	char *mode;
	char *behavior;
	LnMap properties;
	char *page_token; /* NULL or "" means the first page */
	int64 limit;
	bool include_declared; /* defaults to true */
	char *location;
	char *new_table_name;
	LnId new_namespace_id;
	bool with_table_uri;
	bool check_declared;
	bool load_detailed_metadata;
	int64 version;
	char *delimiter; /* defaults to "$" */
	bool vend_credentials;
	char *branch; /* NULL, "" and "main" all name main */
	char *manifest_path;
	int64 manifest_size;
	char *e_tag;
	LnMap metadata;
	char *naming_scheme;
	bool descending;
	int nranges;
	LnVersionRange *ranges;
	int nentries; /* BatchCreateTableVersions */
	struct LnRequest *entries;
	int noperations; /* BatchCommitTables */
	LnCommitOperation *operations;
	char *api_key;	  /* identity.api_key */
	char *auth_token; /* identity.auth_token */
	LnMap context;
} LnRequest;

struct LnCommitOperation
{
	LnCommitKind kind;
	LnRequest request;
};

/* The spec's TableVersion. */
typedef struct LnTableVersion
{
	int64 version;
	char *manifest_path;
	bool has_manifest_size;
	int64 manifest_size;
	char *e_tag; /* NULL: not sent */
	int64 timestamp_millis;
	LnMap metadata; /* sent when not empty */
} LnTableVersion;

/* The response members an operation fills; only members with a bit set are sent. */
#define LN_RESP_PROPERTIES		   (1u << 0)
#define LN_RESP_NAMESPACES		   (1u << 1)
#define LN_RESP_TABLES			   (1u << 2)
#define LN_RESP_PAGE_TOKEN		   (1u << 3)
#define LN_RESP_LOCATION		   (1u << 4)
#define LN_RESP_STORAGE_OPTIONS	   (1u << 5)
#define LN_RESP_TABLE_URI		   (1u << 6)
#define LN_RESP_IS_ONLY_DECLARED   (1u << 7)
#define LN_RESP_ID				   (1u << 8)
#define LN_RESP_TABLE			   (1u << 9)
#define LN_RESP_NAMESPACE		   (1u << 10)
#define LN_RESP_MANAGED_VERSIONING (1u << 11)
#define LN_RESP_VERSION			   (1u << 12) /* a TableVersion */
#define LN_RESP_VERSIONS		   (1u << 13)
#define LN_RESP_DELETED_COUNT	   (1u << 14)
#define LN_RESP_RESULTS			   (1u << 15)
#define LN_RESP_VERSION_NUMBER	   (1u << 16) /* DescribeTable's integer "version" */

typedef struct LnCommitResult LnCommitResult;

typedef struct LnResponse
{
	uint32 fields; /* LN_RESP_* bits of the members to send */
	LnMap properties;
	LnMap storage_options;
	int nnames; /* "namespaces" or "tables" */
	char **names;
	char *page_token; /* NULL: sent as null, no more pages */
	char *location;
	char *table_uri;
	bool is_only_declared;
	LnId id;
	char *table;
	LnId namespace_id;
	bool managed_versioning;
	LnTableVersion version;
	int nversions;
	LnTableVersion *versions;
	int64 deleted_count;
	int64 version_number;
	int nresults;
	LnCommitResult *results;
} LnResponse;

struct LnCommitResult
{
	LnCommitKind kind;
	LnResponse response;
};

typedef void (*LnOperation)(const LnRequest *req, LnResponse *resp);

/* An operation of the spec, as the SQL functions and the REST routes call it. */
typedef struct LnOperationDef
{
	const char *operation_id; /* the spec's operationId */
	LnOperation run;
	uint32 known_fields; /* LN_REQ_* bits of the request members it reads */
} LnOperationDef;

/* request.c: the frame every SQL-callable operation runs in */
extern Datum ln_run_operation(FunctionCallInfo fcinfo, const LnOperationDef *op);

/* lance_namespace.c: settings */
extern char *ln_root_location;
extern char *ln_local_roots;

#endif /* LANCE_NAMESPACE_H */
