#!/usr/bin/env bash
# A Debian root of another release, to build, run and test lance_namespace
# with the PostgreSQL that release ships, beside this machine's own.
#
#   scripts/debian_root.sh make <suite>     make the release's base if it is missing, incomplete,
#                                           a week old or caches other packages than the
#                                           scripts install; print its folder
#   scripts/debian_root.sh run <suite> [--share <dir>]... <cmd>...
#                                           run <cmd> (as root, in a chroot) in a throwaway
#                                           root over the base, in a copy of this source
#                                           tree, /srv/lance_namespace there; each <dir> of
#                                           this machine is seen at the same path in the root
#
# <suite> is a Debian release's name: trixie (Debian 13, PostgreSQL 17) or
# sid (unstable, PostgreSQL 18).
#
# The base, kept under LN_BASES_DIR (default /var/cache/lance_namespace/bases)
# and made anew when a week old, is what debootstrap makes from the archive
# this machine's apt uses (Debian's minimal base), with apt's lists of that
# day and the .deb files of what the project's scripts install there
# (scripts/common.sh: LN_PACKAGES for the release's PostgreSQL, and
# LN_TEST_PACKAGES), downloaded but not installed.  It is made in
# <suite>.new and renamed to <suite> once complete, with its stamp: a base
# without one is made anew.
#
# A run never changes the base: it runs in an overlay of it (a copy, where
# the kernel has no overlayfs) that is thrown away at the end, however the
# run ends.  In it, as on a fresh machine of that release, the scripts
# install everything they need, from the cached .deb files (LN_APT_OFFLINE=1:
# no apt-get update, no download: a package missing from the cache fails).
# npm's cache (/root/.npm) is kept beside the bases: npm ci checks every
# package against the lock file.
#
# A run mounts /proc, /sys and /dev into the root and takes them away again
# on every exit path.  The root shares this machine's network: a server in it
# listens on this machine's ports.  Runs of one release take turns (a lock).
# Variables named LN_* and CI pass into the root.
#
# Runs as root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BASES_DIR="${LN_BASES_DIR:-/var/cache/lance_namespace/bases}"
MAX_AGE_DAYS=7
SRC_IN_ROOT=/srv/lance_namespace
STAMP=etc/lance_namespace-base          # written last: a base without it is incomplete
PACKAGES_LIST=etc/lance_namespace-packages # what the base's apt cache holds .deb files for
NPM_CACHE="$BASES_DIR/npm"
# what make_base puts in a base: a base of another format is made anew
BASE_FORMAT=2
CHROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

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

# age_days <base>: whole days since the base was made (a base without its
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

# packages_of <root>: the packages the scripts of this tree install in
# <root>, a root of a release with apt's lists (scripts/common.sh, as
# install_deps and scripts/test.sh's install_node pick them), sorted.
packages_of() {
	local dir="$1"
	# shellcheck disable=SC2016 # the root's shell expands them
	{
		cat "$ROOT/scripts/common.sh"
		printf '\nprintf "%%s\\n" "${LN_PACKAGES[@]}" "${LN_TEST_PACKAGES[@]}" | LC_ALL=C sort -u\n'
	} | chroot "$dir" /usr/bin/env -i PATH="$CHROOT_PATH" /bin/bash -s
}

