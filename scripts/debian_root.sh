#!/usr/bin/env bash
# A Debian root of another release, to build, run and test lance_namespace
# with the PostgreSQL that release ships, beside this machine's own.
#
#   scripts/debian_root.sh make <suite>     make the root if missing or older than a week
#   scripts/debian_root.sh run <suite> [--share <dir>]... <cmd>...
#                                           run <cmd> in it (as root, in a chroot) in a copy
#                                           of this source tree, /srv/lance_namespace there;
#                                           each <dir> of this machine is seen at the same
#                                           path in the root for the run
#
# <suite> is a Debian release's name: trixie (Debian 13, PostgreSQL 17) or
# sid (unstable, PostgreSQL 18).  debootstrap (installed here if missing)
# makes the root from the archive this machine's apt uses, under
# LN_ROOTS_DIR (default /var/cache/lance_namespace/roots), where it is kept
# between runs and made anew when it is missing or a week old.  Nothing is
# installed in it beyond Debian's minimal base: the project's own scripts
# install what they need there, as on a fresh machine of that release.
#
# A run mounts /proc, /sys and /dev into the root and takes them away again
# on every exit path.  The root shares this machine's network: a server in it
# listens on this machine's ports.  Runs of one root take turns (a lock).
# Variables named LN_* and CI pass into the root.
#
# Runs as root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
ROOTS_DIR="${LN_ROOTS_DIR:-/var/cache/lance_namespace/roots}"
MAX_AGE_DAYS=7
SRC_IN_ROOT=/srv/lance_namespace
STAMP=etc/lance_namespace-root

say() { printf 'debian_root: %s\n' "$*"; }
die() {
	printf 'debian_root: error: %s\n' "$*" >&2
	exit 1
}

# The archive this machine's apt uses for Debian (not its security archive),
# from the one-line or the deb822 sources; Debian's own otherwise.
debian_mirror() {
	local uri
	uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -n 's|^deb \(\[[^]]*\] \)\{0,1\}\([a-z]*://[^ ]*/debian\)/\{0,1\} .*|\2|p' | head -n 1)"
	if [[ -z "$uri" ]]; then
		uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			sed -n 's|^URIs: *\([a-z]*://[^ ]*/debian\)/\{0,1\}\( .*\)\{0,1\}$|\1|p' | head -n 1)"
	fi
	echo "${uri:-http://deb.debian.org/debian}"
}

# True when a process runs with its root directory inside <dir> (a catalog
# that scripts/run.sh left running there).
root_in_use() {
	local dir="$1" p
	for p in /proc/[0-9]*; do
		[[ "$(readlink "$p/root" 2>/dev/null)" == "$dir" ]] && return 0
	done
	return 1
}

# The processes that run with their root directory <dir>, one per line.
processes_in() {
	local dir="$1" p
	for p in /proc/[0-9]*; do
		[[ "$(readlink "$p/root" 2>/dev/null)" == "$dir" ]] &&
			printf '%s (%s)\n' "${p#/proc/}" "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-60)"
	done
	return 0
}

# Unmount everything below <dir>, deepest first.  Each mount was made
# private to the root (see mount_root), so nothing reaches this machine's
# own /dev or /sys; a mount still busy is detached lazily.
unmount_below() {
	local dir="$1" target
	while read -r target; do
		umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null ||
			say "warning: could not unmount $target"
	done < <(awk -v d="$dir/" 'index($2 "/", d) == 1 { print $2 }' /proc/self/mounts | sort -r)
}

# remove_root <dir>: a root (or a half-made one) and all in it, once
# nothing is mounted below it: never this machine's /dev, /sys or /proc.
remove_root() {
	local dir="$1"
	[[ -e "$dir" ]] || return 0
	unmount_below "$dir"
	if awk -v d="$dir/" 'index($2 "/", d) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
		die "something is still mounted below $dir; not removing it"
	fi
	rm -rf --one-file-system -- "$dir"
}

mount_root() {
	local dir="$1"
	mount -t proc proc "$dir/proc"
	# rbind brings /dev/pts and /dev/shm (PostgreSQL's shared memory) along;
	# rslave keeps what happens in the root from reaching this machine's.
	mount --rbind /dev "$dir/dev"
	mount --make-rslave "$dir/dev"
	mount --rbind /sys "$dir/sys"
	mount --make-rslave "$dir/sys"
}

