#!/usr/bin/env bash
# Folders swapped for symbolic links while the catalog works in them: the
# catalog reaches every file under the local roots through descriptors of
# folders opened from the root without following links, so no swap between
# a check and its use redirects a write, a move, a removal or a read.
#
# Swappers (swapper.c) keep exchanging a real folder inside a managed table
# (_versions, _refs, _refs/tags, tree, a dropped table's parent folder and
# data folder) with a symbolic link of the same name that points at a
# "canary" folder outside, full of files with the names the catalog uses
# (staging and final manifests, tag files, branch folders, dropped tables).
# Meanwhile sessions create versions from staging manifests, create, update,
# read, list and delete tags, create and delete branches, and drop tables
# and remove their data with lance_process_drops().  Errors of the catalog
# (LN013 for a link, ...) are fine; at the end every canary file must be
# there with its checksum, nothing new outside the tables' folders, no read
# answered from a canary, and no crash in the server log.
#
# Runs as root and starts its own cluster in a temporary folder.  Prints
# "  ok    <check>" / "  FAIL  <check>" per check and its figures; exits 0
# only when every check passed.
#
# Environment (optional):
#   LN_TEST_PORT       first port to try (default 54511)
#   LINKRACE_SECONDS   how long the swappers and sessions run (default 20)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
new_work_dir
CANARY="$WORK/canary"
LINKS="$WORK/links"
OUT="$WORK/out"
PORT="$(find_free_port "${LN_TEST_PORT:-54511}")"
RUN_SECONDS="${LINKRACE_SECONDS:-20}"
START=$SECONDS
PIDS=()

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	stop_clusters "$PGDATA_DIR"
	if [[ -n "${LINKRACE_KEEP:-}" ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d linkrace "$@"; }
# A batch of statements whose errors are expected: answers on stdout, errors on stderr.
batch() { "$PG_BIN/psql" -X -q -At -h "$SOCK" -p "$PORT" -U postgres -d linkrace "$@"; }

gcc -O2 -Wall -Wextra -o "$WORK/swapper" "$HERE/swapper.c"

init_cluster "$PGDATA_DIR" test >/dev/null
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK" >/dev/null
make_postgres_dir "$TABLES" 755
mkdir -p "$OUT"
"$PG_BIN/psql" -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c 'CREATE DATABASE linkrace'
sql <<SQL
CREATE EXTENSION lance_namespace;
ALTER DATABASE linkrace SET lance_namespace.root = '$TABLES';
ALTER DATABASE linkrace SET lance_namespace.local_roots = '$TABLES';
SQL

# How many of each the sessions may use up (they stop at the deadline).
NV=3000 # versions
NT=600  # tags per table
NB=300  # branches
ND=200  # dropped tables in a swapped folder
NI=2    # dropped tables with a swapped data folder

# The final manifest names (V2) of versions 1..NV.
mapfile -t FINAL < <(sql -c "SELECT lpad((18446744073709551615 - g)::text, 20, '0') || '.manifest' FROM generate_series(1, $NV) g")

# ---------------------------------------------------------------------------
# The tables, the canaries and the links.
# ---------------------------------------------------------------------------
V="$TABLES/v/tv.lance" # versions
R="$TABLES/r/tr.lance" # _refs swapped
G="$TABLES/g/tg.lance" # _refs/tags swapped
B="$TABLES/b/tb.lance" # tree swapped
D="$TABLES/dr"         # the folder of dropped tables swapped
mkdir -p "$V/_versions" "$R/_versions" "$R/_refs/tags" "$R/_refs/branches" \
	"$G/_versions" "$G/_refs/tags" "$B/_versions" "$B/tree"
for k in $(seq 1 "$NV"); do
	printf 'staging manifest %d\n' "$k" >"$V/_versions/${FINAL[k - 1]}-s"
done
for t in "$R" "$G" "$B"; do
	cp "$ROOT/test/fixtures/lance.manifest" "$t/_versions/${FINAL[0]}-s"
done
dirs=()
for i in $(seq 1 "$ND"); do dirs+=("$D/d$i.lance/data" "$D/d$i.lance/_versions"); done
mkdir -p "${dirs[@]}"
for i in $(seq 1 "$ND"); do
	echo "rows of d$i" >"$D/d$i.lance/data/part-0.lance"
done
for i in $(seq 1 "$NI"); do
	mkdir -p "$TABLES/di/e$i.lance/data/sub"
	echo "rows of e$i" >"$TABLES/di/e$i.lance/data/part-0.lance"
	echo "more rows of e$i" >"$TABLES/di/e$i.lance/data/sub/part-1.lance"
done
chown -R postgres:postgres "$TABLES"

# Canaries: what the catalog would touch, had it followed the link.  (Folders
# made in one call and files written by the shell itself: a fork per file
# would make the set-up the longest part.)
dirs=("$CANARY/vers" "$CANARY/refs/tags" "$CANARY/refs/branches" "$CANARY/tags")
for i in $(seq 1 "$NB"); do dirs+=("$CANARY/tree/b$i/_versions" "$CANARY/tree/b$i/data"); done
for i in $(seq 1 "$ND"); do dirs+=("$CANARY/drop/d$i.lance/data" "$CANARY/drop/d$i.lance/_versions"); done
for i in $(seq 1 "$NI"); do dirs+=("$CANARY/data$i/sub"); done
mkdir -p "${dirs[@]}"
for k in $(seq 1 "$NV"); do
	printf 'canary staging %d\n' "$k" >"$CANARY/vers/${FINAL[k - 1]}-s"
	printf 'canary final %d\n' "$k" >"$CANARY/vers/${FINAL[k - 1]}"
done
for dir in "$CANARY/refs/tags" "$CANARY/tags"; do
	for i in $(seq 1 "$NT") canary; do
		echo '{"branch": null, "version": 999999, "manifest_size": 1}' >"$dir/t$i.json"
	done
done
echo '{"parent_branch": null, "parent_version": 999999}' >"$CANARY/refs/branches/canary.json"
for i in $(seq 1 "$NB"); do
	echo "canary branch manifest $i" >"$CANARY/tree/b$i/_versions/${FINAL[0]}"
	echo "canary branch data $i" >"$CANARY/tree/b$i/data/part-0.lance"
done
for i in $(seq 1 "$ND"); do
	echo "canary rows of d$i" >"$CANARY/drop/d$i.lance/data/part-0.lance"
	echo "canary manifest of d$i" >"$CANARY/drop/d$i.lance/_versions/1.manifest"
done
for i in $(seq 1 "$NI"); do
	echo "canary data $i" >"$CANARY/data$i/part-0.lance"
	echo "canary sub data $i" >"$CANARY/data$i/sub/part-1.lance"
done
# Writable by the server, so that anything it did there would show.
chown -R postgres:postgres "$CANARY"

# swap <name> <folder in a table>: a link of the same name to $CANARY/<name>
SWAPS=()
swap_pair() {
	mkdir -p "$LINKS/$1"
	ln -s "$CANARY/$1" "$LINKS/$1/$(basename "$2")"
	SWAPS+=("$1|$2|$LINKS/$1/$(basename "$2")")
}
swap_pair vers "$V/_versions"
swap_pair refs "$R/_refs"
swap_pair tags "$G/_refs/tags"
swap_pair tree "$B/tree"
swap_pair drop "$D"
for i in $(seq 1 "$NI"); do
	swap_pair "data$i" "$TABLES/di/e$i.lance/data"
done

canary_state() { (cd "$CANARY" && find . -printf '%y %p -> %l\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort -k 2); }
work_state() { (cd "$WORK" && find . -mindepth 1 -maxdepth 1 | LC_ALL=C sort); }
canary_state >"$OUT/canary.before"
work_state >"$OUT/work.before"

# The catalog's side: the tables, and their first versions.
sql >/dev/null <<SQL
SELECT lance_create_namespace(jsonb_build_object('id', jsonb_build_array(n)))
  FROM unnest(ARRAY['v', 'r', 'g', 'b', 'dr', 'di']) n;
SELECT lance_declare_table(jsonb_build_object('id', jsonb_build_array(ns, t), 'location', l))
  FROM (VALUES ('v', 'tv', '$V'), ('r', 'tr', '$R'), ('g', 'tg', '$G'), ('b', 'tb', '$B')) x(ns, t, l);
SELECT lance_create_table_version(jsonb_build_object('id', jsonb_build_array(ns, t), 'version', 1,
       'manifest_path', ltrim(l || '/_versions/${FINAL[0]}-s', '/')))
  FROM (VALUES ('r', 'tr', '$R'), ('g', 'tg', '$G'), ('b', 'tb', '$B')) x(ns, t, l);
SELECT lance_register_table(jsonb_build_object('id', jsonb_build_array('dr', 'd' || i),
       'location', '$D/d' || i || '.lance')) FROM generate_series(1, $ND) i;
SELECT lance_register_table(jsonb_build_object('id', jsonb_build_array('di', 'e' || i),
       'location', '$TABLES/di/e' || i || '.lance')) FROM generate_series(1, $NI) i;
-- as if the catalog had chosen their folders: only such folders are removed
UPDATE lance_catalog.object SET location_derived = true
 WHERE parent_id IN (SELECT id FROM lance_catalog.object WHERE parent_id = 0 AND name IN ('dr', 'di'));
SQL

# ---------------------------------------------------------------------------
# The race.
# ---------------------------------------------------------------------------
SETUP_SECONDS=$((SECONDS - START))
END=$((SECONDS + RUN_SECONDS))
for s in "${SWAPS[@]}"; do
	IFS='|' read -r name real link <<<"$s"
	"$WORK/swapper" "$real" "$link" "$((RUN_SECONDS + 2))" >"$OUT/swap.$name" 2>&1 &
	PIDS+=($!)
done

# run_session <name> <generator of statement i> <count>: batches until the deadline
run_session() {
	local name="$1" gen="$2" count="$3" i=1 j file
	while ((SECONDS < END && i <= count)); do
		file="$OUT/$name.sql"
		: >"$file"
		for ((j = 0; j < 10 && i <= count; j++, i++)); do
			"$gen" "$i" >>"$file"
		done
		batch -f "$file" >>"$OUT/$name.out" 2>>"$OUT/$name.err" || true
	done
}
gen_vers() {
	printf "SELECT 'ok ' || (lance_create_table_version('{\"id\": [\"v\", \"tv\"], \"version\": %d, \"manifest_path\": \"%s\"}') #>> '{version,version}');\n" \
		"$1" "${V#/}/_versions/${FINAL[$1 - 1]}-s"
}
gen_tags() { # gen_tags <ns> <table> <i>
	local id="\"id\": [\"$1\", \"$2\"]"
	cat <<SQL
SELECT 'ok create' FROM lance_create_table_tag('{$id, "tag": "t$3", "version": 1}');
SELECT 'ok update' FROM lance_update_table_tag('{$id, "tag": "t$3", "version": 1}');
SELECT 'read ' || (lance_get_table_tag_version('{$id, "tag": "t$3"}') ->> 'version');
SELECT 'list ' || (lance_list_table_tags('{$id}') ->> 'tags');
SELECT 'ok delete' FROM lance_delete_table_tag('{$id, "tag": "t$3"}');
SQL
}
gen_refs() { gen_tags r tr "$1"; }
gen_tagdir() { gen_tags g tg "$1"; }
gen_tree() {
	cat <<SQL
SELECT 'ok create' FROM lance_create_table_branch('{"id": ["b", "tb"], "name": "b$1"}');
SELECT 'list ' || (lance_list_table_branches('{"id": ["b", "tb"]}') ->> 'branches');
SELECT 'ok delete' FROM lance_delete_table_branch('{"id": ["b", "tb"], "name": "b$1"}');
SQL
}
gen_drop() {
	echo "SELECT 'ok drop' FROM lance_drop_table('{\"id\": [\"dr\", \"d$1\"]}');"
	echo "SELECT 'ok processed ' || lance_process_drops();"
}
run_session vers gen_vers "$NV" &
PIDS+=($!)
run_session refs gen_refs "$NT" &
PIDS+=($!)
run_session tags gen_tagdir "$NT" &
PIDS+=($!)
run_session tree gen_tree "$NB" &
PIDS+=($!)
run_session drop gen_drop "$ND" &
PIDS+=($!)
# the tables whose own data folder is swapped go one by one during the race
(
	for i in $(seq 1 "$NI"); do
		sleep "$((RUN_SECONDS / (NI + 1)))"
		batch -c "SELECT 'ok drop' FROM lance_drop_table('{\"id\": [\"di\", \"e$i\"]}')" \
			-c "SELECT 'ok processed ' || lance_process_drops()" >>"$OUT/dropdata.out" 2>>"$OUT/dropdata.err" || true
	done
) &
PIDS+=($!)
wait
PIDS=()
RACE_SECONDS=$((SECONDS - START - SETUP_SECONDS))
# whatever is still queued, now that nothing swaps
batch -c "SELECT 'ok processed ' || lance_process_drops()" >>"$OUT/drop.out" 2>>"$OUT/drop.err" || true

# ---------------------------------------------------------------------------
# Checks.
# ---------------------------------------------------------------------------
canary_state >"$OUT/canary.after"
if cmp -s "$OUT/canary.before" "$OUT/canary.after"; then
	pass "every canary file is there with its checksum, nothing was added next to them"
else
	fail "every canary file is there with its checksum, nothing was added next to them"
	{ diff "$OUT/canary.before" "$OUT/canary.after" || true; } | grep '^[<>]' | head -n 8 | sed 's/^/        /' || true
	printf '        (%d lines differ)\n' "$(diff "$OUT/canary.before" "$OUT/canary.after" | grep -c '^[<>]' || true)"
fi

work_state >"$OUT/work.after"
if cmp -s "$OUT/work.before" "$OUT/work.after"; then
	pass "nothing was created outside the tables' folders"
else
	fail "nothing was created outside the tables' folders: $({ diff "$OUT/work.before" "$OUT/work.after" || true; } | grep '^>' | tr '\n' ' ')"
fi
stray=""
for s in "${SWAPS[@]}"; do
	IFS='|' read -r name _ link <<<"$s"
	n="$(find "$LINKS/$name" -mindepth 1 -maxdepth 1 | wc -l)"
	((n == 1)) || stray="$stray $LINKS/$name"
done
if [[ -z "$stray" ]]; then
	pass "nothing was created next to the links"
else
	fail "nothing was created next to the links:$stray"
fi

# A read through a link would answer a canary's tag (version 999999, or "canary").
through="$(cat "$OUT/refs.out" "$OUT/tags.out" "$OUT/tree.out" 2>/dev/null | grep -c -e 999999 -e canary || true)"
if [[ "$through" == 0 ]]; then
	pass "no tag or branch was read through a link"
else
	fail "no tag or branch was read through a link ($through answers came from a canary)"
fi

crashes="$(cat "$PGDATA_DIR/server.log" 2>/dev/null | grep -c -E 'PANIC|TRAP:|terminated by signal|terminating any other active server' || true)"
if [[ "$crashes" == 0 ]]; then
	pass "the server log has no crash"
else
	fail "the server log has no crash ($crashes crash lines)"
fi

# The race must have been run: every swapper swapped and every session got work done.
count_ok() { cat "$OUT/$1.out" 2>/dev/null | grep -c "^$2" || true; }
count_err() { cat "$OUT/$1.err" 2>/dev/null | grep -c 'ERROR:' || true; }
idle=""
for s in "${SWAPS[@]}"; do
	IFS='|' read -r name _ _ <<<"$s"
	read -r exchanges misses restored <"$OUT/swap.$name" || exchanges=0
	printf '        swapper %-6s %9d exchanges %7d misses, put back: %s\n' "$name" "${exchanges:-0}" "${misses:-0}" "${restored:-?}"
	((${exchanges:-0} > 0)) || idle="$idle $name"
done
for name in vers refs tags tree drop dropdata; do
	printf '        session %-8s %5d done, %5d refused\n' "$name" "$(count_ok "$name" ok)" "$(count_err "$name")"
	[[ "$name" == dropdata ]] || (($(count_ok "$name" ok) > 0)) || idle="$idle $name"
done
sql -c "SELECT status, coalesce(regexp_replace(properties ->> 'reason', '\"[^\"]*\"', '<path>', 'g'), '') AS reason, count(*)
          FROM lance_catalog.change WHERE operation = 'DropTable' GROUP BY 1, 2 ORDER BY 1, 2" |
	while IFS='|' read -r status reason n; do
		printf '        drops     %-9s %5d %s\n' "$status" "$n" "$reason"
	done
if [[ -z "$idle" ]]; then
	pass "every swapper swapped and every session got work done"
else
	fail "every swapper swapped and every session got work done (idle:$idle)"
fi

printf '        set-up %d s, race %d s\n' "$SETUP_SECONDS" "$RACE_SECONDS"
printf 'lance_namespace: linkrace test: %d checks, %d failed, %d s\n' "$CHECKS" "$FAILS" "$((SECONDS - START))"
((FAILS == 0))
