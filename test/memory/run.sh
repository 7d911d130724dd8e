#!/usr/bin/env bash
# Memory errors and memory growth:
#   - lance_rest answers a header it cannot decode through its outer catch;
#     100,000 such calls in one statement must not pile up memory (it once
#     reached 425 MB).  Run on a plain server and measured by the backend's
#     peak resident size (VmHWM in /proc/<pid>/status), read by the same
#     session after the statement.
#   - the pg_regress suite (REGRESS of the Makefile), a fuzz sample
#     (test/fuzz) and the S3 paths (s3_workload.sh, against the S3 test server
#     named by LN_S3_ENDPOINT and LN_S3_CONTROL, which scripts/test.sh starts)
#     against a server whose postmaster runs under valgrind
#     memcheck, so that every backend it forks is checked too; then every
#     valgrind log is scanned for invalid reads, writes and frees and uses of
#     uninitialised values whose stack has a frame in lance_namespace.so.
#     (AddressSanitizer is no option: preloaded, it hangs PostgreSQL 15's
#     binaries at start-up.)
#
# What valgrind sees: every malloc'd block (json-c's trees and strings, libc)
# byte by byte, and reads of undefined memory everywhere.  Debian's postgres
# is not built with USE_VALGRIND, so a palloc'd chunk is not a block of its
# own to valgrind: an overrun that stays inside a memory context's block
# goes unseen.
#
# Errors reported wholly inside PostgreSQL or libc (no lance_namespace frame)
# are PostgreSQL's business: the known harmless ones (padding bytes written to
# disk) are suppressed in valgrind.supp, any other is counted and ignored.
#
# Runs as root (installs valgrind, and node for the fuzz driver, when they
# are missing) with the extension already installed, and starts its own
# servers in a temporary folder.  Prints "  ok    <check>" / "  FAIL  <check>"
# per check; exits 0 only when every check passed.  2 to 4 minutes on two
# cores, most of it the regress suite under valgrind (70-210 s).
#
# Environment (optional):
#   LN_TEST_PORT         first port to try (default 54521)
#   MEMORY_FUZZ_COUNT    fuzz requests under valgrind (default 300)
#   MEMORY_REGRESS       the regress tests to run (default: REGRESS of the Makefile)
#   MEMORY_LEAK_CALLS    lance_rest calls in the leak statement (default 100000)
#   MEMORY_LEAK_MAX_MB   the bound on the backend's peak (default 100)
#   MEMORY_KEEP_LOGS     a folder to copy the valgrind and server logs to
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD PGHOST PGPORT PGUSER

FUZZ_COUNT_VG="${MEMORY_FUZZ_COUNT:-300}"
LEAK_CALLS="${MEMORY_LEAK_CALLS:-100000}"
LEAK_MAX_MB="${MEMORY_LEAK_MAX_MB:-100}"
# Under valgrind a request runs 20-50 times slower: the fuzz driver's
# statement_timeout (30 s by default, a failure when hit) becomes 60 s.
FUZZ_TIMEOUT_MS=60000
# Bounds on each step, so that a hang cannot hold the group forever: hang
# guards only, with margins for a loaded 2-core machine (several times what
# each step takes on an idle one), never a check of speed.
REGRESS_LIMIT=1800
FUZZ_LIMIT=$((900 + FUZZ_COUNT_VG))
S3_LIMIT=900

LIB="$("$PG_CONFIG" --pkglibdir)/lance_namespace.so"
[[ -r "$LIB" ]] || die "$LIB is not installed (make install first)"

WORK="$(mktemp -d)"
chown postgres:postgres "$WORK"
chmod 755 "$WORK"
# valgrind runs as postgres, which may not be able to read the clone (a
# root-owned mktemp -d or /root is mode 700): it reads a copy.
SUPP="$WORK/valgrind.supp"
install -m 644 "$HERE/valgrind.supp" "$SUPP"
PLAIN_DATA="$WORK/plain"
VG_DATA="$WORK/vg"
VG_LOGS="$WORK/vglogs"
VG_SERVER_LOG="$WORK/vg-server.log"
SOCK="$WORK/run"
VG_JOB=""
START=$SECONDS

