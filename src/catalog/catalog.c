/*
 * catalog.c
 *		Read and write the catalog tables through SPI with saved plans.
 *
 * Every statement is prepared once per backend and kept, so that a call
 * never parses or plans SQL text.  Results are copied into the memory
 * context that was current at catalog_begin(), which outlives SPI.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "../common/error.h"
#include "catalog.h"
#include "catalog_index.h"

typedef enum CatalogStatement
{
	STMT_LOOKUP_CHILD_FOR_UPDATE,
	STMT_LOOKUP_CHILD_FOR_KEY_SHARE,
	STMT_INSERT_OBJECT,
	STMT_SET_PROPERTIES,
	STMT_REREGISTER_TABLE,
	STMT_HAS_CHILDREN,
	STMT_DELETE_OBJECT,
	STMT_DELETE_SUBTREE,
	STMT_MOVE_OBJECT,
	STMT_LIST_CHILDREN,
	STMT_LIST_CHILDREN_READABLE,
	STMT_LIST_TABLES_WITH_DATA,
	STMT_LIST_TABLES_WITH_DATA_READABLE,
	STMT_LIST_ALL_TABLES,
	STMT_LIST_ALL_TABLES_READABLE,
	STMT_LIST_ALL_TABLES_WITH_DATA,
	STMT_LIST_ALL_TABLES_WITH_DATA_READABLE,
	STMT_LOOKUP_TABLES,
	STMT_INSERT_VERSIONS,
	STMT_MARK_TABLES_WITH_DATA,
	STMT_LIST_VERSIONS,
	STMT_LIST_VERSIONS_DESCENDING,
	STMT_LIST_LATEST_VERSIONS,
	STMT_INSERT_CHANGE,
	STMT_GET_CHANGE,
	STMT_GET_CHANGE_FOR_UPDATE,
	STMT_SET_CHANGE,
	STMT_LIST_QUEUED_DROPS,
	STMT_LOCK_TABLE_REFS,
	STMT_INSERT_VERSION,
	STMT_LOCATION_IN_USE,
	STMT_LOCATION_TAKEN,
	STMT_GET_VERSION,
	STMT_DELETE_VERSIONS,
	STMT_TABLES_EXIST,
	STMT_LIST_TABLE_LOCATIONS,
	STMT_HAS_PRIVILEGE,
	STMT_INSERT_GRANT,
	STMT_DELETE_GRANT,
	STMT_LIST_GRANTS,
	STMT_INSERT_API_KEY,
	STMT_DELETE_API_KEY,
	STMT_LIST_API_KEYS,
	STMT_SET_STORAGE,
	STMT_REMOVE_STORAGE,
	STMT_LIST_STORAGE,
	STMT_FOLDERS_SHARED_BELOW,
	NUM_CATALOG_STATEMENTS
} CatalogStatement;

typedef struct StatementDef
{
	const char *sql;
	int nargs;
	Oid argtypes[12];
} StatementDef;

/*
 * Properties travel between C and the catalog as text[] pairs: jsonb_object()
 * builds the stored jsonb, and a flattened two-dimensional array of
 * [key, value] pairs reads it back, so that no JSON is handled here.
 */
#define OBJECT_COLUMNS                                                                             \
	"id, kind = 'table', name, location, coalesce(declared, false), "                              \
	"ARRAY(SELECT ARRAY[key, value] FROM pg_catalog.jsonb_each_text(properties)), "                \
	"coalesce(location_derived, false)"

/*
 * The objects role $N may read: those it (or a role whose privileges it
 * has) holds a grant on, and everything below them: the listings' filter.
 */
#define READABLE_BY(role)                                                                          \
	"(WITH RECURSIVE down(id) AS ("                                                                \
	"   SELECT g.object_id FROM lance_catalog.grant g"                                             \
	"    WHERE g.role IN (SELECT r.oid::pg_catalog.regrole FROM pg_catalog.pg_roles r"             \
	"                      WHERE pg_catalog.pg_has_role(" role ", r.oid, 'USAGE'))"                \
	"   UNION"                                                                                     \
	"   SELECT c.id FROM lance_catalog.object c JOIN down ON c.parent_id = down.id)"               \
	" SELECT down.id FROM down)"

#define TABLE_PATH                                                                                 \
	"(WITH RECURSIVE up(parent_id, names) AS ("                                                    \
	"   SELECT p.parent_id, ARRAY[p.name]"                                                         \
	"   UNION ALL"                                                                                 \
	"   SELECT o.parent_id, o.name OPERATOR(pg_catalog.||) up.names"                               \
	"     FROM up JOIN lance_catalog.object o ON o.id = up.parent_id"                              \
	"    WHERE up.parent_id <> 0)"                                                                 \
	" SELECT names FROM up WHERE up.parent_id = 0)"

/*
 * The listings, each with a filter: "" for a caller that reads everything
 * (an administrator, or one that can read the namespace), or the objects a
 * role may read.  Two statements rather than one with an OR, which would
 * keep the planner from the index order that a page needs.
 */
#define LIST_CHILDREN(filter)                                                                      \
	"SELECT name FROM lance_catalog.object"                                                        \
	" WHERE parent_id = $1 AND kind = CASE WHEN $2 THEN 'table' ELSE 'namespace' END"              \
	"   AND name > $3" filter " ORDER BY name LIMIT $4"
#define LIST_TABLES_WITH_DATA(filter)                                                              \
	"SELECT name FROM lance_catalog.object"                                                        \
	" WHERE parent_id = $1 AND kind = 'table' AND NOT declared AND name > $2" filter               \
	" ORDER BY name LIMIT $3"
#define LIST_ALL_TABLES(with_data, filter)                                                         \
	"SELECT p.id, " TABLE_PATH " FROM ("                                                           \
	"   SELECT id, parent_id, name FROM lance_catalog.object"                                      \
	"    WHERE kind = 'table'" with_data " AND id > $1" filter "    ORDER BY id LIMIT $2) p"       \
	" ORDER BY p.id"

#define VERSION_COLUMNS                                                                            \
	"version, manifest_path, manifest_size, e_tag, "                                               \
	"(extract(epoch FROM created_at) * 1000)::bigint, "                                            \
	"ARRAY(SELECT ARRAY[key, value] FROM pg_catalog.jsonb_each_text(metadata))"

