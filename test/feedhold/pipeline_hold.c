/*
 * pipeline_hold <conninfo> <namespace>: a writer that holds the change feed
 * through the extended query protocol.  In pipeline mode it sends Parse,
 * Bind and Execute of SELECT pg_backend_pid() and of a change, then Flush
 * but never Sync: the backend answers, and its transaction stays open while
 * it waits ("active", ClientRead) for the next message, under no idle
 * timeout of PostgreSQL's.  Prints the backend's pid and "taken", then waits
 * until the server ends the connection ("ended: <why>", exit 0) or its
 * standard input closes ("released", exit 3).
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

/* The first query's answer, sent but not synced: the pipeline stays open. */
static int
read_answer(PGconn *conn, const char *what)
{
	PGresult *result = PQgetResult(conn);
	int ok = result != NULL && PQresultStatus(result) == PGRES_TUPLES_OK;

	if (ok)
		printf("%s\n", PQgetvalue(result, 0, 0));
	else
		fprintf(stderr, "%s: %s", what, PQerrorMessage(conn));
	PQclear(result);
	/* the end of this query's results */
	result = PQgetResult(conn);
	PQclear(result);
	return ok;
}

int
main(int argc, char **argv)
{
	char change[256];
	PGconn *conn;

	if (argc != 3)
	{
		fprintf(stderr, "usage: pipeline_hold <conninfo> <namespace>\n");
		return 2;
	}
	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "connect: %s", PQerrorMessage(conn));
		return 2;
	}
	snprintf(change, sizeof(change),
			 "SELECT lance_create_namespace('{\"id\": [\"%s\"]}') IS NOT NULL", argv[2]);
	if (!PQenterPipelineMode(conn) ||
		!PQsendQueryParams(conn, "SELECT pg_backend_pid()", 0, NULL, NULL, NULL, NULL, 0) ||
		!PQsendQueryParams(conn, change, 0, NULL, NULL, NULL, NULL, 0) ||
		!PQsendFlushRequest(conn) || PQflush(conn) != 0)
	{
		fprintf(stderr, "send: %s", PQerrorMessage(conn));
		return 2;
	}
	if (!read_answer(conn, "pid") || !read_answer(conn, "change"))
		return 2;
	printf("taken\n");
	fflush(stdout);

	for (;;)
	{
		struct pollfd fds[2] = {{PQsocket(conn), POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
		char buffer[64];

		if (poll(fds, 2, -1) < 0)
			continue;
		if (fds[0].revents != 0)
		{
			PGresult *result;

			if (!PQconsumeInput(conn) || PQstatus(conn) == CONNECTION_BAD)
			{
				printf("ended: %s", PQerrorMessage(conn));
				return 0;
			}
			while (!PQisBusy(conn) && (result = PQgetResult(conn)) != NULL)
			{
				printf("result: %s", PQresultErrorMessage(result));
				PQclear(result);
			}
			fflush(stdout);
		}
		if (fds[1].revents != 0 && read(STDIN_FILENO, buffer, sizeof(buffer)) <= 0)
		{
			printf("released\n");
			return 3;
		}
	}
}
