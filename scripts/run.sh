#!/usr/bin/env bash
# Set up and run a local lance_namespace catalog.
#
#   scripts/run.sh           install deps, build, start the catalog server
#   scripts/stop.sh          stop it again
#
# Environment (all optional):
#   LN_DATA  state directory        (default: <project>/.data; made, mode
#            755, if missing; an existing one keeps its mode, and the
#            OS users postgres and lance_gateway must be able to pass
#            through it)
#   LN_PORT  TCP port on 127.0.0.1  (default: 5433; 5432 is Debian's own cluster)
#   LN_DB    database name          (default: lance)
#   LN_GATEWAY_PORT  REST gateway port on 127.0.0.1 (default: 2333)
#   LN_GATEWAY_TLS_CERT, LN_GATEWAY_TLS_KEY  a certificate and its private
#                    key (PEM files): the gateway serves HTTPS with them
#   LN_GATEWAY_HOSTS, LN_GATEWAY_ORIGINS  host names and web origins the
#                    gateway serves, as for scripts/gateway.sh
#   LN_REQUEST_TIMEOUT  seconds a request through the gateway may take
#                    (default 30): past it, cancelled in the database, rolled
#                    back and answered 503 (code 17) with Retry-After
#   LN_GATEWAY_CONNECTIONS  the gateway's database connections, split over
#                    its workers (default: a quarter of max_connections)
#   LN_GATEWAY_CONNECTIONS_PER_ADDRESS, LN_KEY_CONCURRENCY  the requests in
#                    flight at once from one client address (default 256)
#                    and of one API key (default: a quarter of the gateway's
#                    database connections), as for scripts/gateway.sh
#   LN_DATABASE_READ_URL, LN_READ_MAX_LAG  hot standbys of this cluster that
#            the gateway sends reads to, as for scripts/gateway.sh
#   LN_PG_VERSION  the PostgreSQL major version to build for and run, where
#            several are installed (default: the highest installed; on a
#            machine without any, the one the Debian release ships)
#   LN_ROOT  where new tables go: lance_namespace.root, set on every run
#            (default: LN_DATA/tables); an s3://bucket/prefix URI puts them
#            in a bucket, once lance_set_storage() has its options (README,
#            "Tables on S3")
#
# Layout under LN_DATA: pgdata/ (cluster, server.log inside), run/ (Unix
# socket: the postgres user's, mode 750, group lance_gateway: the gateway's
# OS user may enter, no other), tables/ (lance_namespace.root and
# local_roots: where table data and manifests go; the postgres user's,
# mode 700, set on every run), gateway/ (nginx
# configuration, pid and logs: the OS user lance_gateway's, which runs
# nginx; made when missing), api_key
# (an administrator's API key for the gateway, mode 0600), library.sha256
# (the build of the library the running server started with).
# Safe to run again: every step checks before it acts.
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

LN_DATA="$(ln_data_dir)"
LN_PORT="${LN_PORT:-5433}"
LN_DB="${LN_DB:-lance}"
LN_GATEWAY_PORT="${LN_GATEWAY_PORT:-2333}"
[[ "$LN_PORT" =~ ^[0-9]+$ ]] || die "LN_PORT must be a number, got '$LN_PORT'"
[[ "$LN_GATEWAY_PORT" =~ ^[0-9]+$ ]] || die "LN_GATEWAY_PORT must be a number, got '$LN_GATEWAY_PORT'"

