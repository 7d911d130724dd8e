#!/usr/bin/env bash
# Check the test suites for what fails a test now and then by itself,
# whatever the extension does:
#
# 1. In the SQL suites (sql/*.sql, specs/*.spec, test/sql/*.sql): COPY ...
#    TO PROGRAM sending rows to a program that does not read them.  The
#    server writes the rows into a pipe and flushes it when the program
#    ends; a program that never reads (rm, mkdir, true) may have exited by
#    then, and the COPY fails with "could not close pipe to external
#    command: Broken pipe" (stop 30's CI: an isolation teardown failed that
#    way, the next setup with it).  Such a COPY sends no row
#    (COPY (SELECT 1 WHERE false) TO PROGRAM ...); one that sends rows feeds
#    a program that reads its input to the end: 'base64 -d' or 'cat', alone
#    or writing to a file (>), never into another pipe.
#
# 2. In the test scripts (bash with pipefail): a pipeline that ends in
#    grep -q (or --quiet, --silent).  grep exits at its first match, a
#    writer still writing gets SIGPIPE, and under pipefail the pipeline, and
#    so the check, fails now and then.  Such a grep reads all its input
#    (grep ... >/dev/null).
#
# Prints "  ok    <check>" or "  FAIL  <check>" with the offending lines
# (file:line), and exits non-zero when a check failed.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "${BASH_SOURCE[0]}")/.."
failed=0

# report <verdict> <what> <offending lines>: print the check's line.
report() {
	if [[ -z "$3" ]]; then
		echo "  ok    $1"
	else
		echo "  FAIL  $2"
		sed 's/^/          /' <<<"$3"
		failed=1
	fi
}

# 1. Statement by statement: comment lines dropped, a statement ends at a
#    semicolon or a brace outside single quotes, and is read in lower case
#    with its white space (line breaks too) made single spaces.
sql_files=(sql/*.sql specs/*.spec test/sql/*.sql)
bad="$(awk -v q="'" '
	function check(stmt, file, line,   low, at, query, rest, prog) {
		low = tolower(stmt)
		gsub(/[[:space:]]+/, " ", low)
		at = match(low, / to program /)
		if (at == 0)
			return
		query = substr(low, 1, at - 1)
		rest = substr(low, at + RLENGTH)
		# the program: a plain quoted string, else it cannot be judged
		if (substr(rest, 1, 1) == q) {
			prog = substr(rest, 2)
			sub(q ".*", "", prog)
			if (prog ~ /^(base64 -d|cat) ?(>[^|]*)?$/)
				return
		}
		if (query ~ /\( ?select [^;]* where false ?\) ?$/ && query !~ / (union|intersect|except) /)
			return
		gsub(/[[:space:]]+/, " ", stmt)
		sub(/^ /, "", stmt)
		print file ":" line ": " substr(stmt, 1, 200)
	}
	FNR == 1 { stmt = ""; quoted = 0 }
	/^[[:space:]]*(#|--)/ { next }
	{
		if (stmt ~ /^[[:space:]]*$/)
			start = FNR
		for (i = 1; i <= length($0); i++) {
			c = substr($0, i, 1)
			if (c == q)
				quoted = !quoted
			# a semicolon ends a statement, and a brace the block of a spec
			if ((c == ";" || c == "{" || c == "}") && !quoted) {
				check(stmt, FILENAME, start)
				stmt = ""
				start = FNR
			} else
				stmt = stmt c
		}
		stmt = stmt " "
	}' "${sql_files[@]}" /dev/null)"
report "every COPY ... TO PROGRAM in the SQL suites sends no row or feeds a program that reads it" \
	"a COPY ... TO PROGRAM sends rows to a program that may not read them" "$bad"

# 2. A line ending in '|' is joined with the next; then a '|' (or '|&'),
#    never '||', before a grep with q among any of its short options, or
#    --quiet or --silent.
scripts=(scripts/*.sh test/*.sh test/*/*.sh test/*/*/*.sh bench/*.sh)
[[ -f .ci/run ]] && scripts+=(.ci/run)
bad="$(awk '
	FNR == 1 { text = ""; start = 0 }
	/^[[:space:]]*#/ && text == "" { next }
	{
		if (text == "")
			start = FNR
		text = text $0
		if (text ~ /\|[[:space:]]*$/ && text !~ /\|\|[[:space:]]*$/) {
			text = text " "
			next
		}
		if (text ~ /(^|[^|])\|&?[[:space:]]*grep([[:space:]]+-[^[:space:]]+)*[[:space:]]+(-[a-zA-Z]*q[a-zA-Z]*|--quiet|--silent)([[:space:]]|$)/)
			print FILENAME ":" start ": " substr(text, 1, 200)
		text = ""
	}' "${scripts[@]}" /dev/null)"
report "no pipeline in the test scripts ends in grep -q" \
	"a pipeline in the test scripts ends in grep -q (SIGPIPE under pipefail)" "$bad"

exit "$failed"
