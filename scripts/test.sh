#!/usr/bin/env bash
# Set up and run every lance_namespace test.
#
# Installs missing dependencies, builds and installs the extension, starts a
# throwaway PostgreSQL cluster (of the version scripts/common.sh picks) in a
# temporary directory on a free port, runs the pg_regress (REGRESS) and
# isolation (ISOLATION) suites from the Makefile against it, and the other
# parts below, and always tears the cluster down again.
#
# The last line of output is the summary "N passed, M failed".  The exit
# status is non-zero when any test or any setup step failed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try for the test server (default 54329)
#   LN_TEST_ONLY  run only these parts, separated by spaces or commas: sql
#                 (pg_regress and isolation), node (the end-to-end tests), s3
#                 (tables on S3, with the S3 test server), layers (the
#                 source tree's dependencies, scripts/check_layers.sh),
#                 suites (what in the test suites fails now and then by
#                 itself, scripts/check_suites.sh), test
#                 group names (fuzz, gateway, serving, memory, load, ...), pg17 and
#                 pg18 (the project on PostgreSQL 17 in a Debian 13 root and
#                 on 18 in a Debian sid root, test/versions/run.sh), and
#                 restore (a catalog of another release's server restored
#                 here, test/versions/restore.sh: only with LN_RESTORE_FROM);
#                 default: all
#   LN_TEST_RUN_DATA  the LN_DATA of a catalog that scripts/run.sh runs (with
#                 LN_GATEWAY_PORT and LN_DB as it was started): the node part
#                 runs the end-to-end tests through its gateway instead of a
#                 test gateway of its own
#   LN_PG_VERSION the PostgreSQL major version to test (see scripts/run.sh)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PASSED=0
FAILED=0
# what failed, one line each, repeated above the summary so that the end of
# a long log (all that CI may show) says which tests to look at
FAILURES=()
TMP_DIR=""
PGDATA_DIR=""
# the gateway folder whose access log the Node tests read (run_node_tests)
NODE_LOG_GATEWAY=""

