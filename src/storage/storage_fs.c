/*
 * storage_fs.c
 *		File operations under the local roots through directory descriptors.
 *
 * Checking a path and then acting by the same path lets a folder swapped
 * for a symbolic link in between redirect the action anywhere the server
 * can write.  So every folder is opened from the root downward without
 * following links (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where
 * the kernel has it, else one openat with O_NOFOLLOW | O_DIRECTORY per
 * component), and the caller acts relative to the descriptor it got: a
 * folder moved after it was opened takes the descriptor with it, and a link
 * put in its place is never followed.
 *
 * The descriptors are held in a small table so that an error (any ereport
 * between an open and its close) cannot leak them: what is still held is
 * closed when the subtransaction or the transaction ends (fs_release).
 * Each also counts as one of the server's external descriptors
 * (ReserveExternalFD), as PostgreSQL asks of files it does not manage.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/fd.h"

#include "../common/error.h"
#include "storage_fs.h"

/*
 * Descriptors and folder streams held, with the subtransaction that opened
 * them.  A tree walk holds one per level, so it stops at FS_MAX_DEPTH (a
 * sweep's walk and a removal inside it fit in the table together).
 */
#define FS_MAX_HELD	 256
#define FS_MAX_DEPTH 100

typedef struct HeldFd
{
	int fd;	  /* -1 for a folder stream */
	DIR *dir; /* NULL for a descriptor */
	SubTransactionId subid;
} HeldFd;

static HeldFd held[FS_MAX_HELD];
static int n_held = 0;

/* Raise before opening anything when the table is full (never when it was just released). */
static void
reserve_slot(int count)
{
	if (n_held + count > FS_MAX_HELD)
		ln_error(LN_INTERNAL, "too many folders open on local storage");
}

static void
hold(int fd, DIR *dir)
{
	Assert(n_held < FS_MAX_HELD);
	held[n_held].fd = fd;
	held[n_held].dir = dir;
	held[n_held].subid = GetCurrentSubTransactionId();
	n_held++;
}

/* Take a descriptor or stream off the table; false if it was not held. */
static bool
unhold(int fd, DIR *dir)
{
	for (int i = n_held - 1; i >= 0; i--)
	{
		if ((dir != NULL && held[i].dir == dir) || (dir == NULL && held[i].fd == fd))
		{
			held[i] = held[--n_held];
			return true;
		}
	}
	return false;
}

static void
close_held(const HeldFd *h)
{
	if (h->dir != NULL)
		(void)closedir(h->dir);
	else
		(void)close(h->fd);
	ReleaseExternalFD();
}

void
fs_close(int fd)
{
	if (fd < 0)
		return;
	if (unhold(fd, NULL))
	{
		HeldFd h = {fd, NULL, InvalidSubTransactionId};

		close_held(&h);
	}
	else
		(void)close(fd);
}

void
fs_release(bool all, SubTransactionId subid)
{
	for (int i = n_held - 1; i >= 0; i--)
	{
		if (all || held[i].subid == subid)
		{
			HeldFd h = held[i];

			held[i] = held[--n_held];
			close_held(&h);
		}
	}
}

void
fs_reassign(SubTransactionId from, SubTransactionId to)
{
	for (int i = 0; i < n_held; i++)
		if (held[i].subid == from)
			held[i].subid = to;
}

/* openat() counted as one external descriptor; -1 with errno on failure. */
static int
counted_openat(int dirfd, const char *name, int flags, mode_t mode)
{
	int fd;
	int err;

	ReserveExternalFD();
	do
		fd = openat(dirfd, name, flags | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR);
	if (fd >= 0)
		return fd;
	err = errno;
	ReleaseExternalFD();
	errno = err;
	return -1;
}

static void
counted_close(int fd)
{
	(void)close(fd);
	ReleaseExternalFD();
}

int
fs_open_at(int dirfd, const char *name, int flags, mode_t mode)
{
	int fd;

	reserve_slot(1);
	fd = counted_openat(dirfd, name, flags | O_NOFOLLOW, mode);
	if (fd >= 0)
		hold(fd, NULL);
	return fd;
}

/*
 * Open `rest` (relative, no "." or ".." components) below `rootfd` one
 * component at a time, none followed if it is a link.  Intermediate folders
 * are opened O_PATH (searching them is all that is needed), the last one
 * read-only.
 */
