/*
 * shim.c
 *		An LD_PRELOAD shim for test/errors: loaded into a test cluster's
 *		postmaster (and so into every backend), it does one thing once when
 *		told to, so that a test can make the file system fail or change at
 *		an exact point without root tricks or sleeps.
 *
 * LN_SHIM_CONTROL names a control file.  While it exists, it holds one line
 * "<action> <substring>"; the first process that meets a matching call
 * takes the file (renames it to <control>.taken, which only one can do) and
 * acts:
 *   fsync <errno> <substring>  fsync()/fdatasync() of a file whose path
 *                              (/proc/self/fd/N) holds <substring> fails
 *                              with <errno> (5: EIO, a writeback error)
 *   vanish <substring>         openat() of a name holding <substring>
 *                              first renames that file to <name>.gone
 *   folder <substring>         ... first replaces it with a folder
 *   fifo <substring>           ... first replaces it with a fifo
 * Without the control file every call goes straight through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The control file's action and substring; 0 if there is none. */
static int
read_control(char *action, char *substring, int *err)
{
	const char *control = getenv("LN_SHIM_CONTROL");
	char line[512];
	int fd;
	ssize_t n;

	if (control == NULL || (fd = open(control, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	line[n] = '\0';
	*err = 0;
	if (sscanf(line, "fsync %d %255s", err, substring) == 2)
	{
		strcpy(action, "fsync");
		return 1;
	}
	return sscanf(line, "%31s %255s", action, substring) == 2;
}

/* Take the control file: true for exactly one process. */
static int
take_control(void)
{
	const char *control = getenv("LN_SHIM_CONTROL");
	char taken[4096];

	snprintf(taken, sizeof(taken), "%s.taken", control);
	return rename(control, taken) == 0;
}

static int
fail_fsync(int fd)
{
	char action[32], substring[256], link[64], path[4096];
	int err;
	ssize_t n;

	if (!read_control(action, substring, &err) || strcmp(action, "fsync") != 0)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	if (strstr(path, substring) == NULL || !take_control())
		return 0;
	errno = err;
	return 1;
}

int
fsync(int fd)
{
	static int (*real)(int);
	int saved = errno;

	if (fail_fsync(fd))
		return -1;
	errno = saved;
	if (real == NULL)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	return real(fd);
}

int
fdatasync(int fd)
{
	static int (*real)(int);
	int saved = errno;

	if (fail_fsync(fd))
		return -1;
	errno = saved;
	if (real == NULL)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	return real(fd);
}

/* Before openat(dirfd, name): change the file as the control file says. */
static void
change_before_open(int dirfd, const char *name)
{
	char action[32], substring[256], gone[4096];
	int err;
	int saved = errno;

	if (!read_control(action, substring, &err) || strcmp(action, "fsync") == 0 ||
		strstr(name, substring) == NULL || !take_control())
	{
		errno = saved;
		return;
	}
	if (strcmp(action, "vanish") == 0)
	{
		snprintf(gone, sizeof(gone), "%s.gone", name);
		(void)renameat(dirfd, name, dirfd, gone);
	}
	else if (strcmp(action, "folder") == 0)
	{
		(void)unlinkat(dirfd, name, 0);
		(void)mkdirat(dirfd, name, 0755);
	}
	else if (strcmp(action, "fifo") == 0)
	{
		(void)unlinkat(dirfd, name, 0);
		(void)mkfifoat(dirfd, name, 0644);
	}
	errno = saved;
}

static int
call_openat(const char *symbol, int dirfd, const char *name, int flags, mode_t mode)
{
	int (*real)(int, const char *, int, ...) =
		(int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, symbol);

	change_before_open(dirfd, name);
	return real(dirfd, name, flags, mode);
}

int
openat(int dirfd, const char *name, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & (O_CREAT | O_TMPFILE))
	{
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return call_openat("openat", dirfd, name, flags, mode);
}

int
openat64(int dirfd, const char *name, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & (O_CREAT | O_TMPFILE))
	{
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return call_openat("openat64", dirfd, name, flags, mode);
}