# Stop the valgrind server we started: pg_ctl reads the postmaster's pid from
# its postmaster.pid (valgrind runs in the process itself).  Backends under
# valgrind take a while to exit; "immediate" if "fast" did not do.  A server
# that never got as far as postmaster.pid (or would not stop) is killed with
# its children, by the ids of the processes under our background job.
kill_tree() {
	local child
	for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		kill_tree "$child"
	done
	kill -KILL "$1" 2>/dev/null || true
}
stop_vg_server() {
	local i
	[[ -n "$VG_JOB" ]] || return 0
	if [[ -f "$VG_DATA/postmaster.pid" ]]; then
		as_postgres "$PG_BIN/pg_ctl" -D "$VG_DATA" -m fast -w -t 120 stop >/dev/null 2>&1 ||
			as_postgres "$PG_BIN/pg_ctl" -D "$VG_DATA" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
	fi
	for ((i = 0; i < 30; i++)); do
		kill -0 "$VG_JOB" 2>/dev/null || break
		sleep 1
	done
	kill -0 "$VG_JOB" 2>/dev/null && kill_tree "$VG_JOB"
	wait "$VG_JOB" 2>/dev/null || true
	VG_JOB=""
}
cleanup() {
	stop_vg_server
	stop_cluster "$PLAIN_DATA" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

note() { printf 'lance_namespace: memory test: %s\n' "$*"; }

install_missing() { # install_missing <command> <package...>
	local cmd="$1"
	shift
	command -v "$cmd" >/dev/null && return 0
	[[ $EUID -eq 0 ]] || die "$cmd is missing and not root; install: $*"
	note "installing $*"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends "$@" >/dev/null
}
install_missing valgrind valgrind
install_missing node nodejs npm
install_missing readelf binutils

# ---------------------------------------------------------------------------
# 1. The lance_rest leak, on a plain server (under valgrind 100,000 calls
#    would take far too long, and valgrind's own heap would blur the peak).
# ---------------------------------------------------------------------------
PORT="$(find_free_port "${LN_TEST_PORT:-54521}")"
init_cluster "$PLAIN_DATA" test >/dev/null
start_cluster "$PLAIN_DATA" "$PORT" "$SOCK" >/dev/null
t0=$SECONDS
# A header value that is not a string fails json_decode_headers, whose error
# lance_rest's outer PG_CATCH answers as a 400.
leak_out="$("$PG_BIN/psql" -X -q -At -F ' ' -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d postgres \
	-v calls="$LEAK_CALLS" 2>&1 <<'SQL'
CREATE EXTENSION lance_namespace;
SELECT substring(pg_read_file('/proc/' || pg_backend_pid() || '/status') FROM 'VmHWM:\s*(\d+) kB');
SELECT count(*) FILTER (WHERE (r).status = 400 AND (r).response_body LIKE '%headers.a%'), count(*)
  FROM (SELECT lance_rest('POST', '/v1/namespace/x/describe', NULL, '{}', '{"a": 1}'::jsonb) AS r
          FROM generate_series(1, :calls)) s;
SELECT substring(pg_read_file('/proc/' || pg_backend_pid() || '/status') FROM 'VmHWM:\s*(\d+) kB');
SQL
)" || true
leak_secs=$((SECONDS - t0))
stop_cluster "$PLAIN_DATA" >/dev/null
read -r hwm_before answered total hwm_after < <(printf '%s\n' "$leak_out" | tr '\n' ' ') || true
if [[ "${hwm_after:-}" =~ ^[0-9]+$ && "${answered:-}" == "$LEAK_CALLS" && "${total:-}" == "$LEAK_CALLS" ]]; then
	note "leak statement: $LEAK_CALLS header errors answered 400 in $leak_secs s; backend peak $((hwm_after / 1024)) MB (before the statement $((hwm_before / 1024)) MB)"
	if ((hwm_after < LEAK_MAX_MB * 1024)); then
		pass "lance_rest header errors: backend peak $((hwm_after / 1024)) MB < $LEAK_MAX_MB MB after $LEAK_CALLS calls"
	else
		fail "lance_rest header errors: backend peak $((hwm_after / 1024)) MB >= $LEAK_MAX_MB MB after $LEAK_CALLS calls (memory piles up per error)"
	fi
