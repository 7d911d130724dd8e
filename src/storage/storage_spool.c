/*
 * storage_spool.c
 *		The undo a rollback could not finish, kept durably until a
 *		maintenance round takes it over.
 *
 * The undo of a rolled-back transaction runs in its abort callback, where
 * nothing may raise and the catalog cannot be written: the transaction's
 * rows are going, and any row written for it would go with them.  A step
 * that fails there (the store does not answer, a folder cannot be reached)
 * would be forgotten; instead it is written, with all it needs to be done
 * later, to a spool file in the data directory, flushed before the abort
 * ends (only then: a rollback whose undo succeeds writes nothing).  The
 * next maintenance round (lance_sweep_leftovers() or the background worker)
 * moves the spool's records into lance_catalog.storage_undo, which keeps
 * them, with their attempts, until they are done (storage_retry_undo); the
 * file is removed when that round commits.
 *
 * A spool file is a header and records; in the file a record is its 4-byte
 * length, its CRC-32C and its bytes, a list of fields, each a 4-byte length
 * (0xffffffff: none) and its bytes.  The catalog keeps a record's bytes as
 * they are, so that only this file knows the format.
 *
 * A record is checked before anything acts on it (its checksum, then every
 * field: storage_undo_decode), since a damaged or crafted file in the data
 * directory must not crash the server, nor make a round do something no
 * rollback asked for.  A file with any record that fails the checks is set
 * aside whole, renamed "<name>.bad" with a warning, and none of its records
 * is taken: every later round would meet it again, and a part of a file
 * cannot be trusted when another part is damaged.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/transam.h"
#include "access/xact.h"
#include "common/file_perm.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "../common/error.h"
#include "location.h"
#include "storage.h"
#include "storage_internal.h"

/* The spool's folder, in the data directory (a backend's working directory). */
#define SPOOL_DIR	"lance_namespace_undo"
#define SPOOL_MAGIC "LNUNDO2\n"
#define NO_FIELD	0xffffffffU
#define NUM_FIELDS	12

/* The records of this abort, in TopMemoryContext until they are written. */
static StringInfo spooled = NULL;
static int n_spooled = 0;
/* Spool files taken over by this transaction: removed when it commits. */
static List *taken_files = NIL;

static void
put_field(StringInfo buf, const char *bytes, size_t len, bool present)
{
	uint32 n = present ? (uint32)len : NO_FIELD;

	appendBinaryStringInfo(buf, (const char *)&n, sizeof(n));
	if (present)
		appendBinaryStringInfo(buf, bytes, (int)len);
}

static void
put_text(StringInfo buf, const char *s)
{
	put_field(buf, s, s ? strlen(s) : 0, s != NULL);
}

/* A record's bytes. */
static void
serialize(StringInfo buf, const StorageUndoStep *step)
{
	char number[32];

	put_field(buf, &step->action, 1, true);
	put_field(buf, step->s3 ? "s" : "l", 1, true);
	put_text(buf, step->location);
	put_text(buf, step->path);
	put_text(buf, step->set_aside);
	put_text(buf, step->branch);
	snprintf(number, sizeof(number), INT64_FORMAT, step->version);
	put_text(buf, number);
	snprintf(number, sizeof(number), UINT64_FORMAT ":" UINT64_FORMAT, step->dev, step->ino);
	put_text(buf, number);
	put_field(buf, step->content, step->content_len, step->content != NULL);
	put_field(buf, step->check_left ? "1" : "0", 1, true);
	put_field(buf, step->left, step->left_len, step->left != NULL);
	snprintf(number, sizeof(number), UINT64_FORMAT, step->xid);
	put_text(buf, number);
}

/* One field of a record at *pos; false if the record ends or is damaged. */
static bool
get_field(const char *rec, size_t len, size_t *pos, char **out, size_t *out_len)
{
	uint32 n;

	if (*pos + sizeof(n) > len)
		return false;
	memcpy(&n, rec + *pos, sizeof(n));
	*pos += sizeof(n);
	if (n == NO_FIELD)
	{
		*out = NULL;
		*out_len = 0;
		return true;
	}
	if (*pos + n > len)
		return false;
	*out = palloc(n + 1);
	memcpy(*out, rec + *pos, n);
	(*out)[n] = '\0';
	*out_len = n;
	*pos += n;
	return true;
}

/* True if field `f` of `len` bytes is text: present, without a NUL byte. */
static bool
is_text(const char *f, size_t len)
{
	return f != NULL && strlen(f) == len;
}

