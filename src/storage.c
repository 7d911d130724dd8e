/*
 * storage.c
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
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
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

#include "error.h"
#include "location.h"
#include "storage.h"

/*
 * What a (sub)transaction did on disk, to undo if it rolls back and to
 * finish when it commits.  Undone newest first.
 */
typedef struct FileUndo
{
	char *created;			/* made here: removed on abort, if still ours */
	dev_t dev;				/* identify our file: after an abort another */
	ino_t ino;				/* writer may already have put its own there */
	char *set_aside;		/* moved out of the way: put back at `original` on abort, */
	char *original;			/* removed (with what is inside) on commit */
	char *remove_on_commit; /* served its purpose once the change commits */
	SubTransactionId subid;
	struct FileUndo *next;
} FileUndo;

static FileUndo *undo_list = NULL;

/*
 * A change to a table's refs that waits for the commit: readers of the
 * table (Lance clients) must not see a tag or branch that a transaction
 * still in flight may roll back.  The new content is written and flushed
 * at once, next to its final name; at pre-commit it is moved into place
 * (and recorded in undo_list, in case the commit fails after that).
 * Newest first.  Reads of the same transaction see the pending state.
 */
typedef struct PendingRef
{
	char *path;			 /* the ref file, or a branch's tree folder */
	char *folder;		 /* the folder listed for its kind (NULL for a tree folder) */
	char *name;			 /* the ref's name, as listed */
	char *temp;			 /* the new content; NULL: a removal */
	bool create;		 /* only where there is none */
	char *parents_below; /* make the folders between this one and path, if missing */
	SubTransactionId subid;
	struct PendingRef *next;
} PendingRef;

static PendingRef *pending_refs = NULL;

/* lance_namespace.local_roots: folders under which the catalog manages versions. */
static char *local_roots = NULL;

static void raise_io_error(const char *what, const char *path, int err) pg_attribute_noreturn();
static void check_real_parent(const char *path);

/*
 * Files this module leaves next to others while a transaction runs: a
 * set-aside original and a temporary file.  Their names carry the
 * transaction's full id, so that a sweep after a crash can tell whether
 * that transaction committed (see storage_sweep_table).
 */
#define SET_ASIDE_MARK ".deleted-x"
#define TEMP_MARK	   ".tmp-x"

static char *
transaction_tag(void)
{
	return psprintf(UINT64_FORMAT, U64FromFullTransactionId(GetTopFullTransactionId()));
}

static FileUndo *
new_undo(void)
{
	FileUndo *undo = MemoryContextAllocZero(TopTransactionContext, sizeof(FileUndo));

	undo->subid = GetCurrentSubTransactionId();
	undo->next = undo_list;
	undo_list = undo;
	return undo;
}

/* Remember that `path` was made here (it exists now), to remove it on abort. */
static void
undo_created(const char *path, const char *remove_on_commit)
{
	struct stat st;
	FileUndo *undo;

	if (lstat(path, &st) != 0)
		ln_error(LN_INTERNAL, "could not stat \"%s\": %s", path, strerror(errno));
	undo = new_undo();
	undo->created = MemoryContextStrdup(TopTransactionContext, path);
	undo->dev = st.st_dev;
	undo->ino = st.st_ino;
	if (remove_on_commit)
		undo->remove_on_commit = MemoryContextStrdup(TopTransactionContext, remove_on_commit);
}

/*
 * Move `path` (a file or a folder) out of the way, to remove it when the
 * transaction commits or put it back if it rolls back.  False if it does
 * not exist.
 */
static bool
set_aside(const char *path)
{
	uint32 nonce;
	char *trash;
	FileUndo *undo;

	check_real_parent(path);
	if (!pg_strong_random(&nonce, sizeof(nonce)))
		nonce = (uint32)MyProcPid;
	trash = psprintf("%s" SET_ASIDE_MARK "%s-%08x", path, transaction_tag(), nonce);
	if (rename(path, trash) != 0)
	{
		if (errno == ENOENT)
			return false;
		ln_error(LN_INTERNAL, "could not move \"%s\": %s", path, strerror(errno));
	}
	undo = new_undo();
	undo->set_aside = MemoryContextStrdup(TopTransactionContext, trash);
	undo->original = MemoryContextStrdup(TopTransactionContext, path);
	return true;
}

