# Debian roots for the PostgreSQL versions this machine's own Debian does not
# ship: one root per major version, built with debootstrap from the same
# package registry, cached under $SHARDID_ROOTS, rebuilt when missing or when
# its recipe changes. Source it after scripts/lib.sh.
#
#   root_ensure V            build the root for PostgreSQL V unless cached (18
#                            and 19 share one: root_name, root_versions)
#   root_copy_source V       put the working tree at /build/shardid-V in it
#   root_run V CMD...        run CMD inside it as root, with its own /proc,
#                            /dev/shm and /tmp (nothing stays mounted after)
#
# Needs root (debootstrap, chroot, mount namespaces); CI runs as root.

SHARDID_ROOTS=${SHARDID_ROOTS:-/var/cache/shardid-test}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The Debian release that ships each PostgreSQL major version.
root_suite() {
    case $1 in
        15) echo bookworm ;;
        17) echo trixie ;;
        18) echo sid ;;
        19) echo sid ;;  # from experimental, on top of sid (root_sources), in 18's root
        *) return 1 ;;
    esac
}

# The root a version lives in: 18 and 19 share sid's (19 from experimental
# on top of it), the others have one each.
root_name() { case $1 in 18 | 19) echo sid ;; *) echo "$1" ;; esac; }
root_dir() { echo "$SHARDID_ROOTS/pg$(root_name "$1")"; }
# The versions of a root's PostgreSQL servers.
root_versions() { case $(root_name "$1") in sid) echo "18 19" ;; *) echo "$1" ;; esac; }

# Every program the Citus build calls that minbase lacks (patch, for the
# vendored patch) and the libraries Citus links with, whatever its release
# (scripts/citus.sh adds each release's own).
citus_build_deps="patch libicu-dev liblz4-dev libzstd-dev libkrb5-dev libssl-dev libxslt1-dev libpam0g-dev libreadline-dev zlib1g-dev"

# What goes into a root: the server, what builds and packages shardid
# (pg_buildext, debhelper), what its tests use (libpqxx, the TAP framework's
# IPC::Run, libfaketime, on 17 pg_partman, on 15 what README's package
# commands use).
root_packages() {
    local extra="" v servers=""
    # pg_partman 5 for the partitioning tests (trixie ships 5.2), and
    # psycopg2 for the Citus suite's load (test/citus/load.py).
    [ "$1" = 17 ] && extra=" postgresql-17-partman python3-psycopg2"
    [ "$(root_name "$1")" = sid ] && extra=" python3-psycopg2"
    # The README's package commands (mk-build-deps) run on 15's root.
    [ "$1" = 15 ] && extra=" devscripts equivs"
    # Citus 14's build dependencies (scripts/citus.sh), where it is built:
    # installed with the root, so that its build in the background runs no
    # apt beside the package suite's.
    case $(root_name "$1") in 17 | sid) extra+=" $citus_build_deps" ;; esac
    for v in $(root_versions "$1"); do servers+="postgresql-$v postgresql-server-dev-$v "; done
    echo "${servers}postgresql-server-dev-all" \
         "build-essential debhelper dpkg-dev make g++ libpqxx-dev libipc-run-perl faketime procps" \
         "libcurl4-openssl-dev nlohmann-json3-dev$extra"
}

# The recipe a cached root was built from: a different release or mirror
# rebuilds it, a different package list installs what is new.
root_base() { echo "recipe 2; suite $(root_suite "$1")$(root_sources "$1"); mirror $DEBIAN_MIRROR"; }

# Releases a root takes packages from besides its suite: PostgreSQL 19 is
# in experimental only. Everything else comes from the suite; then the
# server alone from experimental (-t experimental for all would pull
# experimental's perl, libc and the rest into the root).
root_sources() { [ "$(root_name "$1")" = sid ] && echo " + experimental"; }
root_install_command() {
    local base=$(root_packages "$1") server="postgresql-19 postgresql-server-dev-19"
    local apt="DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends"
    if [ -n "$(root_sources "$1")" ]; then
        base=$(sed "s/\bpostgresql-19 postgresql-server-dev-19 //" <<<"$base")
        echo "apt-get update -qq && $apt $base && $apt -t experimental $server"
    else
        echo "apt-get update -qq && $apt $base"
    fi
}
root_recipe() { root_base "$1"; echo "packages $(root_packages "$1")"; }

