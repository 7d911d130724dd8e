/*
 * storage_manifest.c
 *		Manifests on local storage.
 *
 * A Lance writer whose table the catalog manages writes its new manifest to
 * a staging file next to the final one and asks the catalog to create the
 * version.  Once the catalog holds that version's key, the staging file is
 * copied to the final name so that the final manifest appears all at once:
 * a temporary file in the same folder is written, flushed and then linked
 * into place.  Nothing on disk may contradict the catalog, so a final
 * manifest made by a transaction that rolls back (or a subtransaction that
 * does) is removed again, and the staging file is removed only once the
 * version is committed.
 *
 * Every file is reached through a descriptor of its folder, opened from the
 * local root downward without following links (storage_fs.c), never by its
 * path: a folder swapped for a symbolic link after a check cannot redirect
 * what follows.  The undo list keeps paths, and each undo opens its folder
 * the same way again (storage_local.c).  Tags and branches are in
 * storage_refs.c.
 */
#include "postgres.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/transam.h"
#include "access/xact.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "storage/lock.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "../common/error.h"
#include "../common/pg_compat.h"
#include "location.h"
#include "storage.h"
#include "storage_internal.h"

/* The file system's real path of `path`: its longest existing part resolved, the rest as is. */
static char *
real_path_of(const char *path)
{
	char *existing = pstrdup(path);
	char resolved[PATH_MAX];

	while (realpath(existing, resolved) == NULL)
	{
		char *slash = strrchr(existing, '/');

		if (errno != ENOENT && errno != ENOTDIR)
			storage_io_error("resolve", existing, errno);
		if (slash == NULL || slash == existing)
			return pstrdup(path); /* nothing of it exists */
		*slash = '\0';
	}
	return psprintf("%s%s", strcmp(resolved, "/") == 0 ? "" : resolved, path + strlen(existing));
}

/*
 * Refuse a local location that reaches the catalog's folders through a
 * symbolic link: one below a local root whose folder the file system finds
 * elsewhere, or one outside them that leads inside.  A table registered
 * there would keep using another table's data after lance_process_drops()
 * removed it, and two spellings of one folder could not be told apart.
 * Links that lead elsewhere are the registrant's business.
 */
void
local_check_location(const char *location)
{
	char *path = location_local_path(location);
	char *root;
	char *real;
	char *expected;

	if (path == NULL || !storage_has_local_roots())
		return;
	real = real_path_of(path);
	root = storage_managing_root(path, false);
	/* below a root, only the root itself may be reached through a link */
	/* (real_path_of("/") is "", so that "/" + the rest stays one slash) */
	expected = root ? psprintf("%s%s", real_path_of(root),
							   path + (strcmp(root, "/") == 0 ? 0 : strlen(root)))
					: path;
	if (strcmp(real, expected) != 0 && (root != NULL || storage_managing_root(real, true) != NULL))
		ln_error_detail(LN_INVALID_INPUT, "Register the folder by its own path, without links.",
						"location \"%s\" passes through a symbolic link (it is \"%s\")", location,
						real);
}

/*
 * True if the catalog manages the versions of a table at `location`: a local
 * path strictly below one of the folders in lance_namespace.local_roots.
 */
bool
local_is_managed(const char *location)
{
	return storage_managing_root(location_local_path(location), false) != NULL;
}

/*
 * Check a CreateTableVersion's staging manifest before anything is written:
 * it must be a regular file (not a symbolic link) directly in the _versions
 * folder of the table (or of the table's branch), and that folder must be a
 * real folder.  Fills `copy` with what local_materialize_manifest needs.
 */
