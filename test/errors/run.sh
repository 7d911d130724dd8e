#!/usr/bin/env bash
# Errors of the local storage, as the caller sees them:
#  - a table folder the server may not write (as when a client runs as
#    another OS user) is code 13 naming the folder and the server's OS user;
#  - a failure the caller cannot act on is code 18 with an id and nothing
#    else (no path, no process id), and the server log has the details under
#    that id;
#  - a staging manifest the server may not read, one missing, one that is a
#    folder or a fifo, and one renamed or replaced between the check and
#    the link, are code 13 naming the file's problem;
#  - a staging manifest whose flush fails (a writeback error) fails the
#    commit with code 17, and a retry copies the file instead of linking it;
#  - another user's staging manifest is copied, not linked.
# The failures and the swaps between check and use are made by shim.c, an
# LD_PRELOAD shim in the cluster's processes, told what to do once through
# a control file.
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

gcc -O2 -Wall -Wextra -shared -fPIC -o "$WORK/shim.so" "$(dirname "${BASH_SOURCE[0]}")/shim.c" -ldl
chmod 755 "$WORK/shim.so"
make_postgres_dir "$WORK/shim" 755
CONTROL="$WORK/shim/control"

init_cluster "$PGDATA_DIR" test >/dev/null
# the flushes the shim fails happen only with fsync on
printf 'fsync = on\n' | as_postgres tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null
LD_PRELOAD="$WORK/shim.so" LN_SHIM_CONTROL="$CONTROL" start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 755
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE errors'
sql -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION lance_namespace;
ALTER DATABASE errors SET lance_namespace.root = '$TABLES';
ALTER DATABASE errors SET lance_namespace.local_roots = '$TABLES';
SQL
if [[ "$(sql -c 'SHOW fsync')" == on ]] && grep -q shim.so "/proc/$(head -n 1 "$PGDATA_DIR/postmaster.pid")/maps"; then
	pass "the cluster runs with fsync on and the shim loaded"
else
	fail "the cluster runs with fsync on and the shim loaded"
fi

# shim <line>: tell the shim what to do once; shim_taken: whether it did.
shim() {
	rm -f "$CONTROL.taken"
	printf '%s\n' "$1" >"$CONTROL"
}
shim_taken() { [[ ! -e "$CONTROL" && -e "$CONTROL.taken" ]]; }

# new_table <name>: declare it, with a _versions folder of the server's; sets LOC.
new_table() {
	LOC="$(sql -c "SELECT lance_declare_table('{\"id\": [\"$1\"]}') ->> 'location'")"
	mkdir -p "$LOC/_versions"
	chown postgres:postgres "$LOC" "$LOC/_versions"
}

# stage <leaf> [<owner> [<mode>]]: a staging manifest in LOC/_versions; sets STAGING.
stage() {
	STAGING="$LOC/_versions/$1"
	cp "$ROOT/test/fixtures/lance.manifest" "$STAGING"
	chown "${2:-postgres}:${2:-postgres}" "$STAGING"
	chmod "${3:-644}" "$STAGING"
}

# create_version <table> <staging path>: CreateTableVersion 1 in SQL; sets
# ANSWER (what psql printed), CODE and MESSAGE (of the ErrorResponse, if any).
create_version() {
	ANSWER="$(sql -c "SELECT 1 FROM lance_create_table_version('{\"id\": [\"$1\"], \"version\": 1, \"manifest_path\": \"${2#/}\"}')" 2>&1 || true)"
	local detail
	detail="$(printf '%s\n' "$ANSWER" | sed -n 's/^DETAIL:  //p')"
	CODE="$(printf '%s' "$detail" | sed -n 's/^{"code":\([0-9]*\),.*/\1/p')"
	MESSAGE="$(printf '%s' "$detail" | sed -n 's/.*"error":"\(.*\)"[,}].*/\1/p')"
}

versions_of() { sql -c "SELECT count(*) FROM lance_list_table_versions('{\"id\": [\"$1\"]}') v, jsonb_array_elements(v -> 'versions')"; }

FINAL_LEAF="18446744073709551614.manifest"