PGDATA_DIR="$LN_DATA/pgdata"
SOCKET_DIR="$LN_DATA/run"
TABLES_DIR="$LN_DATA/tables"
LN_ROOT="${LN_ROOT:-$TABLES_DIR}"
[[ "$LN_ROOT" == /* || "$LN_ROOT" == s3://* ]] ||
	die "LN_ROOT must be an absolute path or an s3://bucket/prefix URI, got '$LN_ROOT'"
# Checked before anything is created, not only when the server starts.
check_socket_dir "$SOCKET_DIR"
check_gateway_settings "$LN_DATA/gateway" "$LN_GATEWAY_PORT"

# psql as the calling user, connected as database superuser postgres over the
# socket.  -X skips ~/.psqlrc so a personal config cannot change the output.
ln_psql() {
	"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCKET_DIR" -p "$LN_PORT" -U postgres "$@"
}

ensure_cluster() {
	if [[ -f "$PGDATA_DIR/PG_VERSION" ]]; then
		local made
		made="$(cat "$PGDATA_DIR/PG_VERSION")"
		[[ "$made" == "$PG_VERSION" ]] ||
			die "the cluster in $PGDATA_DIR is PostgreSQL $made's and this run's is $PG_VERSION: LN_PG_VERSION=$made runs it with $made (or move it to $PG_VERSION with pg_upgrade)"
		say "using existing cluster in $PGDATA_DIR"
	elif [[ -d "$PGDATA_DIR" && -n "$(ls -A "$PGDATA_DIR")" ]]; then
		die "$PGDATA_DIR exists, is not empty and is not a cluster; move it away"
	else
		init_cluster "$PGDATA_DIR" run
	fi
}

# LN_DATA itself stays owned by the caller but must be traversable by
# postgres to reach pgdata/, run/ and tables/, and by the gateway's OS user
# to reach run/ and gateway/: a folder closed to them (a clone in /root)
# would make initdb fail with a bare "Permission denied", or leave a
# cluster whose gateway cannot reach it.  Checked on every run, before
# anything changes: ensure_auth below takes the socket from the OS user
# postgres, which an earlier version's gateway ran as, and hands it to
# lance_gateway, which must then be able to get there.  An existing
# LN_DATA keeps its mode.
ensure_reachable() {
	ensure_data_dir "$LN_DATA" /var/lib/lance_namespace postgres "$LN_GATEWAY_USER"
}

# Every connection authenticates (LN_RUN_HBA in common.sh): peer over the
# socket for postgres (and root, as postgres) and for the gateway's OS user
# (as lance_gateway alone), SCRAM over TCP.  A cluster an older run.sh made
# trusts every local connection: its pg_hba.conf, if it is still exactly
# what that run.sh wrote, is replaced (one the operator changed is left
# alone); so is a pg_ident.conf that maps the OS user postgres (which ran
# the gateway) to lance_gateway.  The socket folder is postgres's, and the
# gateway's OS user (its group) may enter it.  A running server rereads its
# configuration at once.
ensure_auth() {
	local hba="$PGDATA_DIR/pg_hba.conf" ident="$PGDATA_DIR/pg_ident.conf" changed=0
	if [[ "$(cat "$hba")" == "$LN_RUN_HBA_TRUST" ]]; then
		say "replacing pg_hba.conf, which trusts every local connection: peer over the socket, SCRAM over TCP"
		write_run_auth "$PGDATA_DIR"
		changed=1
	elif [[ "$(cat "$ident" 2>/dev/null)" == "$LN_RUN_IDENT_POSTGRES_GATEWAY" ]]; then
		say "replacing pg_ident.conf, which lets the OS user postgres log in as $LN_GATEWAY_ROLE: the gateway runs as OS user $LN_GATEWAY_USER, which alone does"
		write_run_ident "$PGDATA_DIR"
		changed=1
	fi
	if ((changed)) && cluster_running "$PGDATA_DIR"; then
		as_postgres "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" reload >/dev/null
	fi
	check_ident_map
	if [[ -d "$SOCKET_DIR" ]]; then
		chown "postgres:$LN_GATEWAY_USER" "$SOCKET_DIR"
		chmod "$LN_RUN_SOCKET_MODE" "$SOCKET_DIR"
	fi
}

# check_ident_map: warn when the socket's peer rule maps OS users through a
# map (pg_hba.conf: map=<name>) that pg_ident.conf, changed by hand, gives
# no "lance_gateway lance_gateway" line: the gateway could not log in.
check_ident_map() {
	local hba="$PGDATA_DIR/pg_hba.conf" ident="$PGDATA_DIR/pg_ident.conf" map
	while read -r map; do
		[[ -n "$map" ]] || continue
		awk -v map="$map" -v user="$LN_GATEWAY_USER" -v role="$LN_GATEWAY_ROLE" \
			'$1 == map && $2 == user && $3 == role { found = 1 } END { exit !found }' "$ident" 2>/dev/null ||
			say "warning: pg_ident.conf (changed by hand, so left as it is) has no line \"$map $LN_GATEWAY_USER $LN_GATEWAY_ROLE\" for the map pg_hba.conf's socket rule uses: the gateway (OS user $LN_GATEWAY_USER) cannot log in as $LN_GATEWAY_ROLE; add that line and reload"
	done < <(awk '$1 == "local" && $0 ~ /[[:space:]]peer([[:space:]]|$)/ {
		for (i = 1; i <= NF; i++) if ($i ~ /^map=/) print substr($i, 5) }' "$hba" 2>/dev/null | sort -u)
}

# The background worker (removing dropped tables' data, sweeping crash
# leftovers) runs only with the library preloaded.  A server that runs
# without it is restarted once to take it.
ensure_preload() {
	local conf="$PGDATA_DIR/postgresql.conf"
	grep -q "^shared_preload_libraries = 'lance_namespace'" "$conf" && return 0
	say "preloading lance_namespace for its background worker"
	printf "\n# Written by lance_namespace scripts/run.sh: its background worker.\nshared_preload_libraries = 'lance_namespace'\n" |
		as_postgres tee -a "$conf" >/dev/null
	if cluster_running "$PGDATA_DIR"; then
		stop_cluster "$PGDATA_DIR"
	fi
}

# The library the server preloads is the one it read when it started: a
# backend keeps running that code even after make install replaced the
# file, so a new build takes effect only at a restart.  LIBRARY_STAMP keeps
# the checksum of the library the running server started with.
LIBRARY_STAMP="$LN_DATA/library.sha256"
library_sum() { sha256sum "$("$PG_CONFIG" --pkglibdir)/lance_namespace.so" | cut -d' ' -f1; }

ensure_running() {
	if cluster_running "$PGDATA_DIR" && [[ "$(cat "$LIBRARY_STAMP" 2>/dev/null)" != "$(library_sum)" ]]; then
		say "restarting the server: it runs an older build of the library, and a preloaded library changes only at a restart"
		stop_cluster "$PGDATA_DIR"
	fi
	if cluster_running "$PGDATA_DIR"; then
		# Connect where it really runs, even if LN_PORT changed since.
		local port
		port="$(postmaster_field "$PGDATA_DIR" 4)"
		if [[ -n "$port" && "$port" != "$LN_PORT" ]]; then
			say "server already running on port $port (not LN_PORT=$LN_PORT); using $port"
			LN_PORT="$port"
		else
			say "server already running on port $LN_PORT"
		fi
		wait_ready "$SOCKET_DIR" "$LN_PORT" || die "server runs but does not accept connections; see $PGDATA_DIR/server.log"
	else
		start_cluster "$PGDATA_DIR" "$LN_PORT" "$SOCKET_DIR" "$LN_RUN_SOCKET_MODE" "$LN_GATEWAY_USER"
	fi
	library_sum >"$LIBRARY_STAMP"
}

# Create the database and extension, point lance_namespace.root at LN_ROOT
# and local_roots at TABLES_DIR, so that tables go there and the catalog
# manages their versions.  Names and paths travel as psql variables (:'x' / :"x") so any
# value is quoted correctly.
ensure_database() {
	local exists
	exists="$(ln_psql -d postgres -tA -v db="$LN_DB" <<<"SELECT 1 FROM pg_database WHERE datname = :'db';")"
	if [[ "$exists" == 1 ]]; then
		say "database $LN_DB already exists"
	else
		say "creating database $LN_DB"
		ln_psql -d postgres -v db="$LN_DB" <<<'CREATE DATABASE :"db";'
	fi

	# The server (postgres OS user) writes manifests here, and clients on
	# this host (as root) table data; no other OS user lists the tables'
	# folders, names the catalog shows only to those who may read them.
	make_postgres_dir "$TABLES_DIR" 700

	say "ensuring extension lance_namespace in $LN_DB"
	# client_min_messages hides the "already exists, skipping" NOTICE on reruns.
	ln_psql -d "$LN_DB" -v db="$LN_DB" -v root="$LN_ROOT" -v tables="$TABLES_DIR" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS lance_namespace;
-- a catalog made by an earlier version takes this build's version
ALTER EXTENSION lance_namespace UPDATE;
ALTER DATABASE :"db" SET lance_namespace.root = :'root';
ALTER DATABASE :"db" SET lance_namespace.local_roots = :'tables';
SQL
	if [[ "$LN_ROOT" == s3://* ]] && [[ "$(ln_psql -d "$LN_DB" -tA -v root="$LN_ROOT" <<<"SELECT count(*) FROM lance_catalog.storage WHERE :'root' = location OR starts_with(:'root', location || '/')")" == 0 ]]; then
		say "warning: no storage setting covers $LN_ROOT: tables there are not managed until SELECT lance_set_storage(...) gives its options (README, \"Tables on S3\")"
	fi
}

# The gateway (started by start_gateway, through start_gateway_url as
# scripts/gateway.sh does) connects as role lance_gateway and runs each request as the
# role of its API key.  Keep one administrator key (role lance_admin) in
# LN_DATA/api_key, readable by the caller alone: the one there if it still
# works, else a new one.
ensure_api_key() {
	local file="$LN_DATA/api_key" key="" tmp
	ensure_gateway_role -h "$SOCKET_DIR" -p "$LN_PORT" -U postgres -d "$LN_DB"
	[[ -f "$file" ]] && key="$(tr -d '[:space:]' <"$file")"
	if [[ -n "$key" ]] && api_key_works "$key" -h "$SOCKET_DIR" -p "$LN_PORT" -U postgres -d "$LN_DB"; then
		say "API key in $file works"
		chmod 600 "$file"
		return 0
	fi
	if is_api_key "$key"; then
		# a key that no longer works stays unusable: revoke what is left of it
		ln_psql -d "$LN_DB" -tA -v id="${key:0:16}" <<<"SELECT lance_revoke_api_key(:'id');" >/dev/null
	fi
	say "creating an administrator API key (role lance_admin) in $file"
	key="$(create_api_key lance_admin -h "$SOCKET_DIR" -p "$LN_PORT" -U postgres -d "$LN_DB")"
	is_api_key "$key" || die "lance_create_api_key answered no key"
	tmp="$(umask 077 && mktemp "$LN_DATA/.api_key.XXXXXX")"
	printf '%s\n' "$key" >"$tmp"
	chmod 600 "$tmp"
	mv -f "$tmp" "$file"
}

print_usage() {
	local url
	url="$(gateway_scheme)://127.0.0.1:$LN_GATEWAY_PORT"
	cat <<EOF

lance_namespace: catalog is running.
  REST namespace:      $url
  API key:             $LN_DATA/api_key  (an administrator's; send it as header x-api-key)
                       e.g. curl -H "x-api-key: \$(cat $LN_DATA/api_key)" $url/v1/namespace/%24/list
                       lancedb.connectNamespace("rest", {uri: "$url", headers: {"x-api-key": key}})
                       more keys: SELECT lance_create_api_key('<role>') (see README, "Security")
  database:  $LN_DB    (lance_namespace.root = $LN_ROOT, local_roots = $TABLES_DIR)
  connect via socket:  $PG_BIN/psql -h $SOCKET_DIR -p $LN_PORT -U postgres $LN_DB
                       (as root or postgres: no other OS user logs in as postgres)
  connect via TCP:     $PG_BIN/psql -h 127.0.0.1 -p $LN_PORT -U <role> $LN_DB
                       (a login role with a password, SCRAM: ALTER ROLE <role> PASSWORD ...)
  connection URI:      postgresql://<role>@127.0.0.1:$LN_PORT/$LN_DB
  server log:          $PGDATA_DIR/server.log
  gateway logs:        $LN_DATA/gateway/access.log, $LN_DATA/gateway/error.log
  stop:                $ROOT/scripts/stop.sh$([[ "$LN_DATA" != "$ROOT/.data" ]] && printf '   (with LN_DATA=%s)' "$LN_DATA")
EOF
}

main() {
	install_deps
	ensure_gateway_user
	ensure_reachable
	build_and_install
	ensure_cluster
	ensure_auth
	ensure_preload
	ensure_running
	ensure_database
	ensure_api_key
	start_gateway "$LN_DATA/gateway" "$LN_GATEWAY_PORT" "$LN_DB" "$SOCKET_DIR" "$LN_PORT"
	print_usage
}

main "$@"
