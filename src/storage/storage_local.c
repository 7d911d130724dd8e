/*
 * storage_local.c
 *		The local roots and what a transaction did under them: the
 *		lance_namespace.local_roots setting, reaching a folder below a root
 *		without following links, the names of leftovers, and the undo list
 *		of file changes, worked through when the transaction ends.
 *
 * The local backend's manifests (storage_manifest.c) and refs (storage_refs.c) share
 * these, and the S3 backend shares the final-name lock; none of them calls
 * back up into another, so the transaction's end (storage_xact.c) can drive
 * them all from above.
 */
#include "postgres.h"

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/transam.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "storage/lock.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "../common/error.h"
#include "location.h"
#include "storage.h"
#include "storage_internal.h"

/*
 * What a (sub)transaction did on disk, to undo if it rolls back and to
 * finish when it commits.  Undone newest first.  Paths are below `root`,
 * the local root they were reached from.
 */
typedef struct FileUndo
{
	char *root;
	char *created;			/* made here: removed on abort, if still ours */
	dev_t dev;				/* identify our file: after an abort another */
	ino_t ino;				/* writer may already have put its own there */
	char *set_aside;		/* moved out of the way: put back at `original` on abort, */
	char *original;			/* removed (with what is inside) on commit */
	char *remove_on_commit; /* served its purpose once the change commits */
	char *branch;			/* a final manifest: its branch and version */
	int64 version;			/* (-1 for other files) */
	int dirfd;				/* the folder all of these are in, kept open (-1: reopened */
	dev_t dir_dev;			/* by path, and then it must be this folder) */
	ino_t dir_ino;
	SubTransactionId subid;
	struct FileUndo *next;
} FileUndo;

static FileUndo *undo_list = NULL;

/*
 * The folders the undo list's files are in, kept open until the
 * transaction ends: the undo works in the folder it wrote in, even if that
 * folder has been moved meanwhile and a link put in its place (which a
 * reopening by path would refuse to follow).  One descriptor per folder,
 * so that a transaction with thousands of versions of one table holds one;
 * past MAX_UNDO_FOLDERS folders (or the server's descriptor budget) the
 * undo reopens the folder by path and acts only if it is the same folder.
 */
#define MAX_UNDO_FOLDERS 64

typedef struct UndoFolder
{
	dev_t dev;
	ino_t ino;
	int fd;
} UndoFolder;

static UndoFolder undo_folders[MAX_UNDO_FOLDERS];
static int n_undo_folders = 0;

/* lance_namespace.local_roots: folders under which the catalog manages versions. */
static char *local_roots = NULL;

/* local_roots must be a list of absolute folders. */
static bool
check_local_roots(char **newval, void **extra pg_attribute_unused(),
				  GucSource source pg_attribute_unused())
{
	char *raw = pstrdup(*newval);
	List *roots;
	ListCell *lc;

	if (!SplitDirectoriesString(raw, ',', &roots))
	{
		GUC_check_errdetail("List syntax is invalid.");
		return false;
	}
	foreach (lc, roots)
	{
		if (!is_absolute_path((char *)lfirst(lc)))
		{
			GUC_check_errdetail("\"%s\" is not an absolute path.", (char *)lfirst(lc));
			return false;
		}
	}
	return true;
}

/* Define lance_namespace.local_roots. */
void
storage_local_init(void)
{
	/*
	 * Superuser only: the catalog writes manifests as the server's OS user
	 * in these folders, on behalf of any role that can create versions.
	 */
	DefineCustomStringVariable("lance_namespace.local_roots",
							   "Local folders whose tables have their versions managed by the "
							   "catalog.",
							   "A comma-separated list of absolute paths.  For tables below "
							   "them the catalog answers managed_versioning and writes each "
							   "version's manifest.",
							   &local_roots, "", PGC_SUSET, 0, check_local_roots, NULL, NULL);
}

/* True if lance_namespace.local_roots names at least one folder. */
bool
storage_has_local_roots(void)
{
	return local_roots != NULL && local_roots[0] != '\0';
}

