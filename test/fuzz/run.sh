#!/usr/bin/env bash
# Fuzz test of lance_namespace: FUZZ_COUNT (default 10000) generated requests
# over every lance_* SQL function and every lance_rest route, half from a
# fixed seed and half from a random one (FUZZ_SEED to choose it), against the
# server that PGHOST/PGPORT/PGUSER name (a superuser; the extension must be
# installed there).  It makes its own database (FUZZ_DB, default lance_fuzz)
# and a temporary folder for lance_namespace.root and local_roots, owned by
# the postgres OS user when run as root, and removes both afterwards
# (FUZZ_KEEP=1 keeps them).  REST requests act as that superuser: without an
# API key through lance_namespace.anonymous_role, or with a key made for it.
# FUZZ_SERVER_LOG names the server log (default: server.log in the data
# directory, as scripts/common.sh starts servers).
# FUZZ_REPORT names a file for the full reproduction of every distinct
# failure.  Exit status 0 when every check passed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
# (scripts/test.sh gives the PostgreSQL it tests; else the highest one installed)
PG_BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}"
DB="${FUZZ_DB:-lance_fuzz}"
PSQL=("$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1)

[[ "$DB" =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "fuzz: FUZZ_DB must be a plain identifier" >&2; exit 2; }
command -v node >/dev/null || { echo "fuzz: node is required" >&2; exit 2; }

# The driver's one dependency (pg), from the committed lock file.
if [[ ! -d "$HERE/node_modules/pg" ]]; then
	(cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The folder the server writes: root/ is lance_namespace.root and local_roots,
# outside/ is a folder next to it that symbolic links in the seed point at.
DIR="$(mktemp -d "${TMPDIR:-/tmp}/lance_fuzz.XXXXXX")"
chmod 755 "$DIR"
mkdir "$DIR/root" "$DIR/outside"
if [[ $EUID -eq 0 ]]; then
	chown postgres:postgres "$DIR" "$DIR/root" "$DIR/outside"
elif [[ "$(id -un)" != postgres ]]; then
	# neither root nor the server's user: let the server write there
	chmod 777 "$DIR/root" "$DIR/outside"
fi

cleanup() {
	local rc=$?
	if [[ "${FUZZ_KEEP:-0}" != 1 ]]; then
		"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
		rm -rf "$DIR"
	else
		echo "fuzz: kept database $DB and folder $DIR"
	fi
	exit "$rc"
}
trap cleanup EXIT

"${PSQL[@]}" -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
"${PSQL[@]}" -d "$DB" -v db="$DB" -v root="$DIR/root" <<'SQL'
CREATE EXTENSION lance_namespace;
ALTER DATABASE :"db" SET lance_namespace.root = :'root';
ALTER DATABASE :"db" SET lance_namespace.local_roots = :'root';
-- REST requests without an API key act as the fuzz's own role; the driver
-- sends some with a key of that role and some with keys that are not valid
SELECT current_user AS me \gset
ALTER DATABASE :"db" SET lance_namespace.anonymous_role = :'me';
SQL
"${PSQL[@]}" -d "$DB" -f "$HERE/helpers.sql" >/dev/null
FUZZ_API_KEY="$("${PSQL[@]}" -d "$DB" -At -c "SELECT lance_create_api_key(current_user)")"
export FUZZ_API_KEY

LOG="${FUZZ_SERVER_LOG:-}"
if [[ -z "$LOG" ]]; then
	LOG="$("${PSQL[@]}" -d "$DB" -Atc "SELECT coalesce(current_setting('data_directory') || '/' || pg_current_logfile(), current_setting('data_directory') || '/server.log')")"
fi
[[ -r "$LOG" ]] || LOG=""

rc=0
FUZZ_DB="$DB" FUZZ_ROOT="$DIR/root" FUZZ_OUTSIDE="$DIR/outside" FUZZ_SERVER_LOG="$LOG" \
	node "$HERE/fuzz.mjs" || rc=$?
exit "$rc"
