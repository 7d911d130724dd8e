#!/usr/bin/env bash
# The project on another Debian release and the PostgreSQL it ships, in a
# throwaway Debian root of that release (scripts/debian_root.sh: an overlay
# of a base made with debootstrap, kept under /var/cache/lance_namespace/bases
# with the .deb files of what the scripts install, made anew when a week
# old), where the project's own scripts do what they do on a fresh machine
# (test/versions/inside.sh): scripts/run.sh installs the release's
# PostgreSQL, nginx with its Lua module and the Lua driver, builds the
# extension and starts a catalog with its gateway; scripts/test.sh runs the
# pg_regress and isolation suites, the official client's end-to-end tests
# through that gateway, and restores a catalog that this machine's
# PostgreSQL holds (seeded here as test/dump seeds its own; the folder of
# its tables is seen at the same path in the root).
#
#   test/versions/run.sh <suite>    trixie (Debian 13, PostgreSQL 17) or sid (PostgreSQL 18)
#
# Runs as root, with the extension installed in this machine's PostgreSQL
# (scripts/test.sh runs it after its build).  Its output ends with the run's
# summary, "N passed, M failed", and a list of what failed; its exit status
# says whether all passed.
#
# Environment (optional):
#   LN_TEST_PORT  first port to try for the seeded server (default 54561)
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SUITE="${1:-}"
[[ "$SUITE" =~ ^[a-z]+$ ]] || die "usage: $0 <suite> (trixie, sid)"

WORK=""
PGDATA_DIR=""
cleanup() {
	local rc=$?
	trap - EXIT
	set +e
	stop_clusters "$PGDATA_DIR"
	remove_work_dir
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGDATABASE PGOPTIONS PGPASSWORD PGHOST PGPORT PGUSER

# The catalog to restore there: this machine's PostgreSQL, database src,
# listening on 127.0.0.1 (the root shares this machine's network), which
# trusts local connections as a test cluster does.
new_work_dir
PORT="$(find_free_port "${LN_TEST_PORT:-54561}")"
init_cluster "$PGDATA_DIR" test
start_cluster "$PGDATA_DIR" "$PORT" "$SOCK"
make_postgres_dir "$TABLES" 755
# shellcheck source=test/dump/catalog.sh
source "$ROOT/test/dump/catalog.sh"
D postgres -c "CREATE ROLE $ROLE NOLOGIN" -c "CREATE ROLE $DEFAULTS_ROLE NOLOGIN" -c 'CREATE DATABASE src' >/dev/null
D src -c 'CREATE EXTENSION lance_namespace'
say "seeding a catalog on PostgreSQL $PG_VERSION to restore on $SUITE"
seed src

# What the root runs is the release's choice, not this machine's.
unset LN_PG_VERSION LN_DATA LN_PORT LN_DB LN_GATEWAY_PORT LN_ROOT LN_TEST_ONLY LN_TEST_RUN_DATA
LN_RESTORE_FROM="127.0.0.1:$PORT" LN_RESTORE_TABLES="$TABLES" \
	bash "$ROOT/scripts/debian_root.sh" run "$SUITE" --share "$WORK" bash test/versions/inside.sh