# A managed table whose _versions folder belongs to root, read-only for the
# server, as when the client that made it runs as another OS user: code 13
# naming the folder and the OS user the server runs as.
location="$(sql -c "SELECT lance_declare_table('{\"id\": [\"t\"]}') ->> 'location'")"
mkdir -p "$location/_versions"
chmod 755 "$location" "$location/_versions"
staging="$location/_versions/18446744073709551614.manifest-staging"
cp "$ROOT/test/fixtures/lance.manifest" "$staging"
chmod 644 "$staging"

create_version t "$staging"
if [[ "$CODE" == 13 && "$MESSAGE" == *"Permission denied"* && "$MESSAGE" == *"OS user \\\"postgres\\\""* &&
	"$MESSAGE" == *"folder \\\"$location/_versions\\\""* ]]; then
	pass "a folder the server may not write: code 13 naming the folder and the server's OS user"
else
	fail "a folder the server may not write: code 13 naming the folder and the server's OS user" "$ANSWER"
fi
key="$(sql -c "SELECT lance_create_api_key(current_user)")"
rest="$(sql -c "SELECT status || ' ' || response_body FROM lance_rest('POST', '/v1/table/t/version/create', NULL, '{\"version\": 1, \"manifest_path\": \"${staging#/}\"}', '{\"x-api-key\": \"$key\"}')")"
if [[ "$rest" == '400 {"code":13,'*"$location/_versions"*postgres* ]]; then
	pass "through REST: 400, code 13, naming the folder and the OS user"
else
	fail "through REST: 400, code 13, naming the folder and the OS user" "$rest"
fi
check_files="$(ls -A "$location/_versions")"
if [[ "$check_files" == "18446744073709551614.manifest-staging" ]]; then
	pass "nothing was left in the folder"
else
	fail "nothing was left in the folder (found: $check_files)"
fi

# A failure nobody but the server's administrator can act on (the flush of
# the catalog's own copy fails with EINVAL): code 18 with an id and nothing
# else, in SQL and through REST; the server log has the details.
new_table i
stage "18446744073709551614.manifest-staging" root 644
shim "fsync 22 .tmp-x"
create_version i "$STAGING"
id="$(printf '%s\n' "$ANSWER" | sed -n 's/^DETAIL:  .*"error":"internal error \([0-9a-f]\{8\}\); the server log has the details".*/\1/p')"
if shim_taken && [[ "$CODE" == 18 && -n "$id" ]]; then
	pass "the caller gets code 18 with an error id"
else
	fail "the caller gets code 18 with an error id" "$ANSWER"
fi
if [[ "$ANSWER" != *"$WORK"* && "$ANSWER" != *"/tmp"* ]]; then
	pass "the answer names no path"
else
	fail "the answer names no path (got: $ANSWER)"
fi
shim "fsync 22 .tmp-x"
rest="$(sql -c "SELECT status || ' ' || response_body FROM lance_rest('POST', '/v1/table/i/version/create', NULL, '{\"version\": 1, \"manifest_path\": \"${STAGING#/}\"}', '{\"x-api-key\": \"$key\"}')")"
rest_id="$(printf '%s\n' "$rest" | sed -n 's/^500 {"code":18,"error":"internal error \([0-9a-f]\{8\}\); the server log has the details"}$/\1/p')"
if shim_taken && [[ -n "$rest_id" ]]; then
	pass "through REST: 500, code 18, an error id and nothing else"
else
	fail "through REST: 500, code 18, an error id and nothing else (got: $rest)"
fi

log="$PGDATA_DIR/server.log"
for one in "$id" "$rest_id"; do
	if [[ -n "$one" ]] && grep -q "lance_namespace: internal error $one: could not flush \"$LOC/_versions/$FINAL_LEAF.tmp-x" "$log"; then
		pass "the server log has error $one with its details"
	else
		fail "the server log has error ${one:-?} with its details"
	fi
done
check_files="$(ls -A "$LOC/_versions")"
if [[ "$check_files" == "18446744073709551614.manifest-staging" && "$(versions_of i)" == 0 ]]; then
	pass "nothing was left in the folder, nor in the catalog"
else
	fail "nothing was left in the folder, nor in the catalog (found: $check_files)"
fi

