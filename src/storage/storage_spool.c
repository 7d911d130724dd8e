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
 * A spool file is a header and records; a record is a list of fields, each
 * a 4-byte length (0xffffffff: none) and its bytes.  The catalog keeps a
 * record as it is, so that only this file knows the format.
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
#include "storage/fd.h"
#include "utils/memutils.h"

#include "../common/error.h"
#include "location.h"
#include "storage.h"
#include "storage_internal.h"

/* The spool's folder, in the data directory (a backend's working directory). */
#define SPOOL_DIR	"lance_namespace_undo"
#define SPOOL_MAGIC "LNUNDO1\n"
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

/* Decode a record kept by the catalog; false if it is not one. */
bool
storage_undo_decode(const char *rec, size_t len, StorageUndoStep *step)
{
	char *f[NUM_FIELDS];
	size_t flen[NUM_FIELDS];
	size_t pos = 0;
	unsigned long long dev;
	unsigned long long ino;

	memset(step, 0, sizeof(*step));
	for (int i = 0; i < NUM_FIELDS; i++)
		if (!get_field(rec, len, &pos, &f[i], &flen[i]))
			return false;
	if (pos != len || f[0] == NULL || f[1] == NULL || f[2] == NULL || f[3] == NULL ||
		f[6] == NULL || f[7] == NULL || f[9] == NULL || f[11] == NULL ||
		(f[0][0] != UNDO_REMOVE && f[0][0] != UNDO_PUT_BACK) ||
		sscanf(f[7], "%llu:%llu", &dev, &ino) != 2)
		return false;
	step->action = f[0][0];
	step->s3 = f[1][0] == 's';
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
 * The spooled records of this database, each with its name ("<file>#<n>"),
 * to take over; the files are removed when the caller's transaction commits
 * (storage_spool_end_transaction).  A damaged file is left, with a warning.
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
		int fd;
		struct stat st;
		size_t pos = strlen(SPOOL_MAGIC);
		int index = 0;

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
		if (read(fd, bytes, st.st_size) != st.st_size || st.st_size < (off_t)pos ||
			memcmp(bytes, SPOOL_MAGIC, pos) != 0)
		{
			(void)CloseTransientFile(fd);
			ereport(WARNING, (errmsg("lance_namespace: \"%s\" is not an undo spool file", path)));
			continue;
		}
		(void)CloseTransientFile(fd);
		while (pos + sizeof(uint32) <= (size_t)st.st_size)
		{
			uint32 len;
			StorageSpooled *r;

			memcpy(&len, bytes + pos, sizeof(len));
			pos += sizeof(len);
			if (pos + len > (size_t)st.st_size)
				break;
			if (n == cap)
				*records = repalloc(*records, sizeof(StorageSpooled) * (cap *= 2));
			r = &(*records)[n];
			r->name = psprintf("%s#%d", de->d_name, index++);
			r->record = bytes + pos;
			r->len = len;
			pos += len;
			if (!storage_undo_decode(r->record, r->len, &r->step))
				ereport(WARNING, (errmsg("lance_namespace: record %s is damaged", r->name)));
			else
				n++;
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