static void apply_pending_refs(void);
static void discard_pending_refs(bool all, SubTransactionId subid);
static void storage_xact_callback(XactEvent event, void *arg);
static void storage_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									 SubTransactionId parentSubid, void *arg);

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

void
storage_init(void)
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
	RegisterXactCallback(storage_xact_callback, NULL);
	RegisterSubXactCallback(storage_subxact_callback, NULL);
}

/*
 * Refuse to act at `path` when a symbolic link stands anywhere on the way to
 * the folder it is in: a link inside a table's folder (tree, _refs,
 * _versions) would make the server write, move or delete files elsewhere.
 */
static void
check_real_parent(const char *path)
{
	char *parent = pstrdup(path);
	char resolved[PATH_MAX];

	*strrchr(parent, '/') = '\0';
	if (parent[0] == '\0')
		return;
	if (realpath(parent, resolved) == NULL)
	{
		if (errno == ENOENT)
			return; /* nothing there yet: whatever is made there is made by us */
		raise_io_error("resolve", parent, errno);
	}
	if (strcmp(resolved, parent) != 0)
		ln_error(LN_INVALID_INPUT,
				 "\"%s\" has a symbolic link on its path; the catalog does not follow links in "
				 "table folders",
				 parent);
}

/* True if lance_namespace.local_roots names at least one folder. */
bool
storage_has_local_roots(void)
{
	return local_roots != NULL && local_roots[0] != '\0';
}

/*
 * The local root that canonical local path `path` is strictly below, with
 * its trailing slashes cut, or NULL.  With `resolved`, the roots are taken
 * as the file system resolves them (a root may itself be reached through a
 * link, e.g. /var/run).
 */
static char *
managing_root(const char *path, bool resolved)
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
			return pnstrdup(root, len);
	}
	return NULL;
}

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
			raise_io_error("resolve", existing, errno);
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
storage_check_location(const char *location)
{
	char *path = location_local_path(location);
	char *root;
	char *real;
	char *expected;

	if (path == NULL || !storage_has_local_roots())
		return;
	real = real_path_of(path);
	root = managing_root(path, false);
	/* below a root, only the root itself may be reached through a link */
	expected = root ? psprintf("%s%s", real_path_of(root), path + strlen(root)) : path;
	if (strcmp(real, expected) != 0 && (root != NULL || managing_root(real, true) != NULL))
		ln_error_detail(LN_INVALID_INPUT, "Register the folder by its own path, without links.",
						"location \"%s\" passes through a symbolic link (it is \"%s\")", location,
						real);
}

/*
 * True if the catalog manages the versions of a table at `location`: a local
 * path strictly below one of the folders in lance_namespace.local_roots.
 */
bool
storage_is_managed(const char *location)
{
	return managing_root(location_local_path(location), false) != NULL;
}

/*
 * Check a CreateTableVersion's staging manifest before anything is written:
 * it must be a regular file (not a symbolic link) directly in the _versions
 * folder of the table (or of the table's branch), and that folder must be a
 * real folder.  Fills `copy` with what storage_materialize_manifest needs.
 */
void
storage_check_manifest(const char *location, const char *branch, int64 version, bool v1_naming,
					   const char *manifest_path, ManifestCopy *copy)
{
	char *table_dir = location_local_path(location);
	char *versions_dir;
	char *staging;
	char *slash;
	char *final_name;
	struct stat st;

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

	check_real_parent(psprintf("%s/x", versions_dir));
	if (lstat(versions_dir, &st) != 0 || !S_ISDIR(st.st_mode))
		ln_error(LN_INVALID_INPUT, "the table's _versions folder \"%s\" is not a folder",
				 versions_dir);
	if (lstat(staging, &st) != 0)
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" does not exist", manifest_path);
	if (!S_ISREG(st.st_mode))
		ln_error(LN_INVALID_INPUT, "staging manifest \"%s\" is not a regular file", manifest_path);

	if (v1_naming)
		final_name = psprintf(INT64_FORMAT ".manifest", version);
	else
		final_name =
			psprintf("%020llu.manifest", (unsigned long long)(PG_UINT64_MAX - (uint64)version));

	copy->staging_file = staging;
	copy->final_file = psprintf("%s/%s", versions_dir, final_name);
	copy->final_path = psprintf("%.*s%s", (int)(strrchr(manifest_path, '/') - manifest_path + 1),
								manifest_path, final_name);
	copy->size = (int64)st.st_size;
	copy->already_final = strcmp(slash + 1, final_name) == 0;
}