static int
walk_beneath(int rootfd, const char *rest, size_t *link_len)
{
	char *copy = pstrdup(rest);
	char *comp = copy;
	int cur = rootfd;

	for (;;)
	{
		char *slash = strchr(comp, '/');
		bool last;
		int fd;
		int err = 0;

		if (slash != NULL)
			*slash = '\0';
		last = slash == NULL || slash[1] == '\0';
		if (comp[0] == '\0' || strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
		{
			fd = -1;
			err = EINVAL; /* callers pass normalized paths */
		}
		else
		{
			fd =
				counted_openat(cur, comp, (last ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW, 0);
			if (fd < 0)
			{
				struct stat st;

				err = errno;
				/*
				 * O_NOFOLLOW | O_DIRECTORY on a link answers ENOTDIR (or
				 * ELOOP).  A folder there now was something else a moment
				 * ago: a link swapped back, as good as a link.
				 */
				if ((err == ENOTDIR || err == ELOOP) &&
					fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
					(S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)))
				{
					err = ELOOP;
					if (link_len != NULL)
						*link_len = (size_t)(comp - copy) + strlen(comp);
				}
			}
		}
		if (cur != rootfd)
			counted_close(cur);
		if (fd < 0)
		{
			pfree(copy);
			errno = err;
			return -1;
		}
		if (last)
		{
			pfree(copy);
			return fd;
		}
		cur = fd;
		comp = slash + 1;
	}
}

#ifdef SYS_openat2
static bool openat2_missing = false;
#endif

/*
 * The same through openat2(): the kernel resolves `rest` below `rootfd` and
 * refuses any link on the way.  -2 when openat2 cannot say (not there, or a
 * failure that the component walk explains better).
 */
static int
openat2_beneath(int rootfd, const char *rest)
{
#ifdef SYS_openat2
	struct open_how how;
	int fd;
	int err;

	if (openat2_missing)
		return -2;
	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	ReserveExternalFD();
	for (int attempt = 0; attempt < 4; attempt++)
	{
		fd = (int)syscall(SYS_openat2, rootfd, rest, &how, sizeof(how));
		if (fd >= 0 || (errno != EAGAIN && errno != EINTR))
			break;
	}
	if (fd >= 0)
		return fd;
	err = errno;
	ReleaseExternalFD();
	if (err == ENOSYS || err == E2BIG || err == EPERM)
		openat2_missing = true; /* an old kernel, or a sandbox that forbids it */
	if (err == ENOENT || err == EACCES || err == ENAMETOOLONG || err == EMFILE || err == ENFILE)
	{
		errno = err;
		return -1;
	}
	/* a link (ELOOP), not a folder, EAGAIN, ...: the walk says which part */
#endif
	(void)rootfd;
	(void)rest;
	return -2;
}

int
fs_open_folder(const char *root, const char *path, size_t *link_len)
{
	size_t root_len = strlen(root);
	const char *rest;
	char *root_copy;
	int rootfd;
	int fd;
	int err;

	while (root_len > 1 && root[root_len - 1] == '/')
		root_len--;
	if (strncmp(path, root, root_len) != 0 ||
		(path[root_len] != '/' && path[root_len] != '\0' && root_len > 1))
	{
		errno = EXDEV; /* not below the root: callers never ask */
		return -1;
	}
	rest = path + root_len;
	while (*rest == '/')
		rest++;

	reserve_slot(1);
	root_copy = pnstrdup(root, root_len);
	rootfd = counted_openat(AT_FDCWD, root_copy, (rest[0] ? O_PATH : O_RDONLY) | O_DIRECTORY, 0);
	pfree(root_copy);
	if (rootfd < 0)
		return -1;
	if (rest[0] == '\0')
		fd = rootfd;
	else
	{
		if (link_len != NULL)
			*link_len = strlen(rest); /* the walk names the link's component */
		fd = openat2_beneath(rootfd, rest);
		if (fd == -2)
			fd = walk_beneath(rootfd, rest, link_len);
		err = errno;
		if (link_len != NULL && fd < 0 && err == ELOOP)
			*link_len += (size_t)(rest - path);
		counted_close(rootfd);
		errno = err;
	}
	if (fd >= 0)
		hold(fd, NULL);
	return fd;
}

bool
fs_stat_at(int dirfd, const char *name, struct stat *st)
{
	return fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0;
}

int
fs_list(int dirfd, char ***names)
{
	int fd;
	DIR *dir;
	struct dirent *de;
	int n = 0;
	int capacity = 16;

	/* a descriptor of its own: a stream's position must not be shared */
	reserve_slot(1);
	fd = counted_openat(dirfd, ".", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return -1;
	dir = fdopendir(fd);
	if (dir == NULL)
	{
		int err = errno;

		counted_close(fd);
		errno = err;
		return -1;
	}
	hold(-1, dir);
	*names = palloc(sizeof(char *) * capacity);
	for (;;)
	{
		/* held off in commit and abort callbacks, where this must run to its end */
		CHECK_FOR_INTERRUPTS();
		errno = 0;
		de = readdir(dir);
		if (de == NULL)
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == capacity)
			*names = repalloc(*names, sizeof(char *) * (capacity *= 2));
		(*names)[n++] = pstrdup(de->d_name);
	}
	if (errno != 0)
	{
		int err = errno;

		if (unhold(-1, dir))
		{
			(void)closedir(dir);
			ReleaseExternalFD();
		}
		errno = err;
		return -1;
	}
	(void)unhold(-1, dir);
	(void)closedir(dir);
	ReleaseExternalFD();
	return n;
}

/* See fs_remove_tree_at: remove entry `name` of `dirfd`, on file system `dev`. */
static int
remove_tree(int dirfd, const char *name, dev_t dev, int depth)
{
	for (int attempt = 0; attempt < 4; attempt++)
	{
		struct stat st;
		char **names = NULL;
		int n;
		int fd;
		int err = 0;

		if (!fs_stat_at(dirfd, name, &st))
			return errno == ENOENT ? 0 : errno;
		if (!S_ISDIR(st.st_mode))
		{
			/* a file or a link: the link goes, its target stays */
			if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
				return 0;
			if (errno == EISDIR)
				continue; /* a folder took its place meanwhile */
			return errno;
		}
		if (st.st_dev != dev)
			return EXDEV; /* another file system mounted here: not ours to empty */
		if (depth >= FS_MAX_DEPTH)
			return ENAMETOOLONG;
		fd = fs_open_at(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0)
		{
			if (errno == ENOTDIR || errno == ELOOP)
				continue; /* no longer a folder: removed as what it is now */
			return errno == ENOENT ? 0 : errno;
		}
		n = fs_list(fd, &names);
		if (n < 0)
			err = errno;
		for (int i = 0; i < n; i++)
		{
			int e;

			CHECK_FOR_INTERRUPTS();
			e = remove_tree(fd, names[i], dev, depth + 1);

			if (e != 0 && err == 0)
				err = e;
			pfree(names[i]);
		}
		if (names != NULL)
			pfree(names);
		fs_close(fd);
		/* only an empty folder goes: whatever took its place meanwhile is left */
		if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT && err == 0)
			err = errno;
		return err;
	}
	return EAGAIN;
}

int
fs_remove_tree_at(int dirfd, const char *name)
{
	struct stat st;

	if (!fs_stat_at(dirfd, name, &st))
		return errno == ENOENT ? 0 : errno;
	return remove_tree(dirfd, name, st.st_dev, 0);
}

static void
walk(int dirfd, dev_t dev, int depth, fs_visitor visit, void *arg)
{
	char **names;
	int n = fs_list(dirfd, &names);

	for (int i = 0; i < n; i++)
	{
		struct stat st;

		CHECK_FOR_INTERRUPTS();
		if (depth < FS_MAX_DEPTH && fs_stat_at(dirfd, names[i], &st) && S_ISDIR(st.st_mode) &&
			st.st_dev == dev)
		{
			int fd = fs_open_at(dirfd, names[i], O_RDONLY | O_DIRECTORY, 0);

			if (fd >= 0)
			{
				walk(fd, dev, depth + 1, visit, arg);
				fs_close(fd);
			}
		}
		visit(dirfd, names[i], arg);
	}
}

void
fs_walk(int dirfd, fs_visitor visit, void *arg)
{
	struct stat st;

	if (fstat(dirfd, &st) == 0)
		walk(dirfd, st.st_dev, 0, visit, arg);
}