# age_days <root>: whole days since the root was made (a root without its
# stamp, one whose making stopped halfway, is as old as can be).
age_days() {
	local made
	made="$(sed -n 's/^made \([0-9]*\)$/\1/p' "$1/$STAMP" 2>/dev/null || true)"
	[[ -n "$made" ]] || {
		echo 99999
		return
	}
	echo $((($(date +%s) - made) / 86400))
}

# make_root <suite>: debootstrap a new root beside the old one, then put it
# in its place, so a root is always either whole or absent.
make_root() {
	local suite="$1" dir="$ROOTS_DIR/$1" new="$ROOTS_DIR/.$1.new" mirror start=$SECONDS
	if ! command -v debootstrap >/dev/null; then
		say "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >/dev/null ||
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap; }
	fi
	mirror="$(debian_mirror)"
	remove_root "$new"
	say "making a Debian $suite root in $dir from $mirror (debootstrap)"
	if ! debootstrap --variant=minbase "$suite" "$new" "$mirror" >"$ROOTS_DIR/.$suite.log" 2>&1; then
		tail -n 20 "$ROOTS_DIR/.$suite.log" >&2
		remove_root "$new"
		die "debootstrap $suite failed; its log: $ROOTS_DIR/.$suite.log"
	fi
	unmount_below "$new"
	# Services that packages start on install stay stopped: a server the
	# root starts is the tests' own, on a port of their choosing.
	printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
	chmod 755 "$new/usr/sbin/policy-rc.d"
	printf 'deb %s %s main\n' "$mirror" "$suite" >"$new/etc/apt/sources.list"
	# a root installs each package once: their downloads need not be kept
	printf 'APT::Keep-Downloaded-Packages "false";\n' >"$new/etc/apt/apt.conf.d/99lance-namespace-no-archives"
	if [[ "$suite" == sid ]]; then
		# The archive's snapshot of sid may carry a Release file past
		# its validity date: this root alone accepts it.
		printf 'Acquire::Check-Valid-Until "false";\n' >"$new/etc/apt/apt.conf.d/99lance-namespace-valid-until"
	fi
	printf 'made %s\nsuite %s\nmirror %s\n' "$(date +%s)" "$suite" "$mirror" >"$new/$STAMP"
	remove_root "$dir"
	mv "$new" "$dir"
	say "made the $suite root in $((SECONDS - start)) s"
}

# ensure_root <suite>: the root, made if missing or a week old.  A root in
# which something still runs is kept, whatever its age.
ensure_root() {
	local suite="$1" dir="$ROOTS_DIR/$1" age
	age="$(age_days "$dir")"
	if [[ -d "$dir" ]] && ((age < MAX_AGE_DAYS)); then
		return 0
	fi
	if [[ -d "$dir" ]] && root_in_use "$dir"; then
		say "warning: the $suite root is $age days old but something runs in it; keeping it"
		return 0
	fi
	make_root "$suite"
}

# copy_tree <dest>: this source tree without its build outputs and local
# state (git's view: tracked and untracked files that .gitignore keeps),
# over what <dest> held, except a catalog's state in .data.
copy_tree() {
	local dest="$1"
	mkdir -p "$dest"
	find "$dest" -mindepth 1 -maxdepth 1 ! -name .data -exec rm -rf --one-file-system {} +
	if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$ROOT" ls-files -z -c -o --exclude-standard |
			(cd "$ROOT" && while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done) |
			tar -C "$ROOT" --null -T - -cf - | tar -C "$dest" -xf -
	else
		tar -C "$ROOT" --exclude=.git --exclude=.data --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
			--exclude=node_modules --exclude=results --exclude=output_iso --exclude=tmp_check -cf - . |
			tar -C "$dest" -xf -
	fi
}

