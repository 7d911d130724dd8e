# shellcheck shell=bash
# Shared by the test groups under test/ (sourced after scripts/common.sh):
# the per-check lines scripts/test.sh counts, the counters a group's
# summary prints, and a group's work folder: made, its clusters stopped and
# removed at the end.  Sourced, never executed.

CHECKS=0
FAILS=0

# pass <check>: one "  ok    <check>" line.
pass() {
	CHECKS=$((CHECKS + 1))
	printf '  ok    %s\n' "$1"
}

# fail <check> [detail...]: one "  FAIL  <check>" line, then each detail indented.
fail() {
	CHECKS=$((CHECKS + 1))
	FAILS=$((FAILS + 1))
	printf '  FAIL  %s\n' "$1"
	shift
	# each line of the details (an argument may hold several, a log's tail),
	# the first FAIL_DETAIL_LINES of each
	local arg line shown
	for arg in "$@"; do
		shown=0
		while IFS= read -r line; do
			if ((shown++ < FAIL_DETAIL_LINES)); then
				printf '          %s\n' "${line:0:600}"
			fi
		done <<<"$arg"
		((shown <= FAIL_DETAIL_LINES)) || printf '          ... (%d more lines)\n' $((shown - FAIL_DETAIL_LINES))
	done
}
FAIL_DETAIL_LINES=40

# pass_if_none <check> [failure...]: pass when no failure is given, else
# fail showing each: a loop collects what went wrong, then tells the check once.
pass_if_none() {
	local check="$1"
	shift
	if (($# == 0)); then pass "$check"; else fail "$check" "$@"; fi
}

# check <check> <expected> <actual>: pass when equal, else fail showing both.
check() {
	if [[ "$2" == "$3" ]]; then pass "$1"; else fail "$1 (expected '$2', got '$3')"; fi
}

# new_work_dir [<folder>]: a folder the postgres user may enter, and the
# places of a test cluster in it: WORK, PGDATA_DIR, SOCK (its socket
# folder) and TABLES.  Without <folder>, a new temporary one; with it (a
# group's own variable, as CRASH_DIR, to find the files of a run where one
# asked), that folder, emptied first: whatever still runs in it is the
# caller's to stop before.
# shellcheck disable=SC2120 # most groups want a new folder, and pass none
new_work_dir() {
	if [[ -n "${1:-}" ]]; then
		WORK="$(realpath -m -- "$1")"
		rm -rf -- "$WORK"
		mkdir -p -- "$WORK"
	else
		WORK="$(mktemp -d)"
	fi
	# mktemp -d is mode 700 and root's: the server (postgres) must reach into it
	chown postgres:postgres "$WORK"
	chmod 755 "$WORK"
	PGDATA_DIR="$WORK/pgdata"
	SOCK="$WORK/run"
	TABLES="$WORK/tables"
}

# stop_clusters <datadir>...: stop each of a group's clusters that runs (an
# empty argument, a cluster not made yet, is skipped), saying only when one
# does not stop.  For EXIT traps: it never fails, so that the trap goes on
# to stop the others and remove WORK.
stop_clusters() {
	local pgdata
	for pgdata in "$@"; do
		[[ -n "$pgdata" ]] || continue
		stop_cluster "$pgdata" >/dev/null 2>&1 || say "warning: could not stop the test server in $pgdata"
	done
	return 0
}

# remove_work_dir [<keep>]: remove WORK (none yet: nothing to do), or, when
# <keep> is 1 (a group's ..._KEEP variable), keep it and say where it is.
# For EXIT traps, after stop_clusters: it never fails either.
# shellcheck disable=SC2120 # most groups keep nothing, and pass none
remove_work_dir() {
	[[ -n "${WORK:-}" ]] || return 0
	if [[ "${1:-}" == 1 ]]; then
		say "kept $WORK"
	else
		rm -rf -- "$WORK" || say "warning: could not remove $WORK"
	fi
	return 0
}

# access_log_fields <access.log>: the gateway's JSON access log (one object
# per line), each line as space-separated fields: time method path status
# duration key=<key_id> operation code request_id (the path is written with
# %XX for spaces: one field).  A line that is not a JSON object: INVALID.
access_log_fields() {
	jq -R -r '(fromjson? | select(type == "object")
		| "\(.time) \(.method) \(.path) \(.status) \(.duration) key=\(.key_id) \(.operation) \(.code) \(.request_id)")
		// "INVALID"' "$1"
}

# need_gateway_test_packages: install what of LN_GATEWAY_TEST_PACKAGES
# (scripts/common.sh: jq reads the JSON access log, prometheus_client
# parses /metrics) is missing.
need_gateway_test_packages() {
	local missing
	missing="$(missing_packages "${LN_GATEWAY_TEST_PACKAGES[@]}")"
	[[ -n "$missing" ]] || return 0
	say "installing $(tr '\n' ' ' <<<"$missing")"
	# shellcheck disable=SC2086 # one package a word
	apt_install $missing >/dev/null || die "could not install $missing"
}