static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	[STMT_LOOKUP_CHILD_FOR_UPDATE] =
		{"SELECT " OBJECT_COLUMNS " FROM lance_catalog.object WHERE parent_id = $1 AND name = $2"
		 " FOR UPDATE",
		 2,
		 {INT8OID, TEXTOID}},
	/* the namespace something is made in: waits for a drop, and holds off the next one */
	[STMT_LOOKUP_CHILD_FOR_KEY_SHARE] =
		{"SELECT o.id, o.kind = 'table', o.name, o.location, coalesce(o.declared, false),"
		 "       ARRAY(SELECT ARRAY[e.key, e.value]"
		 "               FROM pg_catalog.jsonb_each_text(o.properties) AS e),"
		 "       coalesce(o.location_derived, false)"
		 "  FROM lance_catalog.object o WHERE o.parent_id = $1 AND o.name = $2"
		 " FOR KEY SHARE",
		 2,
		 {INT8OID, TEXTOID}},
	/* the creator gets manage on what it made, in the same statement */
	[STMT_INSERT_OBJECT] =
		{"WITH made AS ("
		 "  INSERT INTO lance_catalog.object"
		 "         (parent_id, kind, name, properties, location, declared, location_derived)"
		 "  VALUES ($1, CASE WHEN $2 THEN 'table' ELSE 'namespace' END, $3, "
		 "          pg_catalog.jsonb_object($4, $5), $6, $7, $9)"
		 "  ON CONFLICT (parent_id, name) DO NOTHING RETURNING id),"
		 " granted AS ("
		 "  INSERT INTO lance_catalog.grant (object_id, role, privilege, granted_by)"
		 "  SELECT made.id, $8::pg_catalog.regrole, 'manage', $8::pg_catalog.regrole FROM made)"
		 " SELECT id FROM made",
		 9,
		 {INT8OID, BOOLOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID, BOOLOID, OIDOID,
		  BOOLOID}},
	[STMT_SET_PROPERTIES] = {"UPDATE lance_catalog.object SET properties = "
							 "pg_catalog.jsonb_object($2, $3) WHERE id = $1",
							 3,
							 {INT8OID, TEXTARRAYOID, TEXTARRAYOID}},
	[STMT_REREGISTER_TABLE] =
		{"UPDATE lance_catalog.object"
		 "   SET location = $2, properties = pg_catalog.jsonb_object($3, $4), declared = false,"
		 "       location_derived = false"
		 " WHERE id = $1",
		 4,
		 {INT8OID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID}},
	[STMT_HAS_CHILDREN] = {"SELECT EXISTS (SELECT FROM lance_catalog.object WHERE parent_id = $1)",
						   1,
						   {INT8OID}},
	[STMT_DELETE_OBJECT] = {"DELETE FROM lance_catalog.object WHERE id = $1", 1, {INT8OID}},
	[STMT_DELETE_SUBTREE] =
		{/* one statement, so that the parent key checks see the whole subtree gone */
		 "WITH RECURSIVE subtree(id) AS ("
		 "   SELECT $1::bigint"
		 "   UNION ALL"
		 "   SELECT o.id FROM lance_catalog.object o JOIN subtree s ON o.parent_id = s.id)"
		 " DELETE FROM lance_catalog.object WHERE id IN (SELECT id FROM subtree)",
		 1,
		 {INT8OID}},
	[STMT_MOVE_OBJECT] = {"UPDATE lance_catalog.object SET parent_id = $2, name = $3 WHERE id = $1",
						  3,
						  {INT8OID, INT8OID, TEXTOID}},
	[STMT_LIST_CHILDREN] = {LIST_CHILDREN(""), 4, {INT8OID, BOOLOID, TEXTOID, INT4OID}},
	[STMT_LIST_CHILDREN_READABLE] = {LIST_CHILDREN(" AND id IN " READABLE_BY("$5")),
									 5,
									 {INT8OID, BOOLOID, TEXTOID, INT4OID, OIDOID}},
	[STMT_LIST_TABLES_WITH_DATA] = {LIST_TABLES_WITH_DATA(""), 3, {INT8OID, TEXTOID, INT4OID}},
	[STMT_LIST_TABLES_WITH_DATA_READABLE] = {LIST_TABLES_WITH_DATA(" AND id IN " READABLE_BY("$4")),
											 4,
											 {INT8OID, TEXTOID, INT4OID, OIDOID}},
	[STMT_LIST_ALL_TABLES] = {LIST_ALL_TABLES("", ""), 2, {INT8OID, INT4OID}},
	[STMT_LIST_ALL_TABLES_READABLE] = {LIST_ALL_TABLES("", " AND id IN " READABLE_BY("$3")),
									   3,
									   {INT8OID, INT4OID, OIDOID}},
	[STMT_LIST_ALL_TABLES_WITH_DATA] = {LIST_ALL_TABLES(" AND NOT declared", ""),
										2,
										{INT8OID, INT4OID}},
	[STMT_LIST_ALL_TABLES_WITH_DATA_READABLE] = {LIST_ALL_TABLES(" AND NOT declared",
																 " AND id IN " READABLE_BY("$3")),
												 3,
												 {INT8OID, INT4OID, OIDOID}},
	[STMT_LOOKUP_TABLES] =
		{"SELECT e.ord, o.id, o.location, o.declared"
		 "  FROM ROWS FROM (pg_catalog.unnest($1::bigint[]), pg_catalog.unnest($2::text[]))"
		 "       WITH ORDINALITY AS e(parent_id, name, ord)"
		 "  JOIN lance_catalog.object o ON o.parent_id = e.parent_id AND o.name = e.name"
		 " WHERE o.kind = 'table'",
		 2,
		 {INT8ARRAYOID, TEXTARRAYOID}},
	[STMT_INSERT_VERSIONS] =
		{/*
		  * One statement for a whole batch, inserting in the given order; a
		  * key that exists is skipped and missing from RETURNING.  Metadata
		  * comes as (entry, key, value) triples.
		  */
		 "INSERT INTO lance_catalog.version"
		 "       (table_id, branch, version, manifest_path, manifest_size, e_tag, naming_scheme,"
		 "        metadata)"
		 " SELECT e.table_id, e.branch, e.version, e.manifest_path, e.manifest_size, e.e_tag,"
		 "        e.naming_scheme,"
		 "        coalesce((SELECT pg_catalog.jsonb_object_agg(m.key, m.value)"
		 "                    FROM ROWS FROM (pg_catalog.unnest($8::int8[]),"
		 "                                    pg_catalog.unnest($9::text[]),"
		 "                                    pg_catalog.unnest($10::text[]))"
		 "                         AS m(entry, key, value)"
		 "                   WHERE m.entry = e.ord), '{}')"
		 "   FROM ROWS FROM (pg_catalog.unnest($1::int8[]), pg_catalog.unnest($2::text[]),"
		 "                   pg_catalog.unnest($3::int8[]), pg_catalog.unnest($4::text[]),"
		 "                   pg_catalog.unnest($5::int8[]), pg_catalog.unnest($6::text[]),"
		 "                   pg_catalog.unnest($7::text[])) WITH ORDINALITY"
		 "        AS e(table_id, branch, version, manifest_path, manifest_size, e_tag,"
		 "             naming_scheme, ord)"
		 "   JOIN lance_catalog.object o ON o.id = e.table_id"
		 "  ORDER BY e.ord"
		 "    FOR KEY SHARE OF o"
		 " ON CONFLICT DO NOTHING"
		 " RETURNING table_id, branch, version, (extract(epoch FROM created_at) * 1000)::bigint",
		 10,
		 {INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID,
		  TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID}},
	[STMT_MARK_TABLES_WITH_DATA] =
		{"UPDATE lance_catalog.object SET declared = false WHERE id = ANY($1) AND declared",
		 1,
		 {INT8ARRAYOID}},
	[STMT_LIST_VERSIONS] = {"SELECT " VERSION_COLUMNS " FROM lance_catalog.version"
							" WHERE table_id = $1 AND branch = $2 AND version > $3"
							" ORDER BY version LIMIT $4",
							4,
							{INT8OID, TEXTOID, INT8OID, INT4OID}},
	[STMT_LIST_VERSIONS_DESCENDING] = {"SELECT " VERSION_COLUMNS " FROM lance_catalog.version"
									   " WHERE table_id = $1 AND branch = $2 AND version < $3"
									   " ORDER BY version DESC LIMIT $4",
									   4,
									   {INT8OID, TEXTOID, INT8OID, INT4OID}},
	[STMT_LIST_LATEST_VERSIONS] = {"SELECT " VERSION_COLUMNS " FROM lance_catalog.version"
								   " WHERE table_id = $1 AND branch = $2"
								   " ORDER BY version DESC LIMIT $3",
								   3,
								   {INT8OID, TEXTOID, INT4OID}},
	[STMT_GET_VERSION] = {"SELECT " VERSION_COLUMNS " FROM lance_catalog.version"
						  " WHERE table_id = $1 AND branch = $2 AND version = $3",
						  3,
						  {INT8OID, TEXTOID, INT8OID}},
	[STMT_DELETE_VERSIONS] =
		{"DELETE FROM lance_catalog.version"
		 " WHERE table_id = $1 AND branch = $2 AND version >= $3 AND version <= $4",
		 4,
		 {INT8OID, TEXTOID, INT8OID, INT8OID}},
	/* the caller is given: the catalog's statements run as its owner */
	[STMT_INSERT_CHANGE] = {"INSERT INTO lance_catalog.change"
							"       (operation, objects, versions, namespaces, context, status,"
							"        properties, drop_location, role)"
							" VALUES ($1, $2, $3, $4, pg_catalog.jsonb_object($5, $6), $7, "
							"pg_catalog.jsonb_object($8, $9), $10, $11::pg_catalog.name)"
							" RETURNING seq, transaction_id::text",
							11,
							{TEXTOID, TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
							 TEXTARRAYOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID, TEXTOID}},
	[STMT_GET_CHANGE] = {"SELECT status, ARRAY(SELECT ARRAY[key, value]"
						 "                       FROM pg_catalog.jsonb_each_text(properties)),"
						 "       role::text"
						 "  FROM lance_catalog.change WHERE transaction_id = $1::uuid",
						 1,
						 {TEXTOID}},
	[STMT_GET_CHANGE_FOR_UPDATE] =
		{"SELECT status, ARRAY(SELECT ARRAY[key, value]"
		 "                       FROM pg_catalog.jsonb_each_text(properties)),"
		 "       role::text"
		 "  FROM lance_catalog.change WHERE transaction_id = $1::uuid"
		 " FOR UPDATE",
		 1,
		 {TEXTOID}},
	[STMT_SET_CHANGE] = {"UPDATE lance_catalog.change"
						 "   SET status = $2, properties = pg_catalog.jsonb_object($3, $4)"
						 " WHERE transaction_id = $1::uuid",
						 4,
						 {TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID}},
	/* SKIP LOCKED: two processors share the queue, and a drop being canceled waits */
	[STMT_LIST_QUEUED_DROPS] = {"SELECT transaction_id::text, drop_location"
								"  FROM lance_catalog.change"
								" WHERE status = 'Queued' AND operation = 'DropTable'"
								" ORDER BY seq LIMIT $1"
								" FOR UPDATE SKIP LOCKED",
								1,
								{INT4OID}},
	/* a table at the folder, inside it, or around it */
	[STMT_LOCATION_IN_USE] =
		{"SELECT EXISTS (SELECT FROM lance_catalog.object"
		 "  WHERE kind = 'table'"
		 "    AND (lance_catalog.local_path(location) COLLATE \"C\" = $1"
		 "         OR (lance_catalog.local_path(location) COLLATE \"C\" >= $1 || '/'"
		 "             AND lance_catalog.local_path(location) COLLATE \"C\" < $1 || '0')"
		 "         OR lance_catalog.local_path(location) COLLATE \"C\" = ANY ($2))"
		 "    AND id <> $3)",
		 3,
		 {TEXTOID, TEXTARRAYOID, INT8OID}},
	/* another table on exactly this folder */
	[STMT_LOCATION_TAKEN] = {"SELECT EXISTS (SELECT FROM lance_catalog.object"
							 "  WHERE kind = 'table' AND id <> $2"
							 "    AND lance_catalog.local_path(location) COLLATE \"C\" = $1)",
							 2,
							 {TEXTOID, INT8OID}},
	[STMT_LOCK_TABLE_REFS] = {"SELECT FROM lance_catalog.object WHERE id = $1 FOR NO KEY UPDATE",
							  1,
							  {INT8OID}},
	/* one version: its table found by key and locked, as in STMT_INSERT_VERSIONS */
	[STMT_INSERT_VERSION] =
		{"INSERT INTO lance_catalog.version"
		 "       (table_id, branch, version, manifest_path, manifest_size, e_tag,"
		 "        naming_scheme, metadata)"
		 " SELECT o.id, $2, $3, $4, $5, $6, $7, pg_catalog.jsonb_object($8, $9)"
		 "   FROM lance_catalog.object o WHERE o.id = $1"
		 "    FOR KEY SHARE"
		 " ON CONFLICT DO NOTHING"
		 " RETURNING table_id, branch, version,"
		 "           (extract(epoch FROM created_at) * 1000)::bigint",
		 9,
		 {INT8OID, TEXTOID, INT8OID, TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTARRAYOID,
		  TEXTARRAYOID}},
	[STMT_TABLES_EXIST] = {"SELECT o.id FROM lance_catalog.object o"
						   " WHERE o.id = ANY ($1) AND o.kind = 'table'",
						   1,
						   {INT8ARRAYOID}},
	/* every table's location, in id order, for the sweep after a crash */
	[STMT_LIST_TABLE_LOCATIONS] = {"SELECT id, location FROM lance_catalog.object"
								   " WHERE kind = 'table' AND id > $1 ORDER BY id LIMIT $2",
								   2,
								   {INT8OID, INT4OID}},
	/* a grant of one of the privileges $3 to role $2 (or one whose privileges it has) on $1 or
	   above */
	[STMT_HAS_PRIVILEGE] =
		{"WITH RECURSIVE up(id) AS ("
		 "   SELECT $1::bigint"
		 "   UNION ALL"
		 "   SELECT o.parent_id FROM lance_catalog.object o JOIN up ON o.id = up.id"
		 "    WHERE o.parent_id IS NOT NULL)"
		 " SELECT EXISTS (SELECT FROM up JOIN lance_catalog.grant g ON g.object_id = up.id"
		 "                 WHERE g.privilege = ANY ($3)"
		 "                   AND pg_catalog.pg_has_role($2, g.role::pg_catalog.oid, 'USAGE'))",
		 3,
		 {INT8OID, OIDOID, TEXTARRAYOID}},
	[STMT_INSERT_GRANT] =
		{"INSERT INTO lance_catalog.grant (object_id, role, privilege, granted_by)"
		 " VALUES ($1, $2::pg_catalog.regrole, $3, $4::pg_catalog.regrole)"
		 " ON CONFLICT DO NOTHING RETURNING 1",
		 4,
		 {INT8OID, OIDOID, TEXTOID, OIDOID}},
	[STMT_DELETE_GRANT] = {"DELETE FROM lance_catalog.grant"
						   " WHERE object_id = $1 AND role = $2::pg_catalog.regrole"
						   "   AND privilege = $3 RETURNING 1",
						   3,
						   {INT8OID, OIDOID, TEXTOID}},
	[STMT_LIST_GRANTS] = {"SELECT role::text, privilege FROM lance_catalog.grant"
						  " WHERE object_id = $1 ORDER BY role::text COLLATE \"C\", privilege",
						  1,
						  {INT8OID}},
	[STMT_INSERT_API_KEY] = {"INSERT INTO lance_catalog.api_key (id, role, key_hash, created_by)"
							 " VALUES ($1, $2::pg_catalog.regrole, pg_catalog.sha256($3),"
							 "         $4::pg_catalog.regrole)",
							 4,
							 {TEXTOID, OIDOID, BYTEAOID, OIDOID}},
	/* a key whose role was dropped since is no key */
	[STMT_DELETE_API_KEY] = {"DELETE FROM lance_catalog.api_key WHERE id = $1 RETURNING 1",
							 1,
							 {TEXTOID}},
	[STMT_LIST_API_KEYS] =
		{"SELECT id, role::pg_catalog.oid, created_by::pg_catalog.oid, created_at"
		 "  FROM lance_catalog.api_key ORDER BY created_at, id",
		 0,
		 {InvalidOid}},
	[STMT_SET_STORAGE] =
		{"INSERT INTO lance_catalog.storage (location, options, set_by)"
		 " VALUES ($1, pg_catalog.jsonb_object($2, $3), $4::pg_catalog.regrole)"
		 " ON CONFLICT (location) DO UPDATE"
		 "   SET options = excluded.options, set_by = excluded.set_by, set_at = pg_catalog.now()",
		 4,
		 {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, OIDOID}},
	[STMT_REMOVE_STORAGE] = {"DELETE FROM lance_catalog.storage WHERE location = $1 RETURNING 1",
							 1,
							 {TEXTOID}},
	[STMT_LIST_STORAGE] = {"SELECT s.location, o.key, o.value FROM lance_catalog.storage s"
						   "  LEFT JOIN LATERAL pg_catalog.jsonb_each_text(s.options) o ON true"
						   " ORDER BY s.location, o.key COLLATE \"C\"",
						   0,
						   {InvalidOid}},
	/* two tables at or below folder key $1 whose folders are one, or one inside the other */
	[STMT_FOLDERS_SHARED_BELOW] =
		{"WITH below AS ("
		 "  SELECT id, location, lance_catalog.local_path(location) COLLATE \"C\" AS folder"
		 "    FROM lance_catalog.object"
		 "   WHERE kind = 'table'"
		 "     AND (lance_catalog.local_path(location) COLLATE \"C\" = $1"
		 "          OR (lance_catalog.local_path(location) COLLATE \"C\" >= $1 || '/'"
		 "              AND lance_catalog.local_path(location) COLLATE \"C\" < $1 || '0')))"
		 "SELECT a.location, b.location FROM below a JOIN below b ON a.id < b.id"
		 " WHERE a.folder = b.folder OR pg_catalog.starts_with(b.folder, a.folder || '/')"
		 "    OR pg_catalog.starts_with(a.folder, b.folder || '/')"
		 " LIMIT 1",
		 1,
		 {TEXTOID}},
	/* the longest prefix of folder key $1 that has a setting, with its options */
};

