#!/usr/bin/env bash
# README's test command on a fresh machine, as a new user would run it: a
# new Debian 12 root (debootstrap --variant=minbase, the way scripts/roots.sh
# makes the 17/18/19 roots) with nothing added but PostgreSQL 15, git,
# ca-certificates and sudo (no recommended packages: minbase has no `patch`,
# no `curl`, no compiler); a clone of this repository's HEAD in /root/src
# (a directory the postgres OS user cannot enter) with ../shared copied
# beside it, read-only, as CI has it; then `CI=true bash .ci/run` there as
# root. Nothing of this machine's caches is seen: the roots of 17/18/19 and
# Citus are built inside the new root, from scratch.
#
#   bash scripts/fresh.sh            build, run, print the counts and the time,
#                                    remove the root; exits with the run's status
#   bash scripts/fresh.sh --keep     leave the root (its path is printed)
#
# Needs root (debootstrap, chroot, mount namespaces) and the Debian registry.
# Takes about as long as the test command on a fresh machine (30 minutes on
# 2 cores). Run it before resolving any issue that adds a dependency, a
# suite or a background build (docs/testing.md).
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/roots.sh

keep=no
for arg in "$@"; do
    case $arg in
        --keep) keep=yes ;;
        *) echo "usage: bash scripts/fresh.sh [--keep]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "scripts/fresh.sh needs root (debootstrap, chroot)" >&2; exit 2; }
repo=$PWD
shared=""
[ -d ../shared ] && shared=$(cd ../shared && pwd)
[ -n "$shared" ] || log "no ../shared next to this clone: the Citus suite will be skipped in the fresh root"
git rev-parse --verify -q HEAD >/dev/null || { echo "scripts/fresh.sh runs a clone of HEAD: this is no git checkout" >&2; exit 2; }
[ -z "$(git status --porcelain --untracked-files=no)" ] || log "uncommitted changes are not in the clone: it tests HEAD ($(git rev-parse --short HEAD))"

for p in /usr/sbin/debootstrap:debootstrap /usr/bin/unshare:util-linux; do
    [ -e "${p%%:*}" ] || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${p#*:}" >/dev/null ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${p#*:}" >/dev/null; } || exit 2
done

base=$(mktemp -d "${SHARDID_FRESH_DIR:-/var/tmp}/shardid-fresh.XXXXXX")
root=$base/root
logf=$base/run.log
started=$SECONDS

# Every process still running in the root (servers a suite left behind), ended.
end_root_processes() {
    local pid again
    for again in 1 2 3; do
        for pid in $(ls /proc | grep -E '^[0-9]+$'); do
            [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] && kill -9 "$pid" 2>/dev/null
        done
        sleep 1
    done
}
fresh_cleanup() {
    end_root_processes
    if [ "$keep" = yes ]; then
        log "the root stays in $root (log: $logf)"
    else
        rm -rf "$base"
    fi
}
trap fresh_cleanup EXIT

log "a new Debian bookworm root (minbase) in $root"
debootstrap --variant=minbase bookworm "$root" "$DEBIAN_MIRROR" >"$base/debootstrap.log" 2>&1 || {
    tail -20 "$base/debootstrap.log" >&2; exit 2; }
# The sources of an installed Debian 12: updates and security too (PostgreSQL
# 15.20, which Citus' vendored patch is for, comes from bookworm-security).
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $DEBIAN_MIRROR bookworm main
deb $DEBIAN_MIRROR bookworm-updates main
deb ${DEBIAN_SECURITY_MIRROR:-$DEBIAN_MIRROR-security} bookworm-security main
SOURCES
# As on a machine with no init system: installing postgresql-15 starts no server.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

# fresh_run CMD...: CMD inside the root as root, with /proc, /sys (and the
# machine's control groups, as a machine has them: the CPU column), /dev/pts
# and a /dev/shm of its own; the mounts vanish with the command. The root
# is bind-mounted onto itself first, so that its / is a mount point as on
# a machine: scripts/roots.sh's own namespaces (unshare --propagation
# private) refuse a / that is not one.
fresh_run() {
    unshare --mount --propagation private --fork sh -c '
        dir=$1; shift
        mount --bind "$dir" "$dir" &&
        mount -t proc proc "$dir/proc" &&
        mount -t sysfs sysfs "$dir/sys" &&
        { ! mountpoint -q /sys/fs/cgroup || mount --rbind /sys/fs/cgroup "$dir/sys/fs/cgroup"; } &&
        mount -t tmpfs -o mode=1777 tmpfs "$dir/dev/shm" &&
        mount -t devpts -o newinstance,ptmxmode=0666 devpts "$dir/dev/pts" || exit 125
        exec chroot "$dir" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/root LANG=C.UTF-8 TERM=dumb "$@"' sh "$root" "$@"
}

log "installing postgresql-15 git ca-certificates sudo (no recommended packages)"
fresh_run sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 git ca-certificates sudo' \
    >"$base/packages.log" 2>&1 || { tail -20 "$base/packages.log" >&2; exit 2; }

log "cloning $(git rev-parse --short HEAD) into /root/src, ../shared beside it"
git clone -q --no-hardlinks "$repo" "$root/root/src" || exit 2
if [ -n "$shared" ]; then
    cp -a "$shared" "$root/root/shared" && chmod -R a-w "$root/root/shared" || exit 2
fi
chmod 700 "$root/root"

log "CI=true bash .ci/run in the fresh root (log: $logf)"
fresh_run sh -c 'cd /root/src && CI=true bash .ci/run' </dev/null >"$logf" 2>&1
rc=$?
took=$((SECONDS - started))
grep -E '^(FAIL|skipped:)|^== failed:' "$logf" | head -40
counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logf" | tail -1)
echo "fresh root, $(git rev-parse --short HEAD): ${counts:-no count} (exit $rc) in $((took / 60)) min $((took % 60)) s"
# The log outlives the root.
saved=${SHARDID_FRESH_DIR:-/var/tmp}/shardid-fresh-$(date +%Y%m%d-%H%M%S).log
cp "$logf" "$saved" && log "the run's log: $saved"
exit "$rc"
