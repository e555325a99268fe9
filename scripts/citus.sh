# Citus for the Citus suite (test/citus/): Citus is not in Debian, so it is
# built from the vendored source (../shared/vendor, next to the clone: the
# tarball and a patch for Debian 12's PostgreSQL 15.20, see its README), once
# per machine, into a staging directory cached beside the Debian roots
# (scripts/roots.sh), then copied into PostgreSQL's directories when a suite
# needs it. Source it after scripts/lib.sh and scripts/roots.sh.
#
#   citus_source [VERSION]  the directory holding the tarball of VERSION (by
#                       default this PostgreSQL's Citus; 1: none; says why)
#   citus_ensure        build and stage Citus unless cached (the recipe: the
#                       tarball's and the patch's checksums, the PostgreSQL)
#   citus_install       copy the staged files into PostgreSQL's directories
#   citus_available     citus_ensure and citus_install; prints "SKIP ..." and
#                       returns 2 when there is neither source nor build, or
#                       when Citus does not support this PostgreSQL
#   citus_suite         a Citus suite's start: citus_available, or the suite
#                       ends (SKIP, status 0; or FAIL, status 1)
#   citus_root_ensure V the vendored source into V's Debian root and Citus
#                       built there (the 17 and 18 roots' Citus suite)
#   cnode_up NAME PORT CONF...  a new Citus node (TCP on 127.0.0.1), running,
#                       with the citus extension; cnode_start, cnode_stop,
#                       cnode_conf NAME LINE..., cq NAME PSQL-ARGS...,
#                       cnode_add NAME (on the coordinator "c"),
#                       cnodes_stop (all of them, immediately)
#
# Needs root for apt-get and the copy (as_root); CI runs as root.
# Which Citus goes with which PostgreSQL: 13.2.2 with 15 (Citus 14 dropped
# it), 14.0.1 with 16 to 18 (Citus 13 ends at 17); none with 19 yet.
citus_version_for() { case $1 in 15) echo 13.2.2 ;; 16 | 17 | 18) echo 14.0.1 ;; *) echo none ;; esac; }
CITUS_VERSION=$(citus_version_for "${PG_MAJOR:-15}")
citus_stage() { echo "$SHARDID_ROOTS/citus-$CITUS_VERSION-pg$PG_MAJOR"; }
# What the build needs (scripts/roots.sh: citus_build_deps), and each
# release's own (ICU: PostgreSQL 17's headers include it; libcurl: Citus 14
# is built with it, its citus.so does not load without; libselinux1-dev:
# Debian 12's PostgreSQL 15 links it, sid has none).
citus_deps=$citus_build_deps
case $CITUS_VERSION in
13.*) citus_deps+=" libselinux1-dev"; citus_configure=(--without-libcurl) ;;
*) citus_deps+=" libcurl4-openssl-dev"; citus_configure=() ;;
esac

citus_source() {
    local d version=${1:-$CITUS_VERSION}
    for d in ${SHARDID_VENDOR:-} "$PWD/../shared/vendor" "$PWD/scripts/citus"; do
        if [ -f "$d/citus-$version.tar.gz" ]; then
            (cd "$d" && pwd)
            return 0
        fi
    done
    echo "no citus-$version.tar.gz in \$SHARDID_VENDOR or ../shared/vendor next to this clone" >&2
    return 1
}

citus_recipe() {
    local src=$1
    echo "recipe 2 (-g0); citus $CITUS_VERSION; postgresql $("$PG_CONFIG" --version)"
    (cd "$src" && sha256sum "citus-$CITUS_VERSION.tar.gz" citus-"$CITUS_VERSION"-*.patch 2>/dev/null)
}

# One build at a time (the test command starts one in the background, the
# suite asks again and waits for it).
citus_ensure() {
    as_root mkdir -p "$SHARDID_ROOTS" || return 1
    (
        flock 9
        citus_ensure_locked
    ) 9>"$SHARDID_ROOTS/citus.lock"
}