static void
raise_io_error(const char *what, const char *path, int err)
{
	/* a name or a path the file system cannot take is the request's, not ours */
	if (err == ENAMETOOLONG || err == ELOOP)
		ln_error(LN_INVALID_INPUT, "could not %s \"%s\": %s", what, path, strerror(err));
	ln_error(LN_INTERNAL, "could not %s \"%s\": %s", what, path, strerror(err));
}

/* Copy src to a new file dst and flush it; returns the bytes copied. */
static int64
copy_file_flushed(const char *src, const char *dst)
{
	int in = OpenTransientFile(src, O_RDONLY | O_NOFOLLOW | PG_BINARY);
	int out;
	char buf[65536];
	int64 total = 0;
	ssize_t n;
	struct stat st;

	if (in < 0)
		raise_io_error("open staging manifest", src, errno);
	if (fstat(in, &st) != 0)
		raise_io_error("stat", src, errno);
	out = OpenTransientFilePerm(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY, 0600);
	if (out < 0)
		raise_io_error("create", dst, errno);
	/* readers of the table read the final manifest as they could read the staged one */
	if (fchmod(out, st.st_mode & 0777) != 0)
		raise_io_error("set the mode of", dst, errno);

	while ((n = read(in, buf, sizeof(buf))) != 0)
	{
		ssize_t off = 0;

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			raise_io_error("read", src, errno);
		}
		while (off < n)
		{
			ssize_t w = write(out, buf + off, n - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				raise_io_error("write", dst, w < 0 ? errno : ENOSPC);
			off += w;
		}
		total += n;
	}
	if (pg_fsync(out) != 0)
		raise_io_error("flush", dst, errno);
	CloseTransientFile(out);
	CloseTransientFile(in);
	return total;
}

static void
flush_folder(const char *file)
{
	char *dir = pstrdup(file);

	*strrchr(dir, '/') = '\0';
	/* ERROR, not the PANIC fsync_fname would raise: these are the user's folders */
	(void)fsync_fname_ext(dir, true, false, ERROR);
}

/*
 * Materialize a checked manifest at its final name.  The caller holds the
 * version's key in the catalog, so a final manifest already there is an
 * orphan of a writer that crashed or rolled back, and is replaced.
 */
void
storage_materialize_manifest(const ManifestCopy *copy)
{
	char *temp;
	uint32 nonce;
	int64 copied;

	if (copy->already_final)
		return;

	if (!pg_strong_random(&nonce, sizeof(nonce)))
		nonce = (uint32)MyProcPid;
	temp = psprintf("%s" TEMP_MARK "%s-%08x", copy->final_file, transaction_tag(), nonce);

	PG_TRY();
	{
		copied = copy_file_flushed(copy->staging_file, temp);
		if (copied != copy->size)
			ln_error(LN_CONCURRENT_MODIFICATION,
					 "staging manifest \"%s\" changed while it was copied", copy->staging_file);
		/* link() creates the final name only if it is free; rename() replaces an orphan */
		if (link(temp, copy->final_file) != 0)
		{
			if (errno != EEXIST || rename(temp, copy->final_file) != 0)
				raise_io_error("create manifest", copy->final_file, errno);
		}
		/* the staging file has served once the version commits */
		undo_created(copy->final_file, copy->staging_file);
	}
	PG_CATCH();
	{
		unlink(temp);
		PG_RE_THROW();
	}
	PG_END_TRY();
	(void)unlink(temp);
	flush_folder(copy->final_file);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw);