/* The local roots, in location_folder_key's spelling: how many, in *roots. */
int
storage_local_root_list(char ***roots)
{
	char *value;
	List *root_list;
	ListCell *lc;
	int n = 0;

	*roots = NULL;
	if (!storage_has_local_roots())
		return 0;
	value = pstrdup(local_roots);
	if (!SplitDirectoriesString(value, ',', &root_list))
		return 0; /* the setting's check hook refuses such a value */
	*roots = palloc(sizeof(char *) * list_length(root_list));
	foreach (lc, root_list)
	{
		char *root = location_local_path((char *)lfirst(lc));

		if (root != NULL)
			(*roots)[n++] = root;
	}
	return n;
}

/*
 * A local root that lies near canonical local path `path`, in
 * location_folder_key's spelling: with `below`, one strictly below it;
 * else one that is it or above it (the tables below `path` are then
 * managed).  NULL if there is none.
 */
char *
storage_local_root_near(const char *path, bool below)
{
	char **roots;
	int n;

	if (path == NULL)
		return NULL;
	n = storage_local_root_list(&roots);
	for (int i = 0; i < n; i++)
		if (below ? strcmp(roots[i], path) != 0 && location_folder_within(roots[i], path)
				  : location_folder_within(path, roots[i]))
			return roots[i];
	return NULL;
}

/*
 * The local root that canonical local path `path` is strictly below, with
 * its trailing slashes cut, or NULL.  With `resolved`, the roots are taken
 * as the file system resolves them (a root may itself be reached through a
 * link, e.g. /var/run).
 */
char *
storage_managing_root(const char *path, bool resolved)
{
	char *roots;
	List *root_list;
	ListCell *lc;

	if (path == NULL || !storage_has_local_roots())
		return NULL;
	roots = pstrdup(local_roots);
	if (!SplitDirectoriesString(roots, ',', &root_list))
		return NULL; /* the setting's check hook refuses such a value */
	foreach (lc, root_list)
	{
		char *root = (char *)lfirst(lc);
		char real[PATH_MAX];
		size_t len;

		if (resolved && realpath(root, real) != NULL)
			root = pstrdup(real);
		len = strlen(root);
		while (len > 0 && root[len - 1] == '/')
			len--;
		/* strictly below the root ("/" itself is the root of everything) */
		if (strncmp(path, root, len) == 0 && path[len] == '/' && path[len + 1] != '\0')
			return len == 0 ? pstrdup("/") : pnstrdup(root, len);
	}
	return NULL;
}

static char *
transaction_tag(void)
{
	return psprintf(UINT64_FORMAT, U64FromFullTransactionId(GetTopFullTransactionId()));
}

/* A leftover's name next to `leaf`: the mark, the transaction's id and a nonce. */
char *
storage_leftover_name(const char *leaf, const char *mark)
{
	uint32 nonce;

	if (!pg_strong_random(&nonce, sizeof(nonce)))
		nonce = (uint32)MyProcPid;
	return psprintf("%s%s%s-%08x", leaf, mark, transaction_tag(), nonce);
}

/* The name of the OS user the server runs as, for messages about file access. */
const char *
storage_server_os_user(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw != NULL ? pstrdup(pw->pw_name) : psprintf("%u", (unsigned)geteuid());
}

/*
 * Raise the error of a failed file operation `what` on `path`.  Whatever the
 * caller can act on is code 13: a name or a path the file system cannot
 * take, and a folder the server may not use, as when a client runs as
 * another OS user than the server and makes the table's folders its own.
 * The storage failing (an I/O error, a full disk) is code 17: nothing
 * commits, and a retry may succeed.  Anything else is the server's (18).
 */
