# shellcheck shell=bash
# Shared helpers for scripts/run.sh, scripts/stop.sh and scripts/test.sh.
# Sourced, never executed: it only defines variables and functions.
#
# Everything talks to one PostgreSQL major version, PG_VERSION, through
# explicit paths under PG_BIN so that a wrapper earlier on PATH (or another
# version) can never be picked up by accident.  The version is LN_PG_VERSION
# when set; else the highest one installed; else, on a machine without any,
# the one the Debian release ships (15 on Debian 12, 17 on Debian 13), which
# install_deps installs.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

# The highest PostgreSQL major version with a server installed, if any.
installed_pg_version() {
	local dir
	for dir in /usr/lib/postgresql/*/bin/postgres; do
		[[ -x "$dir" ]] && basename "$(dirname "$(dirname "$dir")")"
	done | { grep -E '^[0-9]+$' || true; } | sort -n | tail -n 1
}

# The major version of the release's PostgreSQL: what its postgresql
# package depends on (apt's package lists must be there).
release_pg_version() {
	apt-cache depends postgresql 2>/dev/null | sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -n 1
}

# use_pg_version <major>: set PG_VERSION, PG_BIN, PG_CONFIG and the Debian
# packages the build, the gateway and the tests need (procps: the tests'
# pkill, which a minimal Debian lacks; pgbouncer: the pooler the serving
# tests put in front of the database).
use_pg_version() {
	PG_VERSION="$1"
	PG_BIN="/usr/lib/postgresql/$PG_VERSION/bin"
	PG_CONFIG="$PG_BIN/pg_config"
	LN_PACKAGES=("postgresql-$PG_VERSION" "postgresql-server-dev-$PG_VERSION" libjson-c-dev libcurl4-openssl-dev
		curl ca-certificates make gcc libc6-dev pkg-config "${LN_GATEWAY_PACKAGES[@]}" pgbouncer)
}
# What the gateway alone needs (scripts/gateway.sh): nginx with its Lua
# module (lua-resty-core: ngx.semaphore), lua-cjson, libpq (which
# gateway/lance_db.lua calls through LuaJIT's FFI), the luajit interpreter
# (scripts/gateway_query.lua: the database's checks before nginx starts,
# with libpq too: psql takes a URL, password and all, only on its command
# line), and procps.  The interpreter is that of the LuaJIT nginx's module
# runs, OpenResty's: Debian 12 ships it as luajit2 (its luajit is another
# LuaJIT, whose library apt puts in the place of the module's, removing the
# module), Debian 13 on as luajit.
LN_LUAJIT_PACKAGE=luajit
if grep -qx 'VERSION_ID="12"' /etc/os-release 2>/dev/null; then
	LN_LUAJIT_PACKAGE=luajit2
fi
LN_GATEWAY_PACKAGES=(nginx libnginx-mod-http-lua lua-resty-core lua-cjson libpq5 "$LN_LUAJIT_PACKAGE" procps)

if [[ -n "${LN_PG_VERSION:-}" ]]; then
	[[ "$LN_PG_VERSION" =~ ^[0-9]+$ ]] || {
		printf 'lance_namespace: error: LN_PG_VERSION must be a major version such as 17, got %s\n' "$LN_PG_VERSION" >&2
		exit 1
	}
	use_pg_version "$LN_PG_VERSION"
else
	use_pg_version "$(installed_pg_version)"
	[[ -n "$PG_VERSION" ]] || use_pg_version "$(release_pg_version)"
fi

# A Unix socket path is limited to 107 bytes (sun_path) and PostgreSQL appends
# "/.s.PGSQL.<port>" to the directory; fail early instead of in the server log.
LN_SOCKET_DIR_MAX=90

# The run.sh/stop.sh state directory as an absolute path (it need not exist).
# Absolute because server commands run from / (see as_postgres), and because
# it ends up in server settings and in the lance_namespace.root default.
ln_data_dir() { realpath -m -- "${LN_DATA:-$ROOT/.data}"; }

say() { printf 'lance_namespace: %s\n' "$*"; }
die() {
	printf 'lance_namespace: error: %s\n' "$*" >&2
	exit 1
}

# ---------------------------------------------------------------------------
# Dependencies
# ---------------------------------------------------------------------------

# missing_packages [<package>...]: print those of the packages (default
# LN_PACKAGES) that dpkg does not report as installed.
missing_packages() {
	local pkg status
	(($# > 0)) || set -- "${LN_PACKAGES[@]}"
	for pkg in "$@"; do
		# db:Status-Abbrev is "ii " for a fully installed package; anything
		# else (absent, half-configured, removed with config left) counts
		# as missing so apt gets a chance to repair it.
		status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)"
		[[ "$status" == ii* ]] || printf '%s\n' "$pkg"
	done
}

# The Debian packages the tests need besides LN_PACKAGES: Node and npm for
# the end-to-end tests, and acl (setfacl: those tests, run as postgres, may
# read the gateway's access log and no other user may) (scripts/test.sh
# installs them when missing); jq and
# Prometheus's Python client for test/gateway, which reads the JSON access
# log and parses /metrics with prometheus_client's own parser, and strace
# for test/serving, which sees the arguments of every program
# scripts/gateway.sh starts (they install them when missing:
# LN_GATEWAY_TEST_PACKAGES).
LN_GATEWAY_TEST_PACKAGES=(jq python3 python3-prometheus-client strace)
# shellcheck disable=SC2034 # test.sh's and debian_root.sh's
LN_TEST_PACKAGES=(nodejs npm acl "${LN_GATEWAY_TEST_PACKAGES[@]}")

# apt_install <package>...: install with apt, without prompts (a machine
# without a terminal).  With LN_APT_OFFLINE=1, apt's lists are taken as they
# are and every package must come from apt's cache of .deb files (a Debian
# root that scripts/debian_root.sh prepared has both): no apt-get update,
# nothing downloaded, and a package the cache lacks fails the install.
apt_install() {
	export DEBIAN_FRONTEND=noninteractive
	if [[ "${LN_APT_OFFLINE:-}" == 1 ]]; then
		say "installing from apt's cache of packages (LN_APT_OFFLINE=1: no apt-get update, no download)"
		apt-get install -y --no-install-recommends --no-download "$@"
	else
		apt-get update && apt-get install -y --no-install-recommends "$@"
	fi
}

# Install whatever is missing.  apt is skipped entirely when nothing is, so a
# prepared machine needs neither root for apt nor network access.
install_deps() {
	local missing
	if [[ -z "$PG_VERSION" ]]; then
		# a fresh machine: apt's lists tell which PostgreSQL the release ships
		[[ $EUID -eq 0 ]] || die "no PostgreSQL installed and not root; install one or rerun as root"
		[[ "${LN_APT_OFFLINE:-}" == 1 ]] || apt-get update
		use_pg_version "$(release_pg_version)"
		[[ -n "$PG_VERSION" ]] || die "cannot tell which PostgreSQL this release ships; set LN_PG_VERSION"
	fi
	mapfile -t missing < <(missing_packages)
	if ((${#missing[@]} == 0)); then
		say "dependencies already installed"
		return 0
	fi
	[[ $EUID -eq 0 ]] || die "missing packages (${missing[*]}) and not root; install them or rerun as root"
	say "installing: ${missing[*]}"
	apt_install "${missing[@]}" || die "could not install ${missing[*]}"
	[[ -x "$PG_CONFIG" ]] || die "$PG_CONFIG still missing after installing packages"
}

# install_packages <package>...: install those of them that are missing
# (scripts/gateway.sh: the gateway's alone).
install_packages() {
	local missing
	mapfile -t missing < <(missing_packages "$@")
	((${#missing[@]} == 0)) && return 0
	[[ $EUID -eq 0 ]] || die "missing packages (${missing[*]}) and not root; install them or rerun as root"
	say "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
}

# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------

build_and_install() {
	say "building the extension"
	make -C "$ROOT" PG_CONFIG="$PG_CONFIG"
	say "installing the extension into $("$PG_CONFIG" --pkglibdir)"
	make -C "$ROOT" PG_CONFIG="$PG_CONFIG" install
}

# ---------------------------------------------------------------------------
# Cluster lifecycle.  The server refuses to run as root, so every server-side
# command runs as the postgres OS user; clients (psql, pg_regress) run as the
# caller and connect as the postgres database user over the socket.
# All directory arguments must be absolute paths.
# ---------------------------------------------------------------------------

# Run a command as the postgres OS user.  It starts in / because the caller's
# working directory (e.g. /root) is often not readable by postgres, which
# makes initdb and pg_ctl print "could not change directory" warnings.
as_postgres() {
	if [[ "$(id -un)" == postgres ]]; then
		(cd / && "$@")
	elif [[ $EUID -eq 0 ]]; then
		(cd / && runuser -u postgres -- setsid -w "$@")
	else
		die "must run as root (or as postgres) to manage the server"
	fi
}

# make_postgres_dir <dir> [<mode>] [<group>]: a directory owned by postgres
# (group postgres unless given).  Parents are created by the caller's user
# and must stay traversable by postgres (mode 755 is enough).
make_postgres_dir() {
	local dir="$1" mode="${2:-700}" group="${3:-postgres}"
	mkdir -p "$dir"
	chown "postgres:$group" "$dir"
	chmod "$mode" "$dir"
}

# ensure_data_dir <dir> <example> <user>...: the state folder LN_DATA,
# through which the OS users given (postgres, the server's; LN_GATEWAY_USER,
# the gateway's) must pass to the folders made for them inside.  A missing
# one is made, mode 755.  One that exists is taken as it is, its mode never
# changed: it may be an operator's folder (a home, a folder of mode 700 with
# other things in it) that is not ours to open to every user.  When one of
# the users cannot pass through it (or a folder above it), this stops,
# naming that user, that folder and what to do.
ensure_data_dir() {
	local dir="$1" example="$2" user path part
	local -a parts=()
	shift 2
	# shellcheck disable=SC2174 # folders above it take the umask's mode: a closed one is named below
	[[ -e "$dir" ]] || mkdir -p -m 755 "$dir"
	[[ -d "$dir" ]] || die "LN_DATA ($dir) is not a folder"
	IFS=/ read -r -a parts <<<"${dir#/}"
	for user in "$@"; do
		as_user "$user" test -x "$dir" && continue
		path=""
		for part in "${parts[@]}"; do
			path+="/$part"
			as_user "$user" test -x "$path" || break
		done
		die "the OS user $user cannot pass through $path to reach LN_DATA ($dir); this script changes the mode of no folder it did not make. Let it through (chmod o+x $path: others may then pass through, not list it; or setfacl -m u:$user:x $path), or set LN_DATA to a folder it can reach, e.g. LN_DATA=$example"
	done
}

# as_user <postgres or LN_GATEWAY_USER> <command...>: as_postgres or as_gateway.
as_user() {
	local user="$1"
	shift
	if [[ "$user" == postgres ]]; then as_postgres "$@"; else as_gateway "$@"; fi
}

# Reject a socket directory whose path would not fit in sun_path.
check_socket_dir() {
	local dir="$1"
	((${#dir} <= LN_SOCKET_DIR_MAX)) ||
		die "socket directory path too long for a Unix socket (${#dir} > $LN_SOCKET_DIR_MAX chars): $dir"
}

# tcp_table: print "<state> <local address> <local port>" for every TCP
# socket of this machine's network, as the kernel writes them in
# /proc/net/tcp and tcp6 (hexadecimal; state 0A listens, 06 is TIME_WAIT);
# false when /proc/net/tcp cannot be read.
tcp_table() {
	local -a tables=(/proc/net/tcp)
	[[ -r /proc/net/tcp ]] || return 1
	[[ -r /proc/net/tcp6 ]] && tables+=(/proc/net/tcp6)
	awk 'FNR > 1 { split($2, local_address, ":"); print $4, local_address[1], local_address[2] }' "${tables[@]}"
}

# True when something accepts TCP connections on 127.0.0.1:<port>: a socket
# listens there (127.0.0.1, 0.0.0.0 or ::ffff:127.0.0.1).  Read from
# tcp_table, not tried with a connection: a connection to a port nothing
# listens on may get that very port as its own (the kernel gives clients
# ports from 32768 on, where the tests' ports lie) and connect to itself,
# which says "in use" and then keeps the port from every server for 60 s.
# A listener on :: alone may be IPv6's only (the table does not say), and
# where /proc cannot be read there is only the table-less way: those are
# tried with bash's /dev/tcp (no ss, netstat or nc needed).  The addresses
# are written in the host's byte order: both orders are matched.
port_in_use() {
	local port="$1" table hex found=2
	printf -v hex '%04X' "$port"
	if table="$(tcp_table)"; then
		found=0
		awk -v port="$hex" '$1 == "0A" && $3 == port {
				if ($2 == "0100007F" || $2 == "7F000001" || $2 == "00000000" ||
					$2 == "0000000000000000FFFF00000100007F" || $2 == "00000000000000000000FFFF7F000001") ipv4 = 1
				else if ($2 ~ /^0+$/) any = 1
			}
			END { exit ipv4 ? 0 : any ? 2 : 1 }' <<<"$table" || found=$?
	fi
	case "$found" in
	0) return 0 ;;
	1) return 1 ;;
	*) timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null ;;
	esac
}

# Print the first free port at or above <start>, trying <count> ports: one
# no socket of this machine holds in any state (tcp_table), or, where that
# cannot be read, one nothing answers on (port_in_use).  A port a client's
# connection holds, even closed a moment ago (TIME_WAIT, 60 s), cannot be
# listened on, SO_REUSEADDR or not, though nothing answers there; a test
# suite's hundreds of loopback connections leave such ports behind.
find_free_port() {
	local port="${1:-54329}" count="${2:-100}" i held
	[[ "$port" =~ ^[0-9]+$ ]] || die "port must be a number, got '$port'"
	if held="$(tcp_table)"; then
		held=" $(awk '{ print $3 }' <<<"$held" | sort -u | tr '\n' ' ')"
	else
		held=""
	fi
	for ((i = 0; i < count; i++, port++)); do
		if [[ -n "$held" ]]; then
			[[ "$held" == *" $(printf '%04X' "$port") "* ]] && continue
		elif port_in_use "$port"; then
			continue
		fi
		printf '%s\n' "$port"
		return 0
	done
	die "no free TCP port in $1..$((port - 1))"
}

# The client authentication of the cluster scripts/run.sh makes: every
# connection authenticates.  Over the socket, peer: the OS user postgres (the
# server's) and root (which can become postgres anyway) as database role
# postgres, and the OS user lance_gateway (the gateway's nginx: see
# LN_GATEWAY_USER) as role lance_gateway alone; any other OS user is refused,
# and no OS user but lance_gateway logs in as lance_gateway.  Over TCP
# (127.0.0.1 only), SCRAM: a role with a password (none of the two above has
# one).
LN_RUN_HBA='# Written by lance_namespace scripts/common.sh: every connection authenticates.
# Socket: peer, mapped by pg_ident.conf (map lance_namespace).  TCP: SCRAM
# passwords, from this machine only.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 peer map=lance_namespace
host    all       all   127.0.0.1/32  scram-sha-256'
LN_RUN_IDENT='# Written by lance_namespace scripts/common.sh: which OS user may connect over
# the socket as which database role.  postgres runs the server; root can
# become postgres anyway; lance_gateway runs the gateway (nginx), and is
# the superuser of nothing.
# MAPNAME         SYSTEM-USERNAME  PG-USERNAME
lance_namespace   postgres         postgres
lance_namespace   root             postgres
lance_namespace   lance_gateway    lance_gateway'
# What run.sh wrote before the gateway had an OS user of its own: the OS
# user postgres ran nginx and logged in as lance_gateway too.
# shellcheck disable=SC2034 # run.sh's, which sources this file
LN_RUN_IDENT_POSTGRES_GATEWAY='# Written by lance_namespace scripts/common.sh: which OS user may connect over
# the socket as which database role.  postgres runs the server and the
# gateway (nginx); root can become postgres anyway.
# MAPNAME         SYSTEM-USERNAME  PG-USERNAME
lance_namespace   postgres         postgres
lance_namespace   postgres         lance_gateway
lance_namespace   root             postgres'
# What run.sh wrote before 0.6.0: it trusted every local connection.
# shellcheck disable=SC2034 # run.sh's, which sources this file
LN_RUN_HBA_TRUST='# Written by lance_namespace scripts/common.sh: local use only.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 trust
host    all       all   127.0.0.1/32  trust'
# The run cluster's socket folder: the postgres user's, which the gateway's
# OS user (its group) may enter, and no other (root passes).  PostgreSQL
# needs write access there for the socket and its lock file (its own) and
# leaves the socket's mode at 0777: the folder is what keeps others out.
# shellcheck disable=SC2034 # run.sh's, which sources this file
LN_RUN_SOCKET_MODE=750

# write_run_ident <datadir>, write_run_auth <datadir>: write LN_RUN_IDENT
# (and LN_RUN_HBA) into the cluster (a running server reads them at its next
# reload).
write_run_ident() {
	local pgdata="$1"
	printf '%s\n' "$LN_RUN_IDENT" | as_postgres tee "$pgdata/pg_ident.conf" >/dev/null
}
write_run_auth() {
	local pgdata="$1"
	write_run_ident "$pgdata"
	printf '%s\n' "$LN_RUN_HBA" | as_postgres tee "$pgdata/pg_hba.conf" >/dev/null
}

# init_cluster <datadir> [test|run]
#   test: fast and disposable (--no-sync, fsync off), default initdb pg_hba
#         (trust: its clients are the tests, as root and postgres).
#   run:  durable; every connection authenticates (LN_RUN_HBA).
# C.UTF-8 always exists on Debian, so initdb never trips over an ungenerated
# $LANG, and sorting/messages are identical on every machine.
init_cluster() {
	local pgdata="$1" kind="${2:-test}"
	local -a opts=(-D "$pgdata" -U postgres -A trust --encoding=UTF8 --locale=C.UTF-8)
	[[ "$kind" == test ]] && opts+=(--no-sync)

	make_postgres_dir "$pgdata" 700
	say "initializing cluster in $pgdata"
	as_postgres "$PG_BIN/initdb" "${opts[@]}" >"$pgdata.initdb.log" 2>&1 || {
		cat "$pgdata.initdb.log" >&2
		die "initdb failed"
	}
	rm -f "$pgdata.initdb.log"

	if [[ "$kind" == test ]]; then
		# Crash safety is pointless for a cluster deleted after the run.
		printf '\nfsync = off\nfull_page_writes = off\nsynchronous_commit = off\n' |
			as_postgres tee -a "$pgdata/postgresql.conf" >/dev/null
	else
		# Replace initdb's pg_hba.conf (which trusts every local
		# connection, ::1 and replication) with exactly what we promise.
		write_run_auth "$pgdata"
	fi
}

# True when the cluster in <datadir> has a live postmaster.
cluster_running() {
	local pgdata="$1"
	[[ -f "$pgdata/PG_VERSION" ]] || return 1
	as_postgres "$PG_BIN/pg_ctl" -D "$pgdata" status >/dev/null 2>&1
}

# Field <n> of postmaster.pid (4 = port, 5 = socket dir, 6 = listen address).
postmaster_field() {
	local pgdata="$1" n="$2"
	sed -n "${n}p" "$pgdata/postmaster.pid" 2>/dev/null
}

# start_cluster <datadir> <port> <socketdir> [<socketdir mode> [<its group>]]
# Settings go on the command line, not in postgresql.conf, so the same data
# directory can be started on another port later; pg_ctl records them in
# postmaster.opts for restarts.  The log lives in the data dir.  The socket
# folder is postgres's, mode 755 and group postgres unless given.
start_cluster() {
	local pgdata="$1" port="$2" sockdir="$3" sockmode="${4:-755}" sockgroup="${5:-postgres}"
	local log="$pgdata/server.log"
	[[ "$sockdir" != *[[:space:]\'\"\\,]* ]] ||
		die "socket directory must not contain spaces, quotes, backslashes or commas: $sockdir"
	check_socket_dir "$sockdir"
	make_postgres_dir "$sockdir" "$sockmode" "$sockgroup"
	if port_in_use "$port"; then
		die "port $port on 127.0.0.1 is already in use; choose another"
	fi

	say "starting server on port $port (socket dir $sockdir, log $log)"
	if ! as_postgres "$PG_BIN/pg_ctl" -D "$pgdata" -l "$log" -w -t 60 \
		-o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='$sockdir'" \
		start >/dev/null; then
		tail -n 30 "$log" >&2 || true
		die "server failed to start; see $log"
	fi
	wait_ready "$sockdir" "$port" || {
		tail -n 30 "$log" >&2 || true
		die "server did not become ready; see $log"
	}
}

# Poll pg_isready; pg_ctl -w already waited, this double-checks that clients
# can really connect through the socket we promise to users.
wait_ready() {
	local sockdir="$1" port="$2" i
	for ((i = 0; i < 60; i++)); do
		"$PG_BIN/pg_isready" -q -h "$sockdir" -p "$port" -U postgres && return 0
		sleep 0.5
	done
	return 1
}

# Stop the cluster if it runs.  "fast" rolls back open sessions instead of
# waiting for clients (e.g. a forgotten psql) to disconnect.
stop_cluster() {
	local pgdata="$1"
	if cluster_running "$pgdata"; then
		say "stopping server in $pgdata"
		as_postgres "$PG_BIN/pg_ctl" -D "$pgdata" -m fast -w -t 60 stop >/dev/null
	fi
}

# ---------------------------------------------------------------------------
# Gateway: nginx with its Lua module, run as an OS user of its own,
# LN_GATEWAY_USER (it listens on an unprivileged port and reaches the server
# over its socket, as database role lance_gateway).  nginx started by a user
# other than root runs its workers as that user, so master and workers, and
# the Lua code that parses every request, are lance_gateway: not postgres,
# which owns the cluster's files and logs in as its superuser.  The run
# cluster authenticates the workers by peer (LN_RUN_IDENT) as role
# lance_gateway alone, and no password is kept.  Its configuration is
# gateway/nginx.conf.in with the @...@ values filled in.
# ---------------------------------------------------------------------------

# The gateway's OS user: a system user without a shell or a home, with a
# group of its own (the run cluster's socket folder lets that group in).
LN_GATEWAY_USER=lance_gateway

# gateway_group_others: print the OS users, other than LN_GATEWAY_USER, in
# its group (listed members, or users whose primary group it is).  That
# group may enter the run cluster's socket folder: it must be the
# gateway's alone.
gateway_group_others() {
	local gid members
	gid="$(getent group "$LN_GATEWAY_USER" | cut -d: -f3)" || return 0
	[[ -n "$gid" ]] || return 0
	members="$(getent group "$LN_GATEWAY_USER" | cut -d: -f4)"
	{
		tr ',' '\n' <<<"$members"
		getent passwd | awk -F: -v gid="$gid" '$4 == gid { print $1 }'
	} | grep -vx -e "$LN_GATEWAY_USER" -e '' | sort -u || true
}

# ensure_gateway_user: create LN_GATEWAY_USER when this host lacks it, as
# the scripts install the packages they need.  A group of that name that
# other users are in is refused: they would enter the socket folder.  A
# useradd that loses a race with another script's is no failure.
ensure_gateway_user() {
	local -a group=(--user-group)
	local others
	others="$(gateway_group_others | tr '\n' ' ')"
	[[ -z "$others" ]] ||
		die "the group $LN_GATEWAY_USER, which alone may enter the cluster's socket folder, has other members: ${others% }; take them out of it (gpasswd -d <user> $LN_GATEWAY_USER) or remove that group, and run again"
	id -u "$LN_GATEWAY_USER" >/dev/null 2>&1 && return 0
	[[ $EUID -eq 0 ]] ||
		die "the OS user $LN_GATEWAY_USER, which runs the gateway, is missing and this is not root; create it (useradd --system) or rerun as root"
	getent group "$LN_GATEWAY_USER" >/dev/null && group=(--gid "$LN_GATEWAY_USER")
	say "creating the OS user $LN_GATEWAY_USER, which runs the gateway (a system user without a shell or a home)"
	useradd --system "${group[@]}" --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
		"$LN_GATEWAY_USER" || id -u "$LN_GATEWAY_USER" >/dev/null 2>&1 ||
		die "could not create the OS user $LN_GATEWAY_USER"
}

# The whole environment of a program the gateway's OS user runs: whatever
# the operator exported (PGPASSWORD, cloud keys, LN_DATABASE_READ_URL) is
# no business of nginx's or of the database checks, and a process's
# environment outlives its use in its memory.  A caller passes what a
# program needs explicitly (env NAME=value program).
LN_GATEWAY_ENV=(PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)

# Run a command as the gateway's OS user, from / (as as_postgres does), in
# a clean environment (LN_GATEWAY_ENV).
as_gateway() {
	if [[ "$(id -un)" == "$LN_GATEWAY_USER" ]]; then
		(cd / && env -i "${LN_GATEWAY_ENV[@]}" "$@")
	elif [[ $EUID -eq 0 ]]; then
		(cd / && runuser -u "$LN_GATEWAY_USER" -- setsid -w env -i "${LN_GATEWAY_ENV[@]}" "$@")
	else
		die "must run as root to manage the gateway"
	fi
}

# Inside the gateway's prefix, which its OS user owns, that user writes: a
# link it put there could lead a write or chown of root's elsewhere.
# gateway_dir <dir> <mode>: a folder of the prefix.
gateway_dir() {
	as_gateway mkdir -p "$1"
	as_gateway chmod "$2" "$1"
}

# gateway_file <file> <mode>: standard input into a file of the prefix,
# through a temporary file renamed over it (never half written).
gateway_file() {
	# shellcheck disable=SC2016 # expanded by that shell
	as_gateway sh -c 'umask 077 && t="$(mktemp "$1.XXXXXX")" && cat >"$t" && chmod "$2" "$t" && mv -f "$t" "$1"' \
		sh "$1" "$2"
}

# as_prefix_owner <prefix> <command...>: run a command as the OS user whose
# the prefix is: the gateway's, postgres (a prefix an earlier version
# made) or root (one just made, empty); false for any other.
as_prefix_owner() {
	local prefix="$1" owner
	shift
	owner="$(stat -c %U "$prefix" 2>/dev/null)" || return 1
	case "$owner" in
	"$LN_GATEWAY_USER") as_gateway "$@" ;;
	postgres) as_postgres "$@" ;;
	root) (cd / && "$@") ;;
	*) return 1 ;;
	esac
}

# gateway_pid <prefix>: print the pid of the gateway's nginx master that
# runs in <prefix>; false when none does.  nginx.pid lies in a folder its
# OS user writes, and a pid outlives its process: the file is read as that
# user, a regular file's first bytes alone (never a FIFO that blocks or a
# link to /dev/zero), and the pid is taken only when it is an nginx master
# of that user's for this prefix.
# Another process that took a dead master's pid is never signalled: the
# stale pid file goes.
gateway_pid() {
	local prefix="$1" pid exe owner user cmdline
	[[ -d "$prefix" && ! -L "$prefix" ]] || return 1
	[[ -e "$prefix/nginx.pid" || -L "$prefix/nginx.pid" ]] || return 1
	# shellcheck disable=SC2016 # expanded by that shell
	pid="$(as_prefix_owner "$prefix" sh -c '[ -f "$1" ] && [ ! -L "$1" ] && exec timeout 5 head -c 16 -- "$1"' \
		sh "$prefix/nginx.pid" 2>/dev/null)" || pid=""
	pid="${pid%$'\n'}"
	if [[ "$pid" =~ ^[1-9][0-9]{0,9}$ ]]; then
		owner="$(stat -c %U "$prefix")"
		exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || exe=""
		exe="${exe% (deleted)}"
		user="$(stat -c %U "/proc/$pid" 2>/dev/null)" || user=""
		cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || cmdline=""
		if [[ "${exe##*/}" == nginx && "$user" == "$owner" ]]; then
			if [[ "$cmdline" == *"master process"* && "$cmdline" == *" $prefix/nginx.conf"* ]]; then
				printf '%s\n' "$pid"
				return 0
			fi
			# an nginx of that user's, not (or not yet: it names itself
			# once its pid file is written) this prefix's master
			return 1
		fi
	fi
	as_prefix_owner "$prefix" rm -f -- "$prefix/nginx.pid" 2>/dev/null || true
	return 1
}