void
local_check_manifest(const char *location, const char *branch, int64 version, bool v1_naming,
					 const char *manifest_path, int64 size pg_attribute_unused(),
					 ManifestCopy *copy)
{
	char *table_dir = location_local_path(location);
	char *versions_dir;
	char *staging;
	char *slash;
	char *final_name;
	struct stat st;
	int dirfd;

	Assert(table_dir != NULL);
	versions_dir = branch ? psprintf("%s/tree/%s/_versions", table_dir, branch)
						  : psprintf("%s/_versions", table_dir);

	/*
	 * Lance sends object store paths: no scheme and no leading slash, and
	 * folder names as they are on disk (not percent-encoded).
	 */
	staging =
		pstrdup(strncmp(manifest_path, "file://", 7) == 0 ? manifest_path + 7 : manifest_path);
	if (staging[0] != '/')
		staging = psprintf("/%s", staging);
	slash = strrchr(staging, '/');
	if (!location_path_is_plain(staging) || slash[1] == '\0' ||
		strlen(versions_dir) != (size_t)(slash - staging) ||
		strncmp(staging, versions_dir, slash - staging) != 0)
		ln_error_detail(
			LN_INVALID_INPUT, psprintf("The table's manifests live in %s.", versions_dir),
			"manifest_path \"%s\" is not a file in the table's _versions folder", manifest_path);

	dirfd = storage_open_folder(storage_root_of(versions_dir), versions_dir, true);
	if (dirfd < 0)
		ln_error(LN_INVALID_INPUT, "the table's _versions folder \"%s\" is not a folder",
				 versions_dir);
	if (!fs_stat_at(dirfd, slash + 1, &st))
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" does not exist", manifest_path);
	if (!S_ISREG(st.st_mode))
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" is not a regular file", manifest_path);
	fs_close(dirfd);

	if (v1_naming)
		final_name = psprintf(INT64_FORMAT ".manifest", version);
	else
		final_name =
			psprintf("%020llu.manifest", (unsigned long long)(PG_UINT64_MAX - (uint64)version));

	copy->staging_file = staging;
	copy->branch = pstrdup(branch ? branch : "");
	copy->version = version;
	copy->final_file = psprintf("%s/%s", versions_dir, final_name);
	copy->final_path = psprintf("%.*s%s", (int)(strrchr(manifest_path, '/') - manifest_path + 1),
								manifest_path, final_name);
	copy->size = (int64)st.st_size;
	copy->already_final = strcmp(slash + 1, final_name) == 0;
}

/*
 * The staging manifest `path` could not be opened (errno `err`): what the
 * caller made of it between the check and now is the caller's problem
 * (code 13, naming it), as is a file the server may not read; anything else
 * is storage_io_error's.
 */
static void
staging_open_error(const char *path, int err)
{
	switch (err)
	{
		case ENOENT:
		case ENOTDIR:
			ln_error(LN_INVALID_INPUT,
					 "staging manifest \"%s\" does not exist (it was removed or renamed)", path);
		case EISDIR:
		case ENXIO:
		case ELOOP:
			ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" is not a regular file", path);
		case EACCES:
		case EPERM:
			ln_error_detail(LN_INVALID_INPUT,
							psprintf("Let OS user \"%s\" read the table's files (e.g. run the "
									 "client as that user).",
									 storage_server_os_user()),
							"staging manifest \"%s\" cannot be read: %s: the server runs as OS "
							"user \"%s\"",
							path, strerror(err), storage_server_os_user());
		default:
			storage_io_error("open staging manifest", path, err);
	}
}

/*
 * The status of the staging manifest open at `fd`, which must be a regular
 * file: whatever its name pointed at when it was opened (`path`, for
 * messages).
 */
static void
stat_staging_file(int fd, const char *path, struct stat *st)
{
	if (fstat(fd, st) != 0)
		storage_io_error("stat", path, errno);
	if (!S_ISREG(st->st_mode))
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" is not a regular file", path);
}

/*
 * Copy `src` to a new file `dst`, both in the folder open at `dirfd`, and
 * flush it; returns the bytes copied.  The paths are for messages.
 */
