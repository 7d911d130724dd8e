#!/usr/bin/env bash
# Stop the local catalog started by scripts/run.sh.  Honours the same LN_DATA
# (default <project>/.data); the data itself is kept, run.sh restarts it.
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

LN_DATA="$(ln_data_dir)"
PGDATA_DIR="$LN_DATA/pgdata"

# No PostgreSQL binaries or no cluster means there is nothing to stop; this
# script never installs anything.
stop_gateway "$LN_DATA/gateway"
# the server's own release stops it, where several are installed
if [[ -x "/usr/lib/postgresql/$(cat "$PGDATA_DIR/PG_VERSION" 2>/dev/null)/bin/pg_ctl" ]]; then
	use_pg_version "$(cat "$PGDATA_DIR/PG_VERSION")"
fi
if [[ ! -x "$PG_BIN/pg_ctl" || ! -f "$PGDATA_DIR/PG_VERSION" ]]; then
	say "no cluster in $PGDATA_DIR; nothing to stop"
	exit 0
fi
if ! cluster_running "$PGDATA_DIR"; then
	say "server in $PGDATA_DIR is not running"
	exit 0
fi
stop_cluster "$PGDATA_DIR"
say "stopped (data kept in $LN_DATA; start again with scripts/run.sh)"
