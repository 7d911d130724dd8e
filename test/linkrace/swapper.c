/*
 * swapper.c: keep exchanging two paths for a while.
 *
 *   swapper <a> <b> <seconds>
 *
 * Loops renameat2(a, b, RENAME_EXCHANGE) for <seconds>: <a> is a real folder
 * inside a managed table, <b> a symbolic link of the same name elsewhere
 * that points outside the tables, so that <a> is by turns the folder and
 * the link.  When a is missing for a moment (the catalog moved or removed
 * it) it keeps trying.  At the end it puts both back as they were, if it
 * can, and prints "<exchanges> <misses> <restored: 1|0>".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	double deadline;
	long exchanges = 0;
	long misses = 0;
	int swapped = 0;

	if (argc != 4)
	{
		fprintf(stderr, "usage: %s <a> <b> <seconds>\n", argv[0]);
		return 2;
	}
	deadline = now() + atof(argv[3]);
	while (now() < deadline)
	{
		if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0)
		{
			exchanges++;
			swapped = !swapped;
			continue;
		}
		misses++;
		if (errno != ENOENT)
		{
			fprintf(stderr, "swapper: %s <-> %s: %s\n", argv[1], argv[2], strerror(errno));
			return 1;
		}
		usleep(200);
	}
	for (int tries = 0; swapped && tries < 100; tries++)
	{
		if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0)
			swapped = 0;
		else
			usleep(10000);
	}
	printf("%ld %ld %d\n", exchanges, misses, !swapped);
	return 0;
}
