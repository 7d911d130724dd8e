#!/usr/bin/env bash
# The background worker: with lance_namespace in shared_preload_libraries it
# removes dropped tables' data without anyone calling lance_process_drops(),
# and after a (re)start it sweeps what interrupted transactions left in the
# tables' folders; lance_sweep_leftovers() does the same on demand.  In a
# copy of the database (not the catalog of record) it removes nothing.
#
# Runs as root (or postgres) and starts its own cluster in a temporary
# folder.  Prints "  ok    <check>" / "  FAIL  <check>" per check; exits 0
# only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try (default 54481)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD

new_work_dir
PORT="$(find_free_port "${LN_TEST_PORT:-54481}")"
START=$SECONDS

cleanup() {
	stop_clusters "$PGDATA_DIR"
	remove_work_dir
}
trap cleanup EXIT

sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d worker "$@"; }
# wait_for <seconds> <sql that answers t when done>: the seconds (120 at every
# use) only guard against a hang; the check is the state, however slow the machine
wait_for() {
	local deadline=$((SECONDS + $1))
	while ((SECONDS < deadline)); do
		[[ "$(sql -c "$2" 2>/dev/null)" == t ]] && return 0
		sleep 0.2
	done
	return 1
}

init_cluster "$PGDATA_DIR" test >/dev/null
cat >>"$PGDATA_DIR/postgresql.conf" <<CONF
shared_preload_libraries = 'lance_namespace'
lance_namespace.maintenance_interval = 1
CONF
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 755
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE worker'
sql <<SQL
CREATE EXTENSION lance_namespace;
ALTER DATABASE worker SET lance_namespace.root = '$TABLES';
ALTER DATABASE worker SET lance_namespace.local_roots = '$TABLES';
SQL

# The launcher runs.
if wait_for 120 "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'lance_namespace launcher'"; then
	pass "the launcher runs"
else
	fail "the launcher runs"
fi

# A dropped table's data goes without anyone calling lance_process_drops().
sql -c "SELECT lance_create_namespace('{\"id\": [\"w\"]}')" >/dev/null
location="$(sql -c "SELECT lance_declare_table('{\"id\": [\"w\", \"gone\"]}') ->> 'location'")"
as_postgres mkdir -p "$location/_versions" "$location/data"
as_postgres sh -c "echo data > '$location/data/part-0.lance'"
sql -c "SELECT lance_drop_table('{\"id\": [\"w\", \"gone\"]}')" >/dev/null
if wait_for 120 "SELECT status = 'Succeeded' FROM lance_catalog.change WHERE operation = 'DropTable' ORDER BY seq DESC LIMIT 1"; then
	pass "the worker processed the queued drop"
else
	fail "the worker processed the queued drop"
fi
check "the dropped table's folder is gone" "absent" "$([[ -e "$location" ]] && echo present || echo absent)"

# lance_stats() reports the worker's rounds: this database's last one, ended
# without an error.
if wait_for 120 "SELECT (lance_stats() -> 'worker' ->> 'preloaded')::boolean AND EXISTS (
		SELECT FROM jsonb_array_elements(lance_stats() -> 'worker' -> 'rounds') r
		 WHERE r ->> 'database' = 'worker' AND r ->> 'finished_at' IS NOT NULL
		   AND r ->> 'last_error' IS NULL
		   AND (r ->> 'finished_at')::timestamptz > now() - interval '1 minute')"; then
	pass "lance_stats() shows the worker's last round in this database"
else
	fail "lance_stats() shows the worker's last round in this database"
fi
# and a round that fails: in a database whose catalog the library cannot
# work with (its extension's version is not the library's), the round's
# error is reported, without failing the other databases' rounds
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE worker_broken'
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d worker_broken \
	-c 'CREATE EXTENSION lance_namespace' \
	-c "UPDATE pg_extension SET extversion = '0.5.0' WHERE extname = 'lance_namespace'"
if wait_for 120 "SELECT EXISTS (
		SELECT FROM jsonb_array_elements(lance_stats() -> 'worker' -> 'rounds') r
		 WHERE r ->> 'database' = 'worker_broken' AND r ->> 'last_error' IS NOT NULL
		   AND r ->> 'last_error_at' IS NOT NULL)"; then
	pass "lance_stats() shows a failed round's error"
