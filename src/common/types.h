/*
 * types.h
 *		Types shared by the layers of the lance_namespace extension: the
 *		decoded request, the response to encode, and an operation's row of
 *		the registry.  It declares no function and calls nothing, so that
 *		every layer may include it without depending on another.
 *
 * A request flows one way: the frame (frame/frame.c) has the JSON edge
 * (json/) decode the jsonb request into an LnRequest, the handler the
 * operation registry (frame/operations.def) names checks it and acts
 * through the model (model/) on the catalog (catalog/) and storage
 * (storage/), and fills an LnResponse, which the JSON edge encodes.  Only
 * the JSON edge knows the request and response JSON.
 */
#ifndef LN_TYPES_H
#define LN_TYPES_H

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
 * The privileges a role can hold on a namespace (and everything below it) or
 * on a table; each includes the ones before it.
 */
typedef enum LnPrivilege
{
	LN_PRIV_READ,
	LN_PRIV_WRITE,
	LN_PRIV_MANAGE
} LnPrivilege;

/* A privilege's name, as grants, the registry and messages spell it. */
static inline const char *
ln_privilege_name(LnPrivilege privilege)
{
	static const char *const names[] = {"read", "write", "manage"};

	return names[privilege];
}

/*
 * The request members an operation reads.  Each member has a bit; an
 * operation names the bits it knows, and the decoder ignores every other key,
 * so that a field known to one operation is an unknown (ignored) key to the
 * next.
 */

#define LN_REQ_ID				(UINT64CONST(1) << 0)
#define LN_REQ_MODE				(UINT64CONST(1) << 1)
#define LN_REQ_BEHAVIOR			(UINT64CONST(1) << 2)
#define LN_REQ_PROPERTIES		(UINT64CONST(1) << 3)
#define LN_REQ_PAGE_TOKEN		(UINT64CONST(1) << 4)
#define LN_REQ_LIMIT			(UINT64CONST(1) << 5)
#define LN_REQ_INCLUDE_DECLARED (UINT64CONST(1) << 6)
#define LN_REQ_LOCATION			(UINT64CONST(1) << 7)
#define LN_REQ_NEW_TABLE_NAME	(UINT64CONST(1) << 8)
#define LN_REQ_NEW_NAMESPACE_ID (UINT64CONST(1) << 9)
#define LN_REQ_WITH_TABLE_URI	(UINT64CONST(1) << 10)
#define LN_REQ_CHECK_DECLARED	(UINT64CONST(1) << 11)
#define LN_REQ_LOAD_DETAILED	(UINT64CONST(1) << 12)
#define LN_REQ_VERSION			(UINT64CONST(1) << 13)
#define LN_REQ_DELIMITER		(UINT64CONST(1) << 14)
#define LN_REQ_VEND_CREDENTIALS (UINT64CONST(1) << 15)
#define LN_REQ_BRANCH			(UINT64CONST(1) << 16)
#define LN_REQ_MANIFEST_PATH	(UINT64CONST(1) << 17)
#define LN_REQ_MANIFEST_SIZE	(UINT64CONST(1) << 18)
#define LN_REQ_E_TAG			(UINT64CONST(1) << 19)
#define LN_REQ_METADATA			(UINT64CONST(1) << 20)
#define LN_REQ_NAMING_SCHEME	(UINT64CONST(1) << 21)
#define LN_REQ_DESCENDING		(UINT64CONST(1) << 22)
#define LN_REQ_RANGES			(UINT64CONST(1) << 23)
#define LN_REQ_ENTRIES			(UINT64CONST(1) << 24)
#define LN_REQ_OPERATIONS		(UINT64CONST(1) << 25)
#define LN_REQ_ACTIONS			(UINT64CONST(1) << 26)
#define LN_REQ_TAG				(UINT64CONST(1) << 27)
#define LN_REQ_NAME				(UINT64CONST(1) << 28)
#define LN_REQ_FROM_BRANCH		(UINT64CONST(1) << 29)
#define LN_REQ_FROM_VERSION		(UINT64CONST(1) << 30)
/* identity and context belong to every request */
#define LN_REQ_IDENTITY (UINT64CONST(1) << 31)
#define LN_REQ_CONTEXT	(UINT64CONST(1) << 32)

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
typedef struct LnResponse LnResponse;

/* One AlterTransaction action: exactly one of its three kinds. */
typedef enum LnActionKind
{
	LN_ACTION_SET_STATUS,
	LN_ACTION_SET_PROPERTY,
	LN_ACTION_UNSET_PROPERTY
} LnActionKind;