void
storage_io_error(const char *what, const char *path, int err)
{
	if (err == ENAMETOOLONG || err == ELOOP)
		ln_error(LN_INVALID_INPUT, "could not %s \"%s\": %s", what, path, strerror(err));
	if (err == EACCES || err == EPERM)
	{
		/* the folder an "open folder" or a "list" names, else the one the file is in */
		bool is_folder = strncmp(what, "open folder", 11) == 0 || strcmp(what, "list") == 0;
		const char *slash = strrchr(path, '/');
		char *folder = is_folder || slash == NULL ? pstrdup(path)
					   : slash == path			  ? pstrdup("/")
												  : pnstrdup(path, slash - path);
		const char *user = storage_server_os_user();

		ln_error_detail(LN_INVALID_INPUT,
						psprintf("Let OS user \"%s\" read and write folder \"%s\" (e.g. make it "
								 "the owner, or run the client as that user).",
								 user, folder),
						"could not %s \"%s\": %s: the server runs as OS user \"%s\", which may "
						"not use folder \"%s\"",
						what, path, strerror(err), user, folder);
	}
	if (err == EIO || err == ENOSPC || err == EDQUOT)
		ln_error_detail(LN_SERVICE_UNAVAILABLE,
						"Nothing was committed; retry once the storage works again.",
						"could not %s \"%s\": %s", what, path, strerror(err));
	ln_error(LN_INTERNAL, "could not %s \"%s\": %s", what, path, strerror(err));
}

/*
 * The local root that `path` (a file or folder in a managed table) is below;
 * every file this module touches is.
 */
char *
storage_root_of(const char *path)
{
	char *root = storage_managing_root(path, false);

	if (root == NULL)
		ln_error(LN_INVALID_INPUT, "\"%s\" is not below lance_namespace.local_roots", path);
	return root;
}

/*
 * Open folder `dir` below `root` without following any link.  A symbolic
 * link on the way is refused (LN013): a link inside a table's folder
 * (tree, _refs, _versions) would make the server write, move or delete
 * files elsewhere.  A missing folder is -1 (errno ENOENT or ENOTDIR) when
 * `missing_ok`; any other failure raises.
 */
int
storage_open_folder(const char *root, const char *dir, bool missing_ok)
{
	size_t link_len = strlen(dir);
	int fd = fs_open_folder(root, dir, &link_len);

	if (fd >= 0)
		return fd;
	if (errno == ELOOP)
		ln_error(LN_INVALID_INPUT,
				 "\"%s\" has a symbolic link on its path; the catalog does not follow links in "
				 "table folders",
				 pnstrdup(dir, Min(link_len, strlen(dir))));
	if (missing_ok && (errno == ENOENT || errno == ENOTDIR))
		return -1;
	storage_io_error("open folder", dir, errno);
}

/* The folder `path` is in, opened as storage_open_folder does; *leaf gets the name in it. */
int
storage_open_parent(const char *root, const char *path, const char **leaf, bool missing_ok)
{
	const char *slash = strrchr(path, '/');

	Assert(slash != NULL && slash[1] != '\0');
	*leaf = slash + 1;
	return storage_open_folder(root, slash == path ? "/" : pnstrdup(path, slash - path),
							   missing_ok);
}

/* The same for the undo: never raises; -1 with errno. */
static int
open_parent_quiet(const char *root, const char *path, const char **leaf)
{
	char dir[MAXPGPATH];
	const char *slash = strrchr(path, '/');

	if (slash == NULL || slash[1] == '\0' || slash - path >= MAXPGPATH)
	{
		errno = ENAMETOOLONG;
		return -1;
	}
	*leaf = slash + 1;
	memcpy(dir, path, slash - path);
	dir[slash - path] = '\0';
	return fs_open_folder(root, slash == path ? "/" : dir, NULL);
}

/* Remove the file `path` if it is there, never raising (cleanups, rollbacks). */
void
storage_unlink_quiet(const char *root, const char *path)
{
	const char *leaf;
	int dirfd = open_parent_quiet(root, path, &leaf);

	if (dirfd < 0)
		return;
	(void)unlinkat(dirfd, leaf, 0);
	fs_close(dirfd);
}