static SPIPlanPtr plans[NUM_CATALOG_STATEMENTS];
static MemoryContext result_cxt;

/* The caller's identity and settings, while the catalog acts as its owner. */
static Oid caller_user;
static int caller_security;

/*
 * Whether a catalog session is open, and in which subtransaction it began:
 * sessions do not nest (one would put back the other's identity), and an
 * error ends the session with the (sub)transaction it began in.
 */
static bool session_open = false;
static SubTransactionId session_subxact = InvalidSubTransactionId;

static void
end_session_with_transaction(XactEvent event, void *arg pg_attribute_unused())
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE)
		session_open = false;
}

static void
end_session_on_subabort(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid pg_attribute_unused(),
						void *arg pg_attribute_unused())
{
	if (event == SUBXACT_EVENT_ABORT_SUB && mySubid == session_subxact)
		session_open = false;
}

/* The owner of schema lance_catalog, or InvalidOid until looked up again. */
static Oid catalog_owner_id = InvalidOid;

static void
forget_catalog_owner(Datum arg pg_attribute_unused(), int cacheid pg_attribute_unused(),
					 uint32 hashvalue pg_attribute_unused())
{
	catalog_owner_id = InvalidOid;
}

static Oid
catalog_owner(void)
{
	static bool callback_registered = false;

	if (!callback_registered)
	{
		CacheRegisterSyscacheCallback(NAMESPACEOID, forget_catalog_owner, (Datum)0);
		callback_registered = true;
	}
	if (!OidIsValid(catalog_owner_id))
	{
		Oid schema = get_namespace_oid("lance_catalog", false);
		HeapTuple tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(schema));

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for schema %u", schema);
		catalog_owner_id = ((Form_pg_namespace)GETSTRUCT(tuple))->nspowner;
		ReleaseSysCache(tuple);
	}
	return catalog_owner_id;
}