static int64
copy_file_flushed(int dirfd, const char *src, const char *dst, const char *src_path,
				  const char *dst_path)
{
	/* O_NONBLOCK: a fifo put in the staging file's place must not hang the server */
	int in = fs_open_at(dirfd, src, O_RDONLY | O_NONBLOCK | PG_BINARY, 0);
	int out;
	char buf[65536];
	int64 total = 0;
	ssize_t n;
	struct stat st;

	if (in < 0)
		staging_open_error(src_path, errno);
	stat_staging_file(in, src_path, &st);
	out = fs_open_at(dirfd, dst, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY, 0600);
	if (out < 0)
		storage_io_error("create", dst_path, errno);
	/*
	 * Readers of the table read the final manifest as they could read the
	 * staged one; the server keeps the right to write its own file (a
	 * staging file may have lost it, see flush_staging_file).
	 */
	if (fchmod(out, (st.st_mode & 0777) | S_IWUSR) != 0)
		storage_io_error("set the mode of", dst_path, errno);

	while ((n = read(in, buf, sizeof(buf))) != 0)
	{
		ssize_t off = 0;

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			storage_io_error("read", src_path, errno);
		}
		while (off < n)
		{
			ssize_t w = write(out, buf + off, n - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				storage_io_error("write", dst_path, w < 0 ? errno : ENOSPC);
			off += w;
		}
		total += n;
	}
	if (pg_fsync(out) != 0)
		storage_io_error("flush", dst_path, errno);
	fs_close(out);
	fs_close(in);
	return total;
}

/*
 * Give the file open at `fd` the name `leaf` in the folder open at `dirfd`:
 * a hard link to that very file, through /proc/self/fd (linkat with
 * AT_EMPTY_PATH would need a capability the server does not have), never
 * to what a name points at by then.  False with errno on failure.
 */
static bool
link_open_file(int fd, int dirfd, const char *leaf)
{
	char proc_path[64];

	snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc_path, dirfd, leaf, AT_SYMLINK_FOLLOW) == 0;
}

/*
 * Flush the staging manifest open at `fd` (status `st`) before it is linked.
 * A failure (a writeback error: the kernel may have dropped pages that never
 * reached the disk, and a later fsync reports success) fails this commit,
 * code 17, and marks the file so that no commit links it again, in any
 * session, before or after a restart: it loses its owner's write
 * permission, and link_staging_manifest copies a file the server may not
 * write.  A copy is a new file, written from what the staging file reads
 * now, and flushed itself.
 */
static void
flush_staging_file(int fd, const char *path, const struct stat *st)
{
	int err;

	if (pg_fsync(fd) == 0)
		return;
	err = errno;
	if (fchmod(fd, st->st_mode & 0777 & ~(S_IWUSR | S_IWGRP | S_IWOTH)) != 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("lance_namespace: could not mark staging manifest \"%s\" to be copied: %m",
						path)));
	ln_error_detail(LN_SERVICE_UNAVAILABLE,
					"Nothing was committed; retry the commit (the catalog then copies the file).",
					"could not flush staging manifest \"%s\": %s", path, strerror(err));
}

/*
 * Make the staging manifest the final one without copying it: flush the
 * staging file (Lance does not), then link that file, as it was checked, to
 * the final name, replacing an orphan through `temp_leaf`.  The final name
 * shares the staging file's data, which nothing writes again: Lance writes
 * a staging manifest once, and its name is removed when the version
 * commits.  False if this file system or this server cannot link so (no
 * /proc, another user's file or one the server may not write, a file system
 * without hard links): the caller copies instead.
 */
