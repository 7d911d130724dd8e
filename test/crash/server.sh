#!/usr/bin/env bash
# Helper of the crash test (run.sh and crash.mjs): start the crash test's own
# cluster with scripts/common.sh.  Killing is done by crash.mjs itself.
#
#   server.sh start <pgdata> <port> <socket dir>
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"

case "${1:-}" in
start)
	start_cluster "$2" "$3" "$4"
	;;
*)
	die "usage: server.sh start <pgdata> <port> <socket dir>"
	;;
esac