/*
 * Start using the catalog.  Its tables are not the callers' to read or
 * write: the statements run as the owner of schema lance_catalog, as a
 * SECURITY DEFINER function would, searching pg_catalog alone so that no
 * object a caller made is ever found in its place.  Callers check
 * privileges (access.c) and name the caller where the catalog records one.
 * An error ends both switches with the (sub)transaction.
 */
void
catalog_begin(void)
{
	static bool callbacks_registered = false;

	if (!callbacks_registered)
	{
		RegisterXactCallback(end_session_with_transaction, NULL);
		RegisterSubXactCallback(end_session_on_subabort, NULL);
		callbacks_registered = true;
	}
	if (session_open)
		elog(ERROR, "lance_namespace: catalog sessions do not nest");
	session_open = true;
	session_subxact = GetCurrentSubTransactionId();
	result_cxt = CurrentMemoryContext;
	/* the settings a session reads live in its memory (catalog_index.c) */
	catalog_index_forget_storage();
	GetUserIdAndSecContext(&caller_user, &caller_security);
	SetUserIdAndSecContext(catalog_owner(), caller_security | SECURITY_LOCAL_USERID_CHANGE);
	/*
	 * Only pg_catalog (not even pg_temp) is searched while the catalog acts.
	 * An override, not the search_path setting: setting it would make the
	 * session's own statements look their search path up again after every
	 * call.  The plans, made and kept under this same path, stay valid.
	 */
	{
		OverrideSearchPath path = {
			.schemas = NIL, .addCatalog = true, .addTemp = false, .generation = 0};

		PushOverrideSearchPath(&path);
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/*
	 * SPI_connect switches to a context that SPI_finish deletes; the
	 * operation's own allocations (its response) must outlive that.
	 */
	MemoryContextSwitchTo(result_cxt);
}

void
catalog_end(void)
{
	/*
	 * Whatever the operation made since catalog_begin must outlive
	 * SPI_finish: a context left current by a catalog call would be freed
	 * with SPI's under the caller.
	 */
	if (CurrentMemoryContext != result_cxt)
		elog(ERROR, "lance_namespace: a catalog call left another memory context current");
	SPI_finish();
	PopOverrideSearchPath();
	SetUserIdAndSecContext(caller_user, caller_security);
	session_open = false;
}

/*
 * The library reads and writes the catalog's tables as the install script
 * of its own version makes them.  A catalog made by an older script must be
 * updated first: say so, rather than fail on a missing column.  Checked
 * once per backend, before the first statement is prepared.
 */
static void
check_schema_version(void)
{
	static bool checked = false;
	MemoryContext caller_cxt;
	char *version;

	if (checked)
		return;
	caller_cxt = CurrentMemoryContext;
	if (SPI_execute("SELECT e.extversion FROM pg_catalog.pg_extension e"
					" WHERE e.extname OPERATOR(pg_catalog.=) 'lance_namespace'",
					true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "extension lance_namespace is not installed in this database");
	version = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	/* SPI leaves its own context current, which SPI_finish deletes (see execute) */
	MemoryContextSwitchTo(caller_cxt);
	if (strcmp(version, LN_EXTENSION_VERSION) != 0)
		ln_error_detail(LN_SERVICE_UNAVAILABLE,
						"An administrator runs ALTER EXTENSION lance_namespace UPDATE.",
						"the catalog is at version %s, the installed library needs %s", version,
						LN_EXTENSION_VERSION);
	checked = true;
}

/* Run a catalog statement, preparing and keeping its plan on first use. */
static int
execute(CatalogStatement stmt, Datum *values, const char *nulls, long limit)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	int rc;

	if (plans[stmt] == NULL)
	{
		const StatementDef *def = &statement_defs[stmt];
		SPIPlanPtr plan;

		check_schema_version();
		/*
		 * A generic plan, always: every statement looks rows up by key, so a
		 * plan made for one set of values serves all, and planning anew per
		 * call (a custom plan) would cost more than the statement itself.
		 */
		plan =
			SPI_prepare_cursor(def->sql, def->nargs, (Oid *)def->argtypes, CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			elog(ERROR, "could not prepare catalog statement %d: %s", stmt,
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		plans[stmt] = plan;
	}
	rc = SPI_execute_plan(plans[stmt], values, nulls, false, limit);

	/*
	 * SPI leaves CurrentMemoryContext on its procedure context, which
	 * SPI_finish deletes.  The catalog layer never changes the caller's
	 * context: whatever the caller allocates after a statement must outlive
	 * catalog_end(), since it may be part of the operation's response.
	 */
	MemoryContextSwitchTo(caller_cxt);
	if (rc < 0)
		elog(ERROR, "catalog statement %d failed: %s", stmt, SPI_result_code_string(rc));
	return rc;
}

static Datum
result_datum(int row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

static char *
result_text(int row, int col)
{
	bool isnull;
	Datum d = result_datum(row, col, &isnull);

	if (isnull)
		return NULL;
	return MemoryContextStrdup(result_cxt, TextDatumGetCString(d));
}

/* A text[] result as palloc'ed strings in the result context. */
static int
result_text_array(int row, int col, char ***strings)
{
	bool isnull;
	Datum d = result_datum(row, col, &isnull);
	Datum *elems;
	bool *nulls;
	int n;

	*strings = NULL;
	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	*strings = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
		(*strings)[i] =
			nulls[i] ? NULL : MemoryContextStrdup(result_cxt, TextDatumGetCString(elems[i]));
	return n;
}

/*
 * A flattened [key, value] pairs text[] result as an LnMap in the result
 * context.  A pair whose value is NULL (a JSON null, which only a direct
 * UPDATE can store) is left out: a map holds strings.
 */
static LnMap
result_map(uint64 row, int col)
{
	LnMap map;
	char **pairs;
	int npairs = result_text_array(row, col, &pairs) / 2;

	map.len = 0;
	map.keys = MemoryContextAlloc(result_cxt, sizeof(char *) * (npairs + 1));
	map.values = MemoryContextAlloc(result_cxt, sizeof(char *) * (npairs + 1));
	for (int i = 0; i < npairs; i++)
	{
		if (pairs[2 * i + 1] == NULL)
			continue;
		map.keys[map.len] = pairs[2 * i];
		map.values[map.len++] = pairs[2 * i + 1];
	}
	return map;
}

static Datum
text_array_datum(char **strings, int n)
{
	Datum *elems = palloc(sizeof(Datum) * (n + 1));

	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(strings[i]);
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* A text[] or bigint[] whose NULL strings (or unset flags) are SQL NULLs. */
static Datum
nullable_array_datum(Datum *elems, bool *nulls, int n, Oid elemtype)
{
	int dims[1] = {n};
	int lbs[1] = {1};
	int16 typlen;
	bool typbyval;
	char typalign;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	return PointerGetDatum(
		construct_md_array(elems, nulls, 1, dims, lbs, elemtype, typlen, typbyval, typalign));
}

static Datum
nullable_text_array_datum(char **strings, int n)
{
	Datum *elems = palloc0(sizeof(Datum) * (n + 1));
	bool *nulls = palloc0(sizeof(bool) * (n + 1));

	for (int i = 0; i < n; i++)
	{
		nulls[i] = strings[i] == NULL;
		if (!nulls[i])
			elems[i] = CStringGetTextDatum(strings[i]);
	}
	return nullable_array_datum(elems, nulls, n, TEXTOID);
}

static Datum
int8_array_datum(const int64 *values, const bool *present, int n)
{
	Datum *elems = palloc0(sizeof(Datum) * (n + 1));
	bool *nulls = palloc0(sizeof(bool) * (n + 1));

	for (int i = 0; i < n; i++)
	{
		nulls[i] = present != NULL && !present[i];
		elems[i] = Int64GetDatum(values[i]);
	}
	return nullable_array_datum(elems, nulls, n, INT8OID);
}

static Datum
text_datum_or_null(const char *s, char *null)
{
	*null = s ? ' ' : 'n';
	return s ? CStringGetTextDatum(s) : (Datum)0;
}

/*
 * The object named `name` under parent_id, with the row lock `lock` (see
 * CatalogLock); false if there is none.
 */
bool
catalog_lookup_child(int64 parent_id, const char *name, CatalogLock lock, CatalogObject *out)
{
	static const CatalogStatement statements[] = {
		[CATALOG_KEY_SHARE] = STMT_LOOKUP_CHILD_FOR_KEY_SHARE,
		[CATALOG_FOR_UPDATE] = STMT_LOOKUP_CHILD_FOR_UPDATE};
	Datum values[2];
	bool isnull;

	/* a plain look-up reads the index directly; row locks take a statement */
	if (lock == CATALOG_NO_LOCK)
	{
		check_schema_version();
		return catalog_index_read_child(parent_id, name, out, result_cxt);
	}
	values[0] = Int64GetDatum(parent_id);
	values[1] = CStringGetTextDatum(name);
	execute(statements[lock], values, NULL, 1);
	if (SPI_processed == 0)
		return false;

	out->id = DatumGetInt64(result_datum(0, 1, &isnull));
	out->is_table = DatumGetBool(result_datum(0, 2, &isnull));
	out->name = result_text(0, 3);
	out->location = result_text(0, 4);
	out->declared = DatumGetBool(result_datum(0, 5, &isnull));
	out->properties = result_map(0, 6);
	out->location_derived = DatumGetBool(result_datum(0, 7, &isnull));
	return true;
}

/*
 * Insert a namespace or table under parent_id.  Returns the new id, or 0 if
 * the name is taken: the unique key decides, so that of two concurrent
 * inserts of one name exactly one wins and the other sees the winner.
 */
int64
catalog_insert_object(int64 parent_id, bool is_table, const char *name, const LnMap *properties,
					  const char *location, bool declared, bool location_derived, Oid creator)
{
	Datum values[9];
	char nulls[10] = "         ";
	bool isnull;

	values[0] = Int64GetDatum(parent_id);
	values[1] = BoolGetDatum(is_table);
	values[2] = CStringGetTextDatum(name);
	values[3] = text_array_datum(properties->keys, properties->len);
	values[4] = text_array_datum(properties->values, properties->len);
	values[5] = text_datum_or_null(location, &nulls[5]);
	values[6] = BoolGetDatum(declared);
	values[7] = ObjectIdGetDatum(creator);
	values[8] = BoolGetDatum(location_derived);
	if (!is_table)
		nulls[6] = nulls[8] = 'n';

	execute(STMT_INSERT_OBJECT, values, nulls, 0);
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt64(result_datum(0, 1, &isnull));
}

void
catalog_set_properties(int64 id, const LnMap *properties)
{
	Datum values[3];

	values[0] = Int64GetDatum(id);
	values[1] = text_array_datum(properties->keys, properties->len);
	values[2] = text_array_datum(properties->values, properties->len);
	execute(STMT_SET_PROPERTIES, values, NULL, 0);
}

/* Point an existing table entry at another location, as a table with data. */
void
catalog_reregister_table(int64 id, const char *location, const LnMap *properties)
{
	Datum values[4];

	values[0] = Int64GetDatum(id);
	values[1] = CStringGetTextDatum(location);
	values[2] = text_array_datum(properties->keys, properties->len);
	values[3] = text_array_datum(properties->values, properties->len);
	execute(STMT_REREGISTER_TABLE, values, NULL, 0);
}

bool
catalog_has_children(int64 id)
{
	Datum values[1] = {Int64GetDatum(id)};
	bool isnull;

	execute(STMT_HAS_CHILDREN, values, NULL, 1);
	return DatumGetBool(result_datum(0, 1, &isnull));
}

void
catalog_delete_object(int64 id)
{
	Datum values[1] = {Int64GetDatum(id)};

	execute(STMT_DELETE_OBJECT, values, NULL, 0);
}

/* Delete a namespace with every namespace and table below it. */
void
catalog_delete_subtree(int64 id)
{
	Datum values[1] = {Int64GetDatum(id)};

	execute(STMT_DELETE_SUBTREE, values, NULL, 0);
}

/*
 * Give object `id` a new parent and name.  Returns false, having changed
 * nothing, if the name is taken there: the unique key decides, waiting for
 * a concurrent transaction that takes the name, so the update runs in a
 * subtransaction of its own that a unique violation rolls back.  (Renames
 * are rare; the hot paths never pay for a subtransaction.)
 */
bool
catalog_move_object(int64 id, int64 new_parent_id, const char *new_name)
{
	Datum values[3] = {Int64GetDatum(id), Int64GetDatum(new_parent_id),
					   CStringGetTextDatum(new_name)};
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool moved = true;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		execute(STMT_MOVE_OBJECT, values, NULL, 0);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* roll back first in any case: the caller's own subtransactions come next */
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
			ReThrowError(edata);
		FreeErrorData(edata);
		moved = false;
	}
	PG_END_TRY();
	return moved;
}

/*
 * Names of the namespaces (or tables) directly under parent_id that sort
 * after `after`, in byte order, at most `limit` of them.
 */
int
catalog_list_children(int64 parent_id, bool tables, bool include_declared, const char *after,
					  int limit, Oid reader, char ***names)
{
	int n;

	if (tables && !include_declared)
	{
		Datum values[4] = {Int64GetDatum(parent_id), CStringGetTextDatum(after),
						   Int32GetDatum(limit), ObjectIdGetDatum(reader)};

		execute(OidIsValid(reader) ? STMT_LIST_TABLES_WITH_DATA_READABLE
								   : STMT_LIST_TABLES_WITH_DATA,
				values, NULL, 0);
	}
	else
	{
		Datum values[5] = {Int64GetDatum(parent_id), BoolGetDatum(tables),
						   CStringGetTextDatum(after), Int32GetDatum(limit),
						   ObjectIdGetDatum(reader)};

		execute(OidIsValid(reader) ? STMT_LIST_CHILDREN_READABLE : STMT_LIST_CHILDREN, values, NULL,
				0);
	}

	n = (int)SPI_processed;
	*names = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
		(*names)[i] = result_text(i, 1);
	return n;
}

/* Tables of the whole catalog with id above after_id, in id order, with their full ids. */
int
catalog_list_all_tables(bool include_declared, int64 after_id, int limit, Oid reader, int64 **ids,
						LnId **paths)
{
	Datum values[3] = {Int64GetDatum(after_id), Int32GetDatum(limit), ObjectIdGetDatum(reader)};
	int n;
	bool isnull;

	if (OidIsValid(reader))
		execute(include_declared ? STMT_LIST_ALL_TABLES_READABLE
								 : STMT_LIST_ALL_TABLES_WITH_DATA_READABLE,
				values, NULL, 0);
	else
		execute(include_declared ? STMT_LIST_ALL_TABLES : STMT_LIST_ALL_TABLES_WITH_DATA, values,
				NULL, 0);
	n = (int)SPI_processed;
	*ids = MemoryContextAlloc(result_cxt, sizeof(int64) * (n + 1));
	*paths = MemoryContextAlloc(result_cxt, sizeof(LnId) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*ids)[i] = DatumGetInt64(result_datum(i, 1, &isnull));
		(*paths)[i].len = result_text_array(i, 2, &(*paths)[i].names);
	}
	return n;
}

/*
 * Find the tables named (parent_ids[i], names[i]).  Fills ids[i] (0 when
 * there is no such table), locations[i] and declared[i].
 */
void
catalog_lookup_tables(int n, const int64 *parent_ids, char **names, int64 *ids, char **locations,
					  bool *declared)
{
	Datum values[2];
	bool isnull;

	values[0] = int8_array_datum(parent_ids, NULL, n);
	values[1] = nullable_text_array_datum(names, n);
	execute(STMT_LOOKUP_TABLES, values, NULL, 0);

	memset(ids, 0, sizeof(int64) * n);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		int i = (int)DatumGetInt64(result_datum(row, 1, &isnull)) - 1;

		ids[i] = DatumGetInt64(result_datum(row, 2, &isnull));
		locations[i] = result_text(row, 3);
		declared[i] = DatumGetBool(result_datum(row, 4, &isnull));
	}
}

/*
 * Insert the versions in `rows`, in that order, in one statement.  A version
 * whose key exists already, in the catalog or earlier in `rows`, is not
 * inserted: inserted[i] tells, and each inserted row's timestamp_millis is
 * set.  The primary key decides, so that of two writers of one version
 * exactly one inserts it; the other waits for the first to finish.
 *
 * The statement finds each version's table by key and locks it FOR KEY
 * SHARE, in the order of `rows`, before inserting: a table being deleted
 * (deregistered, dropped) is waited for, and a version of a table deleted
 * meanwhile is not inserted either (catalog_tables_exist() then tells the
 * two apart), rather than failing on the foreign key.  A rename changes no
 * table's key, so a version follows its table through one.
 */
void
catalog_insert_versions(int n, CatalogVersionInsert *rows, bool *inserted)
{
	Datum values[10];
	int64 *table_ids = palloc(sizeof(int64) * (n + 1));
	char **branches = palloc(sizeof(char *) * (n + 1));
	int64 *versions = palloc(sizeof(int64) * (n + 1));
	char **paths = palloc(sizeof(char *) * (n + 1));
	int64 *sizes = palloc(sizeof(int64) * (n + 1));
	bool *has_size = palloc(sizeof(bool) * (n + 1));
	char **e_tags = palloc(sizeof(char *) * (n + 1));
	char **schemes = palloc(sizeof(char *) * (n + 1));
	int npairs = 0;
	int64 *pair_entry;
	char **pair_keys;
	char **pair_values;
	uint64 row = 0;
	bool isnull;

	for (int i = 0; i < n; i++)
		npairs += rows[i].version.metadata.len;
	pair_entry = palloc(sizeof(int64) * (npairs + 1));
	pair_keys = palloc(sizeof(char *) * (npairs + 1));
	pair_values = palloc(sizeof(char *) * (npairs + 1));

	npairs = 0;
	for (int i = 0; i < n; i++)
	{
		const LnTableVersion *v = &rows[i].version;

		table_ids[i] = rows[i].table_id;
		branches[i] = rows[i].branch;
		versions[i] = v->version;
		paths[i] = v->manifest_path;
		sizes[i] = v->manifest_size;
		has_size[i] = v->has_manifest_size;
		e_tags[i] = v->e_tag;
		schemes[i] = rows[i].naming_scheme;
		for (int k = 0; k < v->metadata.len; k++)
		{
			pair_entry[npairs] = i + 1;
			pair_keys[npairs] = v->metadata.keys[k];
			pair_values[npairs] = v->metadata.values[k];
			npairs++;
		}
	}
	if (n == 1)
	{
		/* one version (CreateTableVersion): a plain VALUES insert, no arrays to unnest */
		const LnTableVersion *v = &rows[0].version;
		char nulls[9] = "         ";

		values[0] = Int64GetDatum(rows[0].table_id);
		values[1] = CStringGetTextDatum(rows[0].branch);
		values[2] = Int64GetDatum(v->version);
		values[3] = CStringGetTextDatum(v->manifest_path);
		values[4] = Int64GetDatum(v->manifest_size);
		nulls[4] = v->has_manifest_size ? ' ' : 'n';
		values[5] = text_datum_or_null(v->e_tag, &nulls[5]);
		values[6] = text_datum_or_null(rows[0].naming_scheme, &nulls[6]);
		values[7] = text_array_datum(v->metadata.keys, v->metadata.len);
		values[8] = text_array_datum(v->metadata.values, v->metadata.len);
		execute(STMT_INSERT_VERSION, values, nulls, 0);
	}
	else
	{
		values[0] = int8_array_datum(table_ids, NULL, n);
		values[1] = nullable_text_array_datum(branches, n);
		values[2] = int8_array_datum(versions, NULL, n);
		values[3] = nullable_text_array_datum(paths, n);
		values[4] = int8_array_datum(sizes, has_size, n);
		values[5] = nullable_text_array_datum(e_tags, n);
		values[6] = nullable_text_array_datum(schemes, n);
		values[7] = int8_array_datum(pair_entry, NULL, npairs);
		values[8] = nullable_text_array_datum(pair_keys, npairs);
		values[9] = nullable_text_array_datum(pair_values, npairs);
		execute(STMT_INSERT_VERSIONS, values, NULL, 0);
	}

	/* RETURNING keeps the insert order, so the rows line up with `rows`, gaps aside */
	for (int i = 0; i < n; i++)
	{
		inserted[i] = false;
		if (row < SPI_processed &&
			DatumGetInt64(result_datum(row, 1, &isnull)) == rows[i].table_id &&
			DatumGetInt64(result_datum(row, 3, &isnull)) == rows[i].version.version)
		{
			char *branch = TextDatumGetCString(result_datum(row, 2, &isnull));

			if (strcmp(branch, rows[i].branch) == 0)
			{
				inserted[i] = true;
				rows[i].version.timestamp_millis = DatumGetInt64(result_datum(row, 4, &isnull));
				row++;
			}
		}
	}
}

/*
 * Which of the tables table_ids[] exist: exists[i].  Asked only after an
 * insert of versions left some out, in a new snapshot that sees any
 * deletion the insert waited for.
 */
void
catalog_tables_exist(int n, const int64 *table_ids, bool *exists)
{
	Datum values[1] = {int8_array_datum(table_ids, NULL, n)};
	bool isnull;

	execute(STMT_TABLES_EXIST, values, NULL, 0);
	for (int i = 0; i < n; i++)
	{
		exists[i] = false;
		for (uint64 row = 0; row < SPI_processed && !exists[i]; row++)
			exists[i] = DatumGetInt64(result_datum(row, 1, &isnull)) == table_ids[i];
	}
}

/* Tables that were only declared have data once they have a version. */
void
catalog_mark_tables_with_data(int n, const int64 *table_ids)
{
	Datum values[1] = {int8_array_datum(table_ids, NULL, n)};

	execute(STMT_MARK_TABLES_WITH_DATA, values, NULL, 0);
}

/* The VERSION_COLUMNS of result row `row`, from column `first` on. */
static void
result_version_at(uint64 row, int first, LnTableVersion *v)
{
	bool isnull;

	v->version = DatumGetInt64(result_datum(row, first, &isnull));
	v->manifest_path = result_text(row, first + 1);
	v->manifest_size = DatumGetInt64(result_datum(row, first + 2, &isnull));
	v->has_manifest_size = !isnull;
	v->e_tag = result_text(row, first + 3);
	v->timestamp_millis = DatumGetInt64(result_datum(row, first + 4, &isnull));
	v->metadata = result_map(row, first + 5);
}

static void
result_version(uint64 row, LnTableVersion *v)
{
	result_version_at(row, 1, v);
}

/*
 * Versions of a table's branch after `after` (before it, descending), at
 * most `limit`; `after` -1 starts at the first (descending: the latest).
 * The primary key index answers it, reading only the rows returned: the
 * latest version costs one row.
 */
int
catalog_list_versions(int64 table_id, const char *branch, bool descending, int64 after, int limit,
					  LnTableVersion **versions)
{
	Datum values[4] = {Int64GetDatum(table_id), CStringGetTextDatum(branch), Int64GetDatum(after),
					   Int32GetDatum(limit)};
	int n;

	if (descending && after < 0)
	{
		/* the latest first: no bound, so that no version, however high, is left out */
		values[2] = values[3];
		execute(STMT_LIST_LATEST_VERSIONS, values, NULL, 0);
	}
	else
		execute(descending ? STMT_LIST_VERSIONS_DESCENDING : STMT_LIST_VERSIONS, values, NULL, 0);
	n = (int)SPI_processed;
	*versions = MemoryContextAllocZero(result_cxt, sizeof(LnTableVersion) * (n + 1));
	for (int i = 0; i < n; i++)
		result_version(i, &(*versions)[i]);
	return n;
}

bool
catalog_get_version(int64 table_id, const char *branch, int64 version, LnTableVersion *out)
{
	Datum values[3] = {Int64GetDatum(table_id), CStringGetTextDatum(branch),
					   Int64GetDatum(version)};

	execute(STMT_GET_VERSION, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	result_version(0, out);
	return true;
}

/* Delete a branch's versions from `first` to `last`, both included; returns how many. */
int64
catalog_delete_versions(int64 table_id, const char *branch, int64 first, int64 last)
{
	Datum values[4] = {Int64GetDatum(table_id), CStringGetTextDatum(branch), Int64GetDatum(first),
					   Int64GetDatum(last)};

	execute(STMT_DELETE_VERSIONS, values, NULL, 0);
	return (int64)SPI_processed;
}

/*
 * Append an entry to the commit log; returns its transaction id and sets
 * *seq to its number.
 */
char *
catalog_insert_change(const char *operation, int nobjects, char **objects, const int64 *versions,
					  const bool *has_version, int nnamespaces, char **namespaces,
					  const LnMap *context, const char *status, const LnMap *properties,
					  const char *drop_location, const char *role, int64 *seq)
{
	Datum values[11];
	char nulls[12] = "           ";
	bool isnull;

	values[0] = CStringGetTextDatum(operation);
	values[1] = nullable_text_array_datum(objects, nobjects);
	values[2] = int8_array_datum(versions, has_version, nobjects);
	values[3] = nullable_text_array_datum(namespaces, nnamespaces);
	values[4] = text_array_datum(context->keys, context->len);
	values[5] = text_array_datum(context->values, context->len);
	values[6] = CStringGetTextDatum(status);
	values[7] = text_array_datum(properties->keys, properties->len);
	values[8] = text_array_datum(properties->values, properties->len);
	values[9] = text_datum_or_null(drop_location, &nulls[9]);
	values[10] = CStringGetTextDatum(role);
	execute(STMT_INSERT_CHANGE, values, nulls, 0);
	*seq = DatumGetInt64(result_datum(0, 1, &isnull));
	return result_text(0, 2);
}

/* The status, properties and role of a logged transaction; false if there is none. */
bool
catalog_get_change(const char *transaction_id, bool for_update, char **status, LnMap *properties,
				   char **role)
{
	Datum values[1] = {CStringGetTextDatum(transaction_id)};

	execute(for_update ? STMT_GET_CHANGE_FOR_UPDATE : STMT_GET_CHANGE, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	*status = result_text(0, 1);
	*properties = result_map(0, 2);
	*role = result_text(0, 3);
	return true;
}

void
catalog_set_change(const char *transaction_id, const char *status, const LnMap *properties)
{
	Datum values[4];

	values[0] = CStringGetTextDatum(transaction_id);
	values[1] = CStringGetTextDatum(status);
	values[2] = text_array_datum(properties->keys, properties->len);
	values[3] = text_array_datum(properties->values, properties->len);
	execute(STMT_SET_CHANGE, values, NULL, 0);
}

/* DropTable entries whose data waits for removal, oldest first: their ids and locations. */
int
catalog_list_queued_drops(int limit, char ***transaction_ids, char ***locations)
{
	Datum values[1] = {Int32GetDatum(limit)};
	int n;

	execute(STMT_LIST_QUEUED_DROPS, values, NULL, 0);
	n = (int)SPI_processed;
	*transaction_ids = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	*locations = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*transaction_ids)[i] = result_text(i, 1);
		(*locations)[i] = result_text(i, 2);
	}
	return n;
}

/*
 * True if a table in the catalog other than except_id uses the local folder
 * `path` (a canonical local path): at it, inside it, or in a folder around it.
 */
bool
catalog_location_in_use(const char *path, int64 except_id)
{
	Datum values[3];
	char **ancestors = palloc(sizeof(char *) * (strlen(path) + 1));
	int n = 0;
	bool isnull;

	for (const char *c = path + 1; *c; c++)
		if (*c == '/')
			ancestors[n++] = pnstrdup(path, c - path);
	values[0] = CStringGetTextDatum(path);
	values[1] = text_array_datum(ancestors, n);
	values[2] = Int64GetDatum(except_id);
	execute(STMT_LOCATION_IN_USE, values, NULL, 1);
	return DatumGetBool(result_datum(0, 1, &isnull));
}

/*
 * Serialize changes to one table's tags and branches.  FOR NO KEY UPDATE
 * does not conflict with the key share that version commits take.
 */
bool
catalog_lock_table_refs(int64 table_id)
{
	Datum values[1] = {Int64GetDatum(table_id)};

	execute(STMT_LOCK_TABLE_REFS, values, NULL, 0);
	/* none: the table was removed by a transaction this one waited for */
	return SPI_processed > 0;
}

/* The id of the object named `name` under parent_id, and whether it is a table; keys only. */
bool
catalog_lookup_child_id(int64 parent_id, const char *name, int64 *id, bool *is_table)
{
	CatalogChild child;

	check_schema_version();
	if (!catalog_index_find_child(parent_id, name, &child, NULL))
		return false;
	*id = child.id;
	*is_table = child.is_table;
	return true;
}

/*
 * Find table `table_name` in namespace `ns_name` under `grandparent_id` (or,
 * with ns_name NULL, directly under grandparent_id), keys, location and
 * declared state only.  Returns 0 if the namespace is missing, 1 if the
 * table is, 2 if found.
 */
int
catalog_lookup_table_key(int64 grandparent_id, const char *ns_name, const char *table_name,
						 CatalogObject *table)
{
	int nversions;

	return catalog_lookup_table_latest(grandparent_id, ns_name, table_name, 0, table, NULL,
									   &nversions);
}

/* True if a table other than except_id is at the local folder `path` (canonical). */
bool
catalog_location_taken(const char *path, int64 except_id)
{
	Datum values[2] = {CStringGetTextDatum(path), Int64GetDatum(except_id)};
	bool isnull;

	execute(STMT_LOCATION_TAKEN, values, NULL, 1);
	return DatumGetBool(result_datum(0, 1, &isnull));
}

/* Up to `limit` tables' ids and locations after table id `after_id`, in id order. */
int
catalog_list_table_locations(int64 after_id, int limit, int64 **ids, char ***locations)
{
	Datum values[2] = {Int64GetDatum(after_id), Int32GetDatum(limit)};
	int n;

	execute(STMT_LIST_TABLE_LOCATIONS, values, NULL, 0);
	n = (int)SPI_processed;
	*ids = MemoryContextAlloc(result_cxt, sizeof(int64) * (n + 1));
	*locations = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;

		(*ids)[i] = DatumGetInt64(result_datum(i, 1, &isnull));
		(*locations)[i] = result_text(i, 2);
	}
	return n;
}

/* `least` and the privileges that include it, as a text[] */
static Datum
privileges_datum(LnPrivilege least)
{
	char *names[LN_PRIV_MANAGE + 1];
	int n = 0;

	for (int i = least; i <= LN_PRIV_MANAGE; i++)
		names[n++] = (char *)ln_privilege_name((LnPrivilege)i);
	return text_array_datum(names, n);
}

/*
 * True if `role` holds `privilege` (or a greater one) on object_id or on a
 * namespace above it, directly or through a role whose privileges it has.
 */
bool
catalog_has_privilege(int64 object_id, Oid role, LnPrivilege privilege)
{
	Datum values[3] = {Int64GetDatum(object_id), ObjectIdGetDatum(role),
					   privileges_datum(privilege)};
	bool isnull;

	execute(STMT_HAS_PRIVILEGE, values, NULL, 1);
	return DatumGetBool(result_datum(0, 1, &isnull));
}

/* Grant `privilege` on object_id to `role`; false if it was granted already. */
bool
catalog_insert_grant(int64 object_id, Oid role, LnPrivilege privilege, Oid granted_by)
{
	Datum values[4] = {Int64GetDatum(object_id), ObjectIdGetDatum(role),
					   CStringGetTextDatum(ln_privilege_name(privilege)),
					   ObjectIdGetDatum(granted_by)};

	execute(STMT_INSERT_GRANT, values, NULL, 0);
	return SPI_processed > 0;
}

/* Revoke `privilege` on object_id from `role`; false if it was not granted. */
bool
catalog_delete_grant(int64 object_id, Oid role, LnPrivilege privilege)
{
	Datum values[3] = {Int64GetDatum(object_id), ObjectIdGetDatum(role),
					   CStringGetTextDatum(ln_privilege_name(privilege))};

	execute(STMT_DELETE_GRANT, values, NULL, 0);
	return SPI_processed > 0;
}

/* The grants on object_id: role names and privileges, by role name. */
int
catalog_list_grants(int64 object_id, char ***roles, char ***privileges)
{
	Datum values[1] = {Int64GetDatum(object_id)};
	int n;

	execute(STMT_LIST_GRANTS, values, NULL, 0);
	n = (int)SPI_processed;
	*roles = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	*privileges = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*roles)[i] = result_text(i, 1);
		(*privileges)[i] = result_text(i, 2);
	}
	return n;
}