# trust_local_authorities <root>: the certificate authorities this machine
# adds to Debian's (/usr/local/share/ca-certificates: a proxy's, a
# company's) are the root's too, so that npm and curl there reach what they
# reach here.  ca-certificates, once the root has it, puts them in its
# bundle; Node reads that bundle through NODE_EXTRA_CA_CERTS (see run).
LOCAL_CAS=/usr/local/share/ca-certificates
trust_local_authorities() {
	local dir="$1"
	[[ -d "$LOCAL_CAS" ]] || return 0
	diff -rq "$LOCAL_CAS" "$dir$LOCAL_CAS" >/dev/null 2>&1 && return 0
	rm -rf "$dir$LOCAL_CAS"
	mkdir -p "$dir$LOCAL_CAS"
	cp -RL "$LOCAL_CAS/." "$dir$LOCAL_CAS/"
	if [[ -x "$dir/usr/sbin/update-ca-certificates" ]]; then
		chroot "$dir" /usr/sbin/update-ca-certificates >/dev/null 2>&1 ||
			say "warning: update-ca-certificates failed in $dir"
	fi
}

RUN_DIR=""
MADE_DIRS=() # the mount points of the shared folders that a run made in the root
finish_run() {
	local rc=$? i
	trap - EXIT
	[[ -n "$RUN_DIR" ]] && unmount_below "$RUN_DIR"
	for ((i = ${#MADE_DIRS[@]} - 1; i >= 0; i--)); do
		rmdir "${MADE_DIRS[i]}" 2>/dev/null || true
	done
	exit "$rc"
}

# run_in_root <suite> [--share <dir>]... <cmd>...
run_in_root() {
	local suite="$1" dir="$ROOTS_DIR/$1" name share
	local -a shares=()
	shift
	while [[ "${1:-}" == --share ]]; do
		[[ -d "${2:-}" ]] || die "--share: no folder ${2:-}"
		shares+=("$(realpath -- "$2")")
		shift 2
	done
	(($# > 0)) || die "run: no command"
	copy_tree "$dir$SRC_IN_ROOT"
	# name resolution as on this machine, for apt and npm
	cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
	cp -L /etc/hosts "$dir/etc/hosts"
	trust_local_authorities "$dir"
	RUN_DIR="$dir"
	trap finish_run EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	unmount_below "$dir"
	mount_root "$dir"
	for share in "${shares[@]}"; do
		mapfile -t -O "${#MADE_DIRS[@]}" MADE_DIRS < <(LC_ALL=C mkdir -pv -- "$dir$share" | sed -n "s/^mkdir: created directory '\(.*\)'$/\1/p")
		mount --bind "$share" "$dir$share"
	done
	local -a env=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
	for name in $(compgen -e); do
		[[ "$name" == LN_* || "$name" == CI ]] && env+=("$name=${!name}")
	done
	[[ -n "${TERM:-}" ]] && env+=("TERM=$TERM")
	# Debian's bundle, with this machine's own authorities (Node has its own list)
	env+=(NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
	local rc=0
	# (not holding the root's lock: what the command leaves running, a
	# catalog that scripts/run.sh started, must not keep the next run out)
	# shellcheck disable=SC2016 # $0 and $@ are the inner shell's
	chroot "$dir" /usr/bin/env -i "${env[@]}" /bin/bash -c 'cd "$0" && exec "$@"' "$SRC_IN_ROOT" "$@" 9>&- || rc=$?
	if root_in_use "$dir"; then
		say "note: still running in the $suite root: $(processes_in "$dir" | tr '\n' ' ')"
	fi
	return "$rc"
}

main() {
	local cmd="${1:-}" suite="${2:-}"
	[[ $EUID -eq 0 ]] || die "must run as root"
	if [[ "$cmd" != make && "$cmd" != run ]] || [[ -z "$suite" ]]; then
		die "usage: $0 make <suite> | run <suite> [--share <dir>]... <command>..."
	fi
	[[ "$suite" =~ ^[a-z]+$ ]] || die "a suite is a Debian release's name (trixie, sid), got '$suite'"
	shift 2
	mkdir -p "$ROOTS_DIR"
	# one user of a root at a time: making it, or a run in it
	exec 9>"$ROOTS_DIR/.$suite.lock"
	flock 9
	ensure_root "$suite"
	if [[ "$cmd" == make ]]; then
		echo "$ROOTS_DIR/$suite"
	else
		run_in_root "$suite" "$@"
	fi
}

main "$@"