# ---------------------------------------------------------------------------
# Teardown and summary, on every exit path (success, failed step, Ctrl-C).
# ---------------------------------------------------------------------------
cleanup() {
	local rc=$?
	trap - EXIT
	close_node_log
	if [[ -n "${GATEWAY_PREFIX:-}" ]]; then
		stop_gateway "$GATEWAY_PREFIX" || say "warning: could not stop the test gateway"
	fi
	if [[ -n "${S3_GATEWAY_PREFIX:-}" ]]; then
		stop_gateway "$S3_GATEWAY_PREFIX" || say "warning: could not stop the S3 test gateway"
	fi
	if [[ -n "${S3_SERVER_PORT:-}" ]]; then
		pkill -f "s3server.mjs $S3_SERVER_PORT " 2>/dev/null || true
	fi
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
	if ((${#FAILURES[@]} > 0)); then
		echo "what failed:"
		printf '  %s\n' "${FAILURES[@]}"
	fi
	echo "$PASSED passed, $FAILED failed"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------
# Test server
# ---------------------------------------------------------------------------
# The run's temporary folder.  mktemp -d is mode 700 and root-owned: hand
# it to postgres so the server can create pgdata/ and the socket inside,
# and open it to the gateway's OS user, which reaches the socket and its
# own folders there.
start_test_server_dir() {
	TMP_DIR="$(mktemp -d)"
	chown postgres:postgres "$TMP_DIR"
	chmod 755 "$TMP_DIR"
}

start_test_server() {
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
	local log="$TMP_DIR/$name.log" rc=0 p f server_log="$PGDATA_DIR/server.log" server_lines=0
	say "running $name tests"
	[[ -r "$server_log" ]] && server_lines="$(wc -l <"$server_log")"
	make -C "$ROOT" PG_CONFIG="$PG_CONFIG" installcheck "$@" 2>&1 | tee "$log" || rc=$?
	read -r p f < <(count_results "$log")
	# make failing with no FAILED test line (pg_regress could not connect,
	# a missing expected file, a make error) is still a failure.
	if ((rc != 0 && f == 0)); then
		f=1
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	note_failures "$name" "$log" '\.\.\. FAILED|^not ok [0-9]+ ' "$rc"
	if ((rc != 0)); then
		[[ -f "$diffs" ]] && note_diffs "$diffs"
		note_server_trouble "$server_log" "$server_lines"
		say "$name tests failed"
		if [[ -f "$diffs" ]]; then
			echo "======== $diffs ========"
			cat "$diffs"
		fi
	fi
}

# note_diffs <regression.diffs>: add to FAILURES, for the same reason as
# note_failures, each failed test's first changed lines, those the test
# printed first (an isolation test that stopped says why there: "setup
# failed: ..."), then those it should have printed; at most
# FAILURE_DETAIL_LINES a test and 3 times that in all.
note_diffs() {
	local line
	while IFS= read -r line; do
		FAILURES+=("$line")
	done < <(awk -v most="$FAILURE_DETAIL_LINES" -v total="$((3 * FAILURE_DETAIL_LINES))" '
		function flush(   i, k) {
			k = 0
			for (i = 1; i <= nplus && k < most && shown < total; i++) { print "  " name ": " plus[i]; k++; shown++ }
			for (i = 1; i <= nminus && k < most && shown < total; i++) { print "  " name ": " minus[i]; k++; shown++ }
			nplus = nminus = 0
		}
		# a file header: "diff ...", then its "---" and "+++" lines
		/^diff / { flush(); name = $NF; sub(/.*\//, "", name); sub(/\.out$/, "", name); header = 2; next }
		header > 0 && /^(---|\+\+\+) / { header--; next }
		{ header = 0 }
		/^\+/ { if (nplus < most) plus[++nplus] = substr($0, 1, 200); next }
		/^-/ { if (nminus < most) minus[++nminus] = substr($0, 1, 200); next }
		END { flush() }' "$1")
}

# note_server_trouble <server.log> <lines before>: add to FAILURES the lines
# the server logged after the first <lines before> that say a backend
# crashed or the server restarted, which ends every session of a test at
# once (a test that stopped early may say only "exit code 1").
note_server_trouble() {
	local line
	[[ -r "$1" ]] || return 0
	while IFS= read -r line; do
		FAILURES+=("  server: ${line:0:200}")
	done < <(tail -n "+$(($2 + 1))" "$1" |
		grep -E 'PANIC|process \([^)]*\) (was terminated by signal|exited with exit code)|terminating any other active server processes|out of memory|No space left' |
		head -n "$FAILURE_DETAIL_LINES")
}

# Both suites are separate make invocations because PGXS runs them in one
# recipe: a REGRESS failure would otherwise skip the ISOLATION tests.
# Emptying the other variable on the command line disables that suite.
run_sql_tests() {
	run_suite regress "$ROOT/regression.diffs" ISOLATION=
	run_suite isolation "$ROOT/output_iso/regression.diffs" REGRESS=
}

# ---------------------------------------------------------------------------
# Test groups that start servers of their own (test/<group>/run.sh): each
# prints a line "  ok    <check>" or "  FAIL  <check>" per check, its
# figures, and exits non-zero when a check failed.  Every check counts as a
# test; a group that fails without a FAIL line counts as one failure.
# ---------------------------------------------------------------------------
# wanted <part>: true when LN_TEST_ONLY is unset or names <part>.
wanted() {
	[[ -z "${LN_TEST_ONLY:-}" ]] && return 0
	[[ " ${LN_TEST_ONLY//,/ } " == *" $1 "* ]]
}

run_group() {
	local name="$1" log="$TMP_DIR/group-$1.log" rc=0 p f
	shift
	wanted "$name" || return 0
	say "running the $name tests"
	"$@" 2>&1 | tee "$log" || rc=$?
	p="$(grep -c '^  ok ' "$log" || true)"
	f="$(grep -c '^  FAIL ' "$log" || true)"
	# a group that reports one verdict of its own counts as one test
	if ((rc != 0 && f == 0)); then
		f=1
	elif ((rc == 0 && p == 0)); then
		p=1
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	note_failures "$name" "$log" '^  FAIL ' "$rc"
	((rc == 0)) || say "the $name tests failed"
}

run_group_tests() {
	PG_BIN="$PG_BIN" run_group fuzz bash "$ROOT/test/fuzz/run.sh"
	run_group standby bash "$ROOT/test/standby/run.sh"
	run_group dump bash "$ROOT/test/dump/run.sh"
	run_group crash bash "$ROOT/test/crash/run.sh"
	run_group worker bash "$ROOT/test/worker/run.sh"
	run_group errors bash "$ROOT/test/errors/run.sh"
	run_group linkrace bash "$ROOT/test/linkrace/run.sh"
	run_group undorace bash "$ROOT/test/undorace/run.sh"
	run_group locktable bash "$ROOT/test/locktable/run.sh"
	run_group feedhold bash "$ROOT/test/feedhold/run.sh"
	run_group undo bash "$ROOT/test/undo/run.sh"
	run_group gateway bash "$ROOT/test/gateway/run.sh"
	# the serving group's store that stalls is the S3 test server
	if wanted serving && ! start_s3_server; then
		FAILED=$((FAILED + 1))
	fi
	LN_S3_ENDPOINT="$S3_ENDPOINT" LN_S3_CONTROL="$S3_CONTROL" run_group serving bash "$ROOT/test/serving/run.sh"
	run_group run bash "$ROOT/test/run/run.sh"
	# the memory group runs the S3 paths too, against the S3 test server
	if wanted memory && ! start_s3_server; then
		FAILED=$((FAILED + 1))
	fi
	LN_S3_ENDPOINT="$S3_ENDPOINT" LN_S3_CONTROL="$S3_CONTROL" run_group memory bash "$ROOT/test/memory/run.sh"
	LOAD_SECONDS="${LOAD_SECONDS:-30}" run_group load bash "$ROOT/test/load/run.sh"
}

# ---------------------------------------------------------------------------
# End-to-end tests: the official LanceDB client (and plain HTTP) through the
# gateway, run as the server's OS user so that the client and the server
# write the same table folders.  They get a database of their own, whose
# lance_namespace.root and local_roots are a temporary folder, and an
# administrator's API key (LANCE_API_KEY; the tests make other roles and
# keys themselves).
# ---------------------------------------------------------------------------
GATEWAY_PREFIX=""

# install_node: Node, npm and setfacl for the end-to-end tests, only those
# missing.  Node and npm count as there when their commands are: a machine
# may have another build of Node than Debian's, and NodeSource's nodejs
# package carries npm and conflicts with Debian's npm package, so asking apt
# for both fails there.
install_node() {
	local -a need=()
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		need+=(nodejs npm)
	fi
	command -v setfacl >/dev/null || need+=(acl)
	((${#need[@]} > 0)) || return 0
	say "installing ${need[*]}"
	apt_install "${need[@]}" || die "could not install ${need[*]}"
}

# The tests run as postgres, which may not be able to read the clone (a
# root-owned mktemp -d or /root is mode 700): they run from a copy in the
# test folder, which postgres owns, made once.
prepare_node_tests() {
	local tests="$TMP_DIR/node"
	[[ -d "$tests" ]] && return 0
	install_node
	mkdir "$tests"
	cp -R "$ROOT"/test/node/*.mjs "$ROOT"/test/node/s3 "$ROOT"/test/node/package*.json "$tests"/
	say "installing the Node test dependencies (npm ci)"
	(cd "$tests" && npm ci --no-audit --no-fund)
}

run_node_tests() {
	local db=lance_e2e root="$TMP_DIR/tables" log="$TMP_DIR/node.log" port key rc=0
	local tests="$TMP_DIR/node" gateway pghost="$PGHOST" pgport="$PGPORT"
	prepare_node_tests

	if [[ -n "${LN_TEST_RUN_DATA:-}" ]]; then
		# the catalog and gateway that scripts/run.sh runs there
		local data
		data="$(realpath -m -- "$LN_TEST_RUN_DATA")"
		db="${LN_DB:-lance}" root="$data/tables" gateway="$data/gateway" pghost="$data/run"
		pgport="$(postmaster_field "$data/pgdata" 4)"
		port="${LN_GATEWAY_PORT:-2333}"
		key="$(tr -d '[:space:]' <"$data/api_key" 2>/dev/null || true)"
		is_api_key "$key" || die "no API key in $data/api_key: does scripts/run.sh run with LN_DATA=$data?"
		say "running Node tests through the gateway of scripts/run.sh's catalog in $data"
	else
		make_postgres_dir "$root" 755
		"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $db"
		"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" -v db="$db" -v root="$root" <<'SQL'
CREATE EXTENSION lance_namespace;
ALTER DATABASE :"db" SET lance_namespace.root = :'root';
ALTER DATABASE :"db" SET lance_namespace.local_roots = :'root';
SQL
		port="$(find_free_port 2333)"
		GATEWAY_PREFIX="$TMP_DIR/gateway"
		gateway="$GATEWAY_PREFIX"
		# one key runs every end-to-end test, several clients at once
		# (concurrency.test.mjs: 8 writers): no limit per key here
		# (LN_KEY_CONCURRENCY; test/serving/parts/37_fair_share.sh checks it)
		LN_KEY_CONCURRENCY=10000 start_gateway "$GATEWAY_PREFIX" "$port" "$db" "$PGHOST" "$PGPORT"
		key="$(create_api_key lance_admin -d "$db")"
		is_api_key "$key" || die "lance_create_api_key answered no key"
		say "running Node tests"
	fi

	# the tests, run as postgres, read the gateway's access log: for their
	# time, its folder (the gateway's OS user's alone) lets the OS user
	# postgres pass and that file lets it read, by ACL; no mode widens to
	# every user.  cleanup takes the entries away on every exit.
	NODE_LOG_GATEWAY="$gateway"
	as_gateway setfacl -m u:postgres:x "$gateway"
	as_gateway setfacl -m u:postgres:r "$gateway/access.log"
	# the key goes through the environment, not a command line
	LANCE_API_KEY="$key" as_postgres env LANCE_URI="http://127.0.0.1:$port" LANCE_DATA_ROOT="$root" \
		LANCE_GATEWAY_LOG="$gateway/access.log" \
		LANCE_PSQL_ARGS="-h $pghost -p $pgport -U postgres $db" PATH="$PG_BIN:$PATH" \
		node --test --test-reporter=tap --test-concurrency=1 "$tests"/*.test.mjs \
		2>&1 | tee "$log" || rc=$?
	close_node_log
	count_node "$log" "$rc"
	((rc == 0)) || say "Node tests failed; gateway log: $(tail -n 20 "$gateway/error.log" 2>/dev/null)"
}

# close_node_log: take away the ACL entries run_node_tests gave the OS user
# postgres on the gateway's folder and access log.
close_node_log() {
	[[ -n "${NODE_LOG_GATEWAY:-}" ]] || return 0
	as_gateway setfacl -x u:postgres "$NODE_LOG_GATEWAY" "$NODE_LOG_GATEWAY/access.log" 2>/dev/null ||
		say "warning: could not take the OS user postgres's access away from $NODE_LOG_GATEWAY (setfacl -x u:postgres)"
	NODE_LOG_GATEWAY=""
}

# count_node <log> <rc>: add a node --test TAP log's counts to PASSED/FAILED.
count_node() {
	local log="$1" rc="$2" p f
	p="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$log" | tail -n 1)"
	f="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$log" | tail -n 1)"
	p="${p:-0}" f="${f:-0}"
	if ((rc != 0 && f == 0)); then
		f=1
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	note_failures "$(basename "$log" .log)" "$log" '^ *not ok ' "$rc"
}

# note_failures <part> <log> <pattern> <rc>: add the log's lines matching
# <pattern> to FAILURES, each with the first lines of what the test showed
# under it (lib.sh's fail indents them): CI may show only the end of a long
# log, and a failure seen once must say why there.  One line for the part
# if it failed without any.
FAILURE_DETAIL_LINES=25
note_failures() {
	local part="$1" log="$2" pattern="$3" rc="$4" line found=0
	while IFS= read -r line; do
		if [[ "$line" == " "* ]]; then
			FAILURES+=("$line")
		else
			FAILURES+=("$part: $line")
			found=1
		fi
	done < <(awk -v pattern="$pattern" -v most="$FAILURE_DETAIL_LINES" '
		$0 ~ pattern { sub(/^[[:space:]]+/, ""); print substr($0, 1, 200); on = 1; shown = 0; next }
		on && /^          / && shown < most { print "  " substr($0, 11, 200); shown++; next }
		{ on = 0 }' "$log" 2>/dev/null)
	if ((rc != 0 && found == 0)); then
		FAILURES+=("$part: failed (see its output above)")
	fi
	return 0
}

# ---------------------------------------------------------------------------
# Tables on S3: s3rver behind the signature-checking proxy of
# test/node/s3server.mjs on free ports, a database whose lance_namespace.root
# is s3://lake/cat with a gateway of its own, and the tests of test/node/s3.
# ---------------------------------------------------------------------------
S3_GATEWAY_PREFIX=""
S3_SERVER_PORT=""

S3_ENDPOINT=""
S3_CONTROL=""

# start_s3_server: start the S3 test server once (the S3 tests and the
# memory group use it); false, with its log shown, if it does not start.
start_s3_server() {
	local s3port ctlport i
	[[ -n "$S3_ENDPOINT" ]] && return 0
	prepare_node_tests
	s3port="$(find_free_port 9400)"
	ctlport="$(find_free_port $((s3port + 1)))"
	make_postgres_dir "$TMP_DIR/s3data" 700
	say "starting the S3 test server on port $s3port"
	S3_SERVER_PORT="$s3port"
	as_postgres node --openssl-legacy-provider "$TMP_DIR/node/s3server.mjs" "$s3port" "$ctlport" \
		"$TMP_DIR/s3data" >"$TMP_DIR/s3server.log" 2>&1 &
	for ((i = 0; i < 100; i++)); do
		curl -s -o /dev/null "http://127.0.0.1:$ctlport/stats" && break
		sleep 0.1
	done
	if ! curl -s -o /dev/null "http://127.0.0.1:$ctlport/stats"; then
		say "the S3 test server did not start: $(cat "$TMP_DIR/s3server.log")"
		return 1
	fi
	S3_ENDPOINT="http://127.0.0.1:$s3port" S3_CONTROL="http://127.0.0.1:$ctlport"
}

run_s3_tests() {
	local db=lance_s3 tests="$TMP_DIR/node" local_root="$TMP_DIR/s3local" log="$TMP_DIR/s3.log"
	local port key rc=0
	if ! start_s3_server; then
		FAILED=$((FAILED + 1))
		return 0
	fi
	make_postgres_dir "$local_root" 777

	"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $db"
	"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" -v db="$db" -v local="$local_root" <<'SQL'
CREATE EXTENSION lance_namespace;
ALTER DATABASE :"db" SET lance_namespace.root = 's3://lake/cat';
ALTER DATABASE :"db" SET lance_namespace.local_roots = :'local';
SQL
	port="$(find_free_port 2433)"
	S3_GATEWAY_PREFIX="$TMP_DIR/gateway-s3"
	# (one key, several clients at once: as for the Node tests' gateway)
	LN_KEY_CONCURRENCY=10000 start_gateway "$S3_GATEWAY_PREFIX" "$port" "$db" "$PGHOST" "$PGPORT"
	key="$(create_api_key lance_admin -d "$db")"
	is_api_key "$key" || die "lance_create_api_key answered no key"

	say "running the S3 tests"
	LANCE_API_KEY="$key" as_postgres env LANCE_URI="http://127.0.0.1:$port" LANCE_DATA_ROOT="$local_root" \
		LANCE_S3_ENDPOINT="$S3_ENDPOINT" LANCE_S3_CONTROL="$S3_CONTROL" \
		LANCE_S3_LOCAL="$local_root" \
		LANCE_PSQL_ARGS="-h $PGHOST -p $PGPORT -U postgres $db" PATH="$PG_BIN:$PATH" \
		node --test --test-reporter=tap --test-concurrency=1 "$tests"/s3/*.test.mjs \
		2>&1 | tee "$log" || rc=$?
	count_node "$log" "$rc"
	((rc == 0)) || say "S3 tests failed; S3 server log: $(tail -n 20 "$TMP_DIR/s3server.log")"
}

# ---------------------------------------------------------------------------
# Newer releases: the project on PostgreSQL 17 in a Debian 13 root and on 18
# in a Debian sid root, each a throwaway overlay of a base made with
# debootstrap, where everything is installed anew from the base's cache of
# packages (test/versions/run.sh, scripts/debian_root.sh): scripts/run.sh's catalog and gateway, the SQL
# suites, the end-to-end tests through that gateway, and a catalog of this
# machine's PostgreSQL dumped and restored there.  Their counts and what
# failed join this run's.
# ---------------------------------------------------------------------------
run_release() {
	local part="$1" suite="$2" log="$TMP_DIR/$1.log" rc=0 summary p=0 f=0 line start=$SECONDS
	wanted "$part" || return 0
	say "running the project on $part in a Debian $suite root"
	bash "$ROOT/test/versions/run.sh" "$suite" 2>&1 | tee "$log" || rc=$?
	say "the $part part took $((SECONDS - start)) s"
	summary="$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$log" | tail -n 1)"
	[[ -n "$summary" ]] && read -r p f <<<"$summary"
	if ((rc != 0 && f == 0)); then
		f=1
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	while IFS= read -r line; do
		# a failure's detail lines (indented) follow it as they are
		if [[ "$line" == " "* ]]; then FAILURES+=("$line"); else FAILURES+=("$part: $line"); fi
	done < <(awk '/^what failed:$/ { on = 1; next } on && /^  / { print substr($0, 3); next } { on = 0 }' "$log")
	if ((rc != 0)) && [[ -z "$summary" ]]; then
		FAILURES+=("$part: failed (see its output above)")
	fi
	((rc == 0)) || say "the $part tests failed"
}

# build_checked: build and install, and when something was compiled, count
# whether the compiler warned (the build is warning-free on every release).
build_checked() {
	local log="$TMP_DIR/build.log" rc=0
	build_and_install 2>&1 | tee "$log" || rc=$?
	((rc == 0)) || exit "$rc"
	grep -q -- ' -c -o ' "$log" || return 0
	if grep -q 'warning:' "$log"; then
		FAILED=$((FAILED + 1))
		FAILURES+=("build: $(grep -m 1 'warning:' "$log" | cut -c1-180)")
	else
		PASSED=$((PASSED + 1))
	fi
}

main() {
	install_deps
	start_test_server_dir
	build_checked
	start_test_server
	# the source tree's layers: no circle, no call upward, no file too long
	run_group layers bash "$ROOT/scripts/check_layers.sh"
	# the test suites: nothing in them that fails now and then by itself
	run_group suites bash "$ROOT/scripts/check_suites.sh"
	if wanted sql; then run_sql_tests; fi
	if wanted node; then run_node_tests; fi
	if wanted s3; then run_s3_tests; fi
	# a catalog another release's server holds (test/versions gives one)
	if [[ -n "${LN_RESTORE_FROM:-}" ]]; then run_group restore bash "$ROOT/test/versions/restore.sh"; fi
	run_group_tests
	run_release pg17 trixie
	run_release pg18 sid
	((FAILED == 0)) || exit 1
}

main "$@"
