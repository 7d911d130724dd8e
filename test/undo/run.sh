#!/usr/bin/env bash
# A rollback's undo on local storage works in the folder it wrote in, and
# what it cannot do is not forgotten:
#   1. a version's _versions folder is swapped for a symbolic link (to a
#      copy of the real folder elsewhere) between the version's final
#      manifest and the rollback: the rollback removes the final manifest in
#      the real folder, and nothing in the link's target;
#   2. a transaction with versions in more tables than the undo keeps
#      folders open for (64) has the last table's _versions swapped for a link:
#      that undo cannot reach its folder, so it is spooled; once the folder
#      is back, lance_sweep_leftovers() removes the final manifest and the
#      catalog's list of waiting undo is empty;
#   3. spool files that are damaged or crafted (a put-back with no set-aside
#      file though its checksum matches, a record cut short, the old format
#      without checksums) are set aside as "<name>.bad" with a warning by
#      lance_sweep_leftovers(), the server does not crash, and a valid
#      spool file of the same round is done.
#
# Deterministic: the swaps are done from the session itself (\!) between
# the version's creation and the ROLLBACK.  Runs as root and starts its own
# cluster.  Prints "  ok    <check>" / "  FAIL  <check>" per check; exits 0
# only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try (default 54521)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD

new_work_dir
PORT="$(find_free_port "${LN_TEST_PORT:-54521}")"
START=$SECONDS

cleanup() {
	stop_cluster "$PGDATA_DIR" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d undo "$@"; }

init_cluster "$PGDATA_DIR" test >/dev/null
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 755
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE undo'
sql -v root="$TABLES" <<'SQL'
CREATE EXTENSION lance_namespace;
ALTER DATABASE undo SET lance_namespace.local_roots = :'root';
ALTER DATABASE undo SET lance_namespace.root = :'root';
SQL
sql -c "SELECT lance_create_namespace('{\"id\": [\"ns\"]}')" >/dev/null

# version 1, V2 naming: 2^64 - 2
FINAL=18446744073709551614.manifest
table() { # name: declare it, with a staging manifest for version 1
	sql -c "SELECT lance_declare_table(jsonb_build_object('id', ARRAY['ns', '$1'], 'location', '$TABLES/ns/$1.lance'))" >/dev/null
	as_postgres mkdir -p "$TABLES/ns/$1.lance/_versions"
	as_postgres sh -c "printf 'manifest of $1\n' >'$TABLES/ns/$1.lance/_versions/stage-1'"
}
request() { printf '{"id": ["ns", "%s"], "version": 1, "manifest_path": "%s"}' "$1" "${TABLES#/}/ns/$1.lance/_versions/stage-1"; }
# swap: the real _versions moves aside, a link of its name points at a copy of it elsewhere
swap() { printf '\\! mv %s/_versions %s/real && cp -a %s/real %s/elsewhere-%s && ln -s %s/elsewhere-%s %s/_versions\n' \
	"$1" "$1" "$1" "$WORK" "$2" "$WORK" "$2" "$1"; }

# 1. the link swap between the final manifest and the rollback
table t
T="$TABLES/ns/t.lance"
sql >/dev/null <<SQL
BEGIN;
SELECT lance_create_table_version('$(request t)');
\! test -f $T/_versions/$FINAL && touch $WORK/made
$(swap "$T" t)
ROLLBACK;
SQL
check "the version's final manifest was made in its transaction" "yes" "$([[ -f "$WORK/made" ]] && echo yes || echo no)"
check "the rollback removed the final manifest in the real folder, moved away" "no" \
	"$([[ -e "$T/real/$FINAL" ]] && echo yes || echo no)"
check "the link's target, a copy holding the same name, is untouched" "yes" \
	"$([[ -f "$WORK/elsewhere-t/$FINAL" ]] && echo yes || echo no)"