/* Flush the folder open at `dirfd`, in which `path` was made. */
void
storage_flush_folder(int dirfd, const char *path)
{
	/* ERROR, not the PANIC fsync_fname would raise: these are the user's folders */
	if (pg_fsync(dirfd) != 0 && errno != EBADF && errno != EINVAL)
	{
		int err = errno;

		storage_io_error("flush folder of", path, err);
	}
}

/*
 * A descriptor of the folder open at `dirfd` kept for the undo (see
 * UndoFolder), or -1 if none can be kept; *dev and *ino identify it.
 */
static int
keep_folder(int dirfd, const char *path, dev_t *dev, ino_t *ino)
{
	struct stat st;
	int fd;

	if (fstat(dirfd, &st) != 0)
		storage_io_error("stat the folder of", path, errno);
	*dev = st.st_dev;
	*ino = st.st_ino;
	for (int i = 0; i < n_undo_folders; i++)
		if (undo_folders[i].dev == st.st_dev && undo_folders[i].ino == st.st_ino)
			return undo_folders[i].fd;
	if (n_undo_folders == MAX_UNDO_FOLDERS || !AcquireExternalFD())
		return -1;
	if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0)
	{
		ReleaseExternalFD();
		return -1;
	}
	undo_folders[n_undo_folders].dev = st.st_dev;
	undo_folders[n_undo_folders].ino = st.st_ino;
	undo_folders[n_undo_folders++].fd = fd;
	return fd;
}

static void
close_undo_folders(void)
{
	for (int i = 0; i < n_undo_folders; i++)
	{
		(void)close(undo_folders[i].fd);
		ReleaseExternalFD();
	}
	n_undo_folders = 0;
}

static FileUndo *
new_undo(const char *root, int dirfd, const char *path)
{
	FileUndo *undo = MemoryContextAllocZero(TopTransactionContext, sizeof(FileUndo));

	undo->dirfd = keep_folder(dirfd, path, &undo->dir_dev, &undo->dir_ino);
	undo->root = MemoryContextStrdup(TopTransactionContext, root);
	undo->version = -1;
	undo->subid = GetCurrentSubTransactionId();
	undo->next = undo_list;
	undo_list = undo;
	return undo;
}

/*
 * The folder of the undo's files, for its undo or its finish: the one kept
 * open, else the one `path` is in reopened by path, if it is still the
 * same folder.  -1 with errno if it cannot be reached; *owned if the
 * caller closes it.  Never raises.
 */
static int
undo_folder(const FileUndo *undo, const char *path, const char **leaf, bool *owned)
{
	struct stat st;
	int dirfd;

	*leaf = strrchr(path, '/') + 1;
	*owned = false;
	if (undo->dirfd >= 0)
		return undo->dirfd;
	dirfd = open_parent_quiet(undo->root, path, leaf);
	if (dirfd < 0)
		return -1;
	if (fstat(dirfd, &st) != 0 || st.st_dev != undo->dir_dev || st.st_ino != undo->dir_ino)
	{
		fs_close(dirfd);
		errno = ESTALE; /* another folder has taken its name */
		return -1;
	}
	*owned = true;
	return dirfd;
}

/*
 * Remember that `path`, in the folder open at `dirfd`, was made here (it
 * exists now), to remove it on abort.
 */
void
storage_undo_created(const char *root, int dirfd, const char *path, const char *remove_on_commit,
					 const char *branch, int64 version)
{
	struct stat st;
	FileUndo *undo;

	if (!fs_stat_at(dirfd, strrchr(path, '/') + 1, &st))
		ln_error(LN_INTERNAL, "could not stat \"%s\": %s", path, strerror(errno));
	undo = new_undo(root, dirfd, path);
	undo->created = MemoryContextStrdup(TopTransactionContext, path);
	undo->dev = st.st_dev;
	undo->ino = st.st_ino;
	if (remove_on_commit)
		undo->remove_on_commit = MemoryContextStrdup(TopTransactionContext, remove_on_commit);
	if (branch != NULL)
	{
		undo->branch = MemoryContextStrdup(TopTransactionContext, branch);
		undo->version = version;
	}
}