gateway_running() { gateway_pid "$1" >/dev/null; }

# gateway_user <prefix>: the OS user the running gateway's master runs as.
gateway_user() {
	local pid
	pid="$(gateway_pid "$1")" || return 0
	stat -c %U "/proc/$pid" 2>/dev/null || true
}

# The database role the gateway connects as: it logs in, is no superuser,
# inherits nothing, owns nothing and is a member of no role.  lance_rest()
# runs each request as the role of the request's API key: the key is the
# authority, and the gateway's role needs nothing but EXECUTE.
LN_GATEWAY_ROLE=lance_gateway

# ensure_gateway_role <psql connection args...>: create the gateway's role
# if it is missing (roles are cluster-wide, so once per cluster) and hold it
# to the attributes above (an older run.sh made it a member of lance_admin:
# that goes).  Idempotent.  Connects as a superuser.
ensure_gateway_role() {
	local owned
	"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@" >/dev/null <<'SQL'
SET client_min_messages = warning;
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'lance_gateway') THEN
        CREATE ROLE lance_gateway LOGIN NOINHERIT;
    END IF;
END
$$;
ALTER ROLE lance_gateway LOGIN NOSUPERUSER NOINHERIT NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
COMMENT ON ROLE lance_gateway IS 'lance_namespace: the REST gateway; runs each request as its API key''s role';
DO $$
BEGIN
    IF pg_catalog.pg_has_role('lance_gateway', 'lance_admin', 'MEMBER') THEN
        REVOKE lance_admin FROM lance_gateway;
    END IF;
