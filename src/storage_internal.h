/*
 * storage_internal.h
 *		What storage.c and storage_refs.c share: reaching files under the
 *		local roots through folder descriptors (storage_fs.h), the undo of
 *		file changes on rollback, and the pending ref changes applied at
 *		pre-commit.  Included by those two files alone.
 */
#ifndef LN_STORAGE_INTERNAL_H
#define LN_STORAGE_INTERNAL_H

#include "postgres.h"

#include "storage_fs.h"

/*
 * Files this module leaves next to others while a transaction runs: a
 * set-aside original and a temporary file.  Their names carry the
 * transaction's full id, so that a sweep after a crash can tell whether
 * that transaction committed (see storage_sweep_table).
 */
#define SET_ASIDE_MARK ".deleted-x"
#define TEMP_MARK	   ".tmp-x"

/* storage.c */
extern void storage_io_error(const char *what, const char *path, int err) pg_attribute_noreturn();
extern char *storage_root_of(const char *path);
extern char *storage_leftover_name(const char *leaf, const char *mark);
extern int storage_open_folder(const char *root, const char *dir, bool missing_ok);
extern int storage_open_parent(const char *root, const char *path, const char **leaf,
							   bool missing_ok);
extern void storage_flush_folder(int dirfd, const char *path);
extern void storage_undo_created(const char *root, int dirfd, const char *path,
								 const char *remove_on_commit);
extern bool storage_set_aside(const char *root, int dirfd, const char *path);
extern void storage_unlink_quiet(const char *root, const char *path);

/* storage_refs.c */
extern bool storage_refs_pending(void);
extern void storage_refs_apply(void);
extern void storage_refs_discard(bool all, SubTransactionId subid);
extern void storage_refs_reassign(SubTransactionId from, SubTransactionId to);

#endif /* LN_STORAGE_INTERNAL_H */