else
	printf '%s\n' "$leak_out" | tail -n 20
	fail "lance_rest header errors: the leak statement did not answer $LEAK_CALLS 400s (got '${answered:-}' of '${total:-}')"
fi

# ---------------------------------------------------------------------------
# The server under valgrind.  --trace-children=yes: backends are forked, not
# exec'd, so valgrind follows them anyway; it also follows whatever the server
# execs (none here).  One log per process (%p).  No leak check: PostgreSQL
# frees by resetting memory contexts and exits without freeing.  Autovacuum
# and JIT are off: they add no coverage of our code and cost much CPU under
# valgrind (JIT would also load LLVM into a backend now and then).
# ---------------------------------------------------------------------------
init_cluster "$VG_DATA" test >/dev/null
make_postgres_dir "$VG_LOGS" 755
make_postgres_dir "$SOCK" 755
PORT="$(find_free_port "$((PORT + 1))")"
: >"$VG_SERVER_LOG"
chown postgres:postgres "$VG_SERVER_LOG"
note "starting the server under valgrind on port $PORT"
t0=$SECONDS
as_postgres valgrind --quiet --trace-children=yes --track-origins=no --error-exitcode=0 \
	--leak-check=no --num-callers=40 --fullpath-after= \
	--log-file="$VG_LOGS/vg.%p.log" --suppressions="$SUPP" \
	"$PG_BIN/postgres" -D "$VG_DATA" -p "$PORT" -k "$SOCK" -c listen_addresses='' \
	-c autovacuum=off -c jit=off >>"$VG_SERVER_LOG" 2>&1 &
VG_JOB=$!
deadline=$((SECONDS + 120))
until "$PG_BIN/pg_isready" -q -h "$SOCK" -p "$PORT" -U postgres; do
	if ! kill -0 "$VG_JOB" 2>/dev/null || ((SECONDS > deadline)); then
		tail -n 30 "$VG_SERVER_LOG" >&2
		die "the server under valgrind did not start; see above"
	fi
	sleep 1
done
note "server under valgrind ready after $((SECONDS - t0)) s"

# ---------------------------------------------------------------------------
# 2. The regress suite.  Its results and regression.diffs go to the project
#    folder, as with scripts/test.sh.
# ---------------------------------------------------------------------------
regress_args=()
[[ -n "${MEMORY_REGRESS:-}" ]] && regress_args=(REGRESS="$MEMORY_REGRESS")
t0=$SECONDS
rc=0
timeout --kill-after=10 "$REGRESS_LIMIT" make -C "$ROOT" PG_CONFIG="$PG_CONFIG" installcheck ISOLATION= \
	PGHOST="$SOCK" PGPORT="$PORT" PGUSER=postgres "${regress_args[@]}" >"$WORK/regress.log" 2>&1 || rc=$?
regress_secs=$((SECONDS - t0))
summary="$(grep -E 'tests (passed|failed)|of [0-9]+ tests' "$WORK/regress.log" | tail -n 1 | tr -s ' =' ' ')"
note "regress suite under valgrind: $regress_secs s;${summary:- no summary}"
if ((rc == 0)); then
	pass "regress suite under valgrind"
else
	grep -E '\.\.\. FAILED|^(make|pg_regress):' "$WORK/regress.log" || tail -n 20 "$WORK/regress.log"
	[[ -f "$ROOT/regression.diffs" ]] && head -n 100 "$ROOT/regression.diffs"
	((rc == 124)) && note "the regress suite ran past $REGRESS_LIMIT s and was stopped"
	fail "regress suite under valgrind (exit $rc)"
fi

# ---------------------------------------------------------------------------
# 3. The fuzz sample.  Its log check reads the server's stderr log; its
#    temporary folder goes in ours (TMPDIR), so that cleanup removes it even
#    when the time limit stops it.
# ---------------------------------------------------------------------------
t0=$SECONDS
rc=0
TMPDIR="$WORK" PGHOST="$SOCK" PGPORT="$PORT" PGUSER=postgres FUZZ_COUNT="$FUZZ_COUNT_VG" \
	FUZZ_SERVER_LOG="$VG_SERVER_LOG" FUZZ_STATEMENT_TIMEOUT_MS="$FUZZ_TIMEOUT_MS" \
	timeout --kill-after=10 "$FUZZ_LIMIT" bash "$ROOT/test/fuzz/run.sh" >"$WORK/fuzz.log" 2>&1 || rc=$?
