/*
 * catalog.h
 *		Access to the catalog tables in schema lance_catalog.  The only code
 *		that knows those tables and the statements that read and write them.
 *
 * The interface of the catalog's files: catalog.c (the session),
 * catalog_objects.c, catalog_tree.c, catalog_versions.c,
 * catalog_changes.c, catalog_access.c, catalog_storage.c and
 * catalog_page_token.c.  Its types are in catalog_types.h.
 */
#ifndef LN_CATALOG_H
#define LN_CATALOG_H

#include "../common/types.h"
#include "catalog_types.h"

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

/* The catalog session (catalog.c) */
extern void catalog_begin(void);
extern void catalog_end(void);

/* Namespaces and tables (catalog_objects.c) */
extern bool catalog_lookup_child(int64 parent_id, const char *name, CatalogLock lock,
								 CatalogObject *out);
extern int64 catalog_insert_object(int64 parent_id, bool is_table, const char *name,
								   const LnMap *properties, const char *location, bool declared,
								   bool location_derived, Oid creator);
extern void catalog_set_properties(int64 id, const LnMap *properties);
extern void catalog_reregister_table(int64 id, const char *location, const LnMap *properties);
extern bool catalog_has_children(int64 id);
extern void catalog_delete_object(int64 id);
extern void catalog_delete_subtree(int64 id);
extern bool catalog_move_object(int64 id, int64 new_parent_id, const char *new_name);
extern int catalog_list_children(int64 parent_id, bool tables, bool include_declared,
								 const char *after, int limit, Oid reader, char ***names);
extern void catalog_lookup_tables(int n, const int64 *parent_ids, char **names, int64 *ids,
								  char **locations, bool *declared);
extern bool catalog_location_in_use(const char *path, int64 except_id);
extern char *catalog_table_in_the_way(const char *path, int64 except_id, const char *const *roots,
									  int nroots);
extern bool catalog_location_taken(const char *path, int64 except_id);
extern bool catalog_lock_table_refs(int64 table_id);
extern int catalog_lookup_table_key(int64 grandparent_id, const char *ns_name,
									const char *table_name, CatalogObject *table);
extern bool catalog_lookup_child_id(int64 parent_id, const char *name, int64 *id, bool *is_table);
extern int catalog_lookup_table_latest(int64 grandparent_id, const char *ns_name,
									   const char *table_name, int limit, CatalogObject *table,
									   LnTableVersion **versions, int *nversions);

extern int catalog_list_table_locations(int64 after_id, int limit, int64 **ids, char ***locations);

/* ListAllTables (catalog_tree.c) */
extern int catalog_list_all_tables(bool include_declared, int64 after_id, int limit, Oid reader,
								   int64 **ids, LnId **paths);

/* The undo rollbacks could not finish on storage (catalog_undo.c) */
typedef struct CatalogUndo
{
	char *spool; /* the step's name, its key */
	char *step;	 /* its record (storage_undo_decode) */
	size_t len;
} CatalogUndo;

extern bool catalog_take_undo(const char *spool, uint64 xid, const char *action,
							  const char *location, const char *path, const char *branch,
							  int64 version, const char *step, size_t len);
extern int catalog_list_due_undo(int limit, CatalogUndo **steps);
extern void catalog_undo_done(const char *spool);
extern void catalog_undo_failed(const char *spool, const char *error);
extern bool catalog_version_at_location(const char *location, const char *branch, int64 version);

/* Table versions (catalog_versions.c) */
extern void catalog_insert_versions(int n, CatalogVersionInsert *rows, bool *inserted);
extern void catalog_tables_exist(int n, const int64 *table_ids, bool *exists);
extern void catalog_mark_tables_with_data(int n, const int64 *table_ids);
extern int catalog_list_versions(int64 table_id, const char *branch, bool descending, int64 after,
								 int limit, LnTableVersion **versions);
extern bool catalog_get_version(int64 table_id, const char *branch, int64 version,
								LnTableVersion *out);
extern int64 catalog_delete_versions(int64 table_id, const char *branch, int64 first, int64 last);

/* The commit log (catalog_changes.c) */
extern char *catalog_insert_change(const char *operation, int nobjects, char **objects,
								   const int64 *versions, const bool *has_version, int nnamespaces,
								   char **namespaces, const int64 *object_ids, int nnamespace_ids,
								   const int64 *namespace_ids, const LnMap *context,
								   const LnMap *headers, const char *status,
								   const LnMap *properties, const char *drop_location, Oid role_id,
								   const char *role, const char *key_id, int64 *seq);
extern bool catalog_get_change(const char *transaction_id, bool for_update, char **status,
							   LnMap *properties, char **role, Oid *role_id);
/*
 * Who sets an entry's status, for lance_retry_drops(), which queues again
 * only the drops the processor failed, never one its maker stopped.
 */
