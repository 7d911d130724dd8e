# shellcheck shell=bash
# Shared by the test groups under test/ (sourced after scripts/common.sh):
# the per-check lines scripts/test.sh counts, and the counters a group's
# summary prints.  Sourced, never executed.

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
	local line
	for line in "$@"; do printf '          %s\n' "${line:0:600}"; done
}

# check <check> <expected> <actual>: pass when equal, else fail showing both.
check() {
	if [[ "$2" == "$3" ]]; then pass "$1"; else fail "$1 (expected '$2', got '$3')"; fi
}

# new_work_dir: a temporary folder the postgres user may enter, and the
# places of a test cluster in it: WORK, PGDATA_DIR, SOCK (its socket
# folder) and TABLES.
new_work_dir() {
	WORK="$(mktemp -d)"
	chown postgres:postgres "$WORK"
	chmod 755 "$WORK"
	PGDATA_DIR="$WORK/pgdata"
	SOCK="$WORK/run"
	TABLES="$WORK/tables"
}
