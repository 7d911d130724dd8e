#!/usr/bin/env bash
# Start only the REST gateway, in front of a database with the extension
# that this script did not make (on this host or another): see the README,
# "The gateway alone".
#
#   LN_DATABASE_URL=postgresql://lance_gateway@db.example:5432/lance scripts/gateway.sh
#   scripts/stop.sh          stop it again (with the same LN_DATA)
#
# Environment:
#   LN_DATABASE_URL  (required) a libpq connection URI or key=value string:
#                    several hosts with target_session_attrs=read-write for
#                    failover, a password (or a passfile), TLS with
#                    sslmode=verify-full, sslrootcert, sslcert and sslkey for
#                    a client certificate.  Its role should be the gateway's
#                    (lance_gateway: LOGIN, nothing else; README, "Security").
#                    nginx (master and workers) runs as the OS user
#                    lance_gateway, which this script makes when missing (a
#                    system user without a shell or a home): the files the
#                    URL names (passfile, sslrootcert, sslcert, sslkey) must
#                    be readable by it.
#   LN_GATEWAY_PORT  its port (default: 2333)
#   LN_GATEWAY_ADDRESS  the address it listens on (default: 127.0.0.1; 0.0.0.0
#                    for every interface; IPv6 in brackets, [::1])
#   LN_DATA          state directory: its configuration and logs go to
#                    LN_DATA/gateway (default: <project>/.data).  Made (mode
#                    755) if missing; an existing one keeps its mode, and
#                    the OS user lance_gateway must be able to pass
#                    through it
#   LN_REQUEST_TIMEOUT  seconds a request may take (default 30): past it the
#                    database cancels it, rolls it back, and it is answered
#                    503 (code 17) with Retry-After
#   LN_GATEWAY_CONNECTIONS  the most database connections it holds, split
#                    over its workers (default: a quarter of what the server
#                    allows ordinary roles, 2 to 64)
#   LN_GATEWAY_CONNECTIONS_PER_ADDRESS  the most requests in flight at once
#                    from one client address (default 256: more than a NAT
#                    of hundreds of clients needs; a proxy in front: what it
#                    passes on in all, at most 65535); past it 429 (code
#                    21) with Retry-After
#   LN_KEY_CONCURRENCY  the most requests of one API key in flight at once
#                    (by its id, lnk_<12 hex>; requests without a key share
#                    one count; default: a quarter of LN_GATEWAY_CONNECTIONS,
#                    at least 1; at most 10000); past it 429 (code 21) with
#                    Retry-After
#   LN_DATABASE_READ_URL  libpq URIs of streaming hot standbys, separated by
#                    spaces: reads go there, with read-your-writes per API
#                    key (README, "Replicas and failover"); default none
#   LN_READ_MAX_LAG  seconds a standby may lag before it is skipped (default 10)
#   LN_GATEWAY_HOSTS  host names it serves besides 127.0.0.1, localhost and
#                    [::1] (letters, digits, '.' and '-', or an IPv6 address
#                    in brackets), separated by spaces; others are 421
#   LN_GATEWAY_ORIGINS  web origins whose pages may call it
#                    (scheme://host[:port]), separated by spaces
#   LN_GATEWAY_TLS_CERT, LN_GATEWAY_TLS_KEY  as for scripts/run.sh
#
# Several gateways (each with its own LN_DATA and port) may serve one
# database side by side.
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

LN_DATA="$(ln_data_dir)"
LN_GATEWAY_PORT="${LN_GATEWAY_PORT:-2333}"
[[ -n "${LN_DATABASE_URL:-}" ]] ||
	die "LN_DATABASE_URL must name the database, e.g. postgresql://lance_gateway@db.example:5432/lance"
[[ "$LN_GATEWAY_PORT" =~ ^[0-9]+$ ]] || die "LN_GATEWAY_PORT must be a number, got '$LN_GATEWAY_PORT'"
# before anything is installed, made or written
check_gateway_settings "$LN_DATA/gateway" "$LN_GATEWAY_PORT"
# the setting whose files (passfile, sslkey...) the gateway's user must read
# shellcheck disable=SC2034 # adopt_gateway_prefix's, in common.sh
GATEWAY_URL_NAME=LN_DATABASE_URL

main() {
	install_packages "${LN_GATEWAY_PACKAGES[@]}"
	ensure_gateway_user
	ensure_data_dir "$LN_DATA" /var/lib/lance_gateway "$LN_GATEWAY_USER"
	# Not fatal: the gateway starts and connects once the database is there.
	# The warnings are fixed texts: libpq's message may quote the URL (a
	# malformed one's password too); the gateway's error.log has it.
	local found status=0
	found="$(gateway_query "$LN_DATABASE_URL" \
		"SELECT pg_catalog.to_regprocedure('lance_rest(text,text,text,text,jsonb)') IS NOT NULL")" || status=$?
	if ((status == 2)); then
		say "warning: cannot reach the database of LN_DATABASE_URL now (the gateway connects when it can); to see why, once it runs: curl $(gateway_scheme)://${LN_GATEWAY_ADDRESS:-127.0.0.1}:$LN_GATEWAY_PORT/readyz, then read $LN_DATA/gateway/error.log"
	elif ((status != 0)); then
		say "warning: the database of LN_DATABASE_URL did not answer whether it has lance_rest() (README, \"The gateway alone\")"
	elif [[ "$found" != t ]]; then
		say "warning: the database of LN_DATABASE_URL has no lance_rest(): install the extension there (README, \"The gateway alone\")"
	fi
	start_gateway_url "$LN_DATA/gateway" "$LN_GATEWAY_PORT" "$LN_DATABASE_URL"
	cat <<EOF

lance_namespace: gateway is running.
  REST namespace:  $(gateway_scheme)://${LN_GATEWAY_ADDRESS:-127.0.0.1}:$LN_GATEWAY_PORT  (send an API key as header x-api-key)
  logs:            $LN_DATA/gateway/access.log, $LN_DATA/gateway/error.log
  stop:            $ROOT/scripts/stop.sh$([[ "$LN_DATA" != "$ROOT/.data" ]] && printf '   (with LN_DATA=%s)' "$LN_DATA")
EOF
}

main "$@"