citus_ensure_locked() {
    local stage src build new
    stage=$(citus_stage)
    if ! src=$(citus_source 2>/dev/null); then
        # No source: a stage built before still serves.
        [ -f "$stage/.shardid-citus" ] && return 0
        citus_source >/dev/null
        return 1
    fi
    [ -f "$stage/.shardid-citus" ] && [ "$(cat "$stage/.shardid-citus")" = "$(citus_recipe "$src")" ] && return 0
    local missing=() p
    for p in $citus_deps; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
            >/dev/null 2>&1 ||
            { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
              as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
                  >/dev/null; } || return 1
    fi
    # The patches beside the tarball, else this repository's (scripts/citus).
    local patches=() p
    for p in "$src"/citus-"$CITUS_VERSION"-*.patch; do [ -f "$p" ] && patches+=("$p"); done
    if [ ${#patches[@]} -eq 0 ]; then
        for p in "$PWD"/scripts/citus/citus-"$CITUS_VERSION"-*.patch; do [ -f "$p" ] && patches+=("$p"); done
    fi
    log "building Citus $CITUS_VERSION for PostgreSQL $PG_MAJOR into $stage (once per machine)"
    build=$(mktemp -d "${TMPDIR:-/tmp}/shardid-citus.XXXXXX")
    new="$stage.new"
    (
        set -e
        cd "$build"
        tar -xzf "$src/citus-$CITUS_VERSION.tar.gz"
        cd "citus-$CITUS_VERSION"
        for p in "${patches[@]}"; do patch -s -p1 <"$p"; done
        ./configure "${citus_configure[@]}" PG_CONFIG="$PG_CONFIG" >"$build/configure.log" 2>&1
        # Its niceness is its caller's (the test command's native build at
        # full priority: the Citus suites wait for it; a root's, the root
        # builder's). No debug information (COPT=-g0, after PGXS' -g):
        # nobody debugs these builds, and it cost a sixth of each build's
        # time.
        make -s -j2 with_llvm=no COPT=-g0 >"$build/make.log" 2>&1
        as_root rm -rf "$new"
        as_root make -s install with_llvm=no DESTDIR="$new" >"$build/install.log" 2>&1
    ) || {
        # Each log of the build that got written, named (tail -N takes one file).
        local f
        for f in "$build"/*.log; do
            [ -f "$f" ] || continue
            echo "== $f (last 20 lines)" >&2
            tail -n 20 "$f" >&2
        done
        rm -rf "$build"
        return 1
    }
    rm -rf "$build"
    citus_recipe "$src" | as_root tee "$new/.shardid-citus" >/dev/null
    as_root rm -rf "$stage" && as_root mv "$new" "$stage"
}

# The staged tree mirrors / (make install's DESTDIR): copying it installs
# citus.so, its control file and SQL scripts into this PostgreSQL.
citus_install() {
    local stage
    stage=$(citus_stage)
    [ -f "$stage/.shardid-citus" ] || return 1
    # Each file replaced, never written over in place: a running server
    # that has citus.so mapped keeps its copy (written over, it crashes).
    as_root cp -a --remove-destination "$stage/usr" /
}

citus_available() {
    local err
    if ! citus_supports "$PG_MAJOR"; then
        echo "SKIP citus: $(citus_unsupported_why "$PG_MAJOR")"
        return 2
    fi
    err=$(mktemp)
    if ! citus_ensure >/dev/null 2>"$err"; then
        if ! why=$(citus_source 2>&1 >/dev/null) && [ ! -f "$(citus_stage)/.shardid-citus" ]; then
            echo "SKIP citus: $why"
            rm -f "$err"
            return 2
        fi
        cat "$err" >&2
        rm -f "$err"
        echo "FAIL citus: Citus $CITUS_VERSION did not build"
        return 1
    fi
    rm -f "$err"
    citus_install || { echo "FAIL citus: could not install the staged Citus"; return 1; }
}

# citus_suite: the start of a Citus suite: Citus built and installed, or
# the suite ends there (a SKIP line, status 0, where there is no Citus for
# this PostgreSQL; a FAIL line and status 1 where it did not build).
citus_suite() {
    citus_available
    case $? in 0) ;; 2) exit 0 ;; *) exit 1 ;; esac
}

# Citus on the other PostgreSQL versions: its suite runs natively on 15
# (13.2.2) and in the 17 and 18 roots (14.0.1, scripts/roots.sh); 19 is
# listed as skipped, with this reason.
citus_supports() { [ "$(citus_version_for "$1")" != none ]; }
citus_unsupported_why() { echo "no Citus release supports PostgreSQL $1 yet (Citus 14.0.1: 16 to 18; 13.2.2: 15 to 17)"; }
# citus_root_ensure V: the vendored source into V's root (/build/vendor),
# then Citus built and staged inside it (cached there, like the root). The
# tarball is V's Citus, whatever this machine's own PostgreSQL is.
# Needs root_copy_source V first (the build runs these scripts).
citus_root_ensure() {
    local v=$1 src dest
    src=$(citus_source "$(citus_version_for "$v")") || return 1
    dest="$(root_dir "$v")/build/vendor"
    as_root rm -rf "$dest" && as_root mkdir -p "$dest" && as_root cp -a "$src/." "$dest/" || return 1
    root_run "$v" env PG_MAJOR="$v" SHARDID_VENDOR=/build/vendor bash -c \
        "cd $(root_tree "$v") && . scripts/lib.sh && . scripts/roots.sh && . scripts/citus.sh && citus_ensure"
}

# Nodes live in $cwork (set it to a pg_tmpdir first).
declare -A cport_of cdir_of
cnode_up() {  # NAME PORT CONF-LINES...
    local name=$1 port=$2 d
    shift 2
    d=$cwork/$name
    mkdir -p "$d" && { [ "$(id -u)" != 0 ] || chown postgres: "$d"; }
    cdir_of[$name]=$d
    cport_of[$name]=$port
    cluster_init "$d" "shared_preload_libraries = 'citus,shardid'" "listen_addresses = '127.0.0.1'" \
        "max_prepared_transactions = 100" "max_connections = 200" "wal_level = logical" "$@" || return 1
    cnode_start "$name" && cq "$name" -c "CREATE EXTENSION citus" >/dev/null
}
# cnode_why NAME: why a node did not start, on one line (its log's errors).
cnode_why() { server_why "${cdir_of[$1]:-/nonexistent}/server.log"; }
cnode_start() {
    private_port "${cport_of[$1]}" || return 1
    as_pg "$PG_BIN/pg_ctl" -D "${cdir_of[$1]}/data" -l "${cdir_of[$1]}/server.log" -o "-p ${cport_of[$1]}" \
        -w -t 60 start >/dev/null
}
cnode_stop() { as_pg "$PG_BIN/pg_ctl" -D "${cdir_of[$1]}/data" stop -m fast >/dev/null; }
cnode_conf() {  # NAME LINE...: appended to postgresql.conf (the last line wins)
    local n=$1
    shift
    printf '%s\n' "$@" | as_pg tee -a "${cdir_of[$n]}/data/postgresql.conf" >/dev/null
}
cq() {
    local n=$1
    shift
    as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[$n]}" -U postgres -X -At -v ON_ERROR_STOP=1 "$@"
}
cnode_add() { cq c -c "SELECT citus_add_node('127.0.0.1', ${cport_of[$1]})" >/dev/null; }
# cq_err NODE SQL: the first lines of SQL's error on NODE, verbose (the
# SQLSTATE, then detail and hint), on one line.
cq_err() { cq "$1" -c "\\set VERBOSITY verbose" -c "$2" 2>&1 >/dev/null | head -3 | tr '\n' ' '; }
# timed_in_server NODE EXPRESSIONS: one PERFORM of EXPRESSIONS on NODE, timed
# by the server (a loaded CI's new connection alone can take seconds); its
# NOTICE "took N ms: ok" or "took N ms: SQLSTATE message (hint: ...)";
# took_of TEXT: the N of it.
timed_in_server() {
    cq "$1" -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); h text; BEGIN
    PERFORM $2;
    RAISE NOTICE 'took % ms: ok', round(extract(epoch FROM clock_timestamp() - t0) * 1000);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
    RAISE NOTICE 'took % ms: % % (hint: %)', round(extract(epoch FROM clock_timestamp() - t0) * 1000), SQLSTATE, SQLERRM, h;
END \$\$" 2>&1
}
took_of() { grep -o 'took [0-9]*' <<<"$1" | grep -o '[0-9]*$'; }

# citus_cluster_up BASE: a suite's cluster, in $cwork (made here, removed
# when the suite exits, its servers stopped): the coordinator "c" on BASE and
# the workers "w1" and "w2" on BASE+1 and BASE+2, each node's id its Citus
# group id (citus_src, the setting for more nodes), the coordinator's host
# in the metadata, and shardid created on the coordinator (so on every
# node); the suite stops where a step fails. The coordinator leases its key
# ring for 3 s at most (shardid.citus_fence caps its leases, key_lease.cpp):
# a change of the ring waits that long for the workers' leases, not 10 s.
citus_src="shardid.node_id_source = citus"
citus_cluster_up() {
    base=$1
    cwork=$(pg_tmpdir)
    trap 'cnodes_stop; rm -rf "$cwork"' EXIT
    cnode_up c "$base" "$citus_src" "shardid.citus_fence = 3s" || stop_suite "citus: the coordinator did not start: $(cnode_why c)"
    cnode_up w1 $((base + 1)) "$citus_src" && cnode_up w2 $((base + 2)) "$citus_src" ||
        stop_suite "citus: a worker did not start: $(cnode_why w1) $(cnode_why w2)"
    cq c -c "SELECT citus_set_coordinator_host('127.0.0.1', $base)" >/dev/null &&
        cnode_add w1 && cnode_add w2 || stop_suite "citus: the workers could not be added"
    cq c -c "CREATE EXTENSION shardid" >/dev/null || stop_suite "citus: CREATE EXTENSION shardid failed on the coordinator"
}
# citus_no_crash NODE...: a FAIL line for each node whose log says a process
# of it crashed.
citus_no_crash() {
    local n
    for n in "$@"; do
        grep -q "was terminated by signal\|server process .* terminated" "${cdir_of[$n]}/server.log" &&
            fail "a process of $n crashed: $(grep -m1 'terminated' "${cdir_of[$n]}/server.log")"
    done
    return 0
}
cnodes_stop() {
    local n
    for n in "${!cdir_of[@]}"; do
        as_pg "$PG_BIN/pg_ctl" -D "${cdir_of[$n]}/data" stop -m immediate >/dev/null 2>&1
    done
}