/* Keep API key `id` for `role`; the catalog stores only the hash of `key`. */
void
catalog_insert_api_key(const char *id, const char *key, Oid role, Oid created_by)
{
	Datum values[4] = {CStringGetTextDatum(id), ObjectIdGetDatum(role),
					   PointerGetDatum(cstring_to_text(key)), ObjectIdGetDatum(created_by)};

	execute(STMT_INSERT_API_KEY, values, NULL, 0);
}

/* The role API key `key` (whose id is `id`) acts as, or InvalidOid if there is no such key. */
Oid
catalog_authenticate(const char *id, const char *key)
{
	uint8 hash[PG_SHA256_DIGEST_LENGTH];
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *)key, strlen(key)) < 0 ||
		pg_cryptohash_final(ctx, hash, sizeof(hash)) < 0)
		elog(ERROR, "could not compute SHA-256: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
	check_schema_version();
	return catalog_index_authenticate(id, hash, sizeof(hash));
}

/* Forget API key `id`; false if there was none. */
bool
catalog_delete_api_key(const char *id)
{
	Datum values[1] = {CStringGetTextDatum(id)};

	execute(STMT_DELETE_API_KEY, values, NULL, 0);
	return SPI_processed > 0;
}

/* Every API key: ids, roles, who made each and when (never a key). */
int
catalog_list_api_keys(char ***ids, Oid **roles, Oid **created_by, TimestampTz **created_at)
{
	int n;
	bool isnull;

	execute(STMT_LIST_API_KEYS, NULL, NULL, 0);
	n = (int)SPI_processed;
	*ids = MemoryContextAlloc(result_cxt, sizeof(char *) * (n + 1));
	*roles = MemoryContextAlloc(result_cxt, sizeof(Oid) * (n + 1));
	*created_by = MemoryContextAlloc(result_cxt, sizeof(Oid) * (n + 1));
	*created_at = MemoryContextAlloc(result_cxt, sizeof(TimestampTz) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		(*ids)[i] = result_text(i, 1);
		(*roles)[i] = DatumGetObjectId(result_datum(i, 2, &isnull));
		(*created_by)[i] = DatumGetObjectId(result_datum(i, 3, &isnull));
		if (isnull)
			(*created_by)[i] = InvalidOid;
		(*created_at)[i] = DatumGetTimestampTz(result_datum(i, 4, &isnull));
	}
	return n;
}

