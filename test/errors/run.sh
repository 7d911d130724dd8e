#!/usr/bin/env bash
# Internal errors: a failure the caller cannot act on (here, a manifest
# folder the server may not write, as when a client runs as another OS
# user) answers code 18 with an id and nothing else (no path, no process
# id), and the server log has the details under that id.  Another user's
# staging manifest is copied, not linked.
#
# Runs as root (or postgres) and starts its own cluster in a temporary
# folder.  Prints "  ok    <check>" / "  FAIL  <check>" per check; exits 0
# only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try (default 54491)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD

new_work_dir
PORT="$(find_free_port "${LN_TEST_PORT:-54491}")"

cleanup() {
	stop_clusters "$PGDATA_DIR"
	remove_work_dir
}
trap cleanup EXIT

sql() { "$PG_BIN/psql" -X -q -At -h "$SOCK" -p "$PORT" -U postgres -d errors "$@"; }

init_cluster "$PGDATA_DIR" test >/dev/null
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 755
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE errors'
sql -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION lance_namespace;
ALTER DATABASE errors SET lance_namespace.root = '$TABLES';
ALTER DATABASE errors SET lance_namespace.local_roots = '$TABLES';
SQL

# A managed table whose _versions folder belongs to root, read-only for the
# server, with a staging manifest in it the server can read.
location="$(sql -c "SELECT lance_declare_table('{\"id\": [\"t\"]}') ->> 'location'")"
mkdir -p "$location/_versions"
chmod 755 "$location" "$location/_versions"
staging="$location/_versions/18446744073709551614.manifest-staging"
cp "$ROOT/test/fixtures/lance.manifest" "$staging"
chmod 644 "$staging"

answer="$(sql -c "SELECT 1 FROM lance_create_table_version('{\"id\": [\"t\"], \"version\": 1, \"manifest_path\": \"${staging#/}\"}')" 2>&1 || true)"
detail="$(printf '%s\n' "$answer" | sed -n 's/^DETAIL:  //p')"
id="$(printf '%s\n' "$detail" | sed -n 's/.*"error":"internal error \([0-9a-f]\{8\}\); the server log has the details".*/\1/p')"
if [[ "$detail" == '{"code":18,'* && -n "$id" ]]; then
	pass "the caller gets code 18 with an error id"
else
	fail "the caller gets code 18 with an error id (got: $answer)"
fi
if [[ "$answer" != *"$WORK"* && "$answer" != *"/tmp"* ]]; then
	pass "the answer names no path"
else
	fail "the answer names no path (got: $answer)"
fi

# through REST with an API key, as a gateway calls it
key="$(sql -c "SELECT lance_create_api_key(current_user)")"
rest="$(sql -c "SELECT status || ' ' || response_body FROM lance_rest('POST', '/v1/table/t/version/create', NULL, '{\"version\": 1, \"manifest_path\": \"${staging#/}\"}', '{\"x-api-key\": \"$key\"}')")"
rest_id="$(printf '%s\n' "$rest" | sed -n 's/^500 {"code":18,"error":"internal error \([0-9a-f]\{8\}\); the server log has the details"}$/\1/p')"
if [[ -n "$rest_id" ]]; then
	pass "through REST: 500, code 18, an error id and nothing else"
else
	fail "through REST: 500, code 18, an error id and nothing else (got: $rest)"
fi

log="$PGDATA_DIR/server.log"
for one in "$id" "$rest_id"; do
	if [[ -n "$one" ]] && grep -q "lance_namespace: internal error $one: could not .*$location/_versions" "$log"; then
		pass "the server log has error $one with its details"
	else
		fail "the server log has error ${one:-?} with its details"
	fi
done
check_files="$(ls -A "$location/_versions")"
if [[ "$check_files" == "18446744073709551614.manifest-staging" ]]; then
	pass "nothing was left in the folder"
else
	fail "nothing was left in the folder (found: $check_files)"
fi

# A staging manifest of another user, which the server may read but not
# write: the catalog copies it (a file of the server's own), never links it,
# so that the final manifest is the server's to keep or remove.
location="$(sql -c "SELECT lance_declare_table('{\"id\": [\"c\"]}') ->> 'location'")"
mkdir -p "$location/_versions"
chown postgres:postgres "$location" "$location/_versions"
staging="$location/_versions/18446744073709551614.manifest-staging"
cp "$ROOT/test/fixtures/lance.manifest" "$staging"
chown root:root "$staging"
chmod 644 "$staging"
final="$location/_versions/18446744073709551614.manifest"
answer="$(sql -c "BEGIN" \
	-c "SELECT 1 FROM lance_create_table_version('{\"id\": [\"c\"], \"version\": 1, \"manifest_path\": \"${staging#/}\"}')" \
	-c "SELECT (pg_catalog.pg_stat_file('$final')).size > 0" -c "COMMIT" 2>&1 | tail -n 1)"
if [[ "$answer" == t && -f "$final" && "$(stat -c %U "$final")" == postgres ]] &&
	cmp -s "$final" "$ROOT/test/fixtures/lance.manifest" && [[ ! -e "$staging" ]]; then
	pass "another user's staging manifest is copied (the final one is the server's), and the version commits"
else
	fail "another user's staging manifest is copied, and the version commits (got: $answer; $(ls -l "$location/_versions" 2>&1))"
fi

printf 'lance_namespace: errors test: %d checks, %d failed\n' "$CHECKS" "$FAILS"
((FAILS == 0))