END
$$;
SQL
	# pg_shdepend records owners in every database of the cluster
	owned="$("$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@" -c \
		"SELECT count(*) FROM pg_catalog.pg_shdepend WHERE refclassid = 'pg_catalog.pg_authid'::regclass
		    AND refobjid = 'lance_gateway'::regrole AND deptype = 'o'")"
	[[ "$owned" == 0 ]] ||
		say "warning: role $LN_GATEWAY_ROLE owns $owned objects; the gateway's role should own nothing (REASSIGN OWNED BY $LN_GATEWAY_ROLE TO ...)"
}

# True when <key> has the form of an API key: lnk_<12 hex>_<64 hex>.
is_api_key() { [[ "$1" =~ ^lnk_[0-9a-f]{12}_[0-9a-f]{64}$ ]]; }

# create_api_key <role> <psql connection args...>: print a new API key for
# <role>, made by a superuser.
create_api_key() {
	local role="$1"
	shift
	"$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -v role="$role" "$@" <<<"SELECT lance_create_api_key(:'role');"
}

# api_key_works <key> <psql connection args...>: true when the gateway's role
# gets an answer with <key>: lance_rest() called as the gateway calls it,
# listing the root namespace.  The key travels on standard input, never on a
# command line that ps shows.
api_key_works() {
	local key="$1" status
	shift
	is_api_key "$key" || return 1
	status="$("$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@" <<SQL 2>/dev/null
SET ROLE $LN_GATEWAY_ROLE;
SELECT status FROM lance_rest('GET', '/v1/namespace/%24/list', NULL, NULL, '{"x-api-key": "$key"}');
SQL
)" || return 1
	[[ "$status" == 200 ]]
}