check "the staging manifest stays (the version did not commit)" "yes" \
	"$([[ -f "$T/real/stage-1" ]] && echo yes || echo no)"
check "no version row" "0" "$(sql -c "SELECT count(*) FROM lance_catalog.version")"

# 2. more folders than the undo keeps open: the last table's undo reopens its folder by path,
# finds a link there, and spools the step; lance_sweep_leftovers() does it once the folder is back
N=70
for i in $(seq 1 $N); do table "m$i"; done
M="$TABLES/ns/m$N.lance"
{
	echo "BEGIN;"
	for i in $(seq 1 $N); do echo "SELECT lance_create_table_version('$(request "m$i")') IS NOT NULL;"; done
	swap "$M" last
	echo "ROLLBACK;"
} | sql >/dev/null 2>"$WORK/rollback.err"
check "the rollback warned that one undo waits for the next maintenance round" "1" \
	"$(grep -c 'next maintenance round retries' "$WORK/rollback.err" || true)"
left=0
for i in $(seq 1 $((N - 1))); do [[ -e "$TABLES/ns/m$i.lance/_versions/$FINAL" ]] && left=$((left + 1)); done
check "the other tables' final manifests are removed" "0" "$left"
check "the last table's final manifest is left in its moved folder" "yes" \
	"$([[ -f "$M/real/$FINAL" ]] && echo yes || echo no)"
check "a spool file holds the undo that waits" "1" "$(find "$PGDATA_DIR/lance_namespace_undo" -name '*.spool' | wc -l)"
# while the link is there, a maintenance round keeps the step for later
sql -c "SELECT lance_sweep_leftovers()" >/dev/null
check "while the folder is a link, the step waits in the catalog with its error" "1|remove|t" \
	"$(sql -c "SELECT attempts, action, last_error LIKE '%symbolic link%' FROM lance_catalog.storage_undo")"
check "the spool file is gone once the catalog holds its step" "0" \
	"$(find "$PGDATA_DIR/lance_namespace_undo" -name '*.spool' | wc -l)"
check "the link's target is untouched" "yes" "$([[ -f "$WORK/elsewhere-last/$FINAL" ]] && echo yes || echo no)"
# the round holds a final name's partition lock only for its step, not to its commit: seen from
# the round's own statement, after the step failed
sql -c "UPDATE lance_catalog.storage_undo SET next_attempt = now()"
check "after a failing step the round holds no final-name partition lock" "0" \
	"$(sql -c "WITH r AS MATERIALIZED (SELECT lance_sweep_leftovers() AS n)
		SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 19792
		          AND pid = pg_backend_pid() AND granted)
		  FROM r" 2>/dev/null)"
check "(the round did try the step, and it failed again)" "2" "$(sql -c "SELECT attempts FROM lance_catalog.storage_undo")"
rm "$M/_versions" && mv "$M/real" "$M/_versions"
sql -c "UPDATE lance_catalog.storage_undo SET next_attempt = now()" # not wait for the backoff
sql -c "SELECT lance_sweep_leftovers()" >/dev/null
check "once the folder is back, the next round removes the final manifest" "no" \
	"$([[ -e "$M/_versions/$FINAL" ]] && echo yes || echo no)"
check "and the step is done" "0" "$(sql -c "SELECT count(*) FROM lance_catalog.storage_undo")"
check "a version committed later is left alone by rounds" "1" \
	"$(sql -c "SELECT lance_create_table_version('$(request "m$N")') #>> '{version,version}'")"
sql -c "SELECT lance_sweep_leftovers()" >/dev/null
check "its final manifest stays" "yes" "$([[ -f "$M/_versions/$FINAL" ]] && echo yes || echo no)"