# make_base <suite>: debootstrap a new base in <suite>.new, give it apt's
# lists and the .deb files of what the scripts install there, then put it in
# the old one's place with its stamp, so a base is always either complete or
# absent.
make_base() {
	local suite="$1" dir="$BASES_DIR/$1" new="$BASES_DIR/$1.new" log="$BASES_DIR/$1.log" mirror start=$SECONDS
	local -a packages
	if ! command -v debootstrap >/dev/null; then
		say "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >/dev/null ||
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap; }
	fi
	mirror="$(debian_mirror)"
	remove_root "$new"
	say "making a Debian $suite base in $dir from $mirror (debootstrap)"
	if ! debootstrap --variant=minbase "$suite" "$new" "$mirror" >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		remove_root "$new"
		die "debootstrap $suite failed; its log: $log"
	fi
	unmount_below "$new"
	# Services that packages start on install stay stopped: a server the
	# root starts is the tests' own, on a port of their choosing.
	printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
	chmod 755 "$new/usr/sbin/policy-rc.d"
	printf 'deb %s %s main\n' "$mirror" "$suite" >"$new/etc/apt/sources.list"
	# A run's root is thrown away: dpkg need not sync every file it unpacks.
	printf 'force-unsafe-io\n' >"$new/etc/dpkg/dpkg.cfg.d/99lance-namespace-unsafe-io"
	# the downloaded .deb files stay in the base's cache once installed
	printf 'APT::Keep-Downloaded-Packages "true";\n' >"$new/etc/apt/apt.conf.d/99lance-namespace-keep-packages"
	if [[ "$suite" == sid ]]; then
		# The archive's snapshot of sid may carry a Release file past
		# its validity date: this root alone accepts it.
		printf 'Acquire::Check-Valid-Until "false";\n' >"$new/etc/apt/apt.conf.d/99lance-namespace-valid-until"
	fi
	cp -L /etc/resolv.conf "$new/etc/resolv.conf"
	cp -L /etc/hosts "$new/etc/hosts"
	say "downloading apt's lists and the packages the scripts install on $suite"
	if ! chroot "$new" /usr/bin/env -i PATH="$CHROOT_PATH" apt-get update >>"$log" 2>&1; then
		tail -n 20 "$log" >&2
		remove_root "$new"
		die "apt-get update in the $suite base failed; its log: $log"
	fi
	mapfile -t packages < <(packages_of "$new")
	# (a name the release lacks fails here, as install_deps would)
	if ((${#packages[@]} == 0)) ||
		! chroot "$new" /usr/bin/env -i PATH="$CHROOT_PATH" DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends --download-only "${packages[@]}" >>"$log" 2>&1; then
		tail -n 20 "$log" >&2
		remove_root "$new"
		die "downloading ${packages[*]} in the $suite base failed; its log: $log"
	fi
	printf '%s\n' "${packages[@]}" >"$new/$PACKAGES_LIST"
	printf 'made %s\nsuite %s\nmirror %s\nformat %s\n' "$(date +%s)" "$suite" "$mirror" "$BASE_FORMAT" >"$new/$STAMP"
	remove_root "$dir"
	mv "$new" "$dir"
	say "made the $suite base in $((SECONDS - start)) s ($(du -sh "$dir/var/cache/apt/archives" | cut -f1) of packages)"
}

# ensure_base <suite>: the base, made anew if missing, incomplete, a week
# old, of another format, or when this tree's scripts install other packages
# than it caches.
ensure_base() {
	local suite="$1" dir="$BASES_DIR/$1" age
	age="$(age_days "$dir")"
	if [[ -d "$dir" ]] && ((age < MAX_AGE_DAYS)) &&
		[[ "$(sed -n 's/^format //p' "$dir/$STAMP" 2>/dev/null)" == "$BASE_FORMAT" ]] &&
		[[ "$(packages_of "$dir")" == "$(cat "$dir/$PACKAGES_LIST" 2>/dev/null)" ]]; then
		return 0
	fi
	make_base "$suite"
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

# stop_processes_in <dir>: end what still runs with its root in <dir> (a
# catalog the command left running), by process id: TERM, then KILL after
# ten seconds.
stop_processes_in() {
	local dir="$1" i p
	for ((i = 0; i < 20; i++)); do
		root_in_use "$dir" || return 0
		for p in /proc/[0-9]*; do
			[[ "$(readlink "$p/root" 2>/dev/null)" == "$dir" ]] || continue
			kill "-$([[ $i -lt 19 ]] && echo TERM || echo KILL)" "${p#/proc/}" 2>/dev/null || true
		done
		sleep 0.5
	done
}

# The throwaway root of a run: RUN_DIR holds upper/ and work/ (the overlay's)
# and root/, where the run sees the base.
RUN_DIR=""
finish_run() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n "$RUN_DIR" ]]; then
		if root_in_use "$RUN_DIR/root"; then
			say "stopping what still runs in the throwaway root: $(processes_in "$RUN_DIR/root" | tr '\n' ' ')"
			stop_processes_in "$RUN_DIR/root"
		fi
		# /proc, /dev, /sys and the shared folders first, the overlay last
		unmount_below "$RUN_DIR"
		remove_root "$RUN_DIR"
	fi
	exit "$rc"
}