fuzz_secs=$((SECONDS - t0))
note "fuzz under valgrind: $(grep -m1 -E '^fuzz: [0-9]+ requests in' "$WORK/fuzz.log" | sed 's/^fuzz: //') ($fuzz_secs s in all); $(grep -m1 'to reproduce' "$WORK/fuzz.log" | sed 's/^fuzz: //')"
if ((rc == 0)); then
	pass "fuzz sample ($FUZZ_COUNT_VG requests) under valgrind"
else
	sed -n '/failed checks\|FAIL\|aborted/,$p' "$WORK/fuzz.log" | head -n 60
	[[ -s "$WORK/fuzz.log" ]] && ! grep -q 'FAIL\|aborted' "$WORK/fuzz.log" && tail -n 20 "$WORK/fuzz.log"
	((rc == 124)) && note "the fuzz sample ran past $FUZZ_LIMIT s and was stopped"
	fail "fuzz sample ($FUZZ_COUNT_VG requests) under valgrind (exit $rc)"
fi

# ---------------------------------------------------------------------------
# 3b. The S3 paths (test/memory/s3_workload.sh: copies and their undo, refs at
#     commit, a store that is down or stalls, a drop's deletes) against the
#     S3 test server that scripts/test.sh starts, LN_S3_ENDPOINT and
#     LN_S3_CONTROL; the transcript must be s3_workload.expected.
# ---------------------------------------------------------------------------
if [[ -z "${LN_S3_ENDPOINT:-}" || -z "${LN_S3_CONTROL:-}" ]]; then
	fail "S3 paths under valgrind: no S3 test server (LN_S3_ENDPOINT, LN_S3_CONTROL; scripts/test.sh starts one)"
else
	t0=$SECONDS
	rc=0
	PATH="$PG_BIN:$PATH" PGHOST="$SOCK" PGPORT="$PORT" PGUSER=postgres \
		timeout --kill-after=10 "$S3_LIMIT" bash "$HERE/s3_workload.sh" >"$WORK/s3.log" 2>&1 || rc=$?
	note "S3 paths under valgrind: $((SECONDS - t0)) s"
	if ((rc == 0)) && diff -u "$HERE/s3_workload.expected" "$WORK/s3.log"; then
		pass "S3 paths under valgrind answer as expected"
	else
		((rc == 0)) || tail -n 20 "$WORK/s3.log"
		fail "S3 paths under valgrind answer as expected (exit $rc)"
	fi
fi

# Stop the server first, so that every log is complete.
stop_vg_server
if [[ -n "${MEMORY_KEEP_LOGS:-}" ]]; then
	mkdir -p "$MEMORY_KEEP_LOGS"
	cp "$VG_LOGS"/vg.*.log "$VG_SERVER_LOG" "$WORK/regress.log" "$WORK/fuzz.log" "$MEMORY_KEEP_LOGS"/ 2>/dev/null || true
	note "logs copied to $MEMORY_KEEP_LOGS"
fi

