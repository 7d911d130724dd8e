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
# And the test scripts (bash with pipefail) for a pipeline that ends in
# grep -q: grep exits at its first match, a writer still writing gets
# SIGPIPE, and under pipefail the pipeline, and so the check, fails now and
# then.  Such a grep reads all its input (grep ... >/dev/null).
#
# Prints "  ok    <check>" or "  FAIL  <check>" with the offending lines,
# and exits non-zero when a check failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
failed=0

# Each file's statements, whatever their case and line breaks: comment
# lines dropped, the rest joined and cut at semicolons.
bad="$(awk -v q="'" '
	function check(stmt, file,   low, at, query, prog) {
		low = tolower(stmt)
		gsub(/[[:space:]]+/, " ", low)
		at = match(low, "\\) ?to program ?" q)
		if (at == 0 || low !~ /copy ?\(/)
			return
		query = substr(low, 1, at - 1)
		prog = substr(low, at + RLENGTH)
		sub(q ".*", "", prog)
		if (query ~ /where false$/ && query !~ /union|intersect|except/)
			return
		if (prog ~ /^(base64 -d|cat) ?(>|\||$)/)
			return
		gsub(/[[:space:]]+/, " ", stmt)
		print file ": " substr(stmt, 1, 200)
	}
	function flush(   n, i, parts) {
		n = split(text, parts, ";")
		for (i = 1; i <= n; i++)
			check(parts[i], file)
		text = ""
	}
	FNR == 1 { flush(); file = FILENAME }
	/^[[:space:]]*(#|--)/ { next }
	{ text = text " " $0 }
	END { flush() }' sql/*.sql specs/*.spec test/sql/*.sql)"
if [[ -z "$bad" ]]; then
	echo "  ok    every COPY ... TO PROGRAM in the SQL suites sends no row or feeds a program that reads it"
else
	echo "  FAIL  a COPY ... TO PROGRAM sends rows to a program that may not read them"
	sed 's/^/          /' <<<"$bad"
	failed=1
fi

# A '|' then grep with a q among its short options; a here-string (<<<)
# feeds grep from no writer.
bad="$(grep -n -E '(^|[^|])\|[[:space:]]*grep[[:space:]]+(-[a-zA-Z]*q|--quiet)' \
	scripts/*.sh test/*.sh test/*/*.sh test/*/*/*.sh bench/*.sh .ci/run 2>/dev/null |
	grep -v -E '^[^:]+:[0-9]+:[[:space:]]*#' || true)"
if [[ -z "$bad" ]]; then
	echo "  ok    no pipeline in the test scripts ends in grep -q"
else
	echo "  FAIL  a pipeline in the test scripts ends in grep -q (SIGPIPE under pipefail)"
	sed 's/^/          /' <<<"$bad"
	failed=1
fi
exit "$failed"