/* True if `s` is a whole decimal number (a '-' allowed if `sign`). */
static bool
is_number(const char *s, bool sign)
{
	if (sign && *s == '-')
		s++;
	return *s != '\0' && strspn(s, "0123456789") == strlen(s) && strlen(s) <= 20;
}

/*
 * True if `path` is an absolute path below folder `root` with a leaf: no
 * empty, "." or ".." part, so that it stays in `root`.
 */
static bool
is_path_below(const char *path, const char *root)
{
	size_t rlen = strlen(root);
	const char *p;

	if (root[0] != '/' || path[0] != '/' || rlen <= 1 || root[rlen - 1] == '/' ||
		strncmp(path, root, rlen) != 0 || path[rlen] != '/' || strlen(path) >= MAXPGPATH)
		return false;
	for (p = path + rlen + 1;;)
	{
		size_t part = strcspn(p, "/");

		if (part == 0 || (part == 1 && p[0] == '.') || (part == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (p[part] == '\0')
			return true;
		p += part + 1;
	}
}

/* True if `a` and `b` are in the same folder. */
static bool
same_folder(const char *a, const char *b)
{
	const char *sa = strrchr(a, '/');
	const char *sb = strrchr(b, '/');

	return sa != NULL && sb != NULL && sa - a == sb - b && strncmp(a, b, sa - a) == 0;
}

/*
 * Decode a record kept by the catalog; false if it is not one the undo
 * wrote: every field is checked (its kind, those the action needs present,
 * local paths absolute and below the root, a set-aside file beside the
 * original, numbers whole), so that the step's code may rely on them.
 */
bool
storage_undo_decode(const char *rec, size_t len, StorageUndoStep *step)
{
	char *f[NUM_FIELDS];
	size_t flen[NUM_FIELDS];
	size_t pos = 0;
	unsigned long long dev;
	unsigned long long ino;
	int used = 0;
	char action;
	bool s3;

	memset(step, 0, sizeof(*step));
	for (int i = 0; i < NUM_FIELDS; i++)
		if (!get_field(rec, len, &pos, &f[i], &flen[i]))
			return false;
	if (pos != len)
		return false;
	/* the fields that are text, and those every step has */
	for (int i = 0; i < NUM_FIELDS; i++)
		if (i != 8 && i != 10 && f[i] != NULL && !is_text(f[i], flen[i]))
			return false;
	if (f[0] == NULL || flen[0] != 1 || f[1] == NULL || flen[1] != 1 || f[2] == NULL ||
		f[3] == NULL || f[6] == NULL || f[7] == NULL || f[9] == NULL || flen[9] != 1 ||
		f[11] == NULL)
		return false;
	action = f[0][0];
	s3 = f[1][0] == 's';
	if ((action != UNDO_REMOVE && action != UNDO_PUT_BACK) || (f[1][0] != 's' && f[1][0] != 'l') ||
		(f[9][0] != '0' && f[9][0] != '1') || !is_number(f[6], true) || !is_number(f[11], false) ||
		sscanf(f[7], "%llu:%llu%n", &dev, &ino, &used) != 2 || (size_t)used != flen[7])
		return false;
	if (s3)
	{
		/* an object's key in the store the location's setting names; put back writes `content` */
		if (pg_strncasecmp(f[2], "s3://", 5) != 0 || flen[3] == 0 ||
			(action == UNDO_PUT_BACK && f[8] == NULL))
			return false;
	}
	else
	{
		/* a file or folder below the local root, and its set-aside original beside it */
		if (!is_path_below(f[3], f[2]))
			return false;
		if (action == UNDO_PUT_BACK && (f[4] == NULL || !is_path_below(f[4], f[2]) ||
										!same_folder(f[3], f[4]) || strcmp(f[3], f[4]) == 0))
			return false;
	}
	step->action = action;
	step->s3 = s3;
	step->location = f[2];
	step->path = f[3];
	step->set_aside = f[4];
	step->branch = f[5];
	step->version = strtoi64(f[6], NULL, 10);
	step->dev = dev;
	step->ino = ino;
	step->content = f[8];
	step->content_len = flen[8];
	step->check_left = f[9][0] == '1';
	step->left = f[10];
	step->left_len = flen[10];
	step->xid = strtou64(f[11], NULL, 10);
	return true;
}

/* The CRC-32C of a record's bytes, as the spool file keeps it. */
static pg_crc32c
record_crc(const char *bytes, size_t len)
{
	pg_crc32c crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, bytes, len);
	FIN_CRC32C(crc);
	return crc;
}

/*
 * Keep a step the undo could not do, to write at the end of the abort
 * (storage_spool_write).  Called in abort callbacks: raises only if memory
 * runs out, which the caller's quiet wrapper turns into a warning.
 */
void
storage_spool_add(StorageUndoStep *step)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	StringInfoData rec;
	uint32 n;
	pg_crc32c crc;

	if (spooled == NULL)
	{
		spooled = makeStringInfo();
		appendStringInfoString(spooled, SPOOL_MAGIC);
	}
	step->xid = U64FromFullTransactionId(GetTopFullTransactionIdIfAny());
	initStringInfo(&rec);
	serialize(&rec, step);
	n = (uint32)rec.len;
	appendBinaryStringInfo(spooled, (const char *)&n, sizeof(n));
	crc = record_crc(rec.data, rec.len);
	appendBinaryStringInfo(spooled, (const char *)&crc, sizeof(crc));
	appendBinaryStringInfo(spooled, rec.data, rec.len);
	pfree(rec.data);
	n_spooled++;
	MemoryContextSwitchTo(old);
}