# remove_stale_runs <suite>: the throwaway roots of runs that were killed
# before they could remove theirs (the suite's lock is ours: none runs).
remove_stale_runs() {
	local suite="$1" dir
	for dir in "$BASES_DIR/.run-$suite."*; do
		[[ -d "$dir" ]] || continue
		if root_in_use "$dir/root"; then
			say "warning: something still runs in $dir, an old run's root; keeping it"
			continue
		fi
		say "removing $dir, the root of a run that ended before removing it"
		remove_root "$dir"
	done
}

# make_throwaway <base> <dir>: <dir>/root, the base as the run sees it: an
# overlay whose changes go to <dir>/upper, or a copy where the kernel has no
# overlayfs.
make_throwaway() {
	local base="$1" dir="$2"
	mkdir "$dir/upper" "$dir/work" "$dir/root"
	if mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/work" "$dir/root" 2>/dev/null; then
		return 0
	fi
	say "no overlayfs here: copying the base"
	cp -a --reflink=auto "$base/." "$dir/root/"
}

# run_in_root <suite> [--share <dir>]... <cmd>...
run_in_root() {
	local suite="$1" base="$BASES_DIR/$1" dir name share
	local -a shares=()
	shift
	while [[ "${1:-}" == --share ]]; do
		[[ -d "${2:-}" ]] || die "--share: no folder ${2:-}"
		shares+=("$(realpath -- "$2")")
		shift 2
	done
	(($# > 0)) || die "run: no command"
	remove_stale_runs "$suite"
	trap finish_run EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	RUN_DIR="$(mktemp -d "$BASES_DIR/.run-$suite.XXXXXX")"
	make_throwaway "$base" "$RUN_DIR"
	dir="$RUN_DIR/root"
	copy_tree "$dir$SRC_IN_ROOT"
	# name resolution as on this machine, for npm
	cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
	cp -L /etc/hosts "$dir/etc/hosts"
	trust_local_authorities "$dir"
	mount_root "$dir"
	for share in "${shares[@]}"; do
		mkdir -p -- "$dir$share"
		mount --bind "$share" "$dir$share"
	done
	mkdir -p "$NPM_CACHE" "$dir/root/.npm"
	mount --bind "$NPM_CACHE" "$dir/root/.npm"
	local -a env=(HOME=/root LANG=C.UTF-8 PATH="$CHROOT_PATH")
	for name in $(compgen -e); do
		[[ "$name" == LN_* || "$name" == CI ]] && env+=("$name=${!name}")
	done
	[[ -n "${TERM:-}" ]] && env+=("TERM=$TERM")
	# Debian's bundle, with this machine's own authorities (Node has its own list)
	env+=(NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
	# packages from the base's cache only
	env+=(LN_APT_OFFLINE=1)
	local rc=0
	# shellcheck disable=SC2016 # $0 and $@ are the inner shell's
	chroot "$dir" /usr/bin/env -i "${env[@]}" /bin/bash -c 'cd "$0" && exec "$@"' "$SRC_IN_ROOT" "$@" 9>&- || rc=$?
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
	mkdir -p "$BASES_DIR"
	# one user of a base at a time: making it, or a run over it (the
	# overlay's lower layer must not change under it)
	exec 9>"$BASES_DIR/.$suite.lock"
	flock 9
	ensure_base "$suite"
	if [[ "$cmd" == make ]]; then
		echo "$BASES_DIR/$suite"
	else
		run_in_root "$suite" "$@"
	fi
}

main "$@"