# The gateway's URL scheme: https when LN_GATEWAY_TLS_CERT and
# LN_GATEWAY_TLS_KEY name a certificate and its key.
gateway_scheme() {
	if [[ -n "${LN_GATEWAY_TLS_CERT:-}" || -n "${LN_GATEWAY_TLS_KEY:-}" ]]; then
		echo https
	else
		echo http
	fi
}

# The gateway's settings (LN_REQUEST_TIMEOUT, LN_GATEWAY_CONNECTIONS): a
# request not answered within LN_REQUEST_TIMEOUT seconds is cancelled in the
# database, rolled back and answered 503 (code 17, Retry-After); the gateway
# holds at most LN_GATEWAY_CONNECTIONS connections to the database, split
# over its workers.
LN_REQUEST_TIMEOUT_DEFAULT=30

# The standbys' settings (gateway/lance_replicas.lua): LN_DATABASE_READ_URL,
# libpq URIs of hot standbys separated by white space, where the gateway
# sends reads; LN_READ_MAX_LAG, the seconds a standby may lag behind before
# the gateway skips it.
LN_READ_MAX_LAG_DEFAULT=10

# gateway_read_settings <prefix> <connections per worker>: write
# <prefix>/database_read_url (it may hold passwords: the gateway's OS user's
# alone) and
# set GW_READ_THREADS (threads for the standbys' calls) and GW_READ_MAX_LAG.
gateway_read_settings() {
	local prefix="$1" per_worker="$2" lag="${LN_READ_MAX_LAG:-$LN_READ_MAX_LAG_DEFAULT}"
	local -a urls=()
	# its form was checked with the others (check_gateway_settings)
	read -r -d '' -a urls <<<"${LN_DATABASE_READ_URL:-}" || true
	if ((${#urls[@]} == 0)); then
		gateway_file "$prefix/database_read_url" 600 </dev/null
	else
		printf '%s\n' "${urls[@]}" | gateway_file "$prefix/database_read_url" 600
	fi
	GW_READ_THREADS=$((per_worker * ${#urls[@]}))
	((GW_READ_THREADS >= 1)) || GW_READ_THREADS=1
	GW_READ_MAX_LAG="$lag"
}

# gateway_query <url> <sql>: run <sql> in the gateway's database as the
# gateway connects (its OS user, LN_GATEWAY_USER; libpq with its URL) and
# print the rows, fields separated by |.  scripts/gateway_query.lua does it
# with luajit: the URL (it may hold a password) goes on its standard input,
# and its program as text on its command line, since the clone may lie in a
# folder that user cannot read; no command line, which every local user
# sees (ps), holds the URL.  Exit status 0, 1 the query failed, 2 no
# connection; libpq's messages, which may quote the URL, are never printed.
gateway_query() {
	local url="$1" sql="$2" luajit program
	luajit="$(command -v luajit)" || return 2
	program="$(<"$ROOT/scripts/gateway_query.lua")"
	as_gateway env LN_QUERY="$sql" "$luajit" -e "$program" <<<"$url"
}

# default_gateway_connections <url>: a quarter of the connections the server
# takes from ordinary roles (max_connections - superuser_reserved_connections),
# so that several gateways and the server's other clients fit beside it,
# from 2 to 64; 16 when the server cannot be asked.
default_gateway_connections() {
	local url="$1" free
	free="$(gateway_query "$url" "SELECT pg_catalog.current_setting('max_connections')::int
		- pg_catalog.current_setting('superuser_reserved_connections')::int" 2>/dev/null)" || free=""
	if [[ ! "$free" =~ ^[0-9]+$ ]]; then
		echo 16
		return 0
	fi
	free=$((free / 4))
	((free >= 2)) || free=2
	((free <= 64)) || free=64
	echo "$free"
}

# What start_gateway_url puts into nginx.conf from the environment is
# checked first: sed writes each value in as it is, and a quote, a ';', a
# brace, a '$' or a line break there would end nginx's string and add
# configuration of its own (or Lua code: nginx.conf holds some).  Host
# names: letters, digits, '.' and '-', or an IPv6 address in brackets;
# origins: scheme://host or scheme://host:port; the address it listens on:
# IPv4, or IPv6 in brackets; its folder: a path of letters, digits and
# / . _ - + , : = ~.
LN_GATEWAY_HOST_FORM='^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])$'
LN_GATEWAY_ORIGIN_FORM='^[A-Za-z][A-Za-z0-9+.-]*://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$'
LN_GATEWAY_ADDRESS_FORM='^([0-9]{1,3}(\.[0-9]{1,3}){3}|\[[0-9A-Fa-f:.]+\])$'
LN_GATEWAY_PATH_FORM='^/[A-Za-z0-9/._+,:=~-]*$'

# gateway_words <variable> <form> <what>: set GATEWAY_WORDS to the words of
# the variable's value (separated by any white space) joined by single
# spaces; die naming the first word not of <form>.
gateway_words() {
	local name="$1" form="$2" what="$3" word IFS=$' \t\n'
	local -a words=()
	read -r -d '' -a words <<<"${!name:-}" || true
	for word in "${words[@]}"; do
		((${#word} <= 253)) ||
			die "$name must list $what, separated by spaces: '${word:0:40}...' is longer than 253 characters"
		[[ "$word" =~ $form ]] ||
			die "$name must list $what, separated by spaces: '$word' is none (the list goes into nginx.conf)"
	done
	GATEWAY_WORDS="${words[*]}"
}

# The largest values the gateway's settings take: a day's seconds, and
# more connections than any server gives (database connections, and a
# key's requests in flight); requests in flight from one address.
LN_SECONDS_MAX=86400
LN_GATEWAY_CONNECTIONS_MAX=10000
# nginx's limit_conn takes at most 65535
LN_GATEWAY_CONNECTIONS_PER_ADDRESS_MAX=65535

# LN_GATEWAY_CONNECTIONS_PER_ADDRESS: the requests one client address may
# have in flight at once in the gateway (nginx's limit_conn: a request
# counts from its headers' end, while its body is read, while it waits for
# a database connection and while it runs; an idle keep-alive connection
# does not count).  Past it: 429 with code 21 and Retry-After.  256 is far
# more than a NAT of hundreds of clients has in flight at once (a catalog
# request takes milliseconds), and far fewer than the clients a worker
# holds (LN_GATEWAY_WORKER_CONNECTIONS).
LN_GATEWAY_CONNECTIONS_PER_ADDRESS_DEFAULT=256

# The client connections each worker is made to hold (nginx's
# worker_connections), when the open file limit lets it: thousands of idle
# or slow clients fit, and nginx never has to drop one to accept another.
# Each takes about 500 bytes of a worker's memory while unused.
LN_GATEWAY_WORKER_CONNECTIONS=16384

# gateway_open_files <prefix> <database connections per worker>: set
# GW_NOFILE (nginx's worker_rlimit_nofile: the open files each worker may
# have) and GW_WORKER_CONNECTIONS (its worker_connections: clients, and its
# calls to a database on this host).  A worker's files are its
# connections, the database connections of its threads (libpq's, outside
# nginx's count) and a reserve for logs, temporary files of bodies and the
# like; all within the hard open file limit of the OS user that starts
# nginx (a worker may raise its limit up to that and no further: nginx
# would otherwise alert at each worker's start, or warn that
# worker_connections exceed the limit), or of the running master's for a
# reload, whose workers it forks.  Under a hard limit of 1024 that is about
# 900 connections a worker.
gateway_open_files() {
	local prefix="$1" per_worker="$2" hard="" pid reserve
	if pid="$(gateway_pid "$prefix")"; then
		hard="$(awk '/^Max open files/ { print $5 }' "/proc/$pid/limits" 2>/dev/null)" || hard=""
	fi
	[[ -n "$hard" ]] || hard="$(as_gateway sh -c 'ulimit -Hn' 2>/dev/null)" || hard=""
	[[ "$hard" != unlimited ]] || hard=1048576
	[[ "$hard" =~ ^[0-9]{1,9}$ ]] || hard=1024
	reserve=$((per_worker + GW_READ_THREADS + 128))
	GW_NOFILE=$((LN_GATEWAY_WORKER_CONNECTIONS + reserve))
	((GW_NOFILE <= hard)) || GW_NOFILE="$hard"
	GW_WORKER_CONNECTIONS=$((GW_NOFILE - reserve))
	# a limit too small for the reserve: half the files for connections
	((GW_WORKER_CONNECTIONS >= GW_NOFILE / 2)) || GW_WORKER_CONNECTIONS=$((GW_NOFILE / 2))
}

# seconds_setting <name> <value>: die unless <value> is a positive number of
# seconds, at most LN_SECONDS_MAX.
seconds_setting() {
	local name="$1" value="$2"
	if ! [[ "$value" =~ ^[0-9]{1,9}(\.[0-9]{1,9})?$ ]] ||
		! awk -v t="$value" -v max="$LN_SECONDS_MAX" 'BEGIN { exit !(t > 0 && t <= max) }'; then
		die "$name must be a positive number of seconds, at most $LN_SECONDS_MAX, got '$value'"
	fi
}

# count_setting <name> <value> <max>: die unless <value> is empty (the
# default) or a positive integer, at most <max>.
count_setting() {
	local name="$1" value="$2" max="$3"
	if [[ -n "$value" ]] && { ! [[ "$value" =~ ^[1-9][0-9]{0,8}$ ]] || ((value > max)); }; then
		die "$name must be a positive integer, at most $max, got '$value'"
	fi
}

# check_gateway_settings <prefix> <port>: die unless the gateway's settings
# (LN_REQUEST_TIMEOUT, LN_READ_MAX_LAG, LN_GATEWAY_CONNECTIONS,
# LN_GATEWAY_CONNECTIONS_PER_ADDRESS, LN_KEY_CONCURRENCY, LN_GATEWAY_ADDRESS,
# LN_GATEWAY_HOSTS, LN_GATEWAY_ORIGINS, its folder and port) have their
# forms; set GATEWAY_HOSTS and GATEWAY_ORIGINS to the lists as nginx.conf
# takes them.  It changes nothing: scripts/gateway.sh and scripts/run.sh
# call it before they start, start_gateway_url before it writes anything.
check_gateway_settings() {
	local prefix="$1" port="$2"
	local timeout="${LN_REQUEST_TIMEOUT:-$LN_REQUEST_TIMEOUT_DEFAULT}" total="${LN_GATEWAY_CONNECTIONS:-}"
	local address="${LN_GATEWAY_ADDRESS:-127.0.0.1}" lag="${LN_READ_MAX_LAG:-$LN_READ_MAX_LAG_DEFAULT}"
	seconds_setting LN_REQUEST_TIMEOUT "$timeout"
	seconds_setting LN_READ_MAX_LAG "$lag"
	count_setting LN_GATEWAY_CONNECTIONS "$total" "$LN_GATEWAY_CONNECTIONS_MAX"
	count_setting LN_GATEWAY_CONNECTIONS_PER_ADDRESS "${LN_GATEWAY_CONNECTIONS_PER_ADDRESS:-}" \
		"$LN_GATEWAY_CONNECTIONS_PER_ADDRESS_MAX"
	count_setting LN_KEY_CONCURRENCY "${LN_KEY_CONCURRENCY:-}" "$LN_GATEWAY_CONNECTIONS_MAX"
	if ! [[ "$port" =~ ^[1-9][0-9]{0,4}$ ]] || ((port > 65535)); then
		die "LN_GATEWAY_PORT must be a port number (1 to 65535), got '$port'"
	fi
	[[ "$address" =~ $LN_GATEWAY_ADDRESS_FORM ]] ||
		die "LN_GATEWAY_ADDRESS must be an IPv4 address (127.0.0.1; 0.0.0.0 for every interface) or an IPv6 one in brackets ([::1]; [::] for every interface), got '$address'"
	[[ "$prefix" =~ $LN_GATEWAY_PATH_FORM ]] ||
		die "LN_DATA must be a path of letters, digits and / . _ - + , : = ~ (the gateway's folder in it goes into nginx.conf), got '$prefix'"
	gateway_words LN_GATEWAY_HOSTS "$LN_GATEWAY_HOST_FORM" "host names (letters, digits, '.' and '-') or IP addresses (IPv6 in brackets)"
	GATEWAY_HOSTS="$GATEWAY_WORDS"
	gateway_words LN_GATEWAY_ORIGINS "$LN_GATEWAY_ORIGIN_FORM" "web origins (scheme://host or scheme://host:port, as browsers send them in Origin)"
	GATEWAY_ORIGINS="$GATEWAY_WORDS"
}

# start_gateway <prefix> <port> <database> <pg socket dir> <pg port>
# The gateway of a cluster on this machine, over its socket as role
# lance_gateway (made here if missing; the cluster authenticates nginx's
# workers, OS user lance_gateway, by peer): start_gateway_url with that URL.
start_gateway() {
	local prefix="$1" port="$2" db="$3" pghost="$4" pgport="$5"
	ensure_gateway_role -h "$pghost" -p "$pgport" -U postgres -d "$db"
	start_gateway_url "$prefix" "$port" "postgresql:///$db?host=$pghost&port=$pgport&user=$LN_GATEWAY_ROLE"
}

# start_gateway_url <prefix> <port> <libpq URI or conninfo>
# Writes <prefix>/nginx.conf and <prefix>/database_url and starts nginx (or
# reloads a running one) in front of that database, which it did not make.
# nginx runs as LN_GATEWAY_USER (made here if missing), which owns <prefix>.
# Its settings are checked first (check_gateway_settings).
# With LN_GATEWAY_TLS_CERT and LN_GATEWAY_TLS_KEY (PEM files) it serves
# HTTPS with them; the files are copied into <prefix>/tls for nginx.
# LN_GATEWAY_ADDRESS: the address it listens on (default 127.0.0.1).
start_gateway_url() {
	local prefix="$1" port="$2" url="$3" i
	local multiarch address="${LN_GATEWAY_ADDRESS:-127.0.0.1}" listen tls="" scheme
	local timeout="${LN_REQUEST_TIMEOUT:-$LN_REQUEST_TIMEOUT_DEFAULT}" total="${LN_GATEWAY_CONNECTIONS:-}"
	local workers per_worker lua conf log_from key_concurrency
	local per_address="${LN_GATEWAY_CONNECTIONS_PER_ADDRESS:-$LN_GATEWAY_CONNECTIONS_PER_ADDRESS_DEFAULT}"
	check_gateway_settings "$prefix" "$port"
	listen="$address:$port"
	# where Debian keeps Lua's C modules (cjson.so): /usr/lib/<multiarch>/lua/5.1
	multiarch="$(gcc -print-multiarch 2>/dev/null)" ||
		multiarch="$(find /usr/lib -maxdepth 4 -path '*/lua/5.1/cjson.so' | sed -n 's|^/usr/lib/\([^/]*\)/lua/.*|\1|p' | head -n 1)"
	[[ "$multiarch" =~ ^[A-Za-z0-9_-]*$ ]] || die "unexpected multiarch name '$multiarch'"
	scheme="$(gateway_scheme)"
	ensure_gateway_user
	check_gateway_folders "$prefix"
	mkdir -p "$prefix"
	as_gateway test -x "$(dirname "$prefix")" ||
		die "the OS user $LN_GATEWAY_USER, which runs the gateway, cannot reach $(dirname "$prefix") (a folder on the way is closed to it)"
	adopt_gateway_prefix "$prefix"
	[[ -n "$total" ]] || total="$(default_gateway_connections "$url")"
	# one worker per core, each with an equal share of the connections
	workers="$(nproc)"
	((workers <= total)) || workers="$total"
	per_worker=$((total / workers))
	# a key's requests in flight: a quarter of the database connections,
	# so that three other keys at their most still leave some
	key_concurrency="${LN_KEY_CONCURRENCY:-$((total / 4))}"
	((key_concurrency >= 1)) || key_concurrency=1
	# its logs name every request's path and key id: its OS user's alone
	as_gateway chmod 700 "$prefix"
	gateway_dir "$prefix/tmp" 700
	# the URL may hold a password: the workers' user alone reads it
	printf '%s\n' "$url" | gateway_file "$prefix/database_url" 600
	gateway_read_settings "$prefix" "$per_worker"
	gateway_open_files "$prefix" "$per_worker"
	# nginx's user may not be able to read the clone (in /root or a
	# mode-700 folder): it loads a copy of the Lua code from the prefix,
	# refreshed on every start or reload.
	gateway_dir "$prefix/lua" 755
	for lua in "$ROOT"/gateway/*.lua; do
		gateway_file "$prefix/lua/${lua##*/}" 644 <"$lua"
	done
	if [[ "$scheme" == https ]]; then
		[[ -f "${LN_GATEWAY_TLS_CERT:-}" && -r "$LN_GATEWAY_TLS_CERT" ]] ||
			die "LN_GATEWAY_TLS_CERT must name a readable certificate file (PEM), got '${LN_GATEWAY_TLS_CERT:-}'"
		[[ -f "${LN_GATEWAY_TLS_KEY:-}" && -r "$LN_GATEWAY_TLS_KEY" ]] ||
			die "LN_GATEWAY_TLS_KEY must name a readable private key file (PEM), got '${LN_GATEWAY_TLS_KEY:-}'"
		gateway_dir "$prefix/tls" 700
		gateway_file "$prefix/tls/cert.pem" 644 <"$LN_GATEWAY_TLS_CERT"
		gateway_file "$prefix/tls/key.pem" 600 <"$LN_GATEWAY_TLS_KEY"
		listen+=" ssl"
		tls="ssl_certificate $prefix/tls/cert.pem; ssl_certificate_key $prefix/tls/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
	else
		as_gateway rm -rf "$prefix/tls"
	fi
	# written whole or not at all (gateway_file): a sed that fails leaves
	# the last nginx.conf, never an empty one
	conf="$(sed -e "s|@PREFIX@|$prefix|g" -e "s|@GATEWAY_DIR@|$prefix/lua|g" \
		-e "s|@MULTIARCH@|$multiarch|g" -e "s|@LISTEN@|$listen|g" -e "s|@TLS@|$tls|g" \
		-e "s|@WORKERS@|$workers|g" -e "s|@CONNECTIONS@|$per_worker|g" -e "s|@TIMEOUT@|$timeout|g" \
		-e "s|@READ_THREADS@|$GW_READ_THREADS|g" -e "s|@THREAD_VMS@|$((per_worker + GW_READ_THREADS))|g" \
		-e "s|@NOFILE@|$GW_NOFILE|g" -e "s|@WORKER_CONNECTIONS@|$GW_WORKER_CONNECTIONS|g" \
		-e "s|@PER_ADDRESS@|$per_address|g" -e "s|@KEY_CONCURRENCY@|$key_concurrency|g" \
		-e "s|@READ_MAX_LAG@|$GW_READ_MAX_LAG|g" \
		-e "s|@HOSTS@|$GATEWAY_HOSTS|g" \
		-e "s|@ORIGINS@|$GATEWAY_ORIGINS|g" "$ROOT/gateway/nginx.conf.in")" ||
		die "could not write $prefix/nginx.conf from $ROOT/gateway/nginx.conf.in"
	[[ -n "$conf" ]] || die "could not write $prefix/nginx.conf from $ROOT/gateway/nginx.conf.in"
	printf '%s\n' "$conf" | gateway_file "$prefix/nginx.conf" 600
	if gateway_running "$prefix"; then
		say "reloading gateway on $scheme://$address:$port ($workers workers, $per_worker database connections each, $GW_WORKER_CONNECTIONS clients a worker, requests time out after $timeout s)"
		as_gateway nginx -q -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" -s reload
		return 0
	fi
	if [[ "$address" == 127.0.0.1 || "$address" == 0.0.0.0 ]] && port_in_use "$port"; then
		die "port $port on 127.0.0.1 is already in use; set another"
	fi
	say "starting gateway on $scheme://$address:$port ($workers workers, $per_worker database connections each, $GW_WORKER_CONNECTIONS clients a worker, requests time out after $timeout s; log $prefix/error.log)"
	# what this start writes to the log (nginx appends to it), read as the
	# gateway's user, whose folder it is
	log_from=$(($(as_gateway stat -c %s "$prefix/error.log" 2>/dev/null || echo 0) + 1))
	as_gateway nginx -q -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" || {
		as_gateway tail -c "+$log_from" "$prefix/error.log" | tail -n 20 >&2 || true
		die "gateway failed to start; see $prefix/error.log"
	}
	# port_in_use asks about 127.0.0.1, which another address does not answer:
	# there, a running master is all that can be seen from here
	for ((i = 0; i < 50; i++)); do
		if [[ "$address" == 127.0.0.1 || "$address" == 0.0.0.0 ]]; then
			port_in_use "$port" && return 0
		else
			gateway_running "$prefix" && return 0
		fi
		sleep 0.1
	done
	as_gateway tail -c "+$log_from" "$prefix/error.log" | tail -n 20 >&2 || true
	die "gateway does not listen on $address:$port; see $prefix/error.log"
}

# stop_gateway <prefix>: a graceful stop (QUIT, what nginx -s quit sends:
# the workers finish their requests), without parsing nginx.conf again (a
# broken configuration or module stops no gateway).  The signal is sent by
# the OS user whose the prefix is, who alone writes nginx.pid (root would
# send it to whatever pid that user wrote there): the gateway's, or postgres
# for a prefix an earlier version made.
stop_gateway() {
	local prefix="$1" pid
	if pid="$(gateway_pid "$prefix")"; then
		say "stopping gateway in $prefix"
		# shellcheck disable=SC2016 # expanded by that shell
		as_prefix_owner "$prefix" sh -c 'kill -QUIT "$1"' sh "$pid" || true
	fi
}

# check_gateway_folders <prefix>: root makes the gateway's folder in LN_DATA
# and hands it over: neither may be a link (root would make or hand over
# what it leads to), nor may LN_DATA be open to others' writes (another
# user could put a link there in its place), unless sticky as /tmp is.
check_gateway_folders() {
	local prefix="$1" data mode
	data="$(dirname "$prefix")"
	[[ ! -L "$data" ]] || die "LN_DATA ($data) is a symbolic link; set LN_DATA to the folder it leads to"
	[[ ! -L "$prefix" ]] || die "the gateway's folder $prefix is a symbolic link; move it away and run again"
	if [[ -d "$data" ]]; then
		mode="$(stat -c %a "$data")"
		if ((8#$mode & 8#022)) && ! ((8#$mode & 8#1000)); then
			die "LN_DATA ($data) may be written by users other than its owner (mode $mode): others could put links there; chmod go-w $data, or set LN_DATA to another folder"
		fi
	fi
}

# adopt_gateway_prefix <prefix>: a prefix an earlier version made is
# postgres's (its nginx ran as postgres, with logs and temporary folders
# there).  Its gateway, if it runs, stops first (a reload would keep it
# postgres's; it must remove its pid file while it still may), then all of
# the prefix becomes the gateway user's.  An empty one of root's (made
# just now) becomes the gateway user's too; one of any other user's, or
# root's with things in it, is not ours to hand over: this stops.  Once
# the prefix is that user's, nothing here follows what that user put in it.
adopt_gateway_prefix() {
	local prefix="$1" owner user i
	owner="$(stat -c %U "$prefix")"
	[[ "$owner" != "$LN_GATEWAY_USER" ]] || return 0
	if [[ "$owner" == root && -z "$(ls -A "$prefix")" ]]; then
		chown -h "$LN_GATEWAY_USER:$LN_GATEWAY_USER" "$prefix"
		return 0
	fi
	[[ "$owner" == postgres ]] ||
		die "the gateway's folder $prefix is the OS user $owner's, and not empty: this script hands over to $LN_GATEWAY_USER only a folder an earlier version made (postgres's) or an empty one; move it away (or chown -R $LN_GATEWAY_USER: it) and run again"
	say "the gateway in $prefix ran as OS user postgres; from now on it runs as $LN_GATEWAY_USER${GATEWAY_URL_NAME:+: files $GATEWAY_URL_NAME names (passfile, sslrootcert, sslcert, sslkey) must now be readable by $LN_GATEWAY_USER}"
	if gateway_running "$prefix"; then
		user="$(gateway_user "$prefix")"
		say "restarting the gateway in $prefix, which runs as OS user ${user:-?}, as $LN_GATEWAY_USER"
		stop_gateway "$prefix" >/dev/null
		for ((i = 0; i < 600; i++)); do
			gateway_running "$prefix" || break
			sleep 0.1
		done
		gateway_running "$prefix" && die "the gateway in $prefix does not stop; stop it (scripts/stop.sh) and run again"
	fi
	chown -R "$LN_GATEWAY_USER:$LN_GATEWAY_USER" "$prefix"
}