/* Write all of `len` bytes; false with errno. */
static bool
write_all(int fd, const char *bytes, size_t len)
{
	while (len > 0)
	{
		ssize_t w = write(fd, bytes, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
		{
			if (w == 0)
				errno = ENOSPC;
			return false;
		}
		bytes += w;
		len -= w;
	}
	return true;
}

/*
 * Write the steps kept in this abort to a new spool file, durably: a
 * temporary file flushed, renamed into place, and the folder flushed.
 * Raises nothing: if the spool cannot be written, the steps are lost as
 * before and the log says which.
 */
void
storage_spool_write(void)
{
	static uint32 counter = 0;
	char name[MAXPGPATH];
	char temp[MAXPGPATH];
	int fd;
	int dirfd = -1;
	bool ok;

	if (spooled == NULL)
		return;
	snprintf(name, sizeof(name), "%s/%u-" UINT64_FORMAT "-%d-%u.spool", SPOOL_DIR, MyDatabaseId,
			 U64FromFullTransactionId(GetTopFullTransactionIdIfAny()), MyProcPid, counter++);
	snprintf(temp, sizeof(temp), "%s.tmp", name);
	if (mkdir(SPOOL_DIR, pg_dir_create_mode) != 0 && errno != EEXIST)
		ok = false;
	else if ((fd = OpenTransientFile(temp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY)) < 0)
		ok = false;
	else
	{
		ok = write_all(fd, spooled->data, spooled->len) && pg_fsync(fd) == 0;
		if (CloseTransientFile(fd) != 0)
			ok = false;
		ok = ok && rename(temp, name) == 0;
		if (ok && (dirfd = OpenTransientFile(SPOOL_DIR, O_RDONLY | PG_BINARY)) >= 0)
		{
			ok = pg_fsync(dirfd) == 0;
			(void)CloseTransientFile(dirfd);
		}
	}
	if (!ok)
	{
		(void)unlink(temp);
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("lance_namespace: could not keep %d steps of a rollback's undo in \"%s\": "
						"%m; they are lost",
						n_spooled, name)));
	}
	else
		ereport(LOG, (errmsg("lance_namespace: %d steps of a rollback's undo wait for the next "
							 "maintenance round (lance_sweep_leftovers())",
							 n_spooled)));
	pfree(spooled->data);
	pfree(spooled);
	spooled = NULL;
	n_spooled = 0;
}

/*
 * Set a spool file that fails the checks aside, renamed "<name>.bad", so
 * that no later round meets it again; the log says why.
 */
static void
set_aside_bad(const char *path, const char *why)
{
	char *bad = psprintf("%s.bad", path);

	if (rename(path, bad) != 0)
		ereport(WARNING, (errcode_for_file_access(),
						  errmsg("lance_namespace: undo spool file \"%s\" %s, and could not be "
								 "set aside as \"%s\": %m",
								 path, why, bad)));
	else
		ereport(WARNING,
				(errmsg("lance_namespace: undo spool file \"%s\" %s: set aside as \"%s\"", path,
						why, bad),
				 errhint("None of its steps is done; see whether what they name needs cleaning "
						 "up by hand.")));
}

/*
 * The records of spool file `name` (its `size` bytes), appended to
 * *records; NULL if all passed the checks, else why not (nothing is
 * appended then).
 */
