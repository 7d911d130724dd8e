/*
 * storage_refs.c
 *		Refs: a table's tags and branches, kept where Lance keeps them, in
 *		_refs/tags/<name>.json and _refs/branches/<name>.json of the table's
 *		folder, so that the catalog and Lance see the same ones.  Names are
 *		written as object store path segments ('/' as %2F), as Lance does.
 *
 * A change waits for the commit: readers of the table (Lance clients) must
 * not see a tag or branch that a transaction still in flight may roll back.
 * The new content is written and flushed at once, next to its final name;
 * at pre-commit it is moved into place (and recorded in the undo list of
 * storage_local.c, in case the commit fails after that).  Reads of the same
 * transaction see the pending state.  As for manifests, every file is
 * reached through a descriptor of its folder opened from the local root
 * without following links, never by its path.
 */
#include "postgres.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "../common/error.h"
#include "location.h"
#include "storage.h"
#include "storage_internal.h"

/* A pending change of one ref file or branch folder.  Newest first. */
typedef struct PendingRef
{
	char *root;			 /* the local root the paths are below */
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
	const char *leaf;
	int dirfd = storage_open_parent(storage_root_of(path), path, &leaf, true);
	int fd;

	if (dirfd < 0)
		return NULL;
	fd = fs_open_at(dirfd, leaf, O_RDONLY | O_NONBLOCK | PG_BINARY, 0);
	fs_close(dirfd);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return NULL;
		storage_io_error("open", path, errno);
	}
	initStringInfo(&buf);
	while ((n = read(fd, chunk, sizeof(chunk))) != 0)
	{
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			storage_io_error("read", path, errno);
		}
		if ((size_t)buf.len + n >= MaxAllocSize / 2)
			ln_error(LN_INVALID_TABLE_STATE, "\"%s\" is too large to be a manifest or a ref", path);
		appendBinaryStringInfo(&buf, chunk, (int)n);
	}
	fs_close(fd);
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

/* Whether entry `path` exists (a link counts, never followed); *st gets it. */
static bool
entry_exists(const char *path, struct stat *st)
{
	const char *leaf;
	int dirfd = storage_open_parent(storage_root_of(path), path, &leaf, true);
	bool exists;

	if (dirfd < 0)
		return false;
	exists = fs_stat_at(dirfd, leaf, st);
	fs_close(dirfd);
	return exists;
}

/* Whether a ref file exists, as this transaction sees it. */
static bool
ref_exists(const char *path)
{
	PendingRef *p = pending_change(path);
	struct stat st;

	if (p != NULL)
		return p->temp != NULL;
	return entry_exists(path, &st);
}

