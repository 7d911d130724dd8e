#!/usr/bin/env bash
# Check the SQL suites (sql/*.sql, specs/*.spec) for a statement that fails
# now and then by itself, whatever the extension does:
#
#   COPY ... TO PROGRAM sending rows to a program that does not read them.
#   The server writes the rows into a pipe and flushes it when the program
#   ends; a program that never reads (rm, mkdir, true) may have exited by
#   then, and the COPY fails with "could not close pipe to external command:
#   Broken pipe" (stop 30's CI: an isolation teardown failed that way, the
#   next setup with it).  Such a COPY sends no row (SELECT 1 WHERE false);
#   one that sends rows feeds a program that reads its input to the end
#   (base64 -d, cat).
#
# Prints "  ok    <check>" or "  FAIL  <check>" with the offending lines,
# and exits non-zero when a check failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bad="$(grep -n 'TO PROGRAM' sql/*.sql specs/*.spec |
	grep -v -E "COPY \\(SELECT [^)]* WHERE false\\) TO PROGRAM|TO PROGRAM '(base64 -d|cat)[ >']" |
	grep -v -E '^[^:]+:[0-9]+:[[:space:]]*(#|--)' || true)"
if [[ -z "$bad" ]]; then
	echo "  ok    every COPY ... TO PROGRAM in the SQL suites sends no row or feeds a program that reads it"
else
	echo "  FAIL  a COPY ... TO PROGRAM sends rows to a program that may not read them"
	sed 's/^/          /' <<<"$bad"
	exit 1
fi