static const char *
read_records(const char *name, char *bytes, size_t size, StorageSpooled **records, int *n, int *cap)
{
	size_t pos = strlen(SPOOL_MAGIC);
	int first = *n;
	int index = 0;

	if (size < pos || memcmp(bytes, SPOOL_MAGIC, pos) != 0)
		return "is not an undo spool file";
	while (pos < size)
	{
		uint32 len;
		pg_crc32c crc;
		StorageSpooled *r;

		CHECK_FOR_INTERRUPTS();
		if (size - pos < sizeof(len) + sizeof(crc))
			break;
		memcpy(&len, bytes + pos, sizeof(len));
		memcpy(&crc, bytes + pos + sizeof(len), sizeof(crc));
		pos += sizeof(len) + sizeof(crc);
		if (len > size - pos)
			break;
		if (*n == *cap)
			*records = repalloc_huge(*records, sizeof(StorageSpooled) * (*cap *= 2));
		r = &(*records)[*n];
		r->name = psprintf("%s#%d", name, index++);
		r->record = bytes + pos;
		r->len = len;
		pos += len;
		if (record_crc(r->record, r->len) != crc)
		{
			*n = first;
			return psprintf("has a damaged record (#%d: its checksum does not match)", index - 1);
		}
		if (!storage_undo_decode(r->record, r->len, &r->step))
		{
			*n = first;
			return psprintf("has a record that is not an undo step (#%d)", index - 1);
		}
		(*n)++;
	}
	if (pos != size)
	{
		*n = first;
		return "is truncated";
	}
	return NULL;
}

/*
 * The spooled records of this database, each with its name ("<file>#<n>"),
 * to take over; the files are removed when the caller's transaction commits
 * (storage_spool_end_transaction).  A file that cannot be read is left, with
 * a warning; one that fails the checks is set aside (set_aside_bad).
 */
int
storage_spool_read(StorageSpooled **records)
{
	DIR *dir = AllocateDir(SPOOL_DIR);
	struct dirent *de;
	char prefix[32];
	int n = 0;
	int cap = 16;

	*records = palloc(sizeof(StorageSpooled) * cap);
	if (dir == NULL)
		return 0; /* nothing was ever spooled */
	snprintf(prefix, sizeof(prefix), "%u-", MyDatabaseId);
	while ((de = ReadDir(dir, SPOOL_DIR)) != NULL)
	{
		size_t nlen = strlen(de->d_name);
		char *path;
		char *bytes;
		const char *why;
		int fd;
		struct stat st;

		CHECK_FOR_INTERRUPTS();
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || nlen < 6 ||
			strcmp(de->d_name + nlen - 6, ".spool") != 0)
			continue;
		path = psprintf("%s/%s", SPOOL_DIR, de->d_name);
		fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
		if (fd < 0 || fstat(fd, &st) != 0 || st.st_size > (off_t)MaxAllocHugeSize - 1)
		{
			if (fd >= 0)
				(void)CloseTransientFile(fd);
			ereport(WARNING, (errcode_for_file_access(),
							  errmsg("lance_namespace: could not read \"%s\": %m", path)));
			continue;
		}
		bytes = MemoryContextAllocHuge(CurrentMemoryContext, st.st_size + 1);
		if (read(fd, bytes, st.st_size) != st.st_size)
		{
			(void)CloseTransientFile(fd);
			ereport(WARNING, (errcode_for_file_access(),
							  errmsg("lance_namespace: could not read \"%s\": %m", path)));
			continue;
		}
		(void)CloseTransientFile(fd);
		why = read_records(de->d_name, bytes, (size_t)st.st_size, records, &n, &cap);
		if (why != NULL)
		{
			set_aside_bad(path, why);
			continue;
		}
		{
			MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

			taken_files = lappend(taken_files, pstrdup(path));
			MemoryContextSwitchTo(old);
		}
	}
	FreeDir(dir);
	return n;
}

/*
 * The transaction ends: on commit the spool files it took over are in the
 * catalog and go; on abort they stay for the next round.
 */
void
storage_spool_end_transaction(bool commit)
{
	ListCell *lc;

	if (commit)
		foreach (lc, taken_files)
			if (unlink((char *)lfirst(lc)) != 0 && errno != ENOENT)
				ereport(WARNING, (errcode_for_file_access(),
								  errmsg("lance_namespace: could not remove \"%s\": %m",
										 (char *)lfirst(lc))));
	taken_files = NIL; /* in TopTransactionContext, which goes */
}
