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

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "error.h"
#include "storage.h"

/* A final manifest this transaction made, to remove again if it rolls back. */
typedef struct MadeManifest
{
	char *final_file;
	char *staging_file;
	dev_t dev; /* identify our file: after an abort another */
	ino_t ino; /* writer may already have put its own there */
	SubTransactionId subid;
	struct MadeManifest *next;
} MadeManifest;

static MadeManifest *made_manifests = NULL;

static void storage_xact_callback(XactEvent event, void *arg);
static void storage_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									 SubTransactionId parentSubid, void *arg);

void
storage_init(void)
{
	RegisterXactCallback(storage_xact_callback, NULL);
	RegisterSubXactCallback(storage_subxact_callback, NULL);
}

/* True if no component of `path` is "." or ".." or empty (a "//"). */
static bool
path_is_plain(const char *path)
{
	const char *c = path;

	while (*c == '/')
		c++;
	while (*c)
	{
		size_t len = strcspn(c, "/");

		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += len;
		if (*c == '/')
			c++;
	}
	return true;
}

/* Decode a file:// URI's %XX escapes; NULL if one decodes to a NUL byte. */
static char *
uri_path_decode(const char *s)
{
	char *out = palloc(strlen(s) + 1);
	size_t n = 0;

	for (; *s; s++)
	{
		if (s[0] == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2]))
		{
			char hex[3] = {s[1], s[2], '\0'};

			out[n] = (char)strtol(hex, NULL, 16);
			if (out[n++] == '\0')
				return NULL;
			s += 2;
		}
		else
			out[n++] = *s;
	}
	out[n] = '\0';
	return out;
}

/*
 * The absolute file system path a location names, or NULL if it names none
 * we can use: an object store URI, a relative path, or a path with ".".
 * A file:// URI is percent-decoded, as Lance decodes it.
 */
static char *
location_local_path(const char *location)
{
	char *path;

	if (strncmp(location, "file://", 7) == 0)
	{
		location = uri_path_decode(location + 7);
		if (location == NULL)
			return NULL;
	}
	if (location[0] != '/' || !path_is_plain(location))
		return NULL;
	path = pstrdup(location);
	/* drop trailing slashes: "/a/t/" names the same folder as "/a/t" */
	for (size_t len = strlen(path); len > 1 && path[len - 1] == '/'; len--)
		path[len - 1] = '\0';
	return path;
}

/*
 * True if the catalog manages the versions of a table at `location`: a local
 * path strictly below one of the folders in lance_namespace.local_roots.
 */
bool
storage_is_managed(const char *location)
{
	char *path = location_local_path(location);
	char *roots;
	List *root_list;
	ListCell *lc;
	bool managed = false;

	if (path == NULL || ln_local_roots == NULL || ln_local_roots[0] == '\0')
		return false;

	roots = pstrdup(ln_local_roots);
	if (!SplitDirectoriesString(roots, ',', &root_list))
		return false; /* the setting's check hook refuses such a value */
	foreach (lc, root_list)
	{
		char *root = (char *)lfirst(lc);
		size_t len = strlen(root);

		while (len > 1 && root[len - 1] == '/')
			len--;
		if (strncmp(path, root, len) == 0 && path[len] == '/' && path[len + 1] != '\0')
		{
			managed = true;
			break;
		}
	}
	return managed;
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
	 * Lance sends object store paths: no scheme, no leading slash, and each
	 * segment percent-encoded (a '%' in a folder name arrives as "%25").
	 */
	staging = uri_path_decode(strncmp(manifest_path, "file://", 7) == 0 ? manifest_path + 7
																		: manifest_path);
	if (staging == NULL)
		ln_error(LN_INVALID_INPUT, "manifest_path \"%s\" encodes a NUL byte", manifest_path);
	if (staging[0] != '/')
		staging = psprintf("/%s", staging);
	slash = strrchr(staging, '/');
	if (!path_is_plain(staging) || slash[1] == '\0' ||
		strlen(versions_dir) != (size_t)(slash - staging) ||
		strncmp(staging, versions_dir, slash - staging) != 0)
		ln_error_detail(
			LN_INVALID_INPUT, psprintf("The table's manifests live in %s.", versions_dir),
			"manifest_path \"%s\" is not a file in the table's _versions folder", manifest_path);

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
	fsync_fname(dir, true);
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
	MadeManifest *made;
	MemoryContext old;
	struct stat st;
	int64 copied;

	if (copy->already_final)
		return;

	if (!pg_strong_random(&nonce, sizeof(nonce)))
		nonce = (uint32)MyProcPid;
	temp = psprintf("%s.tmp-%d-%08x", copy->final_file, MyProcPid, nonce);

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
		else if (unlink(temp) != 0)
			raise_io_error("remove", temp, errno);
	}
	PG_CATCH();
	{
		unlink(temp);
		PG_RE_THROW();
	}
	PG_END_TRY();
	flush_folder(copy->final_file);

	if (lstat(copy->final_file, &st) != 0)
		raise_io_error("stat", copy->final_file, errno);

	old = MemoryContextSwitchTo(TopTransactionContext);
	made = palloc(sizeof(MadeManifest));
	made->final_file = pstrdup(copy->final_file);
	made->staging_file = pstrdup(copy->staging_file);
	made->dev = st.st_dev;
	made->ino = st.st_ino;
	made->subid = GetCurrentSubTransactionId();
	made->next = made_manifests;
	made_manifests = made;
	MemoryContextSwitchTo(old);
}

/* Remove a final manifest we made, unless another writer has replaced it since. */
static void
remove_made_manifest(const MadeManifest *made)
{
	struct stat st;

	if (lstat(made->final_file, &st) != 0 || st.st_dev != made->dev || st.st_ino != made->ino)
		return;
	if (unlink(made->final_file) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("lance_namespace: could not remove manifest \"%s\" of a rolled back "
						"version: %m",
						made->final_file)));
}

static void
storage_xact_callback(XactEvent event, void *arg pg_attribute_unused())
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (made_manifests != NULL)
				ln_error(LN_UNSUPPORTED,
						 "cannot prepare a transaction that created table versions on local "
						 "storage");
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			/* the versions are committed: their staging files have served */
			for (MadeManifest *m = made_manifests; m != NULL; m = m->next)
				if (unlink(m->staging_file) != 0 && errno != ENOENT)
					ereport(WARNING, (errcode_for_file_access(),
									  errmsg("lance_namespace: could not remove staging manifest "
											 "\"%s\": %m",
											 m->staging_file)));
			made_manifests = NULL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			for (MadeManifest *m = made_manifests; m != NULL; m = m->next)
				remove_made_manifest(m);
			made_manifests = NULL;
			break;
		default:
			break;
	}
}

static void
storage_subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
						 void *arg pg_attribute_unused())
{
	MadeManifest **link = &made_manifests;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	while (*link != NULL)
	{
		MadeManifest *m = *link;

		if (m->subid != mySubid)
			link = &m->next;
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			m->subid = parentSubid;
			link = &m->next;
		}
		else
		{
			remove_made_manifest(m);
			*link = m->next;
		}
	}
}
