# shellcheck shell=bash
# Replication and pooling helpers for the serving test parts (60_*, 70_*,
# 80_*): a primary, streaming hot standbys made with pg_basebackup -R,
# promotion, paused replay, and PgBouncer in transaction pooling mode.
# Sourced, never executed, after scripts/common.sh and test/lib.sh.
#
# Servers run as the postgres OS user (initdb, pg_ctl and pgbouncer refuse
# root), as scripts/common.sh starts them.  Every server made here is
# remembered, and repl_cleanup stops them all (the parts call it when they
# end, and their EXIT traps do); none outlives a part.
#
# All paths are absolute.  A cluster's socket folder is given by the caller;
# the standbys of one primary may share its socket folder, each under its
# own port.

REPL_CLUSTERS=()
REPL_BOUNCERS=()

# repl_psql <sockdir> <port> [psql args...]: psql as database superuser
# postgres, unaligned, tuples only, stopping at the first error.
repl_psql() {
	local sockdir="$1" port="$2"
	shift 2
	"$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -U postgres -h "$sockdir" -p "$port" "$@"
}

# repl_primary <datadir> <port> <sockdir>
# A primary that streams to standbys: wal_level replica, WAL senders, and
# replication connections from the socket trusted (initdb's test pg_hba
# already trusts local connections).
repl_primary() {
	local pgdata="$1" port="$2" sockdir="$3"
	init_cluster "$pgdata" test >/dev/null
	printf '%s\n' 'local   replication   all   trust' | as_postgres tee -a "$pgdata/pg_hba.conf" >/dev/null
	printf '%s\n' '' '# lance_namespace test/serving/replication.sh: a primary' \
		'wal_level = replica' 'max_wal_senders = 10' 'max_replication_slots = 10' \
		'hot_standby = on' 'wal_writer_delay = 10ms' 'wal_sender_timeout = 10s' |
		as_postgres tee -a "$pgdata/postgresql.conf" >/dev/null
	REPL_CLUSTERS+=("$pgdata")
	start_cluster "$pgdata" "$port" "$sockdir" >/dev/null
}

# repl_set_sync <sockdir> <port> <synchronous_standby_names>: from now on a
# commit on the primary returns only once such a standby has flushed it
# (synchronous_commit on: init_cluster's test clusters turn it off, which
# would acknowledge a commit before any standby has it).  Set it once the
# standby streams: until then every commit waits.
repl_set_sync() {
	local sockdir="$1" port="$2" names="$3"
	repl_psql "$sockdir" "$port" -d postgres -v names="$names" >/dev/null <<'SQL'
ALTER SYSTEM SET synchronous_standby_names = :'names';
ALTER SYSTEM SET synchronous_commit = on;
SELECT pg_catalog.pg_reload_conf();
SQL
}

# repl_standby <primary sockdir> <primary port> <datadir> <port> <sockdir> <name>
# A streaming hot standby of the primary: pg_basebackup -R (which writes
# primary_conninfo and standby.signal), started on <port>.  <name> is its
# cluster_name, which its WAL receiver sends as application_name: the name
# the primary's synchronous_standby_names and pg_stat_replication know it by.
repl_standby() {
	local psock="$1" pport="$2" pgdata="$3" port="$4" sockdir="$5" name="$6" log
	log="$(dirname "$pgdata")/$(basename "$pgdata").basebackup.log"
	as_postgres "$PG_BIN/pg_basebackup" -h "$psock" -p "$pport" -U postgres -D "$pgdata" -R \
		-X stream -c fast --no-sync >/dev/null 2>"$log" || {
		cat "$log" >&2
		die "pg_basebackup of the primary on port $pport failed"
	}
	rm -f "$log"
	printf "cluster_name = '%s'\nsynchronous_standby_names = ''\nhot_standby_feedback = on\nwal_receiver_status_interval = 1s\n" "$name" |
		as_postgres tee -a "$pgdata/postgresql.auto.conf" >/dev/null
	REPL_CLUSTERS+=("$pgdata")
	start_cluster "$pgdata" "$port" "$sockdir" >/dev/null
	[[ "$(repl_psql "$sockdir" "$port" -d postgres -c 'SELECT pg_is_in_recovery()')" == t ]] ||
		die "the standby on port $port is not in recovery"
}

# repl_wait_streaming <primary sockdir> <primary port> <name> [sync]
# Wait until the primary streams to the standby <name> (pg_stat_replication
# state streaming), and with sync until it is the synchronous one.
repl_wait_streaming() {
	local sockdir="$1" port="$2" name="$3" want="${4:-}" i cond
	cond="application_name = '$name' AND state = 'streaming'"
	[[ "$want" == sync ]] && cond+=" AND sync_state = 'sync'"
	# the cap (60 s) only guards against a hang
	for ((i = 0; i < 600; i++)); do
		[[ "$(repl_psql "$sockdir" "$port" -d postgres -c "SELECT count(*) FROM pg_catalog.pg_stat_replication WHERE $cond")" == 1 ]] &&
			return 0
		sleep 0.1
	done
	repl_psql "$sockdir" "$port" -d postgres -c 'SELECT application_name, state, sync_state FROM pg_catalog.pg_stat_replication' >&2 || true
	die "the primary on port $port does not stream to standby $name${want:+ ($want)}"
}

