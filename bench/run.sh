#!/usr/bin/env bash
# Reproduce every benchmark figure of lance_namespace with one command.
#
#   bench/run.sh             the full run (1,000,000 tables / 10,000,000 versions)
#   bench/run.sh --quick     a quick run (100,000 tables, fewer and shorter runs)
#   bench/run.sh --profile   also profile where a call's time goes (callgrind)
#
# Installs what is missing, builds and installs the extension, starts a
# throwaway PostgreSQL cluster (of the version scripts/common.sh picks)
# tuned like a real server (fsync and synchronous commit on, shared_buffers
# a quarter of memory) and the REST gateway, runs every benchmark, prints
# one table (Markdown) and tears everything down again.  See bench/README.md.
#
# Every figure is a ratio against a baseline measured in the same run with the
# same concurrency (2 clients): each pair is measured LN_BENCH_RUNS times,
# alternating which goes first, and the median of the runs is reported.
#
# Environment (optional):
#   LN_BENCH_SCALE_TABLES  tables of the large catalog of benchmark 4, a multiple
#                          of 1000 (1000 per namespace, 10 versions per table);
#                          default 1000000 (--quick: 100000)
#   LN_BENCH_RUNS          measured runs per figure (default 5; --quick: 3)
#   LN_BENCH_SECONDS       seconds per pgbench/wrk run (default 5; --quick: 2)
#   LN_BENCH_APPENDS       appends per run of benchmarks 6 and 7 (default 200; --quick: 50)
#   LN_BENCH_PORT          first port to try for the server (default 55433)
#   LN_BENCH_GATEWAY_PORT  first port to try for the gateway (default 23330)
#   LN_BENCH_KEEP_LOG      a file to copy the raw per-run numbers to
#   LN_BENCH_ONLY          run only these benchmarks, by number, e.g. "5" or "1 5"
#                          (5 is the gateway's: 5a to 5d and 5w)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/.. source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
BENCH_DIR="$ROOT/bench"

QUICK=0
PROFILE=0
for arg in "$@"; do
	case "$arg" in
		--quick) QUICK=1 ;;
		--profile) PROFILE=1 ;;
		-h | --help)
			sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
			exit 0
			;;
		*) die "unknown argument '$arg' (use --quick, --profile)" ;;
	esac
done

if ((QUICK)); then
	SCALE_TABLES="${LN_BENCH_SCALE_TABLES:-100000}"
	RUNS="${LN_BENCH_RUNS:-3}"
	SECS="${LN_BENCH_SECONDS:-2}"
	APPENDS="${LN_BENCH_APPENDS:-50}"
	WARMUP=0
else
	SCALE_TABLES="${LN_BENCH_SCALE_TABLES:-1000000}"
	RUNS="${LN_BENCH_RUNS:-5}"
	SECS="${LN_BENCH_SECONDS:-5}"
	APPENDS="${LN_BENCH_APPENDS:-200}"
	WARMUP=2
fi
if ! [[ "$SCALE_TABLES" =~ ^[0-9]+$ ]] || ((SCALE_TABLES < 1000 || SCALE_TABLES % 1000 != 0)); then
	die "LN_BENCH_SCALE_TABLES must be a multiple of 1000, at least 1000 (got '$SCALE_TABLES')"
fi
for v in RUNS SECS APPENDS; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (got '${!v}')"
done

CLIENTS=2             # the concurrency of every figure
TABLES_PER_NS=1000    # benchmark 4: tables per namespace
VERSIONS_PER_TABLE=10 # benchmark 4: versions per table
DB=lance_bench

TMP_DIR=""
PGDATA_DIR=""
GATEWAY_PREFIX=""
S3_GATEWAY_PREFIX=""
CEILING_PREFIX=""
CEILING_PORT=""
S3_SERVER_PORT=""
RES=""