/*
 * As catalog_lookup_table_key, and the table's latest versions on main, at
 * most `limit` (0: none), newest first, under the same snapshot, as one
 * statement would read them: *nversions of them in *versions (none when the
 * table is missing).
 */
int
catalog_lookup_table_latest(int64 grandparent_id, const char *ns_name, const char *table_name,
							int limit, CatalogObject *table, LnTableVersion **versions,
							int *nversions)
{
	CatalogChild child;
	int found;

	check_schema_version();
	memset(table, 0, sizeof(CatalogObject));
	*nversions = 0;
	if (versions != NULL)
		*versions = NULL;
	found = catalog_index_find_table(grandparent_id, ns_name, table_name, &child, limit, versions,
									 nversions, result_cxt);
	if (found == 2)
	{
		table->id = child.id;
		table->is_table = true;
		table->name = MemoryContextStrdup(result_cxt, table_name);
		table->location = child.location;
		table->declared = child.declared;
	}
	return found;
}

/* Keep the storage setting of `location` (a folder key), replacing one there was. */
void
catalog_set_storage(const char *location, const LnMap *options, Oid set_by)
{
	Datum values[4] = {CStringGetTextDatum(location), text_array_datum(options->keys, options->len),
					   text_array_datum(options->values, options->len), ObjectIdGetDatum(set_by)};

	execute(STMT_SET_STORAGE, values, NULL, 0);
	catalog_index_forget_storage();
}