/*
 * Move `path` (a file, a folder or a link, never followed), in the folder
 * open at `dirfd`, out of the way, to remove it when the transaction
 * commits or put it back if it rolls back.  False if it does not exist.
 */
bool
storage_set_aside(const char *root, int dirfd, const char *path)
{
	const char *leaf = strrchr(path, '/') + 1;
	char *trash = storage_leftover_name(leaf, SET_ASIDE_MARK);
	FileUndo *undo;

	if (renameat(dirfd, leaf, dirfd, trash) != 0)
	{
		if (errno == ENOENT)
			return false;
		storage_io_error("move", path, errno);
	}
	undo = new_undo(root, dirfd, path);
	undo->set_aside = MemoryContextStrdup(TopTransactionContext,
										  psprintf("%.*s%s", (int)(leaf - path), path, trash));
	undo->original = MemoryContextStrdup(TopTransactionContext, path);
	return true;
}

/*
 * Final-name locks.  A writer that rolls back leaves the proc array before
 * its abort callback undoes its final manifests (undo_on_abort), and
 * releases its locks only after that callback; a newcomer finds its
 * version row dead and takes the key at once.  Its final manifest must
 * wait for that undo, or the undo removes it.
 *
 * A lock per name held to the transaction's end would do that, but fill
 * the lock table: one transaction may create tens of thousands of
 * versions, and the table holds max_locks_per_transaction (64) per
 * connection for all of them together.  So names are hashed into
 * FINAL_NAME_PARTITIONS partitions, and a writer holds its partitions
 * shared until it ends: never more than that many locks.  A writer whose
 * final name is taken (on disk the link finds the name there; on S3 a
 * look-up finds the object) may meet an orphan whose writer's undo has
 * yet to run: it waits, taking the partition exclusively for a moment,
 * until every other writer of that partition has ended, then replaces the
 * orphan.  A free name needs no wait: an undo removes only the file it
 * made (its inode), and an S3 writer whose copy failed, whose object may
 * be missing while its undo still deletes the name, keeps the exact name
 * locked (storage_lock_final_name_exact) until it ends.
 *
 * The cost falls on the rare writer that meets an orphan: it waits for the
 * writers of its partition that are still running, however long, and
 * should one of them wait for it, or a second finder of an orphan in that
 * partition, the deadlock detector ends one of them (LN014, to retry).
 * New writers of the partition queue behind the waiter, so it is not
 * starved.
 */
#define FINAL_NAME_PARTITIONS 16

/* the last field is never 1 or 2, as pg_advisory_lock() sets it: no application's lock */
#define FINAL_PARTITION_TAG 0x4d50 /* "MP" */
#define FINAL_NAME_TAG		0x4d46 /* "MF" */

static void
final_name_tag(LOCKTAG *tag, const char *path, bool exact)
{
	uint64 h = hash_bytes_extended((const unsigned char *)path, strlen(path), 0);

	if (exact)
		SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32)(h >> 32), (uint32)h, FINAL_NAME_TAG);
	else
		SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, 0, (uint32)(h % FINAL_NAME_PARTITIONS),
							 FINAL_PARTITION_TAG);
}

/* Hold the partition of final manifest `path`, shared, until this (sub)transaction ends. */
void
storage_lock_final_name(const char *path)
{
	LOCKTAG tag;

	final_name_tag(&tag, path, false);
	(void)LockAcquire(&tag, ShareLock, false, false);
}

/*
 * True if another transaction holds the partition of `path`: only then may
 * an orphan at that name have an undo still to run.
 */
bool
storage_final_name_shared(const char *path)
{
	LOCKTAG tag;

	final_name_tag(&tag, path, false);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	(void)LockRelease(&tag, ExclusiveLock, false);
	return false;
}

/*
 * Final name `path` is taken: wait until every other writer of its
 * partition has ended, and with it any undo that could remove what
 * replaces the orphan there.
 */
void
storage_wait_final_name(const char *path)
{
	LOCKTAG tag;

	final_name_tag(&tag, path, false);
	(void)LockAcquire(&tag, ExclusiveLock, false, false);
	(void)LockRelease(&tag, ExclusiveLock, false);
}