# 3. damaged and crafted spool files
DBOID="$(sql -c "SELECT oid FROM pg_database WHERE datname = 'undo'")"
STARTED="$(sql -c "SELECT pg_postmaster_start_time()")"
SPOOL="$PGDATA_DIR/lance_namespace_undo"
as_postgres sh -c "printf 'set aside\n' >'$TABLES/ns/kept.aside'"
# spoolfile <name> <format> <fields...>: a spool file of one record ("-" is a field that is none);
# format: ok, truncated (the record cut short), nocrc (the old format: no checksum)
spoolfile() {
	python3 - "$SPOOL/$1" "$2" "${@:3}" <<'PY'
import struct, sys
def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff
path, form, fields = sys.argv[1], sys.argv[2], sys.argv[3:]
rec = b"".join(struct.pack("<I", 0xffffffff) if f == "-" else struct.pack("<I", len(f.encode())) + f.encode()
               for f in fields)
if form == "nocrc":
    data = b"LNUNDO1\n" + struct.pack("<I", len(rec)) + rec
else:
    data = b"LNUNDO2\n" + struct.pack("<II", len(rec), crc32c(rec)) + rec
if form == "truncated":
    data = data[:-5]
open(path, "wb").write(data)
PY
	chown postgres "$SPOOL/$1" 2>/dev/null || true
}
# a put-back: location, path, set-aside
putback() { echo p l "$TABLES" "$1" "$2" - -1 0:0 - 0 - 7; }
# shellcheck disable=SC2046
spoolfile "$DBOID-1-1-1.spool" ok $(putback "$TABLES/ns/x" -)
# shellcheck disable=SC2046
spoolfile "$DBOID-1-1-2.spool" ok $(putback nothing-below-the-root "$TABLES/ns/x.aside")
# shellcheck disable=SC2046
spoolfile "$DBOID-1-1-3.spool" truncated $(putback "$TABLES/ns/kept" "$TABLES/ns/kept.aside")
# shellcheck disable=SC2046
spoolfile "$DBOID-1-1-4.spool" nocrc $(putback "$TABLES/ns/kept" "$TABLES/ns/kept.aside")
# shellcheck disable=SC2046
spoolfile "$DBOID-1-1-6.spool" nocrc $(putback "$TABLES/ns/x" -)
# shellcheck disable=SC2046
spoolfile "$DBOID-1-1-5.spool" ok $(putback "$TABLES/ns/kept" "$TABLES/ns/kept.aside")
sql -c "SELECT lance_sweep_leftovers()" >/dev/null 2>"$WORK/sweep.err" || true
check "the sweep over damaged spool files does not crash the server" "$STARTED" \
	"$(sql -c "SELECT pg_postmaster_start_time()" 2>/dev/null || echo down)"
check "each damaged file is set aside as <name>.bad" "1 2 3 4 6" \
	"$(cd "$SPOOL" && ls -- *.spool.bad 2>/dev/null | sed -E 's/^[0-9]+-1-1-([0-9])\.spool\.bad$/\1/' | sort | tr '\n' ' ' | sed 's/ $//')"
check "with a warning naming each" "5" "$(grep -c 'undo spool file .*set aside as' "$WORK/sweep.err" || true)"
check "a missing set-aside file is named as a record that is no undo step" "1" \
	"$(grep -c '1-1-1.spool" has a record that is not an undo step' "$WORK/sweep.err" || true)"
check "the valid file of the same round is done: the original is back" "yes" \
	"$([[ -f "$TABLES/ns/kept" && ! -e "$TABLES/ns/kept.aside" ]] && echo yes || echo no)"
check "no spool file and no step is left" "0|0" \
	"$(find "$SPOOL" -name '*.spool' | wc -l)|$(sql -c "SELECT count(*) FROM lance_catalog.storage_undo")"
sql -c "SELECT lance_sweep_leftovers()" >/dev/null 2>"$WORK/sweep2.err"
check "a later round does not meet the set-aside files again" "0" "$(grep -c 'spool' "$WORK/sweep2.err" || true)"

echo
say "undo test: $CHECKS checks, $FAILS failed, $((SECONDS - START)) s"
((FAILS == 0))