typedef struct LnTransactionAction
{
	LnActionKind kind;
	char *status; /* setStatusAction */
	char *key;	  /* setPropertyAction, unsetPropertyAction */
	char *value;  /* setPropertyAction */
	char *mode;	  /* NULL: the action's default */
} LnTransactionAction;

typedef struct LnRequest
{
	uint64 present; /* LN_REQ_* bits of the members given */
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
	char *tag;
	char *name;		   /* CreateTableBranch, DeleteTableBranch */
	char *from_branch; /* CreateTableBranch */
	int64 from_version;
	int nactions; /* AlterTransaction */
	LnTransactionAction *actions;
	char *api_key;	  /* identity.api_key */
	char *auth_token; /* identity.auth_token */
	LnMap context;	  /* what the caller sent as the request's context */
	/*
	 * The request headers lance_rest() was handed that the commit log keeps
	 * (lance_namespace.logged_headers), by lower-case name; never decoded
	 * from a request body, so a caller cannot pass its own off as them.
	 */
	LnMap headers;
	/*
	 * The id of the API key lance_rest() authenticated the request with
	 * (never the key), which the commit log records; NULL from SQL.
	 */
	char *key_id;
} LnRequest;

struct LnCommitOperation
{
	LnCommitKind kind;
	LnRequest request;
	void (*handler)(const LnRequest *req, LnResponse *resp); /* set by the frame */
};

/*
 * A tag's or a branch's contents, as Lance keeps them in the table's _refs
 * folder (TagContents, BranchContents).
 */
typedef struct LnRefContents
{
	char *branch;  /* tag: its branch; branch: its parent branch (NULL: main) */
	int64 version; /* tag: its version; branch: the version it forks from */
	int64 manifest_size;
	int64 create_at;  /* branch: Unix seconds */
	char *created_at; /* tag: RFC 3339 times */
	char *updated_at;
	int nmapping; /* branch: Lance's identifier, (version, uuid) pairs */
	int64 *mapping_versions;
	char **mapping_ids;
	LnMap metadata;
} LnRefContents;

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
#define LN_RESP_TRANSACTION_ID	   (1u << 17)
#define LN_RESP_TAGS			   (1u << 19)
#define LN_RESP_BRANCHES		   (1u << 20)
#define LN_RESP_BRANCH			   (1u << 21)
#define LN_RESP_STATUS			   (1u << 18)
#define LN_RESP_VERSION_NUMBER	   (1u << 16) /* DescribeTable's integer "version" */

typedef struct LnCommitResult LnCommitResult;

struct LnResponse
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
	char *transaction_id;
	bool transaction_ids; /* send transaction_id as an array of one */
	int nrefs;			  /* "tags" or "branches": names and contents */
	char **ref_names;
	LnRefContents *refs;
	char *branch;
	char *status;
	int nresults;
	LnCommitResult *results;
};

struct LnCommitResult
{
	LnCommitKind kind;
	LnResponse response;
};

typedef void (*LnOperation)(const LnRequest *req, LnResponse *resp);

/* An operation's place in the registry (ln_operations), LN_OP_<operationId>. */
typedef enum LnOperationIndex
{
#define LN_OPERATION(id, ...) LN_OP_##id,
#include "../frame/operations.def"
#undef LN_OPERATION
	LN_NUM_OPERATIONS
} LnOperationIndex;

/* The operation registry's row flags (frame/registry.h has the rows). */
#define LN_OP_CHANGES		  (1u << 0) /* may change the catalog (or table refs) */
#define LN_OP_EMPTY_ANSWER	  (1u << 1) /* REST answers 204 without a body (the Exists calls) */
#define LN_OP_TRANSACTION_IDS (1u << 2) /* answers transaction_id as an array */
#define LN_OP_ON_PARENT                                                                            \
	(1u << 3)				  /* makes its object: the privilege is on the namespace it goes in */
#define LN_OP_LISTS (1u << 4) /* lists what is in its namespace: each item needs read */

/* One operation of the spec. */
typedef struct LnOperationDef
{
	LnOperationIndex index;	  /* its place in the registry */
	const char *operation_id; /* the spec's operationId */
	const char *sql_function; /* lance_<operation>(request jsonb) RETURNS jsonb */
	LnOperation handler;	  /* NULL: not served, and not_served says why */
	uint64 request_members;	  /* LN_REQ_* bits of the request members it reads */
	const char *http_method;  /* "GET" or "POST", as the spec routes it */
	const char *http_path;	  /* below the server root; {id} and {index_name} are one segment */
	uint32 flags;			  /* LN_OP_* */
	LnPrivilege privilege;
	const char *not_served;
} LnOperationDef;

#endif /* LN_TYPES_H */