/*
 * Lock the exact name `path`, exclusively: waits for a writer that holds it
 * (one whose copy failed).  Released by storage_unlock_final_name_exact once
 * the name is known to hold what this writer made; kept until the
 * (sub)transaction ends otherwise.
 */
void
storage_lock_final_name_exact(const char *path)
{
	LOCKTAG tag;

	final_name_tag(&tag, path, true);
	(void)LockAcquire(&tag, ExclusiveLock, false, false);
}

void
storage_unlock_final_name_exact(const char *path)
{
	LOCKTAG tag;

	final_name_tag(&tag, path, true);
	(void)LockRelease(&tag, ExclusiveLock, false);
}

/*
 * For a removal the maintenance round retries: hold the partition of final
 * manifest `path` exclusively, without waiting, so that no writer of that
 * name is in flight while the round checks that no version holds it and
 * removes it.  False if a writer holds the partition: the step waits for a
 * later round.  The round releases it right after the step
 * (storage_unlock_final_name), not at its commit: a partition covers many
 * tables' names, and a round of many steps against a store that does not
 * answer would stall every writer of those partitions for its whole length.
 */
bool
storage_try_lock_final_name(const char *path)
{
	LOCKTAG tag;

	final_name_tag(&tag, path, false);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Release what storage_try_lock_final_name took, once its step's check and
 * removal are over.  Safe before the round commits: the removal already
 * happened (or failed, and changed nothing), and the round writes nothing
 * on storage after it; a writer that takes the partition after the release
 * inserts its own version row and links its own file at the name, which the
 * round no longer touches.  (The round's own catalog change, the step's row
 * deleted, concerns no writer.)
 */
void
storage_unlock_final_name(const char *path)
{
	LOCKTAG tag;

	final_name_tag(&tag, path, false);
	(void)LockRelease(&tag, ExclusiveLock, false);
}

/* Keep a step the undo could not do for the next maintenance round (storage_spool.c). */
static void
spool_step(const FileUndo *undo, char action)
{
	StorageUndoStep step = {0};

	step.action = action;
	step.location = undo->root;
	step.path = action == UNDO_REMOVE ? undo->created : undo->original;
	step.set_aside = action == UNDO_PUT_BACK ? undo->set_aside : NULL;
	step.branch = action == UNDO_REMOVE ? undo->branch : NULL;
	step.version = action == UNDO_REMOVE ? undo->version : -1;
	step.dev = (uint64)undo->dev;
	step.ino = (uint64)undo->ino;
	storage_spool_add(&step);
}

/*
 * Undo one step on abort, in the folder it was done in.  No error may
 * escape: the transaction is ending.  What cannot be done is spooled.
 */
static void
undo_on_abort(const FileUndo *undo)
{
	const char *leaf;
	int dirfd;
	bool owned;
	struct stat st;

	/* remove what was made here, unless another writer has replaced it since */
	if (undo->created != NULL)
	{
		dirfd = undo_folder(undo, undo->created, &leaf, &owned);
		if (dirfd < 0 ||
			(fs_stat_at(dirfd, leaf, &st) && st.st_dev == undo->dev && st.st_ino == undo->ino &&
			 unlinkat(dirfd, leaf, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT))
		{
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("lance_namespace: could not remove \"%s\" after a rollback: %m; the "
							"next maintenance round retries",
							undo->created)));
			spool_step(undo, UNDO_REMOVE);
		}
		if (owned)
			fs_close(dirfd);
	}
	if (undo->set_aside != NULL)
	{
		dirfd = undo_folder(undo, undo->original, &leaf, &owned);
		if (dirfd < 0 || renameat(dirfd, strrchr(undo->set_aside, '/') + 1, dirfd, leaf) != 0)
		{
			ereport(WARNING, (errcode_for_file_access(),
							  errmsg("lance_namespace: could not put \"%s\" back at \"%s\" after a "
									 "rollback: %m; the next maintenance round retries",
									 undo->set_aside, undo->original)));
			spool_step(undo, UNDO_PUT_BACK);
		}
		if (owned)
			fs_close(dirfd);
	}
}