static void
add_pending(const char *path, const char *folder, const char *name, const char *temp, bool create)
{
	PendingRef *p = MemoryContextAllocZero(TopTransactionContext, sizeof(PendingRef));

	p->root = MemoryContextStrdup(TopTransactionContext, storage_root_of(path));
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
local_read_ref(const char *location, const char *kind, const char *name)
{
	char *path = ref_file(location, kind, name);
	PendingRef *p = pending_change(path);

	if (p != NULL)
		return p->temp != NULL ? read_file_text(p->temp) : NULL;
	return read_file_text(path);
}

/*
 * Make folder `path` in the folder open at `dirfd`, the server's OS user's
 * alone, as its manifests are (mode 0700, whatever the umask: the tables'
 * callers on this host run as that user or root, and no other local user
 * lists a table's branches).  False if it exists already; errno ENOENT if
 * the folder it was to be made in is gone.
 */
static bool
make_folder_at(int dirfd, const char *path)
{
	const char *leaf = strrchr(path, '/') + 1;
	int fd;

	if (mkdirat(dirfd, leaf, 0700) != 0)
	{
		if (errno == EEXIST)
			return false;
		if (errno == ENOENT)
			ln_error(LN_INVALID_TABLE_STATE, "the table's folder is missing: \"%s\" has no parent",
					 path);
		storage_io_error("create folder", path, errno);
	}
	fd = fs_open_at(dirfd, leaf, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0 || fchmod(fd, 0700) != 0)
		storage_io_error("set the mode of", path, errno);
	fs_close(fd);
	return true;
}

/* Make a folder of the table's if it is missing. */
static void
make_folder(const char *path)
{
	const char *leaf;
	int dirfd = storage_open_parent(storage_root_of(path), path, &leaf, true);

	if (dirfd < 0)
		ln_error(LN_INVALID_TABLE_STATE, "the table's folder is missing: \"%s\" has no parent",
				 path);
	(void)make_folder_at(dirfd, path);
	fs_close(dirfd);
}

/* Write `len` bytes to a new flushed file next to `path`; returns its name. */
static char *
write_temp_bytes(const char *path, const char *content, size_t len)
{
	const char *leaf;
	int dirfd = storage_open_parent(storage_root_of(path), path, &leaf, false);
	char *temp_leaf = storage_leftover_name(leaf, TEMP_MARK);
	char *temp = psprintf("%.*s%s", (int)(leaf - path), path, temp_leaf);
	int fd;

	fd = fs_open_at(dirfd, temp_leaf, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY, 0600);
	if (fd < 0)
		storage_io_error("create", temp, errno);
	if (fchmod(fd, 0600) != 0 || write(fd, content, len) != (ssize_t)len || pg_fsync(fd) != 0)
	{
		int err = errno;

		fs_close(fd);
		(void)unlinkat(dirfd, temp_leaf, 0);
		storage_io_error("write", temp, err);
	}
	fs_close(fd);
	fs_close(dirfd);
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
local_write_ref(const char *location, const char *kind, const char *name, const char *content,
				bool create)
{
	char *path = ref_file(location, kind, name);

	make_folder(psprintf("%s/_refs", table_folder(location)));
	make_folder(refs_folder(location, kind));
	if (ref_exists(path) == create)
		return false;
	add_pending(path, refs_folder(location, kind), name, write_temp(path, content), create);
	return true;
}

/* Delete a ref file when the transaction commits; false if there is none. */
bool
local_delete_ref(const char *location, const char *kind, const char *name)
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
make_parent_folders(const char *root, const char *below, const char *path)
{
	char *folder = pstrdup(path);
	size_t start = strlen(below) + 1;

	for (char *c = folder + start; (c = strchr(c, '/')) != NULL; c++)
	{
		const char *leaf;
		int dirfd;

		*c = '\0';
		dirfd = storage_open_parent(root, folder, &leaf, false);
		if (make_folder_at(dirfd, folder))
			storage_undo_created(root, dirfd, folder, NULL, NULL, -1);
		fs_close(dirfd);
		*c = '/';
	}
}

/* Move one pending change into place, at pre-commit. */
static void
apply_pending(const PendingRef *p)
{
	const char *leaf;
	const char *temp_leaf;
	int dirfd;
	int tempfd;

	if (p->temp == NULL)
	{
		dirfd = storage_open_parent(p->root, p->path, &leaf, true);
		if (dirfd >= 0)
		{
			(void)storage_set_aside(p->root, dirfd, p->path);
			fs_close(dirfd);
		}
		return;
	}
	if (p->parents_below != NULL)
		make_parent_folders(p->root, p->parents_below, p->path);
	dirfd = storage_open_parent(p->root, p->path, &leaf, false);
	tempfd = storage_open_parent(p->root, p->temp, &temp_leaf, false);
	if (p->create)
	{
		int rc = linkat(tempfd, temp_leaf, dirfd, leaf, 0);
		int err = errno;

		(void)unlinkat(tempfd, temp_leaf, 0);
		if (rc != 0 && err == EEXIST)
			ln_error(LN_CONCURRENT_MODIFICATION,
					 "\"%s\" was created by another writer while this transaction ran", p->name);
		if (rc != 0)
			storage_io_error("create", p->path, err);
	}
	else
	{
		(void)storage_set_aside(p->root, dirfd, p->path);
		if (renameat(tempfd, temp_leaf, dirfd, leaf) != 0)
		{
			int err = errno;

			(void)unlinkat(tempfd, temp_leaf, 0);
			storage_io_error("replace", p->path, err);
		}
	}
	fs_close(tempfd);
	storage_undo_created(p->root, dirfd, p->path, NULL, NULL, -1);
	storage_flush_folder(dirfd, p->path);
	fs_close(dirfd);
}

/* True if this transaction has ref changes waiting for its commit. */
bool
storage_refs_pending(void)
{
	return pending_refs != NULL;
}

/*
 * Apply every pending change, oldest first.  Each is taken off the list as
 * it is applied: if one fails the transaction aborts, the undo list restores
 * what was applied, and the abort discards what was not.
 */
void
storage_refs_apply(void)
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
				storage_unlink_quiet(p->root, p->temp);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
}

/* Drop pending changes (all, or those of one subtransaction) and their files. */
void
storage_refs_discard(bool all, SubTransactionId subid)
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
			storage_unlink_quiet(p->root, p->temp);
		*link = p->next;
	}
}