/* Undo one step on abort.  No error may escape: the transaction is ending. */
static void
undo_on_abort(const FileUndo *undo)
{
	struct stat st;

	/* remove what was made here, unless another writer has replaced it since */
	if (undo->created != NULL && lstat(undo->created, &st) == 0 && st.st_dev == undo->dev &&
		st.st_ino == undo->ino &&
		(S_ISDIR(st.st_mode) ? rmdir(undo->created) : unlink(undo->created)) != 0)
		ereport(WARNING, (errcode_for_file_access(),
						  errmsg("lance_namespace: could not remove \"%s\" after a rollback: %m",
								 undo->created)));
	if (undo->set_aside != NULL && rename(undo->set_aside, undo->original) != 0)
		ereport(WARNING, (errcode_for_file_access(),
						  errmsg("lance_namespace: could not put \"%s\" back at \"%s\" after a "
								 "rollback: %m",
								 undo->set_aside, undo->original)));
}

static void
finish_on_commit(const FileUndo *undo)
{
	if (undo->remove_on_commit != NULL && unlink(undo->remove_on_commit) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("lance_namespace: could not remove \"%s\": %m", undo->remove_on_commit)));
	if (undo->set_aside != NULL &&
		nftw(undo->set_aside, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0 &&
		errno != ENOENT)
		ereport(WARNING, (errcode_for_file_access(),
						  errmsg("lance_namespace: could not remove \"%s\": %m", undo->set_aside)));
}

static void
storage_xact_callback(XactEvent event, void *arg pg_attribute_unused())
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (undo_list != NULL || pending_refs != NULL)
				ln_error(LN_UNSUPPORTED, "cannot prepare a transaction that changed files on "
										 "local storage (versions, tags or branches)");
			break;
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			apply_pending_refs();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			for (FileUndo *u = undo_list; u != NULL; u = u->next)
				finish_on_commit(u);
			undo_list = NULL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			discard_pending_refs(true, InvalidSubTransactionId);
			for (FileUndo *u = undo_list; u != NULL; u = u->next)
				undo_on_abort(u);
			undo_list = NULL;
			break;
		default:
			break;
	}
}

static void
storage_subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
						 void *arg pg_attribute_unused())
{
	FileUndo **link = &undo_list;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
		discard_pending_refs(false, mySubid);
	else
		for (PendingRef *p = pending_refs; p != NULL; p = p->next)
			if (p->subid == mySubid)
				p->subid = parentSubid;
	while (*link != NULL)
	{
		FileUndo *u = *link;

		if (u->subid != mySubid)
			link = &u->next;
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			u->subid = parentSubid;
			link = &u->next;
		}
		else
		{
			undo_on_abort(u);
			*link = u->next;
		}
	}
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	/* FTW_PHYS: a symbolic link is an entry of its own, removed, never followed */
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/*
 * Remove a dropped table's folder.  Returns NULL on success (also when the
 * folder is gone already), else why nothing or not everything was removed.
 * Only a real folder strictly below a local root is removed: no symbolic
 * link on the way, and none inside is followed.
 */
char *
storage_remove_table_data(const char *location)
{
	char *path = location_local_path(location);
	char resolved[PATH_MAX];
	struct stat st;

	if (path == NULL || !storage_is_managed(location))
		return psprintf("\"%s\" is not below lance_namespace.local_roots", location);
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? NULL : psprintf("could not stat \"%s\": %m", path);
	if (!S_ISDIR(st.st_mode))
		return psprintf("\"%s\" is not a folder", path);
	if (realpath(path, resolved) == NULL || strcmp(resolved, path) != 0)
		return psprintf("\"%s\" has a symbolic link on its path", path);
	if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
		return psprintf("could not remove \"%s\": %m", path);
	return NULL;
}

/*
 * Refs: a table's tags and branches, kept where Lance keeps them, in
 * _refs/tags/<name>.json and _refs/branches/<name>.json of the table's
 * folder, so that the catalog and Lance see the same ones.  Names are
 * written as object store path segments ('/' as %2F), as Lance does.
 */

/* The folder of a managed table; the caller has checked that it is managed. */
static char *
table_folder(const char *location)
{
	char *path = location_local_path(location);

	Assert(path != NULL);
	return path;
}

static char *
refs_folder(const char *location, const char *kind)
{
	return psprintf("%s/_refs/%s", table_folder(location), kind);
}