else
	fail "lance_stats() shows a failed round's error" "$(sql -c "SELECT lance_stats() -> 'worker'")"
fi
if wait_for 120 "SELECT EXISTS (
		SELECT FROM jsonb_array_elements(lance_stats() -> 'worker' -> 'rounds') r
		 WHERE r ->> 'database' = 'worker' AND r ->> 'last_error' IS NULL
		   AND (r ->> 'finished_at')::timestamptz > now() - interval '10 seconds')"; then
	pass "and the other database's rounds go on"
else
	fail "and the other database's rounds go on" "$(sql -c "SELECT lance_stats() -> 'worker'")"
fi
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'DROP DATABASE worker_broken WITH (FORCE)'
# and the errors of a storage setting's store, by code: one that does not answer
sql <<'SQL' >/dev/null
SELECT lance_set_storage('{"location": "s3://wbucket/", "options": {"aws_endpoint": "http://127.0.0.1:1", "allow_http": true, "aws_region": "us-east-1", "aws_access_key_id": "a", "aws_secret_access_key": "b"}}');
SELECT lance_declare_table('{"id": ["w", "on_s3"], "location": "s3://wbucket/on_s3"}');
SQL
for _ in 1 2; do
	sql -c "SET lance_namespace.storage_timeout = '1s'" \
		-c "SELECT lance_create_table_version('{\"id\": [\"w\", \"on_s3\"], \"version\": 1, \"manifest_path\": \"s3://wbucket/on_s3/_versions/1.manifest-staging\"}')" >/dev/null 2>&1 || true
done
check "lance_stats() counts the store's errors by code under its setting" '[{"code": "NoAnswer", "count": 2}]' \
	"$(sql -c "SELECT jsonb_agg(e - 'last_at') FROM jsonb_array_elements(lance_stats() -> 'storage') s,
	             jsonb_array_elements(s -> 'errors') e WHERE s ->> 'location' = 's3://wbucket'")"
sql -c "SELECT lance_deregister_table('{\"id\": [\"w\", \"on_s3\"]}')" -c "SELECT lance_remove_storage('{\"location\": \"s3://wbucket/\"}')" >/dev/null

# The worker follows a client's clean-up of old versions: a version whose
# final manifest is gone is removed from the catalog, unless it is the latest.
cleaned="$(sql -c "SELECT lance_declare_table('{\"id\": [\"w\", \"cleaned\"]}') ->> 'location'")"
as_postgres mkdir -p "$cleaned/_versions"
final_name() { sql -c "SELECT lpad((18446744073709551615 - $1)::numeric::text, 20, '0') || '.manifest'"; }
for v in 1 2 3; do
	name="$(final_name "$v")"
	as_postgres sh -c "echo manifest-$v > '$cleaned/_versions/$name-staging'"
	sql -c "SELECT lance_create_table_version(jsonb_build_object('id', ARRAY['w', 'cleaned'], 'version', $v,
		'manifest_path', '${cleaned#/}/_versions/$name-staging'))" >/dev/null
done
# what optimize({cleanupOlderThan}) does, and the latest's manifest gone too
as_postgres rm -f "$cleaned/_versions/$(final_name 1)" "$cleaned/_versions/$(final_name 3)"
if wait_for 120 "SELECT NOT EXISTS (SELECT FROM lance_catalog.version v JOIN lance_catalog.object o ON o.id = v.table_id
		WHERE o.location = '$cleaned' AND v.version = 1)"; then
	pass "the worker removed the version whose manifest a clean-up removed"
else
	fail "the worker removed the version whose manifest a clean-up removed"
fi
check "the latest version stays, whatever storage holds" "2,3" \
	"$(sql -c "SELECT string_agg(v.version::text, ',' ORDER BY v.version) FROM lance_catalog.version v
		JOIN lance_catalog.object o ON o.id = v.table_id WHERE o.location = '$cleaned'")"
check "the change log says so" "{1}" \
	"$(sql -c "SELECT versions FROM lance_catalog.change WHERE operation = 'ReconcileTableVersions'
		AND objects[1] = 'w\$cleaned'")"