# Staging manifests the caller made wrong: code 13 naming the file (as the
# request spelled it, or as a path) and its problem, whether it was so at
# the check or became so between the check and the link (the shim changes
# it as the server opens it), never 18.
staging_problem() { # <check> <table> <message part> [<shim line>]
	local what="$1" table="$2" part="$3"
	[[ -z "${4:-}" ]] || shim "$4"
	create_version "$table" "$STAGING"
	if [[ -n "${4:-}" ]] && ! shim_taken; then
		fail "$what: the shim never acted" "$ANSWER"
	elif [[ "$CODE" == 13 && "$MESSAGE" == *"${STAGING#/}\\\" $part"* && "$(versions_of "$table")" == 0 &&
		! -e "$LOC/_versions/$FINAL_LEAF" ]]; then
		pass "$what: code 13, \"$part\", and nothing is created"
	else
		fail "$what: code 13, \"$part\", and nothing is created" "$ANSWER"
	fi
}

new_table s1
stage "18446744073709551614.manifest-private" root 600
staging_problem "another OS user's staging manifest of mode 600" s1 "cannot be read: Permission denied: the server runs as OS user \\\"postgres\\\""
new_table s2
STAGING="$LOC/_versions/18446744073709551614.manifest-missing"
staging_problem "a staging manifest that does not exist" s2 "does not exist"
new_table s3
STAGING="$LOC/_versions/18446744073709551614.manifest-folder"
mkdir "$STAGING"
staging_problem "a folder for a staging manifest" s3 "is not a regular file"
new_table s4
STAGING="$LOC/_versions/18446744073709551614.manifest-fifo"
mkfifo "$STAGING"
staging_problem "a fifo for a staging manifest" s4 "is not a regular file"
new_table s5
stage "18446744073709551614.manifest-vanish"
staging_problem "a staging manifest renamed between the check and the link" s5 "does not exist" "vanish manifest-vanish"
new_table s6
stage "18446744073709551614.manifest-tofolder"
staging_problem "a staging manifest swapped for a folder between the check and the link" s6 "is not a regular file" "folder manifest-tofolder"
new_table s7
stage "18446744073709551614.manifest-tofifo"
staging_problem "a staging manifest swapped for a fifo between the check and the link" s7 "is not a regular file" "fifo manifest-tofifo"

# A staging manifest of the server's own is linked: the final manifest is
# that very file (the same inode).
new_table l
stage "18446744073709551614.manifest-linked"
inode="$(stat -c %i "$STAGING")"
create_version l "$STAGING"
if [[ "$ANSWER" == 1 && "$(stat -c %i "$LOC/_versions/$FINAL_LEAF" 2>/dev/null)" == "$inode" ]]; then
	pass "a staging manifest of the server's is linked: the final manifest has its inode"
else
	fail "a staging manifest of the server's is linked: the final manifest has its inode" "$ANSWER"
fi

# Its flush fails with a writeback error (EIO): the commit fails with code
# 17 and creates nothing; a retry of the same commit copies the file (a new
# inode), never links one whose pages may be lost.
new_table w
stage "18446744073709551614.manifest-eio"
inode="$(stat -c %i "$STAGING")"
shim "fsync 5 manifest-eio"
create_version w "$STAGING"
if shim_taken && [[ "$CODE" == 17 && "$MESSAGE" == *"could not flush staging manifest \\\"$STAGING\\\": Input/output error"* &&
	"$(versions_of w)" == 0 && ! -e "$LOC/_versions/$FINAL_LEAF" ]]; then
	pass "a failed flush of the staging manifest: code 17, and nothing is created"
else
	fail "a failed flush of the staging manifest: code 17, and nothing is created" "$ANSWER"
fi
create_version w "$STAGING"
final_inode="$(stat -c %i "$LOC/_versions/$FINAL_LEAF" 2>/dev/null || true)"
if [[ "$ANSWER" == 1 && -n "$final_inode" && "$final_inode" != "$inode" && "$(versions_of w)" == 1 && ! -e "$STAGING" ]] &&
	cmp -s "$LOC/_versions/$FINAL_LEAF" "$ROOT/test/fixtures/lance.manifest"; then
	pass "its retry commits a copy (a new inode), not a link"
else
	fail "its retry commits a copy (a new inode), not a link" "$ANSWER" "staging inode $inode, final ${final_inode:-none}"
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