/* A committed subtransaction's pending changes become its parent's. */
void
storage_refs_reassign(SubTransactionId from, SubTransactionId to)
{
	for (PendingRef *p = pending_refs; p != NULL; p = p->next)
		if (p->subid == from)
			p->subid = to;
}

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of a table's refs of one kind, in byte order. */
int
local_list_refs(const char *location, const char *kind, char ***names)
{
	char *folder = refs_folder(location, kind);
	int dirfd = storage_open_folder(storage_root_of(folder), folder, true);
	char **entries;
	int n_entries;
	int n = 0;
	int capacity = 16;

	*names = palloc(sizeof(char *) * capacity);
	if (dirfd < 0)
		return 0;
	n_entries = fs_list(dirfd, &entries);
	if (n_entries < 0)
		storage_io_error("list", folder, errno);
	fs_close(dirfd);
	for (int i = 0; i < n_entries; i++)
	{
		const char *entry = entries[i];
		size_t len = strlen(entry);
		char *name;

		/* <name>.json; temporary and set-aside files end otherwise */
		if (len <= 5 || strcmp(entry + len - 5, ".json") != 0 || entry[0] == '.')
			continue;
		name = location_percent_decode(entry, len - 5, false);
		if (name == NULL)
			continue;
		if (n == capacity)
			*names = repalloc(*names, sizeof(char *) * (capacity *= 2));
		(*names)[n++] = name;
	}

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
local_branch_exists(const char *location, const char *branch)
{
	struct stat st;
	char *versions = psprintf("%s/tree/%s/_versions", table_folder(location), branch);

	if (local_read_ref(location, "branches", branch) != NULL)
		return true;
	return !pending_removal_above(versions) && entry_exists(versions, &st) && S_ISDIR(st.st_mode);
}

/*
 * Set aside the folder a branch's versions live in, Lance's tree/<branch>,
 * when the deletion commits (and remove it once it has).  Branches below it (tree/a/b for
 * branch a) live inside that folder: then it stays, as Lance leaves it.
 */
void
local_delete_branch_data(const char *location, const char *branch, bool has_children)
{
	if (!has_children)
		add_pending(psprintf("%s/tree/%s", table_folder(location), branch), NULL, NULL, NULL,
					false);
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
local_read_table_manifest(const char *location, const char *manifest_path, size_t *len)
{
	char *folder = table_folder(location);
	char *path = manifest_local_path(manifest_path);
	size_t flen = strlen(folder);
	char *bytes;

	if (!location_path_is_plain(path) || strncmp(path, folder, flen) != 0 || path[flen] != '/')
		ln_error(LN_INVALID_TABLE_STATE, "manifest \"%s\" is not in the table's folder",
				 manifest_path);
	bytes = read_file_bytes(path, len);
	if (bytes == NULL)
		ln_error(LN_INVALID_TABLE_STATE, "manifest \"%s\" does not exist", manifest_path);
	return bytes;
}

/* Whether a managed table's manifest exists; raises when that cannot be told. */
bool
local_manifest_exists(const char *location, const char *manifest_path)
{
	char *folder = table_folder(location);
	char *path = manifest_local_path(manifest_path);
	size_t flen = strlen(folder);
	const char *leaf;
	struct stat st;
	int dirfd;
	bool exists;

	if (!location_path_is_plain(path) || strncmp(path, folder, flen) != 0 || path[flen] != '/')
		ln_error(LN_INVALID_TABLE_STATE, "manifest \"%s\" is not in the table's folder",
				 manifest_path);
	/* -1 only for a folder on the way that does not exist; other failures raise */
	dirfd = storage_open_parent(storage_root_of(path), path, &leaf, true);
	if (dirfd < 0)
		return false;
	exists = fs_stat_at(dirfd, leaf, &st);
	if (!exists && errno != ENOENT)
	{
		int err = errno;

		fs_close(dirfd);
		storage_io_error("look up", path, err);
	}
	fs_close(dirfd);
	return exists;
}

/*
 * Write the first manifest of branch `branch` (its fork version `version`)
 * where Lance keeps it, tree/<branch>/_versions/ with V2 naming, when the
 * transaction commits; the folders appear with it.  Answers its path in the
 * form of `like_path`, another manifest path the catalog records.
 */
char *
local_write_branch_manifest(const char *location, const char *branch, int64 version,
							const char *bytes, size_t len, const char *like_path)
{
	char *folder = table_folder(location);
	char *name = psprintf("%020" PRIu64 ".manifest", PG_UINT64_MAX - (uint64)version);
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
