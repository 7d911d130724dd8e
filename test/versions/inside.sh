#!/usr/bin/env bash
# Inside a Debian root of another release (test/versions/run.sh runs it
# there, as root, in a copy of the source tree): what a user of that release
# does, from a fresh machine on.  scripts/run.sh installs the release's
# packages (the root is a throwaway one where none is installed yet: a run.sh
# that finds them all there fails the check, as a root kept from an earlier
# run would test nothing of the install), builds the extension, which must
# build without a warning, and starts a
# catalog with its gateway; scripts/test.sh then runs the pg_regress and
# isolation suites, the end-to-end tests through that gateway
# (LN_TEST_RUN_DATA), and the restore of LN_RESTORE_FROM's catalog
# (test/versions/restore.sh); scripts/stop.sh stops the catalog.
#
# Prints what the scripts print, then the summary of it all, "N passed, M
# failed", and what failed; exits 0 only when everything passed.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# shellcheck source=scripts/common.sh
source scripts/common.sh

DATA=/var/tmp/lance_namespace-versions
RUN_LOG="$(mktemp)"
TEST_LOG="$(mktemp)"
PASSED=0
FAILED=0
FAILURES=()

# check <what> <true or false>: one check of this script's own
check_that() {
	if [[ "$2" == true ]]; then
		PASSED=$((PASSED + 1))
	else
		FAILED=$((FAILED + 1))
		FAILURES+=("$1")
	fi
}

LN_DATA="$DATA" bash scripts/stop.sh >/dev/null 2>&1
rm -rf "$DATA"
PORT="$(find_free_port 55433)"
GATEWAY_PORT="$(find_free_port 2533)"

say "scripts/run.sh on $(. /etc/os-release && echo "$PRETTY_NAME")"
rc=0
# The end-to-end tests below run through this gateway, 8 clients of one key
# at once: no share per key to keep (LN_KEY_CONCURRENCY, as scripts/test.sh's
# own test gateways; test/serving/parts/37_fair_share.sh checks the default)
LN_DATA="$DATA" LN_PORT="$PORT" LN_GATEWAY_PORT="$GATEWAY_PORT" LN_KEY_CONCURRENCY=10000 \
	bash scripts/run.sh 2>&1 | tee "$RUN_LOG" || rc=$?
check_that "scripts/run.sh (exit $rc)" "$([[ $rc == 0 ]] && echo true || echo false)"
check_that "scripts/run.sh installed the release's packages (a fresh root)" \
	"$(grep -q '^lance_namespace: installing: postgresql-' "$RUN_LOG" && echo true || echo false)"
# (the build's own lines name -W flags: a compiler's warning says "warning:")
warnings="$(grep -c 'warning:' "$RUN_LOG")"
check_that "the build printed $warnings compiler warnings: $(grep -m 3 'warning:' "$RUN_LOG" | tr '\n' ' ')" \
	"$([[ $warnings == 0 ]] && echo true || echo false)"

# the seeded catalog's tables are this root's postgres user's to write now;
# the original's server (this machine's postgres, another OS user here)
# still reads them for its answers, and the catalog makes its folders and
# ref files its own user's alone (700, 600): open them to it again, as no
# two servers of a real deployment share one folder
source scripts/common.sh # the PostgreSQL run.sh installed
if [[ -n "${LN_RESTORE_TABLES:-}" ]]; then
	chown -R postgres:postgres "$LN_RESTORE_TABLES"
	chmod -R go+rX "$LN_RESTORE_TABLES"
fi

LN_TEST_ONLY="sql node restore" LN_TEST_RUN_DATA="$DATA" LN_GATEWAY_PORT="$GATEWAY_PORT" \
	bash scripts/test.sh 2>&1 | tee "$TEST_LOG"
summary="$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$TEST_LOG" | tail -n 1)"
if [[ -n "$summary" ]]; then
	PASSED=$((PASSED + ${summary% *}))
	FAILED=$((FAILED + ${summary#* }))
	mapfile -t -O "${#FAILURES[@]}" FAILURES < <(awk '/^what failed:$/ { on = 1; next }
		on && /^  / { print substr($0, 3); next } { on = 0 }' "$TEST_LOG")
else
	check_that "scripts/test.sh ended without its summary" false
fi

LN_DATA="$DATA" bash scripts/stop.sh >/dev/null 2>&1 || check_that "scripts/stop.sh" false
rm -rf "$DATA" "$RUN_LOG" "$TEST_LOG"

echo
if ((${#FAILURES[@]} > 0)); then
	echo "what failed:"
	printf '  %s\n' "${FAILURES[@]}"
fi
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
