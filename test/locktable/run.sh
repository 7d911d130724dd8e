#!/usr/bin/env bash
# Many managed versions against the lock table, on a cluster with the
# default max_locks_per_transaction (64): the lock table holds 64 locks per
# connection for every transaction together, and a lock per final manifest
# name held to the transaction's end filled it ("out of shared memory").
#
#   1. one transaction creates 30,000 managed versions, in 30
#      BatchCreateTableVersions of 1,000, and commits;
#   2. 15 sessions each create a batch of 1,000 versions of their own table
#      and, before they commit, meet at a barrier (an advisory lock this
#      script holds until every one of them waits on it): all 15 hold what
#      their batch locked at the same time; every one commits.
#
# That a newcomer still waits for the undo of a writer that rolled back is
# test/undorace's.  Runs as root (or postgres); prints "  ok    <check>" /
# "  FAIL  <check>" per check; exits 0 only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try (default 54561)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD

new_work_dir
PORT="$(find_free_port "${LN_TEST_PORT:-54561}")"
START=$SECONDS
BATCHES=30 BATCH=1000 SESSIONS=15
HOLDER_PID=""

cleanup() {
	[[ -n "$HOLDER_PID" ]] && kill "$HOLDER_PID" 2>/dev/null
	exec 3>&- 2>/dev/null || true
	stop_cluster "$PGDATA_DIR" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d locks "$@"; }

init_cluster "$PGDATA_DIR" test >/dev/null
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 777
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE locks'
sql -v root="$TABLES" <<'SQL'
CREATE EXTENSION lance_namespace;
ALTER DATABASE locks SET lance_namespace.local_roots = :'root';
ALTER DATABASE locks SET lance_namespace.root = :'root';
SQL
check "max_locks_per_transaction is the default" "64" "$(sql -c 'SHOW max_locks_per_transaction')"
sql -c "SELECT lance_create_namespace('{\"id\": [\"ns\"]}')" >/dev/null

# table <name>: declare it, with its _versions folder
table() {
	as_postgres mkdir -p "$TABLES/ns/$1.lance/_versions"
	sql -c "SELECT lance_declare_table(jsonb_build_object('id', ARRAY['ns', '$1'], 'location', '$TABLES/ns/$1.lance'))" >/dev/null
}

# stage <name> <count>: staging manifests s<n>.manifest-x, n = 1..count, in the table's _versions
stage() {
	# shellcheck disable=SC2016 # expanded by that shell
	as_postgres sh -c 'cd "$1" && seq -f "s%.0f.manifest-x" 1 "$2" | xargs touch --' sh "$TABLES/ns/$1.lance/_versions" "$2"
}

# batch <name> <first> <count>: the SELECT of one BatchCreateTableVersions of versions first.. of table <name>
batch() {
	printf "SELECT jsonb_array_length(lance_batch_create_table_versions(jsonb_build_object('entries', (
	  SELECT jsonb_agg(jsonb_build_object('id', ARRAY['ns', '%s'], 'version', v,
	                   'manifest_path', '%s/s' || v || '.manifest-x'))
	    FROM generate_series(%d, %d) v))) -> 'versions') = %d;\n" \
		"$1" "${TABLES#/}/ns/$1.lance/_versions" "$2" "$(($2 + $3 - 1))" "$3"
}

# count_final <name>: the final manifests in the table's _versions
count_final() { find "$TABLES/ns/$1.lance/_versions" -name '*.manifest' | wc -l; }

# 1. one transaction, 30 batches of 1,000
table big
stage big $((BATCHES * BATCH))
{
	echo "BEGIN;"
	for ((b = 0; b < BATCHES; b++)); do batch big $((b * BATCH + 1)) "$BATCH"; done
	echo "COMMIT;"
} >"$WORK/big.sql"
if out="$(sql -f "$WORK/big.sql" 2>&1)"; then
	pass "one transaction creates $((BATCHES * BATCH)) managed versions in $BATCHES batches of $BATCH and commits"
else
	fail "one transaction creates $((BATCHES * BATCH)) managed versions in $BATCHES batches of $BATCH and commits" "$out"
fi
check "the catalog has its $((BATCHES * BATCH)) versions" "$((BATCHES * BATCH))" \
	"$(sql -c "SELECT count(*) FROM lance_catalog.version v JOIN lance_catalog.object o ON o.id = v.table_id WHERE o.name = 'big'")"
check "and the disk their final manifests" "$((BATCHES * BATCH))" "$(count_final big)"

# 2. 15 concurrent batches of 1,000, held open together at a barrier
for ((s = 1; s <= SESSIONS; s++)); do
	table "c$s"
	stage "c$s" "$BATCH"
done
# the barrier: advisory lock 4242, held by a session of this script until all have reached it
mkfifo "$WORK/holder.in"
sql <"$WORK/holder.in" >"$WORK/holder.out" 2>&1 &
HOLDER_PID=$!
exec 3>"$WORK/holder.in"
printf 'SELECT pg_advisory_lock(4242);\n\\echo held\n' >&3
for _ in $(seq 600); do grep -q held "$WORK/holder.out" && break; sleep 0.1; done
pids=()
for ((s = 1; s <= SESSIONS; s++)); do
	{
		echo "BEGIN;"
		batch "c$s" 1 "$BATCH"
		echo "SELECT pg_advisory_xact_lock_shared(4242);"
		echo "COMMIT;"
	} >"$WORK/c$s.sql"
	sql -f "$WORK/c$s.sql" >"$WORK/c$s.out" 2>&1 &
	pids+=($!)
done
# every session has its batch done and waits at the barrier (or has failed: then it is not waiting)
waiting=0
for _ in $(seq 3000); do
	waiting="$(sql -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted" 2>/dev/null || echo 0)"
	((waiting == SESSIONS)) && break
	ended=0
	for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || ended=$((ended + 1)); done
	((waiting + ended >= SESSIONS)) && break
	sleep 0.1
done
check "all $SESSIONS sessions hold their batch at the same time" "$SESSIONS" "$waiting"
echo "SELECT pg_advisory_unlock(4242);" >&3
exec 3>&-
wait "$HOLDER_PID" || true
HOLDER_PID=""
failed=0
for ((s = 1; s <= SESSIONS; s++)); do
	if ! wait "${pids[$((s - 1))]}" || [[ "$(head -n 1 "$WORK/c$s.out")" != t ]]; then
		failed=$((failed + 1))
		[[ $failed -eq 1 ]] && first_failure="$(cat "$WORK/c$s.out")"
	fi
done
if ((failed == 0)); then
	pass "$SESSIONS concurrent batches of $BATCH versions all commit"
else
	fail "$SESSIONS concurrent batches of $BATCH versions all commit" "$failed failed; the first: ${first_failure:-}"
fi
total=0
for ((s = 1; s <= SESSIONS; s++)); do total=$((total + $(count_final "c$s"))); done
check "their final manifests are on disk" "$((SESSIONS * BATCH))" "$total"

echo
say "lock table test: $CHECKS checks, $FAILS failed, $((SECONDS - START)) s"
((FAILS == 0))
