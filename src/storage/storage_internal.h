/*
 * storage_internal.h
 *		What the storage modules share: the backends behind storage.h (the
 *		local one in storage_manifest.c and storage_refs.c, the S3 one in
 *		storage_s3.c), reaching files under the local roots through folder
 *		descriptors (storage_fs.h, storage_local.c), the undo of file changes
 *		on rollback, and the pending ref changes applied at pre-commit
 *		(storage_xact.c drives both).  Included by the
 *		storage modules alone.
 */
#ifndef LN_STORAGE_INTERNAL_H
#define LN_STORAGE_INTERNAL_H

#include "postgres.h"

#include "../common/pg_compat.h"

#include "s3_client.h"
#include "storage_fs.h"

/*
 * Files this module leaves next to others while a transaction runs: a
 * set-aside original and a temporary file.  Their names carry the
 * transaction's full id, so that a sweep after a crash can tell whether
 * that transaction committed (see storage_sweep_table).
 */
#define SET_ASIDE_MARK ".deleted-x"
#define TEMP_MARK	   ".tmp-x"

/*
 * One kind of store.  storage_backend.c picks a table's backend by its
 * location and calls it; another store (Azure, GCS) is one more of these.
 */
typedef struct StorageBackend
{
	bool (*is_managed)(const char *location);
	void (*check_location)(const char *location);
	void (*sweep_table)(const char *location, int *removed, int *restored);
	void (*check_manifest)(const char *location, const char *branch, int64 version, bool v1_naming,
						   const char *manifest_path, int64 size, ManifestCopy *copy);
	void (*materialize_manifest)(const ManifestCopy *copy);
	char *(*remove_table_data)(const char *location, bool *later);
	char *(*read_ref)(const char *location, const char *kind, const char *name);
	bool (*write_ref)(const char *location, const char *kind, const char *name, const char *content,
					  bool create);
	bool (*delete_ref)(const char *location, const char *kind, const char *name);
	int (*list_refs)(const char *location, const char *kind, char ***names);
	char *(*read_table_manifest)(const char *location, const char *manifest_path, size_t *len);
	bool (*manifest_exists)(const char *location, const char *manifest_path);
	char *(*write_branch_manifest)(const char *location, const char *branch, int64 version,
								   const char *bytes, size_t len, const char *like_path);
	bool (*branch_exists)(const char *location, const char *branch);
	void (*delete_branch_data)(const char *location, const char *branch, bool has_children);
} StorageBackend;

/* the local backend: storage_manifest.c */
extern bool local_is_managed(const char *location);
extern void local_check_location(const char *location);
extern void local_sweep_table(const char *location, int *removed, int *restored);
extern void local_check_manifest(const char *location, const char *branch, int64 version,
								 bool v1_naming, const char *manifest_path, int64 size,
								 ManifestCopy *copy);
extern void local_materialize_manifest(const ManifestCopy *copy);
extern char *local_remove_table_data(const char *location, bool *later);
/* and storage_refs.c */
extern char *local_read_ref(const char *location, const char *kind, const char *name);
extern bool local_write_ref(const char *location, const char *kind, const char *name,
							const char *content, bool create);
extern bool local_delete_ref(const char *location, const char *kind, const char *name);
extern int local_list_refs(const char *location, const char *kind, char ***names);
extern char *local_read_table_manifest(const char *location, const char *manifest_path,
									   size_t *len);
extern char *local_write_branch_manifest(const char *location, const char *branch, int64 version,
										 const char *bytes, size_t len, const char *like_path);
extern bool local_branch_exists(const char *location, const char *branch);
extern bool local_manifest_exists(const char *location, const char *manifest_path);
extern void local_delete_branch_data(const char *location, const char *branch, bool has_children);

/* the S3 backend: storage_s3.c */
extern bool s3_manages(const char *location);
extern char *s3_managing_prefix(const char *location);
extern void storage_check_vend(const S3Store *store, const LnMap *vend);
extern bool s3_table_setting(const char *location, S3Store *store, char **key, char **setting,
							 LnMap *options, LnMap *vend);
extern void s3_check_manifest(const char *location, const char *branch, int64 version,
							  bool v1_naming, const char *manifest_path, int64 size,
							  ManifestCopy *copy);
extern void s3_materialize_manifest(const ManifestCopy *copy);
extern char *s3_remove_table_data(const char *location, bool *later);
extern char *s3_read_ref(const char *location, const char *kind, const char *name);
extern bool s3_write_ref(const char *location, const char *kind, const char *name,
						 const char *content, bool create);
extern bool s3_delete_ref(const char *location, const char *kind, const char *name);
extern int s3_list_refs(const char *location, const char *kind, char ***names);
extern char *s3_read_table_manifest(const char *location, const char *manifest_path, size_t *len);
extern char *s3_write_branch_manifest(const char *location, const char *branch, int64 version,
									  const char *bytes, size_t len, const char *like_path);
extern bool s3_branch_exists(const char *location, const char *branch);
extern bool s3_manifest_exists(const char *location, const char *manifest_path);
extern void s3_delete_branch_data(const char *location, const char *branch, bool has_children);
extern bool s3_has_pending(void);
extern void s3_apply_pending(void);
extern void s3_end_transaction(bool commit);
extern void s3_end_subtransaction(bool commit, SubTransactionId mySubid,
								  SubTransactionId parentSubid);

/* storage_local.c: the local roots, and the undo list of file changes */
extern void storage_local_init(void);
extern char *storage_managing_root(const char *path, bool resolved);
extern char *storage_local_root_near(const char *path, bool below);
extern bool storage_local_pending(void);
extern void storage_local_end_transaction(bool commit);
extern void storage_local_end_subtransaction(bool commit, SubTransactionId mySubid,
											 SubTransactionId parentSubid);
extern void storage_lock_final_name(const char *path);
extern bool storage_final_name_shared(const char *path);
extern void storage_wait_final_name(const char *path);
extern void storage_lock_final_name_exact(const char *path);
extern void storage_unlock_final_name_exact(const char *path);
extern const char *storage_server_os_user(void);
pg_noreturn extern void storage_io_error(const char *what, const char *path, int err);
extern char *storage_root_of(const char *path);
extern char *storage_leftover_name(const char *leaf, const char *mark);
extern int storage_open_folder(const char *root, const char *dir, bool missing_ok);
extern int storage_open_parent(const char *root, const char *path, const char **leaf,
							   bool missing_ok);
extern void storage_flush_folder(int dirfd, const char *path);
extern void storage_undo_created(const char *root, int dirfd, const char *path,
								 const char *remove_on_commit, const char *branch, int64 version);
extern bool storage_set_aside(const char *root, int dirfd, const char *path);
extern void storage_unlink_quiet(const char *root, const char *path);

/* storage_spool.c: the undo a rollback could not finish */
extern void storage_spool_add(StorageUndoStep *step);
extern void storage_spool_write(void);
extern void storage_spool_end_transaction(bool commit);
extern void local_retry_undo(const StorageUndoStep *step);
extern void s3_retry_undo(const StorageUndoStep *step);
extern bool storage_try_lock_final_name(const char *path);
extern void storage_unlock_final_name(const char *path);
extern char *s3_undo_endpoint(const StorageUndoStep *step);
extern char *s3_final_name_of(const StorageUndoStep *step);

/* storage_refs.c */
extern bool storage_refs_pending(void);
extern void storage_refs_apply(void);
extern void storage_refs_discard(bool all, SubTransactionId subid);
extern void storage_refs_reassign(SubTransactionId from, SubTransactionId to);

#endif /* LN_STORAGE_INTERNAL_H */