# ---------------------------------------------------------------------------
# 4. The valgrind logs.  A report is a block of "==pid== " lines ended by an
#    empty one.  It is ours when a frame is in lance_namespace.so: with debug
#    information valgrind names the source file by its full path (the
#    library's DW_AT_comp_dir, the folder it was built in, then src/...),
#    without it "(in .../lance_namespace.so)".
# ---------------------------------------------------------------------------
comp_dir="$(readelf --debug-dump=info "$LIB" 2>/dev/null | sed -n 's/.*DW_AT_comp_dir[^:]*:.*: \(\/.*\)$/\1/p' | head -n 1)"
ours="in [^)]*/lance_namespace\\.so\\)"
[[ -n "$comp_dir" ]] && ours="$ours|\\(${comp_dir//./\\.}/src/"
# scan_logs <log...>: print each report of ours ("---- <log>" and the report),
# then "==SUMMARY== <reports> <ours> <valgrind failures>" and, per kind, the
# count of the reports ignored as wholly PostgreSQL's or libc's.
scan_logs() {
	OURS="$ours" awk '
	BEGIN { ours = ENVIRON["OURS"] }
	function flush() {
		if (block != "") {
			total++
			if (block ~ ours) { mine++; printf "---- %s\n%s", where, block }
			else other[kind]++
		}
		block = ""; kind = ""
	}
	FNR == 1 { flush() }
	/^==[0-9]+== $/ { flush(); next }
	/valgrind: the .impossible. happened|Valgrind.s memory management: out of memory|unhandled instruction/ { fatal++; printf "---- valgrind failed in %s: %s\n", FILENAME, $0 }
	/^==[0-9]+== [^ ]/ && block == "" {
		line = $0; sub(/^==[0-9]+== /, "", line)
		if (line ~ /^(Invalid (read|write|free)|Mismatched free|.*uninitialised|Source and destination overlap|Argument .* of function .* has a fishy|Jump to the invalid address|Process terminating with default action)/) {
			kind = line; sub(/ of size [0-9]+$/, "", kind); sub(/\(0x.*$/, "", kind); where = FILENAME
			block = $0 "\n"
		}
		next
	}
	block != "" { block = block $0 "\n" }
	END {
		flush()
		printf "==SUMMARY== %d %d %d\n", total + 0, mine + 0, fatal + 0
		for (k in other) printf "==OTHER== %d %s\n", other[k], k
	}' "$@" /dev/null
}

# The scanner itself: it must find a report with a frame in our source (or
# in the library without debug information) and leave one wholly in postgres.
fake="$WORK/fake.log"
frame="lance_rest ($comp_dir/src/http/rest.c:1)"
[[ -n "$comp_dir" ]] || frame="??? (in $LIB)"
{
	printf '==1== Invalid read of size 1\n==1==    at 0x1: %s\n==1==    by 0x2: main (in /usr/lib/postgresql/15/bin/postgres)\n==1== \n' "$frame"
	printf '==1== Conditional jump or move depends on uninitialised value(s)\n==1==    at 0x1: ??? (in %s)\n==1== \n' "$LIB"
	printf '==1== Invalid write of size 8\n==1==    at 0x1: memcpy (in /usr/lib/postgresql/15/bin/postgres)\n==1== \n'
} >"$fake"
if [[ "$(scan_logs "$fake" | grep '^==SUMMARY==')" != "==SUMMARY== 3 2 0" ]]; then
	scan_logs "$fake"
	fail "the valgrind log scanner finds reports in lance_namespace.so (library built in '${comp_dir:-?}')"
fi

shopt -s nullglob
logs=("$VG_LOGS"/vg.*.log)
shopt -u nullglob
scan="$(scan_logs "${logs[@]}")"
read -r _ vg_total vg_mine vg_fatal < <(grep '^==SUMMARY==' <<<"$scan")
note "valgrind: ${#logs[@]} process logs, $vg_total error reports not suppressed, $vg_mine with a lance_namespace frame"
grep '^==OTHER==' <<<"$scan" | sed 's/^==OTHER== \([0-9]*\) /  ignored (wholly in PostgreSQL or libc): \1x /' || true
if ((${#logs[@]} == 0)); then
	fail "no memory errors in lance_namespace code (valgrind wrote no logs)"
elif ((vg_mine > 0 || vg_fatal > 0)); then
	grep -v '^==SUMMARY==\|^==OTHER==' <<<"$scan"
	fail "no memory errors in lance_namespace code ($vg_mine reports with a lance_namespace frame, $vg_fatal valgrind failures)"
else
	pass "no memory errors in lance_namespace code (${#logs[@]} valgrind logs)"
fi

printf 'lance_namespace: memory test: %d checks, %d failed, %d s (regress %d s, fuzz %d s, leak statement %d s)\n' \
	"$CHECKS" "$FAILS" "$((SECONDS - START))" "$regress_secs" "$fuzz_secs" "$leak_secs"
((FAILS == 0))