# root_install V DIR: the packages of the recipe, into the root in DIR.
root_install() {
    local log="$SHARDID_ROOTS/packages-$(root_name "$1").log"
    if [ -n "$(root_sources "$1")" ]; then
        echo "deb $DEBIAN_MIRROR experimental main" | as_root tee "$2/etc/apt/sources.list.d/experimental.list" >/dev/null
    fi
    if ! SHARDID_ROOT_OVERRIDE=$2 root_run "$1" sh -c "$(root_install_command "$1")" \
        >"$log" 2>&1; then
        tail -20 "$log" >&2
        return 1
    fi
    as_root sh -c "rm -f '$2'/var/cache/apt/archives/*.deb"
    root_recipe "$1" | as_root tee "$2/.shardid-root" >/dev/null
}

root_ensure() {
    local v=$1 suite dir new
    suite=$(root_suite "$v") || { log "no Debian root is known for PostgreSQL $v"; return 1; }
    dir=$(root_dir "$v")
    if [ -f "$dir/.shardid-root" ] && [ "$(head -1 "$dir/.shardid-root")" = "$(root_base "$v")" ]; then
        [ "$(cat "$dir/.shardid-root")" = "$(root_recipe "$v")" ] && return 0
        log "installing the packages of a new recipe into $dir"
        root_install "$v" "$dir"
        return
    fi
    if [ ! -x /usr/sbin/debootstrap ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
        return 1
    fi
    log "building a Debian $suite root for PostgreSQL $v in $dir"
    new="$dir.new"
    as_root rm -rf "$new" || return 1
    as_root mkdir -p "$SHARDID_ROOTS" || return 1
    as_root debootstrap --variant=minbase "$suite" "$new" "$DEBIAN_MIRROR" \
        >"$SHARDID_ROOTS/debootstrap-$(root_name "$v").log" 2>&1 || {
        tail -20 "$SHARDID_ROOTS/debootstrap-$(root_name "$v").log" >&2; return 1; }
    # A throwaway root: dpkg need not sync every file it unpacks (a root
    # is only used once its build ended and it was moved into place).
    echo force-unsafe-io | as_root tee "$new/etc/dpkg/dpkg.cfg.d/shardid-unsafe-io" >/dev/null
    # The registry serves a dated snapshot: sid's Release file has expired.
    echo 'Acquire::Check-Valid-Until "false";' | as_root tee "$new/etc/apt/apt.conf.d/99shardid-snapshot" >/dev/null
    # No services start inside the root, and no "main" cluster is created:
    # tests make their own servers.
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$new/usr/sbin/policy-rc.d" >/dev/null
    as_root chmod 755 "$new/usr/sbin/policy-rc.d"
    as_root mkdir -p "$new/etc/postgresql-common/createcluster.d"
    echo 'create_main_cluster = false' | as_root tee "$new/etc/postgresql-common/createcluster.d/shardid.conf" >/dev/null
    root_install "$v" "$new" || return 1
    as_root rm -rf "$dir" && as_root mv "$new" "$dir"
}

# The files of the working tree (tracked and new, not ignored), so that what
# runs in a root is what the developer has; a tree outside git is copied
# whole but for build output.
# root_tree V: where root_copy_source V puts the tree, inside V's root (one
# for each version: 18's and 19's suites may run at once in their root).
root_tree() { echo "/build/shardid-$1"; }
root_copy_source() {
    local dest
    dest="$(root_dir "$1")$(root_tree "$1")"
    as_root rm -rf "$dest" && as_root mkdir -p "$dest" || return 1
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
            [ -e "$f" ] && printf '%s\0' "$f"
        done | tar --null -T - -cf - | as_root tar -xf - -C "$dest"
    else
        tar --exclude=./build --exclude=./.deps --exclude='*.o' --exclude='*.so' -cf - . | as_root tar -xf - -C "$dest"
    fi
}

root_run() {
    local v=$1 dir; shift
    dir=${SHARDID_ROOT_OVERRIDE:-$(root_dir "$v")}
    # A private mount namespace: the mounts vanish with the command.
    as_root unshare --mount --propagation private --fork sh -c '
        dir=$1; shift
        mount -t proc proc "$dir/proc" &&
        mount -t tmpfs -o mode=1777 tmpfs "$dir/dev/shm" &&
        mount -t tmpfs -o mode=1777 tmpfs "$dir/tmp" &&
        mount --bind /dev/pts "$dir/dev/pts" 2>/dev/null
        exec chroot "$dir" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/root LANG=C.UTF-8 TERM=dumb "$@"' sh "$dir" "$@"
}

# root_add_host_shardid V OLD: shardid as this machine has it installed for
# PostgreSQL OLD (the test command built and installed this tree before),
# into V's root beside the server root_add_host_server copied there: the
# upgrade suite's old server needs no build of its own.
root_add_host_shardid() {
    local dir f pgc=/usr/lib/postgresql/$2/bin/pg_config
    dir=$(root_dir "$1")
    for f in "$("$pgc" --pkglibdir)"/shardid* "$("$pgc" --sharedir)"/extension/shardid*; do
        [ -e "$f" ] && as_root cp -a "$f" "$dir$f"
    done
}

# root_add_host_server V OLD: this machine's PostgreSQL OLD (its binaries,
# libraries, share files and server headers, at their own paths) in V's
# root, with the shared libraries it needs that the root lacks (in
# /usr/local/lib/shardid-host-pgOLD, known to the root's ld.so): the old
# server of test/upgrade/paths.sh's pg_upgrade from OLD to V, which no
# release of V's ships. shardid is built for it inside the root.
root_add_host_server() {
    local v=$1 old=$2 dir libs lib need
    dir=$(root_dir "$v")
    [ -x "/usr/lib/postgresql/$old/bin/postgres" ] && [ -d "/usr/include/postgresql/$old/server" ] || return 1
    as_root rm -rf "$dir/usr/lib/postgresql/$old" "$dir/usr/share/postgresql/$old" "$dir/usr/include/postgresql/$old"
    as_root mkdir -p "$dir/usr/lib/postgresql" "$dir/usr/share/postgresql" "$dir/usr/include/postgresql" || return 1
    as_root cp -a "/usr/lib/postgresql/$old" "$dir/usr/lib/postgresql/" &&
        as_root cp -a "/usr/share/postgresql/$old" "$dir/usr/share/postgresql/" &&
        as_root cp -a "/usr/include/postgresql/$old" "$dir/usr/include/postgresql/" || return 1
    # shardid's own files are built in the root, for this tree.
    as_root rm -f "$dir/usr/lib/postgresql/$old/lib"/shardid* "$dir/usr/share/postgresql/$old/extension"/shardid*
    libs=$dir/usr/local/lib/shardid-host-pg$old
    as_root mkdir -p "$libs" || return 1
    # What the old binaries need and the root has not, and what those need.
    for _ in 1 2 3; do
        need=$( (for f in "$dir/usr/lib/postgresql/$old/bin"/* "$libs"/*; do
                    [ -f "$f" ] && as_root chroot "$dir" ldd "${f#"$dir"}" 2>/dev/null
                 done) | awk '/=> not found/ { print $1 }' | sort -u)
        [ -z "$need" ] && break
        for lib in $need; do
            lib=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ { print $NF; exit }')
            [ -n "$lib" ] && as_root cp -L "$lib" "$libs/" || return 1
        done
    done
    echo "/usr/local/lib/shardid-host-pg$old" | as_root tee "$dir/etc/ld.so.conf.d/shardid-host-pg$old.conf" >/dev/null
    as_root chroot "$dir" ldconfig
}