# A file-level copy of the database (CREATE DATABASE ... TEMPLATE: the same
# rows, another database) is not the catalog of record: the worker leaves
# its drops queued and the data, which is the original's, in place, and says
# so in the server's log.
shared="$(sql -c "SELECT lance_declare_table('{\"id\": [\"w\", \"shared\"]}') ->> 'location'")"
as_postgres mkdir -p "$shared/data"
as_postgres sh -c "echo data > '$shared/data/part-0.lance'"
copied=no
for _ in $(seq 100); do
	# the worker's visits to the database make a template busy for a moment
	if "$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres \
		-c 'CREATE DATABASE wcopy TEMPLATE worker' >/dev/null 2>&1; then
		copied=yes
		break
	fi
	sleep 0.1
done
check "a copy of the database is made" "yes" "$copied"
wsql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d wcopy "$@"; }
wsql -c "ALTER DATABASE wcopy SET lance_namespace.local_roots = '$TABLES'" >/dev/null
logged_before="$(grep -c 'queued drops keep their data' "$PGDATA_DIR/server.log" || true)"
wsql -c "SELECT lance_drop_table('{\"id\": [\"w\", \"shared\"]}')" >/dev/null
deadline=$((SECONDS + 20))
while ((SECONDS < deadline)) &&
	(($(grep -c 'queued drops keep their data' "$PGDATA_DIR/server.log" || true) <= logged_before)); do
	sleep 0.2
done
check "the worker visited the copy and left its drop, saying why" "1 queued drops keep their data" \
	"$(grep -o '1 queued drops keep their data' "$PGDATA_DIR/server.log" | tail -n 1)"
check "the copy's drop stays queued" "Queued" \
	"$(wsql -c "SELECT status FROM lance_catalog.change WHERE operation = 'DropTable' ORDER BY seq DESC LIMIT 1")"
check "the original's data is in place" "data" "$(cat "$shared/data/part-0.lance")"

# Leftovers of interrupted transactions in a managed table's folders.  Their
# names carry the full transaction id of the transaction that made them.
kept="$(sql -c "SELECT lance_declare_table('{\"id\": [\"w\", \"kept\"]}') ->> 'location'")"
committed="$(sql -c 'SELECT txid_current()')"
aborted="$(sql -c 'BEGIN' -c 'SELECT txid_current()' -c 'ROLLBACK' | tail -n 1)"
plant_leftovers() {
	as_postgres mkdir -p "$kept/_refs/tags" "$kept/_versions" "$kept/tree/b1/_versions"
	as_postgres sh -c "
		echo old > '$kept/_refs/tags/removed.json.deleted-x$committed-0123abcd'
		echo back > '$kept/_refs/tags/back.json.deleted-x$aborted-0123abcd'
		echo partial > '$kept/_versions/1.manifest.tmp-x$aborted-89abcdef'
		echo partial > '$kept/_refs/tags/new.json.tmp-x$committed-89abcdef'
		mkdir -p '$kept/tree/gone.deleted-x$committed-00000001/_versions'
		echo v > '$kept/tree/gone.deleted-x$committed-00000001/_versions/1.manifest'
		echo unrelated > '$kept/_refs/tags/other.json.deleted-7-0123abcd'"
}
listing() { (cd "$kept" && find . -mindepth 1 | LC_ALL=C sort | tr '\n' ' '); }
expected_after="./_refs ./_refs/tags ./_refs/tags/back.json ./_refs/tags/other.json.deleted-7-0123abcd ./_versions ./tree ./tree/b1 ./tree/b1/_versions "

# On demand, without the worker's help.
plant_leftovers
check "lance_sweep_leftovers() answers what it handled" "5" "$(sql -c 'SELECT lance_sweep_leftovers()')"
check "only the leftovers of ended transactions are gone, an aborted deletion is put back" \
	"$expected_after" "$(listing)"
check "the restored file is the original" "back" "$(cat "$kept/_refs/tags/back.json")"
as_postgres rm -f "$kept/_refs/tags/back.json"

# After a restart, by the worker.
plant_leftovers
stop_cluster "$PGDATA_DIR" >/dev/null
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
deadline=$((SECONDS + 120))
while ((SECONDS < deadline)) && [[ "$(listing)" != "$expected_after" ]]; do
	sleep 0.2
done
check "the worker swept the leftovers after the restart" "$expected_after" "$(listing)"

printf 'lance_namespace: worker test: %d checks, %d failed, %d s\n' "$CHECKS" "$FAILS" "$((SECONDS - START))"
((FAILS == 0))
