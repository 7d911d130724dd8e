/*
 * storage_fs.h
 *		File operations under the local roots through directory descriptors:
 *		folders are opened from a root downward without following any
 *		symbolic link, and every open, link, rename, removal and listing
 *		acts relative to such a descriptor, so that no folder swapped for a
 *		link between a check and its use can redirect it.  Used by
 *		the local backend alone; it knows nothing of the catalog.
 */
#ifndef LN_STORAGE_FS_H
#define LN_STORAGE_FS_H

#include "postgres.h"

#include <sys/stat.h>

/*
 * The folder `path` (absolute, normalized, equal to or below `root`),
 * opened read-only without following a link anywhere below `root` (the
 * root itself is the administrator's and is taken as the system finds it).
 * Returns a held descriptor, or -1 with errno set: ELOOP when a symbolic
 * link stands on the way (*link_len, if not NULL, then gets the length of
 * the part of `path` that ends at the link), ENOENT or ENOTDIR when a part
 * is missing or not a folder.  Never raises an error but when too many
 * descriptors are held.
 */
extern int fs_open_folder(const char *root, const char *path, size_t *link_len);

/* openat(dirfd, name) of one entry, never following a link (O_NOFOLLOW); held. */
extern int fs_open_at(int dirfd, const char *name, int flags, mode_t mode);

/* Close a descriptor fs_open_folder or fs_open_at gave. */
extern void fs_close(int fd);

/* Close what is still held: all (transaction end) or one subtransaction's. */
extern void fs_release(bool all, SubTransactionId subid);

/* Hand one subtransaction's descriptors to its parent, as it commits. */
extern void fs_reassign(SubTransactionId from, SubTransactionId to);

/* The names in the folder open at `dirfd` but "." and "..", palloc'd; -1 with errno on failure. */
extern int fs_list(int dirfd, char ***names);

/* Whether entry `name` of `dirfd` exists (a link counts, never followed); fills *st. */
extern bool fs_stat_at(int dirfd, const char *name, struct stat *st);

/*
 * Remove entry `name` of `dirfd` and, if it is a folder, everything in it,
 * never following a link (a link is removed, its target kept) nor leaving
 * the file system.  Returns 0, or the errno of the first failure (the rest
 * is still removed as far as it can be).  Never raises an error.
 */
extern int fs_remove_tree_at(int dirfd, const char *name);

/*
 * Visit every entry below the folder open at `dirfd`, depth first: a
 * folder's contents before the folder, which the visitor may then rename
 * or remove.  Links are visited as entries, never followed.
 */
typedef void (*fs_visitor)(int dirfd, const char *name, void *arg);
extern void fs_walk(int dirfd, fs_visitor visit, void *arg);

#endif /* LN_STORAGE_FS_H */
