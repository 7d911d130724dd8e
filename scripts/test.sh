#!/usr/bin/env bash
# Set up and run every lance_namespace test.
#
# Installs missing dependencies, builds and installs the extension, starts a
# throwaway PostgreSQL 15 cluster in a temporary directory on a free port,
# runs the pg_regress (REGRESS) and isolation (ISOLATION) suites from the
# Makefile against it, and always tears the cluster down again.
#
# The last line of output is the summary "N passed, M failed".  The exit
# status is non-zero when any test or any setup step failed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try for the test server (default 54329)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PASSED=0
FAILED=0
TMP_DIR=""
PGDATA_DIR=""

# ---------------------------------------------------------------------------
# Teardown and summary, on every exit path (success, failed step, Ctrl-C).
# ---------------------------------------------------------------------------
cleanup() {
	local rc=$?
	trap - EXIT
	if [[ -n "$PGDATA_DIR" ]]; then
		stop_cluster "$PGDATA_DIR" || say "warning: could not stop test server in $PGDATA_DIR"
	fi
	[[ -n "$TMP_DIR" ]] && rm -rf "$TMP_DIR"
	# A setup step (deps, build, cluster) that aborted the script counts as
	# one failure, so the summary never claims "0 failed" on a failed run.
	if ((rc != 0 && FAILED == 0)); then
		FAILED=1
	fi
	((FAILED == 0)) || ((rc != 0)) || rc=1
	echo
	echo "$PASSED passed, $FAILED failed"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------
# Test server
# ---------------------------------------------------------------------------
start_test_server() {
	# mktemp -d is mode 700 and root-owned: hand it to postgres so the
	# server can create pgdata/ and the socket inside.
	TMP_DIR="$(mktemp -d)"
	chown postgres:postgres "$TMP_DIR"
	PGDATA_DIR="$TMP_DIR/pgdata"
	local sockdir="$TMP_DIR/run" port
	port="$(find_free_port "${LN_TEST_PORT:-54329}")"

	init_cluster "$PGDATA_DIR" test
	start_cluster "$PGDATA_DIR" "$port" "$sockdir"

	# Clients (pg_regress, psql, later Node) find the server through these.
	# Drop variables that would override or redirect them.
	unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD
	export PGHOST="$sockdir" PGPORT="$port" PGUSER=postgres
}

# ---------------------------------------------------------------------------
# Result counting
# ---------------------------------------------------------------------------

# count_results <log>: print "<passed> <failed>" for the per-test lines that
# pg_regress / pg_isolation_regress wrote.  Two formats are understood:
#   PG 15:   "test namespace    ... ok     12 ms"  / "... FAILED" /
#            "... failed (ignored)" (parallel groups indent instead of "test")
#   PG 16+:  "ok 1   - namespace   12 ms"         / "not ok 2 - ..."
# An ignored failure does not fail the run in pg_regress, so it counts as
# passed here too.
count_results() {
	local log="$1"
	awk '
		/\.\.\. ok( |$)/                 { p++; next }
		/\.\.\. failed \(ignored\)/      { p++; next }
		/\.\.\. FAILED/                  { f++; next }
		/^ok [0-9]+ /                    { p++; next }
		/^not ok [0-9]+ /                { f++; next }
		END { printf "%d %d\n", p, f }
	' "$log"
}

# run_suite <name> <make args...>: run one make installcheck invocation,
# add its results to PASSED/FAILED, and print its diffs if it failed.
run_suite() {
	local name="$1" diffs="$2"
	shift 2
	local log="$TMP_DIR/$name.log" rc=0 p f
	say "running $name tests"
	make -C "$ROOT" PG_CONFIG="$PG_CONFIG" installcheck "$@" 2>&1 | tee "$log" || rc=$?
	read -r p f < <(count_results "$log")
	# make failing with no FAILED test line (pg_regress could not connect,
	# a missing expected file, a make error) is still a failure.
	if ((rc != 0 && f == 0)); then
		f=1
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	if ((rc != 0)); then
		say "$name tests failed"
		if [[ -f "$diffs" ]]; then
			echo "======== $diffs ========"
			cat "$diffs"
		fi
	fi
}

# Both suites are separate make invocations because PGXS runs them in one
# recipe: a REGRESS failure would otherwise skip the ISOLATION tests.
# Emptying the other variable on the command line disables that suite.
run_sql_tests() {
	run_suite regress "$ROOT/regression.diffs" ISOLATION=
	run_suite isolation "$ROOT/output_iso/regression.diffs" REGRESS=
}

# ---------------------------------------------------------------------------
# Node tests hook.
#
# Later Node (npm) tests go here.  When this runs, the test server is up and
# PGHOST (socket dir), PGPORT and PGUSER=postgres are exported, so a client
# like node-postgres connects with no further configuration.  The extension
# is installed but not created: tests should CREATE DATABASE their own
# database and run CREATE EXTENSION lance_namespace in it.  Add each test's
# outcome to PASSED / FAILED (do not exit on failure), e.g.:
#
#   install_node_deps          # apt-get install nodejs npm; npm ci in tests/
#   local p f
#   read -r p f < <(node tests/run.js --summary)   # prints "<passed> <failed>"
#   PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
# ---------------------------------------------------------------------------
run_node_tests() {
	: # no Node tests yet
}

main() {
	install_deps
	build_and_install
	start_test_server
	run_sql_tests
	run_node_tests
	((FAILED == 0)) || exit 1
}

main "$@"