static char *
ref_file(const char *location, const char *kind, const char *name)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s/", refs_folder(location, kind));
	for (const char *c = name; *c; c++)
	{
		if (*c == '/' || *c == '%')
			appendStringInfo(&buf, "%%%02X", (unsigned char)*c);
		else
			appendStringInfoChar(&buf, *c);
	}
	appendStringInfoString(&buf, ".json");
	return buf.data;
}

/* The content of a file, or NULL if there is none; *len gets its size when not NULL. */
static char *
read_file_bytes(const char *path, size_t *len)
{
	StringInfoData buf;
	char chunk[8192];
	ssize_t n;
	int fd = OpenTransientFile(path, O_RDONLY | O_NOFOLLOW | PG_BINARY);

	if (fd < 0)
	{
		if (errno == ENOENT)
			return NULL;
		raise_io_error("open", path, errno);
	}
	initStringInfo(&buf);
	while ((n = read(fd, chunk, sizeof(chunk))) != 0)
	{
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			raise_io_error("read", path, errno);
		}
		if ((size_t)buf.len + n >= MaxAllocSize / 2)
			ln_error(LN_INVALID_TABLE_STATE, "\"%s\" is too large to be a manifest or a ref", path);
		appendBinaryStringInfo(&buf, chunk, (int)n);
	}
	CloseTransientFile(fd);
	if (len != NULL)
		*len = buf.len;
	return buf.data;
}

static char *
read_file_text(const char *path)
{
	return read_file_bytes(path, NULL);
}

/* This transaction's newest pending change of `path`, or NULL. */
static PendingRef *
pending_change(const char *path)
{
	for (PendingRef *p = pending_refs; p != NULL; p = p->next)
		if (strcmp(p->path, path) == 0)
			return p;
	return NULL;
}

/* True if this transaction removes a folder that holds `path`. */
static bool
pending_removal_above(const char *path)
{
	for (PendingRef *p = pending_refs; p != NULL; p = p->next)
	{
		size_t len = strlen(p->path);

		if (p->temp == NULL && strncmp(p->path, path, len) == 0 && path[len] == '/')
			return true;
	}
	return false;
}

/* Whether a ref file exists, as this transaction sees it. */
static bool
ref_exists(const char *path)
{
	PendingRef *p = pending_change(path);
	struct stat st;

	if (p != NULL)
		return p->temp != NULL;
	return lstat(path, &st) == 0;
}

static void
add_pending(const char *path, const char *folder, const char *name, const char *temp, bool create)
{
	PendingRef *p = MemoryContextAllocZero(TopTransactionContext, sizeof(PendingRef));

	p->path = MemoryContextStrdup(TopTransactionContext, path);
	p->folder = folder ? MemoryContextStrdup(TopTransactionContext, folder) : NULL;
	p->name = name ? MemoryContextStrdup(TopTransactionContext, name) : NULL;
	p->temp = temp ? MemoryContextStrdup(TopTransactionContext, temp) : NULL;
	p->create = create;
	p->subid = GetCurrentSubTransactionId();
	p->next = pending_refs;
	pending_refs = p;
}

/* The content of a ref file, as this transaction sees it, or NULL if there is none. */
char *
storage_read_ref(const char *location, const char *kind, const char *name)
{
	char *path = ref_file(location, kind, name);
	PendingRef *p = pending_change(path);

	if (p != NULL)
		return p->temp != NULL ? read_file_text(p->temp) : NULL;
	return read_file_text(path);
}

/* Make a folder readable by every reader of the table (the server's umask would hide it). */
static void
make_folder(const char *path)
{
	check_real_parent(path);
	if (mkdir(path, 0755) == 0)
	{
		if (chmod(path, 0755) != 0)
			raise_io_error("set the mode of", path, errno);
	}
	else if (errno == ENOENT)
		ln_error(LN_INVALID_TABLE_STATE, "the table's folder is missing: \"%s\" has no parent",
				 path);
	else if (errno != EEXIST)
		raise_io_error("create folder", path, errno);
}