# repl_wait_replay <primary sockdir> <primary port> <standby sockdir> <standby port>
# Wait until the standby has replayed all the WAL the primary has inserted
# (the insert position: with synchronous_commit off, a commit's record may
# not be written yet, and pg_current_wal_lsn() is only the write position).
repl_wait_replay() {
	local psock="$1" pport="$2" ssock="$3" sport="$4" lsn i
	lsn="$(repl_psql "$psock" "$pport" -d postgres -c 'SELECT pg_catalog.pg_current_wal_insert_lsn()')"
	for ((i = 0; i < 600; i++)); do
		[[ "$(repl_psql "$ssock" "$sport" -d postgres -c "SELECT coalesce(pg_catalog.pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn, false)")" == t ]] &&
			return 0
		sleep 0.1
	done
	die "the standby on port $sport did not replay up to $lsn"
}

# repl_pause <sockdir> <port> / repl_resume <sockdir> <port>: stop and
# restart replay on a standby; it keeps receiving WAL meanwhile.  Pausing
# waits until replay has really stopped (pg_get_wal_replay_pause_state).
repl_pause() {
	local sockdir="$1" port="$2" i
	repl_psql "$sockdir" "$port" -d postgres -c 'SELECT pg_catalog.pg_wal_replay_pause()' >/dev/null
	for ((i = 0; i < 600; i++)); do
		[[ "$(repl_psql "$sockdir" "$port" -d postgres -c 'SELECT pg_catalog.pg_get_wal_replay_pause_state()')" == paused ]] &&
			return 0
		sleep 0.1
	done
	die "replay on the standby on port $port did not pause"
}
repl_resume() {
	repl_psql "$1" "$2" -d postgres -c 'SELECT pg_catalog.pg_wal_replay_resume()' >/dev/null
}

# repl_promote <datadir>: make a standby a primary (pg_ctl promote waits
# until it accepts writes).
repl_promote() {
	as_postgres "$PG_BIN/pg_ctl" -D "$1" -w -t 60 promote >/dev/null
}

# repl_stop <datadir> [<mode>]: stop a cluster (fast; immediate for a crash:
# no shutdown checkpoint, open connections cut).
repl_stop() {
	local pgdata="$1" mode="${2:-fast}"
	cluster_running "$pgdata" || return 0
	as_postgres "$PG_BIN/pg_ctl" -D "$pgdata" -m "$mode" -w -t 60 stop >/dev/null
}

# repl_start <datadir> <port> <sockdir>: start a stopped cluster again.
repl_start() {
	start_cluster "$1" "$2" "$3" >/dev/null
}

# ---------------------------------------------------------------------------
# PgBouncer in transaction pooling mode: a server connection is the client's
# only for one transaction, then goes back to the pool.
# ---------------------------------------------------------------------------

# repl_bouncer <dir> <port> <server sockdir> <server port> <database> <user>...
# Start PgBouncer (Debian's package pgbouncer) as the postgres OS user, on
# 127.0.0.1:<port> and a socket in <dir>, pooling <database> of the server
# in transaction mode for the given users.  Its ini, userlist, log and pid
# file live in <dir>.  auth_type trust: the test's clients come from this
# machine, and the server behind trusts its socket too (the user must still
# be listed in the userlist).
repl_bouncer() {
	local dir="$1" port="$2" ssock="$3" sport="$4" db="$5" user i
	shift 5
	command -v pgbouncer >/dev/null || die "PgBouncer is not installed (Debian package pgbouncer)"
	make_postgres_dir "$dir" 755
	{
		for user in "$@"; do printf '"%s" ""\n' "$user"; done
	} | as_postgres tee "$dir/userlist.txt" >/dev/null
	as_postgres tee "$dir/pgbouncer.ini" >/dev/null <<INI
;; lance_namespace test/serving/replication.sh: PgBouncer in transaction mode
[databases]
$db = host=$ssock port=$sport dbname=$db

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = ${REPL_BOUNCER_POOL_SIZE:-2}
max_client_conn = 200
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
admin_users = postgres
INI
	port_in_use "$port" && die "port $port on 127.0.0.1 is already in use"
	REPL_BOUNCERS+=("$dir")
	as_postgres pgbouncer -d -q "$dir/pgbouncer.ini" || {
		tail -n 20 "$dir/pgbouncer.log" >&2 || true
		die "PgBouncer did not start; see $dir/pgbouncer.log"
	}
	for ((i = 0; i < 100; i++)); do
		port_in_use "$port" && return 0
		sleep 0.1
	done
	die "PgBouncer does not listen on 127.0.0.1:$port; see $dir/pgbouncer.log"
}

# repl_bouncer_stop <dir>: stop the PgBouncer whose pid file is in <dir>
# (by its pid: never by name, other PgBouncers may run).
repl_bouncer_stop() {
	local dir="$1" pid i
	pid="$(cat "$dir/pgbouncer.pid" 2>/dev/null)" || return 0
	[[ "$pid" =~ ^[0-9]+$ ]] || return 0
	kill -INT "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

# repl_cleanup: stop every PgBouncer and cluster made here (standbys and
# primaries alike; never fails, for EXIT traps).
repl_cleanup() {
	local dir
	for dir in "${REPL_BOUNCERS[@]}"; do repl_bouncer_stop "$dir" >/dev/null 2>&1 || true; done
	REPL_BOUNCERS=()
	((${#REPL_CLUSTERS[@]} == 0)) || stop_clusters "${REPL_CLUSTERS[@]}"
	REPL_CLUSTERS=()
	return 0
}