static bool
link_staging_manifest(int dirfd, const ManifestCopy *copy, const char *final_leaf,
					  const char *temp_leaf)
{
	/*
	 * O_NONBLOCK: a fifo put in the staging file's place must not hang the
	 * server.  For writing: a file is flushed through a descriptor that may
	 * write (some systems flush nothing otherwise), and one the server may
	 * not write is copied instead.
	 */
	int in =
		fs_open_at(dirfd, strrchr(copy->staging_file, '/') + 1, O_RDWR | O_NONBLOCK | PG_BINARY, 0);
	struct stat st;
	bool linked;

	if (in < 0 && (errno == EACCES || errno == EPERM || errno == EROFS || errno == ETXTBSY ||
				   errno == EWOULDBLOCK))
		return false;
	if (in < 0)
		staging_open_error(copy->staging_file, errno);
	stat_staging_file(in, copy->staging_file, &st);

	/*
	 * Only the server's own file becomes the final one: another user's would
	 * stay theirs to change, and a folder with the sticky bit would keep the
	 * server from removing it again if the version rolls back.
	 */
	if (st.st_uid != geteuid())
	{
		fs_close(in);
		return false;
	}
	flush_staging_file(in, copy->staging_file, &st);
	/* the size the version records is that of the file flushed */
	if (fstat(in, &st) != 0)
		storage_io_error("stat", copy->staging_file, errno);
	if ((int64)st.st_size != copy->size)
		ln_error(LN_CONCURRENT_MODIFICATION, "staging manifest \"%s\" changed while it was checked",
				 copy->staging_file);

	/*
	 * linkat() creates the final name only if it is free; renameat()
	 * replaces an orphan, once its writer's undo can no longer remove it.
	 */
	linked = link_open_file(in, dirfd, final_leaf);
	if (!linked && errno == EEXIST)
	{
		storage_wait_final_name(copy->final_file);
		if (link_open_file(in, dirfd, temp_leaf))
		{
			if (renameat(dirfd, temp_leaf, dirfd, final_leaf) != 0)
				storage_io_error("create manifest", copy->final_file, errno);
			linked = true;
		}
	}
	if (!linked && errno != ENOENT && errno != EPERM && errno != EXDEV && errno != EMLINK &&
		errno != EOPNOTSUPP)
		storage_io_error("create manifest", copy->final_file, errno);
	fs_close(in);
	return linked;
}

/* Copy the staging manifest to the final name, through a flushed file at `temp_leaf`. */
static void
copy_staging_manifest(int dirfd, const ManifestCopy *copy, const char *final_leaf,
					  const char *temp_leaf, const char *temp)
{
	int64 copied = copy_file_flushed(dirfd, strrchr(copy->staging_file, '/') + 1, temp_leaf,
									 copy->staging_file, temp);

	if (copied != copy->size)
		ln_error(LN_CONCURRENT_MODIFICATION, "staging manifest \"%s\" changed while it was copied",
				 copy->staging_file);
	if (linkat(dirfd, temp_leaf, dirfd, final_leaf, 0) != 0)
	{
		if (errno != EEXIST)
			storage_io_error("create manifest", copy->final_file, errno);
		/* an orphan: replaced once its writer's undo can no longer remove it */
		storage_wait_final_name(copy->final_file);
		if (renameat(dirfd, temp_leaf, dirfd, final_leaf) != 0)
			storage_io_error("create manifest", copy->final_file, errno);
	}
}

/*
 * Materialize a checked manifest at its final name, durably: the file's
 * data and the folder's new name are flushed before the version's row can
 * commit.  The caller holds the version's key in the catalog, so a final
 * manifest already there is an orphan of a writer that crashed or rolled
 * back, and is replaced.
 */
void
local_materialize_manifest(const ManifestCopy *copy)
{
	char *root;
	const char *final_leaf;
	char *temp_leaf;
	char *temp;
	int dirfd;

	if (copy->already_final)
		return;

	root = storage_root_of(copy->final_file);
	/* before the file exists: a newcomer that meets it as an orphan waits for this writer */
	storage_lock_final_name(copy->final_file);
	dirfd = storage_open_parent(root, copy->final_file, &final_leaf, false);
	temp_leaf = storage_leftover_name(final_leaf, TEMP_MARK);
	temp = psprintf("%.*s%s", (int)(final_leaf - copy->final_file), copy->final_file, temp_leaf);

	PG_TRY();
	{
		if (!link_staging_manifest(dirfd, copy, final_leaf, temp_leaf))
			copy_staging_manifest(dirfd, copy, final_leaf, temp_leaf, temp);
		/* the staging file has served once the version commits */
		storage_undo_created(root, dirfd, copy->final_file, copy->staging_file, copy->branch,
							 copy->version);
	}
	PG_CATCH();
	{
		(void)unlinkat(dirfd, temp_leaf, 0);
		PG_RE_THROW();
	}
	PG_END_TRY();
	(void)unlinkat(dirfd, temp_leaf, 0);
	storage_flush_folder(dirfd, copy->final_file);
	fs_close(dirfd);
}