cleanup() {
	local rc=$?
	trap - EXIT
	if [[ -n "$GATEWAY_PREFIX" ]]; then
		stop_gateway "$GATEWAY_PREFIX" || say "warning: could not stop the gateway"
	fi
	if [[ -n "$S3_GATEWAY_PREFIX" ]]; then
		stop_gateway "$S3_GATEWAY_PREFIX" || say "warning: could not stop the S3 gateway"
	fi
	if [[ -n "$CEILING_PREFIX" ]]; then
		stop_gateway "$CEILING_PREFIX" || say "warning: could not stop the nginx of benchmark 5c"
	fi
	if [[ -n "$S3_SERVER_PORT" ]]; then
		pkill -f "s3server.mjs $S3_SERVER_PORT " 2>/dev/null || true
	fi
	if [[ -n "$PGDATA_DIR" ]]; then
		stop_cluster "$PGDATA_DIR" || say "warning: could not stop the server in $PGDATA_DIR"
	fi
	if [[ -n "${LN_BENCH_KEEP_LOG:-}" && -n "$RES" && -f "$RES/raw.log" ]]; then
		cp "$RES/raw.log" "$LN_BENCH_KEEP_LOG" || true
	fi
	[[ -n "$TMP_DIR" ]] && rm -rf "$TMP_DIR"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

psql_db() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_val() { "$PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
raw() { printf '%s\n' "$*" >>"$RES/raw.log"; }

# ---------------------------------------------------------------------------
# Set-up
# ---------------------------------------------------------------------------

install_bench_deps() {
	local missing=()
	command -v wrk >/dev/null || missing+=(wrk)
	command -v node >/dev/null || missing+=(nodejs)
	[[ -d "$ROOT/test/node/node_modules/@lancedb/lancedb" && -d "$ROOT/test/node/node_modules/s3rver" ]] ||
		command -v npm >/dev/null ||
		missing+=(npm)
	((PROFILE == 0)) || command -v valgrind >/dev/null || missing+=(valgrind)
	command -v strace >/dev/null || missing+=(strace)
	if ((${#missing[@]} > 0)); then
		[[ $EUID -eq 0 ]] || die "missing ${missing[*]} and not root"
		say "installing: ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update
		apt-get install -y --no-install-recommends "${missing[@]}"
	fi
	if [[ ! -d "$ROOT/test/node/node_modules/@lancedb/lancedb" || ! -d "$ROOT/test/node/node_modules/s3rver" ]]; then
		say "installing the Node client (npm ci in test/node)"
		(cd "$ROOT/test/node" && npm ci --no-audit --no-fund)
	fi
}

# Memory in MB, and the server settings of a real server on this machine.
mem_mb() { awk '/^MemTotal:/ { printf "%d\n", $2 / 1024 }' /proc/meminfo; }

start_bench_server() {
	local port mem sb ecs
	# mktemp -d is mode 700 and root-owned: hand it to postgres
	TMP_DIR="$(mktemp -d /tmp/lnbench.XXXXXX)"
	chown postgres:postgres "$TMP_DIR"
	chmod 755 "$TMP_DIR"
	RES="$TMP_DIR/results"
	mkdir -p "$RES"
	chmod 777 "$RES"
	PGDATA_DIR="$TMP_DIR/pgdata"
	port="$(find_free_port "${LN_BENCH_PORT:-55433}")"

	# "run": a durable cluster (initdb syncs; fsync, synchronous_commit and
	# full_page_writes keep their defaults, on)
	init_cluster "$PGDATA_DIR" run
	mem="$(mem_mb)"
	sb=$((mem / 4))
	((sb <= 8192)) || sb=8192
	ecs=$((mem * 3 / 4))
	SERVER_SETTINGS="shared_buffers=${sb}MB effective_cache_size=${ecs}MB maintenance_work_mem=1GB"
	SERVER_SETTINGS+=" work_mem=16MB max_wal_size=8GB min_wal_size=1GB checkpoint_timeout=15min"
	printf '\n# bench/run.sh: a real server on this machine\n' |
		as_postgres tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null
	# shellcheck disable=SC2086 # one setting per word
	printf '%s\n' $SERVER_SETTINGS | sed 's/=/ = /' |
		as_postgres tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null
	start_cluster "$PGDATA_DIR" "$port" "$TMP_DIR/run"

	unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD
	export PGHOST="$TMP_DIR/run" PGPORT="$port" PGUSER=postgres
}

# The database of benchmarks 1, 2, 3, 5 and 6, and the gateway in front of it.
setup_bench_db() {
	local tables="$TMP_DIR/tables"
	say "creating the benchmark database"
	make_postgres_dir "$tables" 755
	make_postgres_dir "$TMP_DIR/plain" 755
	psql_db -d postgres -c "CREATE DATABASE $DB"
	psql_db -d "$DB" -f "$BENCH_DIR/sql/setup.sql" >/dev/null
	psql_db -d "$DB" -f "$BENCH_DIR/sql/plpgsql_batch.sql" >/dev/null
	psql_db -d "$DB" -f "$BENCH_DIR/sql/profile.sql" >/dev/null
	# benchmark 6: tables the client declares go below $tables, whose versions the catalog manages
	psql_db -d "$DB" -v db="$DB" -v root="$tables" <<'SQL'
ALTER DATABASE :"db" SET lance_namespace.root = :'root';
ALTER DATABASE :"db" SET lance_namespace.local_roots = :'root';
SQL
	GATEWAY_PORT="$(find_free_port "${LN_BENCH_GATEWAY_PORT:-23330}")"
	GATEWAY_PREFIX="$TMP_DIR/gateway"
	# the benchmarks' clients share one key: no limit per key
	# (LN_KEY_CONCURRENCY), which would measure it instead of the gateway
	LN_KEY_CONCURRENCY=10000 start_gateway "$GATEWAY_PREFIX" "$GATEWAY_PORT" "$DB" "$PGHOST" "$PGPORT"
	# an administrator's key: every request over HTTP and through lance_rest()
	# is authenticated, as a real gateway's are
	LANCE_API_KEY="$(create_api_key lance_admin -d "$DB")"
	is_api_key "$LANCE_API_KEY" || die "lance_create_api_key answered no key"
	export LANCE_API_KEY

	# pgbench variables every script may use
	local b1 b2 b3 batch
	first_id() {
		psql_val -d "$DB" -c "SELECT t.id FROM lance_catalog.object n JOIN lance_catalog.object t
		                        ON t.parent_id = n.id AND t.name = 't1'
		                     WHERE n.parent_id = 0 AND n.name = '$1'"
	}
	b1="$(first_id b1)" b2="$(first_id b2)" b3="$(first_id b3)"
	batch="$(psql_val -d "$DB" -c "SELECT body FROM bench.template WHERE name = 'batch100'")"
	PGB_VARS=(-D "b1_first_id=$b1" -D "b2_first_id=$b2" -D "b3_first_id=$b3"
		-D "gateway_port=$GATEWAY_PORT" -D "batch=$batch" -D "api_key=$LANCE_API_KEY")
}

checkpoint() { psql_db -d postgres -c CHECKPOINT; }

# ---------------------------------------------------------------------------
# Measuring.  A variant is one thing to measure: a pgbench script on a
# database with extra arguments, or a wrk script against the gateway.
# measure runs each of its variants once to warm up (not in --quick), then RUNS rounds in
# rotating order, and records each variant's median throughput (and median
# p50/p99 latency in ms when asked for with V_LAT).
# ---------------------------------------------------------------------------
declare -A V_KIND V_DB V_SCRIPT V_ARGS V_LAT V_OPTIONS V_PORT MED_TPS MED_P50 MED_P99

pgbench_variant() { # label db script [extra pgbench args [server options (PGOPTIONS)]]
	V_KIND[$1]=pgbench V_DB[$1]=$2 V_SCRIPT[$1]=$3 V_ARGS[$1]="${4:-}" V_OPTIONS[$1]="${5:-}"
	V_LAT[$1]=0
}
wrk_variant() { # label script [port, default the gateway's]
	V_KIND[$1]=wrk V_SCRIPT[$1]=$2 V_LAT[$1]=1 V_PORT[$1]="${3:-}"
}

# Percentiles (ms) of the per-transaction latencies (us, 3rd field) of pgbench -l logs.
log_percentiles() {
	cat "$@" | awk '{ print $3 }' | sort -n | awk '
		{ a[NR] = $1 }
		END {
			if (NR == 0) { print "nan nan"; exit }
			i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
			i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
			printf "%.3f %.3f\n", a[i50] / 1000, a[i99] / 1000
		}'
}

# A wrk latency ("812.00us", "1.20ms", "2.00s") in ms.
wrk_ms() {
	awk -v v="$1" 'BEGIN {
		if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f\n", v / 1000 }
		else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f\n", v }
		else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f\n", v * 1000 }
		else print "nan" }'
}

# run_variant <label> <seconds>: print "<throughput> <p50 ms> <p99 ms>"; fail on any error.
run_variant() {
	local label="$1" secs="$2" out rc=0 tps p50="nan" p99="nan"
	if [[ "${V_KIND[$label]}" == wrk ]]; then
		# fresh version numbers per run for create_version.lua: base + thread * 1e9 + n
		local base=$(((10#$(date +%s) % 1000000 + 1000) * 10000000000))
		out="$(wrk -t "$CLIENTS" -c "$CLIENTS" -d "${secs}s" --latency \
			-s "$BENCH_DIR/wrk/${V_SCRIPT[$label]}.lua" "http://127.0.0.1:${V_PORT[$label]:-$GATEWAY_PORT}" \
			-- "$base" 2>&1)" || rc=$?
		raw "== $label (wrk)" "$out"
		if ((rc != 0)) || grep -qE 'Non-2xx|Socket errors' <<<"$out" ||
			! grep -q '^Requests/sec:' <<<"$out"; then
			printf '%s\n' "$out" | tail -n 8 >&2
			return 1
		fi
		tps="$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
		p50="$(wrk_ms "$(awk '$1 == "50%" { print $2 }' <<<"$out")")"
		p99="$(wrk_ms "$(awk '$1 == "99%" { print $2 }' <<<"$out")")"
	else
		local logargs=() logdir=""
		if ((V_LAT[$label])); then
			logdir="$(mktemp -d "$RES/lat.XXXXXX")"
			logargs=(-l --log-prefix "$logdir/log")
		fi
		# shellcheck disable=SC2086 # V_ARGS holds words
		out="$(PGOPTIONS="${V_OPTIONS[$label]}" "$PG_BIN/pgbench" -n -M prepared \
			-c "$CLIENTS" -j "$CLIENTS" -T "$secs" \
			"${PGB_VARS[@]}" ${V_ARGS[$label]} "${logargs[@]}" \
			-f "$BENCH_DIR/pgbench/${V_SCRIPT[$label]}.sql" "${V_DB[$label]}" 2>&1)" || rc=$?
		raw "== $label (pgbench)" "$(grep -vE '^pgbench \(|^transaction type' <<<"$out")"
		if ((rc != 0)) || ! grep -q '^tps = ' <<<"$out"; then
			printf '%s\n' "$out" | grep -v '^ *$' | tail -n 8 >&2
			[[ -n "$logdir" ]] && rm -rf "$logdir"
			return 1
		fi
		tps="$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")"
		if [[ -n "$logdir" ]]; then
			read -r p50 p99 < <(log_percentiles "$logdir"/log*)
			rm -rf "$logdir"
		fi
	fi
	printf '%s %s %s\n' "$tps" "$p50" "$p99"
}

median() {
	sort -g | awk '
		{ a[NR] = $1 }
		END {
			if (NR == 0) { print "nan"; exit }
			if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2
		}'
}

# After a failed run: wait until the server accepts connections again (it
# restarts on its own after a crashed backend).
recover() {
	if ! wait_ready "$PGHOST" "$PGPORT"; then
		die "the server did not come back after a failed run; see $PGDATA_DIR/server.log"
	fi
}

measure() { # label...
	local labels=("$@") n=$# r i label line
	for label in "${labels[@]}"; do
		: >"$RES/$label.runs"
		MED_TPS[$label]=FAIL MED_P50[$label]=nan MED_P99[$label]=nan
		((WARMUP == 0)) || run_variant "$label" "$WARMUP" >/dev/null ||
			{ say "warm-up of $label failed"; recover; }
	done
	for ((r = 0; r < RUNS; r++)); do
		for ((i = 0; i < n; i++)); do
			label="${labels[(i + r) % n]}"
			if line="$(run_variant "$label" "$SECS")"; then
				printf '%s\n' "$line" >>"$RES/$label.runs"
			else
				say "run of $label failed"
				printf 'FAIL\n' >>"$RES/$label.runs"
				recover
			fi
		done
	done
	for label in "${labels[@]}"; do
		if grep -q FAIL "$RES/$label.runs"; then
			MED_TPS[$label]=FAIL
		else
			MED_TPS[$label]="$(awk '{ print $1 }' "$RES/$label.runs" | median)"
			MED_P50[$label]="$(awk '{ print $2 }' "$RES/$label.runs" | median)"
			MED_P99[$label]="$(awk '{ print $3 }' "$RES/$label.runs" | median)"
		fi
		raw "median $label: ${MED_TPS[$label]} (p50 ${MED_P50[$label]} ms, p99 ${MED_P99[$label]} ms)" \
			"runs: $(tr '\n' ';' <"$RES/$label.runs")"
	done
}

# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------
ROWS=()

fmt_rate() { # number unit
	[[ "$1" == FAIL ]] && { printf 'FAILED'; return; }
	awk -v x="$1" -v u="$2" 'BEGIN { if (x >= 100) printf "%.0f %s", x, u; else printf "%.1f %s", x, u }'
}
fmt_lat() { # tps p50 p99 unit
	[[ "$1" == FAIL ]] && { printf 'FAILED'; return; }
	printf '%s (p50 %s ms, p99 %s ms)' "$(fmt_rate "$1" "$4")" "$2" "$3"
}
ratio_of() { # a b
	[[ "$1" == FAIL || "$2" == FAIL ]] && { printf 'nan'; return; }
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }'
}
met() { # ratio minimum
	[[ "$1" == nan ]] && { printf 'FAILED'; return; }
	awk -v r="$1" -v m="$2" 'BEGIN { print (r >= m ? "yes" : "**no**") }'
}

row() { # number benchmark ours baseline ratio target met
	ROWS+=("| $1 | $2 | $3 | $4 | $5 | $6 | $7 |")
}

# compare_row <n> <benchmark> <ours label> <baseline label> <unit> <min ratio or ""> [target text]
compare_row() {
	local r target="${7:-}" m="—"
	r="$(ratio_of "${MED_TPS[$3]}" "${MED_TPS[$4]}")"
	if [[ -n "$6" ]]; then
		[[ -n "$target" ]] || target="≥ $6"
		m="$(met "$r" "$6")"
	else
		target="${target:-—}"
	fi
	row "$1" "$2" "$(fmt_rate "${MED_TPS[$3]}" "$5")" "$(fmt_rate "${MED_TPS[$4]}" "$5")" "$r" "$target" "$m"
}

print_table() {
	echo
	echo "lance_namespace benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), $(($(mem_mb) / 1024)) GiB memory, $(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "server:  $("$PG_BIN/postgres" --version), fsync on, synchronous_commit on, $SERVER_SETTINGS"
	echo "code:    $(git -C "$ROOT" describe --always --dirty --exclude '*' 2>/dev/null || echo unknown)"
	echo "method:  $CLIENTS clients, median of $RUNS runs of ${SECS}s (alternating order$( ((WARMUP == 0)) || echo ", after a ${WARMUP}s warm-up"))"
	echo "scale:   $SCALE_TABLES tables in $((SCALE_TABLES / TABLES_PER_NS)) namespaces, $((SCALE_TABLES * VERSIONS_PER_TABLE)) versions"
	echo
	echo "| # | benchmark | ours | baseline | ratio | target | met? |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	printf '%s\n' "${NOTES[@]}"
}
NOTES=()

# ---------------------------------------------------------------------------
# The benchmarks
# ---------------------------------------------------------------------------

bench_create_version() {
	say "(1) create one version"
	checkpoint
	pgbench_variant create_version "$DB" create_version
	pgbench_variant create_version_floor "$DB" create_version_floor
	measure create_version create_version_floor
	compare_row 1 "CreateTableVersion (lance_create_table_version) vs INSERT of the same row" \
		create_version create_version_floor "tps" 0.9
	# CPU-bound: without the wait for the WAL flush, which hides CPU cost at
	# two clients, for both sides
	pgbench_variant create_version_cpu "$DB" create_version "" "-c synchronous_commit=off"
	pgbench_variant create_version_floor_cpu "$DB" create_version_floor "" "-c synchronous_commit=off"
	measure create_version_cpu create_version_floor_cpu
	compare_row 1c "the same, CPU-bound (synchronous_commit=off on both sides)" \
		create_version_cpu create_version_floor_cpu "tps" 0.7
}

bench_batch() {
	say "(2) batch of 100 versions over 100 tables"
	checkpoint
	pgbench_variant batch "$DB" batch
	pgbench_variant batch_floor "$DB" batch_floor
	pgbench_variant batch_plpgsql "$DB" batch_plpgsql
	measure batch batch_floor batch_plpgsql
	compare_row 2a "BatchCreateTableVersions, 100 tables, vs one 100-row INSERT" \
		batch batch_floor "batches/s" 0.8
	compare_row 2b "BatchCreateTableVersions, 100 tables, vs PL/pgSQL implementation" \
		batch batch_plpgsql "batches/s" 5 "≥ 5 (5× faster)"
	pgbench_variant batch_cpu "$DB" batch "" "-c synchronous_commit=off"
	pgbench_variant batch_floor_cpu "$DB" batch_floor "" "-c synchronous_commit=off"
	measure batch_cpu batch_floor_cpu
	compare_row 2c "2a CPU-bound (synchronous_commit=off on both sides)" \
		batch_cpu batch_floor_cpu "batches/s" 0.6
}

bench_latest() {
	say "(3) latest version lookup"
	checkpoint
	pgbench_variant latest_list "$DB" latest_list
	pgbench_variant latest_describe "$DB" latest_describe
	pgbench_variant latest_floor "$DB" latest_floor
	pgbench_variant latest_floor_by_id "$DB" latest_floor_by_id
	measure latest_list latest_describe latest_floor latest_floor_by_id
	# reads wait for no WAL flush: 3a and 3b are CPU-bound already, so their
	# CPU-bound figures are these (target 0.85 for both)
	compare_row 3a "ListTableVersions desc limit 1 vs indexed SELECT by name (CPU-bound: reads)" \
		latest_list latest_floor "tps" 0.85
	compare_row 3b "DescribeTableVersion (latest) vs indexed SELECT by name (CPU-bound: reads)" \
		latest_describe latest_floor "tps" 0.85
	compare_row 3c "DescribeTableVersion (latest) vs indexed SELECT by table id (info)" \
		latest_describe latest_floor_by_id "tps" ""
}

# load_scale <db> <namespaces>: create the database and fill it; print the load's timings.
load_scale() {
	local db="$1" nns="$2" out
	psql_db -d postgres -c "CREATE DATABASE $db"
	psql_db -d "$db" -c "CREATE EXTENSION lance_namespace"
	out="$(psql_db -d "$db" -v nns="$nns" -v tpn="$TABLES_PER_NS" -v vpt="$VERSIONS_PER_TABLE" \
		-f "$BENCH_DIR/sql/scale_load.sql")"
	raw "== load $db" "$out"
	# \timing lines in statement order: namespaces, tables, setval, versions, vacuum analyze
	sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tr '\n' ' '
}

# bench_reader_grant <db> <namespace>: BENCH_READER, a role that may read
# that one namespace of the catalog and nothing else.
BENCH_READER=lance_bench_reader
bench_reader_grant() {
	psql_db -d "$1" -v role="$BENCH_READER" -v ns="$2" <<'SQL' >/dev/null
SELECT format('CREATE ROLE %I', :'role')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role') \gexec
SELECT lance_grant(jsonb_build_object('id', jsonb_build_array(:'ns'), 'role', :'role', 'privilege', 'read'));
SQL
}

bench_scale() {
	local nns=$((SCALE_TABLES / TABLES_PER_NS)) t0 t1 times size_mb per_million versions
	local -a tm
	say "(4) scale: loading 1000 tables (small catalog)"
	load_scale scale_small 1 >/dev/null
	say "(4) scale: loading $SCALE_TABLES tables, $((SCALE_TABLES * VERSIONS_PER_TABLE)) versions (large catalog)"
	t0="$(date +%s.%N)"
	times="$(load_scale scale_large "$nns")"
	t1="$(date +%s.%N)"
	read -r -a tm <<<"$times"
	checkpoint
	versions="$(psql_val -d scale_large -c "SELECT count(*) FROM lance_catalog.version")"
	size_mb="$(psql_val -d scale_large -c \
		"SELECT round(pg_total_relation_size('lance_catalog.version') / 1048576.0)")"
	per_million="$(awk -v s="$size_mb" -v n="$versions" 'BEGIN { printf "%.0f", s / (n / 1e6) }')"

	pgbench_variant scale_list_small scale_small scale_list_tables "-D nns=1 -D tpn=$TABLES_PER_NS"
	pgbench_variant scale_list_large scale_large scale_list_tables "-D nns=$nns -D tpn=$TABLES_PER_NS"
	pgbench_variant scale_describe_small scale_small scale_describe_table "-D nns=1 -D tpn=$TABLES_PER_NS"
	pgbench_variant scale_describe_large scale_large scale_describe_table "-D nns=$nns -D tpn=$TABLES_PER_NS"
	pgbench_variant scale_latest_small scale_small scale_latest "-D nns=1 -D tpn=$TABLES_PER_NS"
	pgbench_variant scale_latest_large scale_large scale_latest "-D nns=$nns -D tpn=$TABLES_PER_NS"
	# 4f, 4g: a role with read on one namespace, in the middle of the id order,
	# lists the root and pages through ListAllTables; an administrator the same
	bench_reader_grant scale_large "s$(((nns + 1) / 2))"
	pgbench_variant scale_root_reader scale_large scale_list_root "" "-c role=$BENCH_READER"
	pgbench_variant scale_root_admin scale_large scale_list_root
	pgbench_variant scale_all_reader scale_large scale_list_all_tables "" "-c role=$BENCH_READER"
	pgbench_variant scale_all_admin scale_large scale_list_all_tables
	say "(4) scale: measuring"
	measure scale_list_large scale_list_small
	measure scale_describe_large scale_describe_small
	measure scale_latest_large scale_latest_small
	measure scale_root_reader scale_root_admin
	measure scale_all_reader scale_all_admin

	local big="at $SCALE_TABLES tables vs 1000"
	compare_row 4a "ListTables page of 100, $big" scale_list_large scale_list_small "tps" 0.667 "≥ 0.67 (cost ≤ 1.5×)"
	compare_row 4b "DescribeTable, $big" scale_describe_large scale_describe_small "tps" 0.667 "≥ 0.67 (cost ≤ 1.5×)"
	compare_row 4c "Latest version (ListTableVersions desc limit 1), $big" \
		scale_latest_large scale_latest_small "tps" 0.667 "≥ 0.67 (cost ≤ 1.5×)"
	row 4d "Catalog size on disk: lance_catalog.version with indexes, per million versions" \
		"$per_million MB" "—" "—" "—" "—"
	row 4e "Loading $SCALE_TABLES tables and $versions versions (set-based INSERT ... SELECT, FKs checked)" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f s", b - a }')" "—" "—" "—" "—"
	compare_row 4f "ListNamespaces of the root (limit 100) by a reader with read on one namespace vs an administrator, at $SCALE_TABLES tables" \
		scale_root_reader scale_root_admin "tps" 0.333 "≥ 0.33 (cost ≤ 3×)"
	compare_row 4g "ListAllTables page of 100 by that reader vs an administrator, at $SCALE_TABLES tables" \
		scale_all_reader scale_all_admin "tps" 0.333 "≥ 0.33 (cost ≤ 3×)"
	NOTES+=("4e: load of the large catalog: tables $(awk -v x="${tm[1]:-0}" 'BEGIN { printf "%.1f", x / 1000 }') s, versions $(awk -v x="${tm[3]:-0}" 'BEGIN { printf "%.1f", x / 1000 }') s, VACUUM ANALYZE $(awk -v x="${tm[4]:-0}" 'BEGIN { printf "%.1f", x / 1000 }') s; whole database $(psql_val -d scale_large -c "SELECT pg_size_pretty(pg_database_size(current_database()))"); lance_catalog.version $size_mb MB for $versions versions.")
	psql_db -d postgres -c "DROP DATABASE scale_small" -c "DROP DATABASE scale_large"
}

# start_ceiling: nginx and its Lua module as the gateway runs them, answering
# without the database (bench/nginx/ceiling.conf.in), on CEILING_PORT.
start_ceiling() {
	local i
	CEILING_PORT="$(find_free_port $((GATEWAY_PORT + 2)))"
	CEILING_PREFIX="$TMP_DIR/ceiling"
	# as the gateway's: its OS user's folder, nginx run as that user
	ensure_gateway_user
	mkdir -p "$CEILING_PREFIX"
	chown "$LN_GATEWAY_USER:$LN_GATEWAY_USER" "$CEILING_PREFIX"
	chmod 700 "$CEILING_PREFIX"
	gateway_dir "$CEILING_PREFIX/tmp" 700
	sed -e "s|@PREFIX@|$CEILING_PREFIX|g" -e "s|@PORT@|$CEILING_PORT|g" \
		"$BENCH_DIR/nginx/ceiling.conf.in" | gateway_file "$CEILING_PREFIX/nginx.conf" 644
	as_gateway nginx -q -p "$CEILING_PREFIX" -c "$CEILING_PREFIX/nginx.conf" \
		-e "$CEILING_PREFIX/error.log" || die "the nginx of benchmark 5c did not start"
	for ((i = 0; i < 50; i++)); do
		port_in_use "$CEILING_PORT" && return 0
		sleep 0.1
	done
	die "the nginx of benchmark 5c does not listen on $CEILING_PORT"
}

bench_gateway() {
	say "(5) the gateway against direct SQL"
	checkpoint
	start_ceiling
	wrk_variant http_ceiling describe_table "$CEILING_PORT"
	wrk_variant http_describe describe_table
	wrk_variant http_create create_version
	pgbench_variant sql_describe "$DB" sql_describe_table
	pgbench_variant sql_create "$DB" sql_create_version
	pgbench_variant rest_describe "$DB" rest_describe_table
	pgbench_variant rest_create "$DB" rest_create_version
	V_LAT[sql_describe]=1 V_LAT[sql_create]=1 V_LAT[rest_describe]=1 V_LAT[rest_create]=1
	measure http_describe sql_describe rest_describe http_ceiling
	measure http_create sql_create rest_create
	local l n op min r
	for l in describe create; do
		if [[ $l == describe ]]; then n=5a op=DescribeTable min=0.6; else n=5b op=CreateTableVersion min=0.95; fi
		r="$(ratio_of "${MED_TPS[http_$l]}" "${MED_TPS[sql_$l]}")"
		row "$n" "$op over HTTP (gateway with an API key, wrk) vs lance_ function in SQL (pgbench)" \
			"$(fmt_lat "${MED_TPS[http_$l]}" "${MED_P50[http_$l]}" "${MED_P99[http_$l]}" "req/s")" \
			"$(fmt_lat "${MED_TPS[sql_$l]}" "${MED_P50[sql_$l]}" "${MED_P99[sql_$l]}" "tps")" \
			"$r" "≥ $min" "$(met "$r" "$min")"
		row "$n'" "$op through lance_rest() in SQL (what the gateway calls) vs lance_ function in SQL" \
			"$(fmt_lat "${MED_TPS[rest_$l]}" "${MED_P50[rest_$l]}" "${MED_P99[rest_$l]}" "tps")" \
			"$(fmt_lat "${MED_TPS[sql_$l]}" "${MED_P50[sql_$l]}" "${MED_P99[sql_$l]}" "tps")" \
			"$(ratio_of "${MED_TPS[rest_$l]}" "${MED_TPS[sql_$l]}")" "— (overhead)" "—"
	done
	row 5c "the HTTP hop's ceiling: nginx + Lua answering without the database (bench/nginx) vs DescribeTable over HTTP" \
		"$(fmt_lat "${MED_TPS[http_ceiling]}" "${MED_P50[http_ceiling]}" "${MED_P99[http_ceiling]}" "req/s")" \
		"$(fmt_lat "${MED_TPS[http_describe]}" "${MED_P50[http_describe]}" "${MED_P99[http_describe]}" "req/s")" \
		"$(ratio_of "${MED_TPS[http_ceiling]}" "${MED_TPS[http_describe]}")" "— (info)" "—"
	# 5d: 5a against the additive bound of its two halves measured alone, the
	# HTTP hop (5c) and the call (5a'): a request pays for both at least
	local bound r5
	bound="$(awk -v c="${MED_TPS[http_ceiling]}" -v a="${MED_TPS[rest_describe]}" \
		'BEGIN { if (c > 0 && a > 0) printf "%.1f", 1 / (1 / c + 1 / a); else print "FAIL" }' 2>/dev/null || echo FAIL)"
	[[ "${MED_TPS[http_ceiling]}" == FAIL || "${MED_TPS[rest_describe]}" == FAIL ]] && bound=FAIL
	r5="$(ratio_of "${MED_TPS[http_describe]}" "$bound")"
	row 5d "5a against its ceiling: the additive bound 1/(1/5c + 1/5a') of the HTTP hop and the call alone" \
		"$(fmt_rate "${MED_TPS[http_describe]}" "req/s")" "$(fmt_rate "$bound" "req/s")" "$r5" "≥ 0.8" "$(met "$r5" 0.8)"
	stop_gateway "$CEILING_PREFIX"
	CEILING_PREFIX=""
}

# 5w: DescribeTable over HTTP (wrk, as 5a) while 8 CreateTableVersion
# requests through the same gateway wait on a row lock a SQL session holds
# (the version they commit, held uncommitted), against the same reads with
# none waiting: RUNS pairs, alternating, p50 and p99 of each run's wrk.
WAIT_HOLD_FD=""
hold_version() { # version: hold it in an open transaction and send 8 commits of it
	local v="$1" fifo="$RES/hold.fifo" i
	rm -f "$fifo"
	mkfifo "$fifo"
	PGAPPNAME=bench_hold "$PG_BIN/psql" -X -q -At -d "$DB" <"$fifo" >"$RES/hold.out" 2>&1 &
	exec {WAIT_HOLD_FD}>"$fifo"
	printf "BEGIN;\nSELECT lance_create_table_version('{\"id\": [\"b5\", \"t1\"], \"version\": %s, \"manifest_path\": \"lance-bench/b5/t1.lance/_versions/%s.manifest\"}') IS NOT NULL;\n" \
		"$v" "$v" >&"$WAIT_HOLD_FD"
	for ((i = 0; i < 300; i++)); do
		[[ "$(psql_val -d "$DB" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench_hold' AND state = 'idle in transaction'")" == 1 ]] && break
		sleep 0.1
	done
	for ((i = 0; i < 8; i++)); do
		curl -s -o /dev/null --max-time 120 -H "x-api-key: $LANCE_API_KEY" -H 'content-type: application/json' \
			-d "{\"version\": $v, \"manifest_path\": \"lance-bench/b5/t1.lance/_versions/$v.manifest\"}" \
			"http://127.0.0.1:$GATEWAY_PORT/v1/table/b5%24t1/version/create" &
	done
	for ((i = 0; i < 300; i++)); do
		[[ "$(waiting_writes)" == 8 ]] && return 0
		sleep 0.1
	done
	say "warning: only $(waiting_writes) of 8 commits wait on the lock (the holder: $(tr '\n' ' ' <"$RES/hold.out"))"
}
waiting_writes() {
	psql_val -d "$DB" -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'lance_gateway' AND wait_event_type = 'Lock'"
}
release_version() {
	printf 'ROLLBACK;\n\\q\n' >&"$WAIT_HOLD_FD"
	exec {WAIT_HOLD_FD}>&-
	wait
}

bench_waiting() {
	say "(5w) reads over HTTP while 8 writes wait on a lock"
	local r line base=$(((10#$(date +%s) % 1000000 + 1000) * 10000000000 + 5000000000))
	wrk_variant http_describe describe_table
	: >"$RES/reads_idle.runs"
	: >"$RES/reads_waiting.runs"
	for ((r = 0; r < RUNS; r++)); do
		line="$(run_variant http_describe "$SECS")" || line=FAIL
		printf '%s\n' "$line" >>"$RES/reads_idle.runs"
		hold_version $((base + r))
		line="$(run_variant http_describe "$SECS")" || line=FAIL
		[[ "$(waiting_writes)" == 8 ]] || line=FAIL
		printf '%s\n' "$line" >>"$RES/reads_waiting.runs"
		release_version
	done
	local label
	for label in reads_idle reads_waiting; do
		MED_P50[$label]=nan MED_P99[$label]=nan
		if grep -q FAIL "$RES/$label.runs"; then
			MED_TPS[$label]=FAIL
		else
			MED_TPS[$label]="$(awk '{ print $1 }' "$RES/$label.runs" | median)"
			MED_P50[$label]="$(awk '{ print $2 }' "$RES/$label.runs" | median)"
			MED_P99[$label]="$(awk '{ print $3 }' "$RES/$label.runs" | median)"
		fi
		raw "median $label: ${MED_TPS[$label]} (p50 ${MED_P50[$label]} ms, p99 ${MED_P99[$label]} ms)" \
			"runs: $(tr '\n' ';' <"$RES/$label.runs")"
	done
	local r99="nan" m="FAILED"
	if [[ "${MED_TPS[reads_idle]}" != FAIL && "${MED_TPS[reads_waiting]}" != FAIL ]]; then
		r99="$(awk -v a="${MED_P99[reads_waiting]}" -v b="${MED_P99[reads_idle]}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }')"
		m="$(awk -v r="$r99" 'BEGIN { print (r != "nan" && r <= 2 ? "yes" : "**no**") }')"
	fi
	row 5w "DescribeTable over HTTP while 8 CreateTableVersion requests wait on a row lock (wrk) vs none waiting; ratio of p99" \
		"$(fmt_lat "${MED_TPS[reads_waiting]}" "${MED_P50[reads_waiting]}" "${MED_P99[reads_waiting]}" "req/s")" \
		"$(fmt_lat "${MED_TPS[reads_idle]}" "${MED_P50[reads_idle]}" "${MED_P99[reads_idle]}" "req/s")" \
		"$r99" "p99 ≤ 2×" "$m"
}

bench_client() {
	say "(6) appends of the LanceDB client, managed by the catalog vs plain local"
	checkpoint
	local out rc=0 cat plain
	out="$(as_postgres node "$BENCH_DIR/node/append.mjs" --uri "http://127.0.0.1:$GATEWAY_PORT" \
		--dir "$TMP_DIR/plain" --runs "$RUNS" --appends "$APPENDS" 2>&1)" || rc=$?
	raw "== append.mjs" "$out"
	if ((rc != 0)) || ! grep -q '^{"catalog"' <<<"$out"; then
		printf '%s\n' "$out" | tail -n 10 >&2
		MED_TPS[append_catalog]=FAIL MED_TPS[append_plain]=FAIL
	else
		read -r cat plain < <(node -e '
			const r = JSON.parse(process.argv[1]);
			const med = (a) => { a = [...a].sort((x, y) => x - y); const m = a.length >> 1;
				return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2; };
			console.log(med(r.catalog), med(r.plain));' "$(grep '^{"catalog"' <<<"$out")")
		MED_TPS[append_catalog]="$cat" MED_TPS[append_plain]="$plain"
	fi
	compare_row 6 "LanceDB client appends ($APPENDS × 10 rows): managed versioning via the catalog vs plain local table" \
		append_catalog append_plain "appends/s" 0.85
	bench_client_syncs
}

# strace_calls <strace -c output>: the number of calls it counted.
strace_calls() {
	awk '$NF != "total" && $4 ~ /^[0-9]+$/ { n += $4 } END { print n + 0 }' "$1" 2>/dev/null || echo 0
}

# 6s: the syncs (fsync, fdatasync, sync_file_range, syncfs) of SYNC_APPENDS
# appends of each kind, counted by strace: for the managed table in the
# server (every process of the cluster, the WAL's flush included) and in
# the client, for the plain table in the client, which is all there is.
# A separate, unmeasured run: strace slows what it traces.
SYNC_APPENDS=20
bench_client_syncs() {
	local pm pids=() p i spid server client plain syncs="fsync,fdatasync,sync_file_range,syncfs"
	say "(6s) syncs per append, managed and plain"
	make_postgres_dir "$TMP_DIR/plain_sync" 755
	pm="$(head -n 1 "$PGDATA_DIR/postmaster.pid")"
	mapfile -t pids < <(pgrep -P "$pm")
	local args=(-p "$pm")
	for p in "${pids[@]}"; do args+=(-p "$p"); done
	strace -f -qq -c -e trace="$syncs" -o "$RES/strace.server" "${args[@]}" &
	spid=$!
	for ((i = 0; i < 50; i++)); do
		[[ "$(awk '/^TracerPid:/ { print $2 }' "/proc/$pm/status" 2>/dev/null)" != 0 ]] && break
		sleep 0.1
	done
	as_postgres strace -f -qq -c -e trace="$syncs" -o "$RES/strace.client" \
		node "$BENCH_DIR/node/append.mjs" --uri "http://127.0.0.1:$GATEWAY_PORT" --dir "$TMP_DIR/plain" \
		--only catalog --runs 1 --warmup 0 --appends "$SYNC_APPENDS" --prefix "bench6s_$$" \
		>"$RES/sync.catalog.out" 2>&1 || true
	kill -INT "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	as_postgres strace -f -qq -c -e trace="$syncs" -o "$RES/strace.plain" \
		node "$BENCH_DIR/node/append.mjs" --uri "http://127.0.0.1:$GATEWAY_PORT" --dir "$TMP_DIR/plain_sync" \
		--only plain --runs 1 --warmup 0 --appends "$SYNC_APPENDS" --prefix "bench6s_$$" \
		>"$RES/sync.plain.out" 2>&1 || true
	raw "== strace server" "$(cat "$RES/strace.server" 2>/dev/null)"
	raw "== strace client (managed)" "$(cat "$RES/strace.client" 2>/dev/null)"
	raw "== strace client (plain)" "$(cat "$RES/strace.plain" 2>/dev/null)"
	# strace -c writes nothing when it counted no call: that is zero only if the appends ran
	if ! grep -q '^{"catalog"' "$RES/sync.catalog.out" || ! grep -q '^{"catalog"' "$RES/sync.plain.out"; then
		tail -n 5 "$RES/sync.catalog.out" "$RES/sync.plain.out" >&2
		row 6s "syncs per append (strace): managed vs plain" "FAILED" "FAILED" "—" "—" "—"
		return 0
	fi
	server="$(strace_calls "$RES/strace.server")"
	client="$(strace_calls "$RES/strace.client")"
	plain="$(strace_calls "$RES/strace.plain")"
	row 6s "syncs per append ($SYNC_APPENDS appends and the creation of their namespace and table, strace): managed (server + client) vs plain (client)" \
		"$(awk -v s="$server" -v c="$client" -v n="$SYNC_APPENDS" 'BEGIN { printf "%.1f (server %.1f, client %.1f)", (s + c) / n, s / n, c / n }')" \
		"$(awk -v p="$plain" -v n="$SYNC_APPENDS" 'BEGIN { printf "%.1f", p / n }')" "—" "— (what durability costs)" "—"
}

# Benchmark 7: the same appends on S3.  The S3 server is the tests' s3rver
# behind its signature-checking proxy (test/node/s3server.mjs), on this
# machine; both sides go through the same proxy.  The catalog's tables are
# in s3://lake/bench (a database of its own whose root is there, with a
# storage setting), the plain ones in s3://lake/plain, opened with
# lancedb.connect("s3://...") and the same storage options.
bench_client_s3() {
	say "(7) appends of the LanceDB client on S3, managed by the catalog vs plain S3"
	local db="${DB}_s3" ctlport port key out rc=0 cat plain options vend i
	S3_SERVER_PORT="$(find_free_port 9500)"
	ctlport="$(find_free_port $((S3_SERVER_PORT + 1)))"
	make_postgres_dir "$TMP_DIR/s3data" 700
	as_postgres node --openssl-legacy-provider "$ROOT/test/node/s3server.mjs" "$S3_SERVER_PORT" "$ctlport" "$TMP_DIR/s3data" \
		>"$RES/s3server.log" 2>&1 &
	for ((i = 0; i < 100; i++)); do
		curl -s -o /dev/null "http://127.0.0.1:$ctlport/stats" && break
		sleep 0.1
	done
	if ! curl -s -o /dev/null "http://127.0.0.1:$ctlport/stats"; then
		printf '%s\n' "the S3 test server did not start:" "$(tail -n 5 "$RES/s3server.log")" >&2
		MED_TPS[s3_catalog]=FAIL MED_TPS[s3_plain]=FAIL
		compare_row 7a "LanceDB client appends on S3: managed via the catalog vs plain S3 table" \
			s3_catalog s3_plain "appends/s" 0.8
		return 0
	fi
	options="{\"aws_endpoint\": \"http://127.0.0.1:$S3_SERVER_PORT\", \"aws_region\": \"us-east-1\", \"aws_access_key_id\": \"S3RVER\", \"aws_secret_access_key\": \"S3RVER\", \"allow_http\": \"true\"}"
	# 7a hands the client the store's keys (catalog_keys), the ones the plain
	# table is opened with, so that the two differ by the catalog's commit
	# alone; 7c compares DescribeTable vending temporary keys (sts) with none
	vend="{\"mode\": \"sts\", \"role_arn\": \"arn:aws:iam::000000000000:role/lance-bench\", \"sts_endpoint\": \"http://127.0.0.1:$S3_SERVER_PORT\"}"
	# a failure here must not lose the figures of benchmarks 1 to 6: the row says FAILED
	if ! psql_db -d postgres -c "CREATE DATABASE $db" ||
		! psql_db -d "$db" -v db="$db" -v options="$options" -v vend="$vend" <<'SQL'
CREATE EXTENSION lance_namespace;
SELECT lance_set_storage(pg_catalog.jsonb_build_object('location', 's3://lake/bench', 'options', :'options'::jsonb, 'vend', '{"mode": "catalog_keys"}'::jsonb));
SELECT lance_set_storage(pg_catalog.jsonb_build_object('location', 's3://lake/bsts', 'options', :'options'::jsonb, 'vend', :'vend'::jsonb));
SELECT lance_set_storage(pg_catalog.jsonb_build_object('location', 's3://lake/bnone', 'options', :'options'::jsonb));
SELECT lance_create_namespace('{"id": ["b7"]}');
SELECT lance_register_table('{"id": ["b7", "sts"], "location": "s3://lake/bsts/t.lance"}');
SELECT lance_register_table('{"id": ["b7", "none"], "location": "s3://lake/bnone/t.lance"}');
ALTER DATABASE :"db" SET lance_namespace.root = 's3://lake/bench';
SQL
	then
		MED_TPS[s3_catalog]=FAIL MED_TPS[s3_plain]=FAIL
		compare_row 7a "LanceDB client appends on S3: managed via the catalog vs plain S3 table" \
			s3_catalog s3_plain "appends/s" 0.8
		return 0
	fi
	port="$(find_free_port $((GATEWAY_PORT + 1)))"
	S3_GATEWAY_PREFIX="$TMP_DIR/gateway-s3"
	LN_KEY_CONCURRENCY=10000 start_gateway "$S3_GATEWAY_PREFIX" "$port" "$db" "$PGHOST" "$PGPORT"
	key="$(create_api_key lance_admin -d "$db")"
	checkpoint
	# the key goes through the environment (runuser keeps it), not a command line
	out="$(LANCE_API_KEY="$key" as_postgres node "$BENCH_DIR/node/append.mjs" \
		--uri "http://127.0.0.1:$port" --plain s3://lake/plain --storage "$options" \
		--runs "$RUNS" --appends "$APPENDS" 2>&1)" || rc=$?
	raw "== append.mjs (S3)" "$out"
	if ((rc != 0)) || ! grep -q '^{"catalog"' <<<"$out"; then
		printf '%s\n' "$out" | tail -n 10 >&2
		MED_TPS[s3_catalog]=FAIL MED_TPS[s3_plain]=FAIL
		LAT_ROW=(7b "latency of one append on S3: managed vs plain" FAILED FAILED nan "—" "—")
	else
		local lat
		read -r cat plain lat < <(node -e '
			const r = JSON.parse(process.argv[1]);
			const med = (a) => { a = [...a].sort((x, y) => x - y); const m = a.length >> 1;
				return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2; };
			const pct = (a, p) => { a = [...a].sort((x, y) => x - y); return a[Math.min(a.length - 1, Math.floor(a.length * p))]; };
			const f = (x) => x.toFixed(1);
			const c50 = pct(r.catalog_ms, 0.5), c99 = pct(r.catalog_ms, 0.99);
			const p50 = pct(r.plain_ms, 0.5), p99 = pct(r.plain_ms, 0.99);
			console.log(med(r.catalog), med(r.plain),
				[f(c50), f(c99), f(p50), f(p99), f(c50 - p50), f(c99 - p99)].join(","));' \
			"$(grep '^{"catalog"' <<<"$out")")
		MED_TPS[s3_catalog]="$cat" MED_TPS[s3_plain]="$plain"
		IFS=, read -r c50 c99 p50 p99 d50 d99 <<<"$lat"
		LAT_ROW=(7b "latency of one append on S3 ($((RUNS * APPENDS)) appends each): managed vs plain"
			"p50 $c50 ms, p99 $c99 ms" "p50 $p50 ms, p99 $p99 ms" "—"
			"— (p50 managed − p50 plain: $d50 ms; p99s: $d99 ms)" "—")
	fi
	compare_row 7a "LanceDB client appends on S3 ($APPENDS × 10 rows): managed via the catalog vs plain S3 table" \
		s3_catalog s3_plain "appends/s" 0.8
	((${#LAT_ROW[@]} == 0)) || row "${LAT_ROW[@]}"
	# 7c: what handing out temporary credentials costs a DescribeTable once a
	# backend keeps them (its first call asks the token service)
	pgbench_variant vend_sts "$db" vend_describe_table "-D vend=sts"
	pgbench_variant vend_none "$db" vend_describe_table "-D vend=none"
	measure vend_sts vend_none
	compare_row 7c "DescribeTable on S3 vending sts credentials (kept per backend) vs vending none" \
		vend_sts vend_none "tps" 0.75 "≥ 0.75 (cost ≤ 1.33×)"
}
LAT_ROW=()

# ---------------------------------------------------------------------------
# Optional profile (--profile): where the time of a call goes.
#  - the C-free DescribeTableVersion of bench/sql/profile.sql against the
#    extension's, measured like the other figures;
#  - instructions per call, counted by callgrind on a single-user backend
#    (the server is stopped for it) that runs one call per statement, with
#    collection on only inside the lance_* functions, split by the stages
#    of the JSON edge and the catalog's SQL.
# ---------------------------------------------------------------------------
PROFILE_LINES=()

# profile_statements <op> <first> <last>: one call per statement, one statement per line
profile_statements() {
	local op="$1" i t v
	for ((i = $2; i <= $3; i++)); do
		t=$((i % 100 + 1)) v=$((3000000000 + i))
		case "$op" in
			lance_describe_table_version)
				echo "SELECT lance_describe_table_version('{\"id\": [\"b3\", \"t$t\"]}')" ;;
			lance_list_table_versions)
				echo "SELECT lance_list_table_versions('{\"id\": [\"b3\", \"t$t\"], \"descending\": true, \"limit\": 1}')" ;;
			lance_describe_table)
				echo "SELECT lance_describe_table('{\"id\": [\"b5\", \"t$t\"]}')" ;;
			lance_list_tables)
				echo "SELECT lance_list_tables('{\"id\": [\"b1\"], \"limit\": 100}')" ;;
			lance_create_table_version)
				echo "SELECT lance_create_table_version('{\"id\": [\"b1\", \"t$t\"], \"version\": $v, \"manifest_path\": \"lance-bench/b1/t$t.lance/_versions/$v.manifest\"}')" ;;
			lance_batch_create_table_versions)
				echo "SELECT lance_batch_create_table_versions(replace(body, '@V@', '$v')::jsonb) FROM bench.template" ;;
			lance_rest)
				echo "SELECT * FROM lance_rest('POST', '/v1/table/b5%24t$t/describe', '', '{\"id\": [\"b5\", \"t$t\"]}', '{\"host\": \"127.0.0.1\", \"content-type\": \"application/json\", \"content-length\": \"24\", \"x-api-key\": \"$LANCE_API_KEY\"}')" ;;
		esac
	done
}

# Inclusive instructions of the functions named, summed, in callgrind_annotate
# --inclusive=yes output.  A function can be listed under more than one file
# name (absolute and relative source paths of the same call tree): each
# counts once, with its largest entry.
incl() {
	local file="$1"
	shift
	awk -v names="$*" '
		BEGIN { n = split(names, want, " "); for (i = 1; i <= n; i++) w[want[i]] = 1 }
		{
			count = $1; gsub(/,/, "", count)
			if (count !~ /^[0-9]+$/) next
			name = $0
			sub(/^ *[0-9,]+ *(\([^)]*\))? */, "", name)
			sub(/ \[.*$/, "", name)
			k = split(name, parts, ":"); fn = parts[k]
			if ((fn in w) && count > m[fn]) m[fn] = count
		}
		END { for (fn in m) s += m[fn]; printf "%.0f\n", s }' "$file"
}

pct() { awk -v a="$1" -v t="$2" 'BEGIN { if (t > 0) printf "%.0f%%", 100 * a / t; else print "—" }'; }
per_call() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.0f", a / n }'; }

# profile_counts <op> <first> <last>: run the calls under callgrind, collecting
# only inside lance_* functions; print the inclusive counts the table needs.
profile_counts() {
	local op="$1" tag="$1.$2-$3" out ann
	profile_statements "$op" "$2" "$3" >"$RES/profile.$tag.sql"
	chmod 644 "$RES/profile.$tag.sql"
	out="$RES/callgrind.$tag"
	ann="$RES/callgrind.$tag.txt"
	if ! as_postgres valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='lance_*' \
		"$PG_BIN/postgres" --single -D "$PGDATA_DIR" -c shared_buffers=256MB \
		"$DB" <"$RES/profile.$tag.sql" >"$RES/single.$tag.log" 2>&1; then
		tail -n 20 "$RES/single.$tag.log" >&2
		return 1
	fi
	callgrind_annotate --inclusive=yes --threshold=100 "$out" >"$ann" 2>/dev/null || return 1
	echo "$(incl "$ann" "$op")" \
		"$(incl "$ann" json_tree_from_jsonb)" \
		"$(incl "$ann" json_tokener_parse_ex)" \
		"$(incl "$ann" json_decode_request json_decode_http_request json_decode_headers)" \
		"$(incl "$ann" json_tree_to_jsonb jsonb_in json_object_to_json_string_ext)" \
		"$(incl "$ann" json_encode_response json_encode_response_text)" \
		"$(incl "$ann" catalog_index_find_child catalog_index_find_table catalog_index_read_child \
			catalog_index_authenticate catalog_index_find_storage)" \
		"$(incl "$ann" SPI_execute_plan SPI_prepare_cursor SPI_keepplan SPI_connect SPI_finish)" \
		"$(incl "$ann" changes_record)" \
		"$(incl "$ann" catalog_insert_change)"
}

# profile_op <op> <calls>: per-call counts as the difference of a run of
# 1 + <calls> calls and a run of 1 call, so that the first call's one-time
# costs (preparing plans, loading caches) are left out.
profile_op() {
	local op="$1" n="$2" a b total jtree jparse dec jout enc idx spi chg ins json other
	if ! a="$(profile_counts "$op" 1 1)" || ! b="$(profile_counts "$op" 1 $((n + 1)))"; then
		PROFILE_LINES+=("| $op | callgrind run failed |")
		return 0
	fi
	read -r total jtree jparse dec jout enc idx spi chg ins < <(
		paste <(tr ' ' '\n' <<<"$b") <(tr ' ' '\n' <<<"$a") | awk '{ printf "%.0f ", $1 - $2 } END { print "" }')
	# the commit log writes through SPI too: count that under the commit log
	spi=$((spi - ins))
	json=$((dec + enc))
	other=$((total - json - idx - spi - chg))
	PROFILE_LINES+=("| $op | $(per_call "$total" "$n") | $(pct "$jtree" "$total") | $(pct "$jparse" "$total") | $(pct $((dec - jtree - jparse)) "$total") | $(pct $((enc - jout)) "$total") | $(pct "$jout" "$total") | **$(pct "$json" "$total")** | $(pct "$idx" "$total") | $(pct "$spi" "$total") | $(pct "$chg" "$total") | $(pct "$other" "$total") |")
}

run_profile() {
	say "profile: C-free DescribeTableVersion vs the extension's"
	pgbench_variant profile_c "$DB" latest_describe
	pgbench_variant profile_sql "$DB" profile_sql_describe
	measure profile_c profile_sql
	PROFILE_LINES+=("- DescribeTableVersion (latest), $CLIENTS clients: lance_describe_table_version $(fmt_rate "${MED_TPS[profile_c]}" tps), the C-free SQL function of bench/sql/profile.sql $(fmt_rate "${MED_TPS[profile_sql]}" tps), ratio $(ratio_of "${MED_TPS[profile_c]}" "${MED_TPS[profile_sql]}").")

	say "profile: CreateTableVersion without NOTIFY, and without waiting for the WAL flush"
	checkpoint
	pgbench_variant cv_notify "$DB" create_version
	pgbench_variant cv_no_notify "$DB" create_version "" "-c lance_namespace.notify=off"
	pgbench_variant cv_async "$DB" create_version "" "-c synchronous_commit=off"
	pgbench_variant cv_floor_async "$DB" create_version_floor "" "-c synchronous_commit=off"
	measure cv_notify cv_no_notify cv_async cv_floor_async
	PROFILE_LINES+=("- CreateTableVersion, $CLIENTS clients: with NOTIFY (the default) $(fmt_rate "${MED_TPS[cv_notify]}" tps), with lance_namespace.notify=off $(fmt_rate "${MED_TPS[cv_no_notify]}" tps) (ratio $(ratio_of "${MED_TPS[cv_notify]}" "${MED_TPS[cv_no_notify]}")).")
	PROFILE_LINES+=("- CreateTableVersion with synchronous_commit=off (CPU-bound, no wait for the WAL flush): $(fmt_rate "${MED_TPS[cv_async]}" tps) against its floor $(fmt_rate "${MED_TPS[cv_floor_async]}" tps), ratio $(ratio_of "${MED_TPS[cv_async]}" "${MED_TPS[cv_floor_async]}").")

	say "profile: callgrind on a single-user backend (the server stops for it)"
	stop_gateway "$GATEWAY_PREFIX"
	GATEWAY_PREFIX=""
	stop_cluster "$PGDATA_DIR"
	PROFILE_LINES+=("" "Instructions per call inside the function (callgrind; one call per statement, 200 calls, batches 20 calls of 100 entries; first call left out), and where they go:" ""
		"| function | instructions per call | jsonb→json-c | JSON text→json-c (REST body) | json-c→C structs | C→json-c | json-c→jsonb or text | JSON edge total | catalog index scans | catalog SQL (SPI) | commit log | rest |"
		"|---|---|---|---|---|---|---|---|---|---|---|---|")
	local op
	for op in lance_describe_table_version lance_list_table_versions lance_describe_table \
		lance_list_tables lance_create_table_version lance_rest; do
		say "profile: $op"
		profile_op "$op" 200
	done
	say "profile: lance_batch_create_table_versions"
	profile_op lance_batch_create_table_versions 20
}

# ---------------------------------------------------------------------------

# bench_wanted <n>: true when LN_BENCH_ONLY is unset or names benchmark <n>.
bench_wanted() {
	[[ -z "${LN_BENCH_ONLY:-}" ]] && return 0
	[[ " ${LN_BENCH_ONLY//,/ } " == *" $1 "* ]]
}

main() {
	install_deps
	install_bench_deps
	build_and_install
	start_bench_server
	setup_bench_db
	: >"$RES/raw.log"
	if bench_wanted 1; then bench_create_version; fi
	if bench_wanted 2; then bench_batch; fi
	if bench_wanted 3; then bench_latest; fi
	if bench_wanted 4; then bench_scale; fi
	if bench_wanted 5; then
		bench_gateway
		bench_waiting
	fi
	if bench_wanted 6; then bench_client; fi
	if bench_wanted 7; then bench_client_s3; fi
	print_table
	if ((PROFILE)); then
		run_profile
		printf '%s\n' "" "Profile (--profile):" "" "${PROFILE_LINES[@]}"
	fi
}

# sourcing this file (for testing a part) defines the functions only
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	main "$@"
fi