/* Forget the storage setting of `location`; false if there was none. */
bool
catalog_remove_storage(const char *location)
{
	Datum values[1] = {CStringGetTextDatum(location)};

	execute(STMT_REMOVE_STORAGE, values, NULL, 0);
	catalog_index_forget_storage();
	return SPI_processed > 0;
}

/* Gather rows (location, key, value) of one location or many into settings. */
static int
gather_settings(char ***locations, LnMap **options)
{
	int n = 0;

	*locations = MemoryContextAlloc(result_cxt, sizeof(char *) * (SPI_processed + 1));
	*options = MemoryContextAllocZero(result_cxt, sizeof(LnMap) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char *location = result_text(i, 1);
		char *key = result_text(i, 2);
		LnMap *map;

		if (n == 0 || strcmp((*locations)[n - 1], location) != 0)
		{
			(*locations)[n] = location;
			(*options)[n].keys =
				MemoryContextAlloc(result_cxt, sizeof(char *) * (SPI_processed + 1));
			(*options)[n].values =
				MemoryContextAlloc(result_cxt, sizeof(char *) * (SPI_processed + 1));
			n++;
		}
		if (key == NULL)
			continue; /* a setting without options */
		map = &(*options)[n - 1];
		map->keys[map->len] = key;
		map->values[map->len++] = result_text(i, 3);
	}
	return n;
}

/* Every storage setting, by location, with its options (secrets included). */
int
catalog_list_storage(char ***locations, LnMap **options)
{
	execute(STMT_LIST_STORAGE, NULL, NULL, 0);
	return gather_settings(locations, options);
}

/*
 * The storage setting that covers folder key `folder` (location_folder_key):
 * the longest prefix that has one.  False if none does.
 */
bool
catalog_find_storage(const char *folder, char **prefix, LnMap *options)
{
	check_schema_version();
	return catalog_index_find_storage(folder, prefix, options, result_cxt);
}

/*
 * Two tables at or below folder key `folder` whose folders are one, or one
 * inside the other: their locations in *a and *b; false if there are none.
 */
bool
catalog_folders_shared_below(const char *folder, char **a, char **b)
{
	Datum values[1] = {CStringGetTextDatum(folder)};

	execute(STMT_FOLDERS_SHARED_BELOW, values, NULL, 1);
	if (SPI_processed == 0)
		return false;
	*a = result_text(0, 1);
	*b = result_text(0, 2);
	return true;
}