/*
 * Remove a dropped table's folder.  Returns NULL on success (also when the
 * folder is gone already), else why nothing or not everything was removed.
 * Only a real folder strictly below a local root is removed: no symbolic
 * link on the way, and none inside is followed.  The folder is reached
 * from the root through descriptors and removed through them, so a folder
 * on the way swapped for a link meanwhile stops the removal rather than
 * redirect it.
 */
char *
local_remove_table_data(const char *location, bool *later pg_attribute_unused())
{
	char *path = location_local_path(location);
	char *root;
	char *parent;
	const char *leaf;
	size_t link_len;
	int dirfd;
	int err;
	struct stat st;

	if (path == NULL || (root = storage_managing_root(path, false)) == NULL)
		return psprintf("\"%s\" is not below lance_namespace.local_roots", location);
	leaf = strrchr(path, '/') + 1;
	parent = pnstrdup(path, leaf - 1 - path);
	dirfd = fs_open_folder(root, parent[0] ? parent : "/", &link_len);
	if (dirfd < 0)
	{
		if (errno == ENOENT)
			return NULL;
		if (errno == ELOOP)
			return psprintf("\"%s\" has a symbolic link on its path", path);
		return psprintf("could not open \"%s\": %m", parent);
	}
	if (!fs_stat_at(dirfd, leaf, &st))
	{
		err = errno;
		fs_close(dirfd);
		errno = err;
		return err == ENOENT ? NULL : psprintf("could not stat \"%s\": %m", path);
	}
	if (!S_ISDIR(st.st_mode))
	{
		fs_close(dirfd);
		return psprintf("\"%s\" is not a folder", path);
	}
	err = fs_remove_tree_at(dirfd, leaf);
	fs_close(dirfd);
	if (err != 0)
	{
		errno = err;
		return psprintf("could not remove \"%s\": %m", path);
	}
	return NULL;
}

/*
 * Serialize the removal of a dropped table's folder with registrations of
 * the same folder: lance_process_drops() takes it exclusively, Declare and
 * RegisterTable shared, each until its transaction ends, so a table
 * registered at a folder is never removed under it by a concurrent drop.
 */
void
storage_lock_folder(const char *path, bool exclusive)
{
	(void)storage_try_lock_folder(path, exclusive, true);
}

/* As storage_lock_folder; without `wait`, false at once if another holds it. */
bool
storage_try_lock_folder(const char *path, bool exclusive, bool wait)
{
	LOCKTAG tag;

	/* the last field is never 1 or 2, as pg_advisory_lock() sets it: no application's lock */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0,
						 hash_bytes((const unsigned char *)path, strlen(path)), 0x4446 /* "DF" */);
	return LockAcquire(&tag, exclusive ? ExclusiveLock : ShareLock, false, !wait) !=
		   LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Sweeping what a crash left.  A set-aside original or a temporary file
 * names the transaction that made it (SET_ASIDE_MARK, TEMP_MARK); once that
 * transaction is over, its outcome says what the file is:
 *   a temporary file: never needed again;
 *   a set-aside original of a transaction that committed: removed data;
 *   one of a transaction that did not commit: the original, put back
 *   unless something has taken its place since.
 */

typedef enum LeftoverOutcome
{
	LEFTOVER_IN_FLIGHT, /* or of unknown outcome: left alone */
	LEFTOVER_COMMITTED,
	LEFTOVER_NOT_COMMITTED
} LeftoverOutcome;