/* Write `len` bytes to a new flushed file next to `path`; returns its name. */
static char *
write_temp_bytes(const char *path, const char *content, size_t len)
{
	uint32 nonce;
	char *temp;
	int fd;

	if (!pg_strong_random(&nonce, sizeof(nonce)))
		nonce = (uint32)MyProcPid;
	temp = psprintf("%s" TEMP_MARK "%s-%08x", path, transaction_tag(), nonce);
	fd = OpenTransientFilePerm(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY, 0644);
	if (fd < 0)
		raise_io_error("create", temp, errno);
	if (fchmod(fd, 0644) != 0 || write(fd, content, len) != (ssize_t)len || pg_fsync(fd) != 0)
	{
		int err = errno;

		CloseTransientFile(fd);
		unlink(temp);
		raise_io_error("write", temp, err);
	}
	CloseTransientFile(fd);
	return temp;
}

static char *
write_temp(const char *path, const char *content)
{
	return write_temp_bytes(path, content, strlen(content));
}

/*
 * Write a ref file, all at once when the transaction commits.  `create`:
 * only if there is none (false if there is one); otherwise only over an
 * existing one (false if there is none).
 */
bool
storage_write_ref(const char *location, const char *kind, const char *name, const char *content,
				  bool create)
{
	char *path = ref_file(location, kind, name);

	make_folder(psprintf("%s/_refs", table_folder(location)));
	make_folder(refs_folder(location, kind));
	if (ref_exists(path) == create)
		return false;
	check_real_parent(path);
	add_pending(path, refs_folder(location, kind), name, write_temp(path, content), create);
	return true;
}

/* Delete a ref file when the transaction commits; false if there is none. */
bool
storage_delete_ref(const char *location, const char *kind, const char *name)
{
	char *path = ref_file(location, kind, name);

	if (!ref_exists(path))
		return false;
	add_pending(path, refs_folder(location, kind), name, NULL, false);
	return true;
}

/*
 * Make the folders between `below` (which exists) and the file `path`,
 * readable by every reader of the table, each undone if the transaction
 * still aborts.
 */
static void
make_parent_folders(const char *below, const char *path)
{
	char *folder = pstrdup(path);
	size_t start = strlen(below) + 1;

	for (char *c = folder + start; (c = strchr(c, '/')) != NULL; c++)
	{
		*c = '\0';
		check_real_parent(folder);
		if (mkdir(folder, 0755) == 0)
		{
			if (chmod(folder, 0755) != 0)
				raise_io_error("set the mode of", folder, errno);
			undo_created(folder, NULL);
		}
		else if (errno != EEXIST)
			raise_io_error("create folder", folder, errno);
		*c = '/';
	}
}

/* Move one pending change into place, at pre-commit. */
static void
apply_pending(const PendingRef *p)
{
	if (p->temp == NULL)
	{
		(void)set_aside(p->path);
		return;
	}
	if (p->parents_below != NULL)
		make_parent_folders(p->parents_below, p->path);
	check_real_parent(p->path);
	if (p->create)
	{
		int rc = link(p->temp, p->path);
		int err = errno;

		(void)unlink(p->temp);
		if (rc != 0 && err == EEXIST)
			ln_error(LN_CONCURRENT_MODIFICATION,
					 "\"%s\" was created by another writer while this transaction ran", p->name);
		if (rc != 0)
			raise_io_error("create", p->path, err);
	}
	else
	{
		(void)set_aside(p->path);
		if (rename(p->temp, p->path) != 0)
		{
			int err = errno;

			(void)unlink(p->temp);
			raise_io_error("replace", p->path, err);
		}
	}
	undo_created(p->path, NULL);
	flush_folder(p->path);
}

/*
 * Apply every pending change, oldest first.  Each is taken off the list as
 * it is applied: if one fails the transaction aborts, undo_list restores
 * what was applied, and the abort discards what was not.
 */