typedef enum ChangeSetter
{
	CHANGE_SET_BY_PROCESSOR,	   /* the drop processor: its Failed may be retried */
	CHANGE_SET_BY_PROCESSOR_FINAL, /* the processor, for good: the folder is not the drop's to
									* remove (another table uses it, or it names none) */
	CHANGE_SET_BY_CALLER,		   /* AlterTransaction's setStatusAction: never retried */
	CHANGE_SET_PROPERTIES		   /* the status stays as it is, and so does who set it */
} ChangeSetter;

extern void catalog_set_change(const char *transaction_id, const char *status,
							   const LnMap *properties, ChangeSetter setter);
extern int catalog_list_queued_drops(int limit, char ***transaction_ids, char ***locations);
extern int catalog_requeue_failed_drops(void);

/* Privileges and API keys (access.c, grants.c, api_keys.c; catalog_access.c, catalog_tree.c) */
extern bool catalog_has_privilege(int64 object_id, Oid role, LnPrivilege privilege);
extern bool catalog_may_read_path(int n, const int64 *path, Oid role);
extern bool catalog_role_is(Oid role, const char *name);
/* A role's request limit through lance_rest() (role_limits.c; catalog_access.c) */
typedef struct CatalogRoleLimit
{
	char *role_name;
	double requests_per_second;
	int burst;
	char *set_by; /* NULL: a role gone since */
	char *set_at; /* ISO 8601, UTC */
} CatalogRoleLimit;

extern bool catalog_set_role_limit(Oid role, const char *role_name, double requests_per_second,
								   int burst, Oid set_by);
extern bool catalog_remove_role_limit(Oid role);
extern int catalog_list_role_limits(const char *role_name, CatalogRoleLimit **limits);
extern bool catalog_role_limit(Oid role, double *requests_per_second, int *burst);
extern void catalog_forget_role(Oid role);
extern void catalog_rename_role(Oid role, const char *old_name, const char *new_name);
extern bool catalog_insert_grant(int64 object_id, Oid role, LnPrivilege privilege, Oid granted_by);
extern bool catalog_delete_grant(int64 object_id, Oid role, LnPrivilege privilege);
extern int catalog_list_grants(int64 object_id, char ***roles, char ***privileges);
extern void catalog_insert_api_key(const char *id, const char *key, Oid role, Oid created_by,
								   const Interval *valid_for);
extern Oid catalog_authenticate(const char *id, const char *key, bool *expired);
extern bool catalog_delete_api_key(const char *id);
extern int catalog_list_api_keys(char ***ids, Oid **roles, Oid **created_by,
								 TimestampTz **created_at, TimestampTz **expires_at,
								 TimestampTz **last_used_at);

/* The reconciliation of versions whose manifests were cleaned up (catalog_reconcile.c) */
typedef struct CatalogReconcileTable
{
	int64 id;
	char *location;
	char **names; /* its id, from the root down */
	int id_len;
} CatalogReconcileTable;

typedef struct CatalogOldVersion
{
	char *branch;
	int64 version;
	char *manifest_path;
} CatalogOldVersion;

extern int catalog_reconcile_tables(int64 after, int limit, CatalogReconcileTable **tables);
extern int catalog_old_versions(int64 table_id, int limit, CatalogOldVersion **versions);
extern bool catalog_delete_cleaned_version(int64 table_id, const CatalogOldVersion *v);

/* lance_stats()'s counts, queues and feed holder (catalog_stats.c) */
extern char *catalog_stats(const char *rounds_json, const char *store_errors_json, bool preloaded,
						   int interval_seconds);

/* Page tokens that name a position without telling it (catalog_page_token.c) */
extern char *catalog_page_token(int64 position);
extern bool catalog_page_token_position(const char *token, int64 *position);

/* Storage settings (storage_settings.c, storage.c; catalog_storage.c) */
extern void catalog_set_storage(const char *location, const LnMap *options, Jsonb *vend,
								Oid set_by);
extern bool catalog_remove_storage(const char *location);
extern int catalog_list_storage(char ***locations, LnMap **options, char ***vends);
extern bool catalog_folders_shared_below(const char *folder, char **a, char **b, char **a_id,
										 char **b_id);
extern char *catalog_storage_below(const char *folder);
extern int catalog_tables_coming_under(const char *folder, int limit, char ***ids);
extern int catalog_namespaces_located_near(const char *folder, int limit, char ***ids);
extern bool catalog_namespace_located_within(const char *folder);
extern int catalog_placement_roots(char ***roots);
extern char *catalog_tables_around_folders(const char *const *folders, int n, int limit);
extern bool catalog_find_storage(const char *folder, char **prefix, LnMap *options, LnMap *vend);

/* The catalog of record for its tables' storage (catalog_identity.c) */
extern bool catalog_is_of_record(void);
extern void catalog_require_of_record(void);
extern void catalog_current_identity(int64 *system_identifier, Oid *database);
extern void catalog_adopt_storage(Oid adopted_by);

#endif /* LN_CATALOG_H */