static LeftoverOutcome
outcome_of(uint64 full_xid)
{
	FullTransactionId fxid = FullTransactionIdFromU64(full_xid);
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId xid = XidFromFullTransactionId(fxid);
	bool known;
	bool committed;

	if (!TransactionIdIsNormal(xid) || !FullTransactionIdPrecedes(fxid, next) ||
		U64FromFullTransactionId(next) - full_xid >= (uint64)1 << 31)
		return LEFTOVER_IN_FLIGHT; /* not one of ours, or too old to look up */
	if (TransactionIdIsInProgress(xid))
		return LEFTOVER_IN_FLIGHT;
	/* held across the look-up, as pg_xact_status does: the status must not be truncated away */
	LWLockAcquire(XactTruncationLock, LW_SHARED);
	known = !TransactionIdPrecedes(xid, TransamVariables->oldestClogXid);
	committed = known && TransactionIdDidCommit(xid);
	LWLockRelease(XactTruncationLock);
	if (!known)
		return LEFTOVER_IN_FLIGHT;
	return committed ? LEFTOVER_COMMITTED : LEFTOVER_NOT_COMMITTED;
}

/* The transaction id in a leftover's name after `mark`, or false if it is not one. */
static bool
leftover_xid(const char *mark_at, const char *mark, uint64 *full_xid)
{
	const char *digits = mark_at + strlen(mark);
	char *end;

	if (!isdigit((unsigned char)*digits))
		return false;
	errno = 0;
	*full_xid = strtou64(digits, &end, 10);
	return errno == 0 && *end == '-' && strspn(end + 1, "0123456789abcdef") == 8 && end[9] == '\0';
}

static int sweep_removed;
static int sweep_restored;

/* One entry of a table's folders, in the folder open at `dirfd`. */
static void
sweep_entry(int dirfd, const char *name, void *arg pg_attribute_unused())
{
	const char *mark;
	uint64 full_xid;
	LeftoverOutcome outcome;

	/* files and (after their contents) folders alike */
	if ((mark = strstr(name, TEMP_MARK)) != NULL && leftover_xid(mark, TEMP_MARK, &full_xid))
	{
		if (outcome_of(full_xid) != LEFTOVER_IN_FLIGHT && unlinkat(dirfd, name, 0) == 0)
			sweep_removed++;
		return;
	}
	if ((mark = strstr(name, SET_ASIDE_MARK)) == NULL ||
		!leftover_xid(mark, SET_ASIDE_MARK, &full_xid))
		return;
	outcome = outcome_of(full_xid);
	if (outcome == LEFTOVER_NOT_COMMITTED)
	{
		char *original = pnstrdup(name, mark - name);
		struct stat there;

		if (!fs_stat_at(dirfd, original, &there) && errno == ENOENT &&
			renameat(dirfd, name, dirfd, original) == 0)
		{
			sweep_restored++;
			return;
		}
		/*
		 * Something holds the original's name: perhaps the replacement of a
		 * transaction that crashed after moving it into place.  The set-aside
		 * may be the one true content, so it stays, for a person to decide.
		 */
		ereport(WARNING,
				(errmsg("lance_namespace: \"%s\" of a transaction that did not commit is kept: "
						"\"%s\" exists again",
						name, original)));
		return;
	}
	if (outcome != LEFTOVER_IN_FLIGHT && fs_remove_tree_at(dirfd, name) == 0)
		sweep_removed++;
}

/*
 * Sweep the leftovers of transactions that ended without finishing their
 * files (a crash) in a managed table's folder: its _versions, _refs and
 * tree (branches) folders, never following a link.  Adds to the counts of
 * files removed and originals put back.
 */
void
local_sweep_table(const char *location, int *removed, int *restored)
{
	static const char *const parts[] = {"_versions", "_refs", "tree"};
	char *folder;
	char *root;

	if (!local_is_managed(location))
		return;
	folder = location_local_path(location);
	root = storage_managing_root(folder, false);
	sweep_removed = sweep_restored = 0;
	for (size_t i = 0; i < lengthof(parts); i++)
	{
		/* a part that is missing or a link (never followed) has nothing to sweep */
		int dirfd = fs_open_folder(root, psprintf("%s/%s", folder, parts[i]), NULL);

		CHECK_FOR_INTERRUPTS();
		if (dirfd < 0)
			continue;
		/* depth first: a set-aside folder is seen after its contents, then handled whole */
		fs_walk(dirfd, sweep_entry, NULL);
		fs_close(dirfd);
	}
	*removed += sweep_removed;
	*restored += sweep_restored;
}