/*
 * Run one undo or finish step in a commit or abort callback, where an error
 * may not escape (after the commit record it would be a PANIC): a failure,
 * such as running out of memory walking a huge folder, is logged, and what
 * is left is the sweep's to finish.
 */
static void
run_quietly(void (*step)(const FileUndo *), const FileUndo *undo)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		step(undo);
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING, (errmsg("lance_namespace: %s; lance_sweep_leftovers() finishes it",
								 edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

static void
finish_on_commit(const FileUndo *undo)
{
	const char *leaf;
	int dirfd;
	bool owned;
	int err = 0;

	if (undo->remove_on_commit != NULL)
	{
		dirfd = undo_folder(undo, undo->remove_on_commit, &leaf, &owned);
		if ((dirfd < 0 || unlinkat(dirfd, leaf, 0) != 0) && errno != ENOENT)
			ereport(WARNING, (errcode_for_file_access(),
							  errmsg("lance_namespace: could not remove \"%s\": %m",
									 undo->remove_on_commit)));
		if (owned)
			fs_close(dirfd);
	}
	if (undo->set_aside != NULL)
	{
		dirfd = undo_folder(undo, undo->set_aside, &leaf, &owned);
		err = dirfd < 0 ? errno : fs_remove_tree_at(dirfd, leaf);
		if (err != 0 && err != ENOENT)
		{
			errno = err;
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("lance_namespace: could not remove \"%s\": %m", undo->set_aside)));
		}
		if (owned)
			fs_close(dirfd);
	}
}

/* True while the transaction has file changes to finish or undo. */
bool
storage_local_pending(void)
{
	return undo_list != NULL;
}

/* The transaction ends: finish its file changes on commit, undo them on abort. */
void
storage_local_end_transaction(bool commit)
{
	for (FileUndo *u = undo_list; u != NULL; u = u->next)
		run_quietly(commit ? finish_on_commit : undo_on_abort, u);
	undo_list = NULL;
	close_undo_folders();
}

/*
 * A subtransaction ends: its changes become its parent's on commit, and are
 * undone, newest first, on abort.
 */
void
storage_local_end_subtransaction(bool commit, SubTransactionId mySubid,
								 SubTransactionId parentSubid)
{
	FileUndo **link = &undo_list;

	while (*link != NULL)
	{
		FileUndo *u = *link;

		if (u->subid != mySubid)
			link = &u->next;
		else if (commit)
		{
			u->subid = parentSubid;
			link = &u->next;
		}
		else
		{
			run_quietly(undo_on_abort, u);
			*link = u->next;
		}
	}
}

/*
 * Do a spooled step of a local undo (storage_retry_undo), raising if its
 * folder cannot be reached.  The folder is opened from the local root as
 * every other is; a file made is removed only if it is still the very
 * file the transaction made, and a set-aside original is put back only
 * while its name is free.  (A final manifest's removal was checked against
 * the catalog's versions by the caller, under the name's lock.)
 */
void
local_retry_undo(const StorageUndoStep *step)
{
	const char *leaf;
	int dirfd = storage_open_parent(step->location, step->path, &leaf, true);
	struct stat st;

	if (dirfd < 0)
		return; /* its folder is gone, and what was in it */
	if (step->action == UNDO_REMOVE)
	{
		if (fs_stat_at(dirfd, leaf, &st) && (uint64)st.st_dev == step->dev &&
			(uint64)st.st_ino == step->ino &&
			unlinkat(dirfd, leaf, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
			storage_io_error("remove", step->path, errno);
	}
	else if (!fs_stat_at(dirfd, leaf, &st) && errno == ENOENT &&
			 renameat(dirfd, strrchr(step->set_aside, '/') + 1, dirfd, leaf) != 0 &&
			 errno != ENOENT)
		storage_io_error("put back", step->path, errno);
	fs_close(dirfd);
}