static void
apply_pending_refs(void)
{
	PendingRef *oldest_first = NULL;

	while (pending_refs != NULL)
	{
		PendingRef *p = pending_refs;

		pending_refs = p->next;
		p->next = oldest_first;
		oldest_first = p;
	}
	pending_refs = oldest_first;
	while (pending_refs != NULL)
	{
		PendingRef *p = pending_refs;

		pending_refs = p->next;
		PG_TRY();
		{
			apply_pending(p);
		}
		PG_CATCH();
		{
			if (p->temp != NULL)
				(void)unlink(p->temp);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
}

/* Drop pending changes (all, or those of one subtransaction) and their files. */
static void
discard_pending_refs(bool all, SubTransactionId subid)
{
	PendingRef **link = &pending_refs;

	while (*link != NULL)
	{
		PendingRef *p = *link;

		if (!all && p->subid != subid)
		{
			link = &p->next;
			continue;
		}
		if (p->temp != NULL)
			(void)unlink(p->temp);
		*link = p->next;
	}
}

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of a table's refs of one kind, in byte order. */
int
storage_list_refs(const char *location, const char *kind, char ***names)
{
	char *folder = refs_folder(location, kind);
	DIR *dir = AllocateDir(folder);
	struct dirent *de;
	int n = 0;
	int capacity = 16;

	*names = palloc(sizeof(char *) * capacity);
	if (dir == NULL && errno == ENOENT)
		return 0;
	while ((de = ReadDir(dir, folder)) != NULL)
	{
		size_t len = strlen(de->d_name);
		char *name;

		/* <name>.json; temporary and set-aside files end otherwise */
		if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		name = location_percent_decode(de->d_name, len - 5, false);
		if (name == NULL)
			continue;
		if (n == capacity)
			*names = repalloc(*names, sizeof(char *) * (capacity *= 2));
		(*names)[n++] = name;
	}
	FreeDir(dir);

	/* what this transaction creates and removes, oldest change first */
	for (PendingRef *p = pending_refs; p != NULL; p = p->next)
	{
		PendingRef *newest;
		int k;

		if (p->folder == NULL || strcmp(p->folder, folder) != 0 ||
			(newest = pending_change(p->path)) != p)
			continue;
		for (k = 0; k < n && strcmp((*names)[k], p->name) != 0; k++)
			;
		if (p->temp != NULL && k == n)
		{
			if (n == capacity)
				*names = repalloc(*names, sizeof(char *) * (capacity *= 2));
			(*names)[n++] = pstrdup(p->name);
		}
		else if (p->temp == NULL && k < n)
			(*names)[k] = (*names)[--n];
	}
	qsort(*names, n, sizeof(char *), compare_names);
	return n;
}

/* True if Lance's file or folder of a branch exists. */
bool
storage_branch_exists(const char *location, const char *branch)
{
	struct stat st;

	char *versions = psprintf("%s/tree/%s/_versions", table_folder(location), branch);

	if (storage_read_ref(location, "branches", branch) != NULL)
		return true;
	return !pending_removal_above(versions) && lstat(versions, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Set aside the folder a branch's versions live in, Lance's tree/<branch>,
 * when the deletion commits (and remove it once it has).  Branches below it (tree/a/b for
 * branch a) live inside that folder: then it stays, as Lance leaves it.
 */
void
storage_delete_branch_data(const char *location, const char *branch, bool has_children)
{
	if (!has_children)
		add_pending(psprintf("%s/tree/%s", table_folder(location), branch), NULL, NULL, NULL,
					false);
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
	LOCKTAG tag;

	/* the last field is never 1 or 2, as pg_advisory_lock() sets it: no application's lock */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0,
						 hash_bytes((const unsigned char *)path, strlen(path)), 0x4446 /* "DF" */);
	(void)LockAcquire(&tag, exclusive ? ExclusiveLock : ShareLock, false, false);
}

/* A manifest path as the catalog records it (Lance's form) as a local path. */
static char *
manifest_local_path(const char *manifest_path)
{
	if (strncmp(manifest_path, "file://", 7) == 0)
		manifest_path += 7;
	return manifest_path[0] == '/' ? pstrdup(manifest_path) : psprintf("/%s", manifest_path);
}

/*
 * The bytes of a manifest of a managed table, e.g. a branch's fork point,
 * by the path the catalog records for it, which must be a file inside the
 * table's folder.
 */
char *
storage_read_table_manifest(const char *location, const char *manifest_path, size_t *len)
{
	char *folder = table_folder(location);
	char *path = manifest_local_path(manifest_path);
	size_t flen = strlen(folder);
	char *bytes;

	if (!location_path_is_plain(path) || strncmp(path, folder, flen) != 0 || path[flen] != '/')
		ln_error(LN_INVALID_TABLE_STATE, "manifest \"%s\" is not in the table's folder",
				 manifest_path);
	check_real_parent(path);
	bytes = read_file_bytes(path, len);
	if (bytes == NULL)
		ln_error(LN_INVALID_TABLE_STATE, "manifest \"%s\" does not exist", manifest_path);
	return bytes;
}

/*
 * Write the first manifest of branch `branch` (its fork version `version`)
 * where Lance keeps it, tree/<branch>/_versions/ with V2 naming, when the
 * transaction commits; the folders appear with it.  Answers its path in the
 * form of `like_path`, another manifest path the catalog records.
 */
char *
storage_write_branch_manifest(const char *location, const char *branch, int64 version,
							  const char *bytes, size_t len, const char *like_path)
{
	char *folder = table_folder(location);
	char *name = psprintf("%020" INT64_MODIFIER "u.manifest", PG_UINT64_MAX - (uint64)version);
	char *path = psprintf("%s/tree/%s/_versions/%s", folder, branch, name);
	char *temp;

	/* the new content waits where it can: the branch's folders do not exist before the commit */
	make_folder(psprintf("%s/_refs", folder));
	make_folder(psprintf("%s/_refs/branches", folder));
	temp = write_temp_bytes(psprintf("%s/_refs/branches/%s", folder, name), bytes, len);
	add_pending(path, NULL, NULL, temp, true);
	pending_refs->parents_below = MemoryContextStrdup(TopTransactionContext, folder);

	if (strncmp(like_path, "file://", 7) == 0)
		return psprintf("file://%s", path);
	return like_path[0] == '/' ? path : pstrdup(path + 1);
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

	if (!TransactionIdIsNormal(xid) || !FullTransactionIdPrecedes(fxid, next) ||
		U64FromFullTransactionId(next) - full_xid >= (uint64)1 << 31)
		return LEFTOVER_IN_FLIGHT; /* not one of ours, or too old to look up */
	LWLockAcquire(XactTruncationLock, LW_SHARED);
	known = !TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid);
	LWLockRelease(XactTruncationLock);
	if (!known || TransactionIdIsInProgress(xid))
		return LEFTOVER_IN_FLIGHT;
	return TransactionIdDidCommit(xid) ? LEFTOVER_COMMITTED : LEFTOVER_NOT_COMMITTED;
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

static int
sweep_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const char *name = path + ftw->base;
	const char *mark;
	uint64 full_xid;
	LeftoverOutcome outcome;

	(void)st;
	(void)flag; /* files and (after their contents) folders alike */
	if ((mark = strstr(name, TEMP_MARK)) != NULL && leftover_xid(mark, TEMP_MARK, &full_xid))
	{
		if (outcome_of(full_xid) != LEFTOVER_IN_FLIGHT && unlink(path) == 0)
			sweep_removed++;
		return 0;
	}
	if ((mark = strstr(name, SET_ASIDE_MARK)) == NULL ||
		!leftover_xid(mark, SET_ASIDE_MARK, &full_xid))
		return 0;
	outcome = outcome_of(full_xid);
	if (outcome == LEFTOVER_NOT_COMMITTED)
	{
		char *original = pnstrdup(path, mark - path);
		struct stat there;

		if (lstat(original, &there) != 0 && errno == ENOENT && rename(path, original) == 0)
		{
			sweep_restored++;
			return 0;
		}
	}
	if (outcome != LEFTOVER_IN_FLIGHT &&
		nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0)
		sweep_removed++;
	return 0;
}

/*
 * Sweep the leftovers of transactions that ended without finishing their
 * files (a crash) in a managed table's folder: its _versions, _refs and
 * tree (branches) folders, never following a link.  Adds to the counts of
 * files removed and originals put back.
 */
void
storage_sweep_table(const char *location, int *removed, int *restored)
{
	static const char *const parts[] = {"_versions", "_refs", "tree"};
	char *folder;

	if (!storage_is_managed(location))
		return;
	folder = table_folder(location);
	sweep_removed = sweep_restored = 0;
	for (size_t i = 0; i < lengthof(parts); i++)
	{
		CHECK_FOR_INTERRUPTS();
		/* FTW_DEPTH: a set-aside folder is seen after its contents, then handled whole */
		(void)nftw(psprintf("%s/%s", folder, parts[i]), sweep_entry, 16,
				   FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	}
	*removed += sweep_removed;
	*restored += sweep_restored;
}
