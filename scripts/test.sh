#!/usr/bin/env bash
# shardid's test command, from a fresh machine (docs/testing.md, "Tiers"):
# installs what is missing, builds once, then runs
#   - the core's unit tests (GoogleTest), plain and under ASan + UBSan,
#   - pg_regress, with shared_preload_libraries and without it,
#   - the libpqxx integration tests against throwaway clusters,
#   - PostgreSQL's TAP framework: failover to a streaming standby,
#   - fault, hostile, upgrade, multi-node and randomness scenarios on real
#     servers, and node ids, shard values and counters from a real etcd,
#   - the one-version-truth check (control file, META.json, debian/, SQL),
#   - Citus: a coordinator and two workers (test/citus/), with Citus built
#     once per machine from ../shared/vendor (scripts/citus.sh),
# all on PostgreSQL 15 natively; meanwhile, in cached Debian roots (scripts/
# roots.sh), the Debian package of PostgreSQL 15, 17, 18 and 19 and, on 17,
# 18 and 19, pg_regress, the integration tests and the TAP scenarios against
# it; on 17 and 18 the Citus suite too, with Citus built in those roots.
# No check depends on the machine's speed: what is stated in time is a hang
# guard (each suite's in test/suites.list, SHARDID_HANG_SCALE multiplies
# them). Latencies are judged in scripts/bench.sh, and the long randomized
# runs (both nemeses, fuzzing, SQLsmith exploring) are scripts/soak.sh.
# Ends with a table of each suite's wall and CPU time, then one line "N
# passed, N failed"; exits non-zero on any failure. Works as root (servers
# run as the postgres OS user) or as a user with sudo.
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh

. scripts/suites.sh
# The whole machine's CPU from here on (the table's last line).
SHARDID_MACHINE_CPU0=$(machine_cpu_ms) SHARDID_RUN_STARTED=0

# --- lanes at once ---------------------------------------------------------------
# One after another the suites would take an hour; much of that is waiting
# (leases, fences, failovers), so after the build they run in six lanes,
# each suite's servers on its own ports (below the kernel's ephemeral
# range: private_port in scripts/lib.sh; the roots' shifted by
# SHARDID_PORT_SHIFT), each lane's suites in test/suites.list's order
# (longest first):
#   etcd, etcd2  the etcd suites (leases, fences, claims; recovery,
#          outages, Patroni, upgrades), which wait far more than they
#          compute;
#   native the unit tests, pg_regress, TAP, the integration tests and
#          most other script suites of PostgreSQL 15;
#   citus  the hostile, upgrade and multi-node suites while Citus builds
#          (in the background since the dependencies are in, or cached),
#          then the Citus suites;
#   roots, roots2  the Debian roots from a queue, longest first (prepared
#          in the background since the start, two at a time, or cached in
#          /var/cache/shardid-test), and their suites.
# A lane's lines come as they happen, prefixed with its name; the counted
# line of every suite comes at the end, lane by lane, after the table of
# where the time went.
# The suites' servers and etcds keep their data in memory where there is
# room (/dev/shm, 8 GB free): four lanes' fsyncs on one disk made etcd's
# commits, and so a node's claims and renewals, as slow as the disk's
# queue (8,192 claims in 15 s instead of 2 beside the Citus suite). A
# killed process keeps what it wrote there, which is all the suites kill.
# Sticky and open to all, like /tmp: the servers' user makes its own
# files there too (pg_regress its socket directory).
if [ -z "${TMPDIR:-}" ] && [ -w /dev/shm ] &&
    [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')" -gt $((8 * 1024 * 1024)) ] 2>/dev/null; then
    TMPDIR=$(mktemp -d /dev/shm/shardid-test.XXXXXX) && chmod 1777 "$TMPDIR" && export TMPDIR
fi
lanes=$(mktemp -d)
chmod 755 "$lanes"
# Every script suite's FAIL lines, repeated before the final count, and
# every suite's wall and CPU time, the table before them.
export SHARDID_FAILS=$lanes/fails SHARDID_TIMES=$lanes/times SHARDID_TEST_PID=$$
# postgresql-common finds a port free by trying from 5432 on (pg_buildext
# installcheck, pg_upgradecluster): the suites that use it take turns.
export SHARDID_PORT_LOCK=$lanes/package.lock
trap 'cpu_groups_remove; rm -rf "$lanes"; case ${TMPDIR:-} in /dev/shm/shardid-test.*) rm -rf "$TMPDIR" ;; esac' EXIT
SHARDID_LANE=build cpu_group_enter build || log "no control group for CPU times here: the table gives wall times only"

# lane NAME NICENESS FUNCTION: FUNCTION in the background, its results in
# $lanes/NAME.tsv (record() appends there) and its status in NAME.rc.
lane() {
    local name=$1 niceness=$2
    shift 2
    : >"$lanes/$name.tsv"
    ( [ "$niceness" -gt 0 ] && renice -n "$niceness" -p "$BASHPID" >/dev/null 2>&1
      [ "$niceness" -ge 10 ] && ionice -c 2 -n 7 -p "$BASHPID" 2>/dev/null
      export SHARDID_RESULTS=$lanes/$name.tsv SHARDID_LANE=$name
      cpu_group_enter "$name-0"
      last_record_at=$SECONDS
      "$@"
      echo $? >"$lanes/$name.rc"
    ) 2>&1 | grep --line-buffered -vE '[0-9]+ passed, [0-9]+ failed$' | sed -u "s/^/[$name] /" &
    lane_pids+=($!)
}
lane_pids=()

# The suites of test/suites.list's LANE, in its order.
run_scripts() {  # LANE
    local script
    for script in $(suite_files script "$1"); do
        run_script "$(basename "$(dirname "$script")") ($PGV, $(basename "$script" .sh))" "$script"
    done
}

# --- roots: unit tests, fuzzing, PostgreSQL 17, 18 and 19, the packages -------
. scripts/roots.sh
. scripts/citus.sh
# PostgreSQL 17, 18 and 19, and the Debian package of each version. Each runs
# in a Debian root of the release that ships it (scripts/roots.sh, cached in
# /var/cache/shardid-test, built when missing): the package is built there
# with dpkg-buildpackage, installed into the root and tested (pg_buildext
# installcheck runs the whole pg_regress suite, preloaded and not); on 17,
# 18 and 19 the integration tests and the TAP scenarios run against it too,
# and Citus' suite where a Citus release supports the version (built in the
# root). PostgreSQL 15's own suites run natively; its root checks the
# package. SHARDID_PG_VERSIONS="" runs none of them. Two lanes share the
# versions, each on its own ports (SHARDID_PORT_SHIFT).
versions=${SHARDID_PG_VERSIONS-15 17 18 19}
# The roots whose Citus suite runs: one per Citus release's code (15 runs
# 13.2.2 natively; 18 runs 14.0.1, which 17 shares: SHARDID_CITUS_ROOTS="17
# 18" runs it on 17 too).
citus_roots=${SHARDID_CITUS_ROOTS-18}
citus_root() { citus_supports "$1" && [ "$1" != "$PG_MAJOR" ] && [[ " $citus_roots " == *" $1 "* ]]; }

# root_suites V SHIFT SUITES: SUITES inside V's root, their results recorded.
root_suites() {
    local v=$1 shift=$2 suites=$3 results name ok bad took
    # Each version's own tree and results in its root (18's and 19's suites
    # may run at once in theirs; their package suites take turns, as every
    # root's do).
    results="$(root_dir "$v")/build/results-$v.tsv"
    as_root rm -f "$results"
    log "PostgreSQL $v in $(root_dir "$v"): $suites"
    local started=$SECONDS cpu0
    cpu0=$(cpu_ms)
    # fd 9 on the port lock: the root's steps that let postgresql-common
    # pick a port take turns on it with the other roots' and the host's.
    root_run "$v" env PG_MAJOR="$v" SHARDID_ROOT_SUITES="$suites" SHARDID_RESULTS="/build/results-$v.tsv" \
        SHARDID_VENDOR=/build/vendor SHARDID_PORT_SHIFT="$shift" SHARDID_PORT_FD=9 \
        bash "$(root_tree "$v")/test/versions/in_root.sh" 9>"$SHARDID_PORT_LOCK" 2>&1 |
        grep -vE '[0-9]+ passed, [0-9]+ failed$|^== .* took [0-9]+s$' | sed "s/^/[PG $v] /" |
        # The root's FAIL lines too among those repeated before the count.
        tee >(grep '^\[PG [0-9]*\] FAIL ' | sed "s/^\[PG \([0-9]*\)\] FAIL /FAIL PG \1 root: /" >>"$SHARDID_FAILS")
    if [ -s "$results" ]; then
        while IFS=$'\t' read -r name ok bad took; do
            if [ "$name" = SKIP ]; then skip_suite "$ok"; else record "$name" "$ok" "$bad" "$took"; fi
        done <"$results"
    else
        broken "PG $v (Debian root)" "the suites in the root reported nothing"
    fi
    # The root's CPU, its suites' together (the root has no control group
    # of its own; its suites' rows give their wall times).
    [ -n "$cpu0" ] && times_row "PG $v root, CPU of: $suites" $((SECONDS - started)) "$(cpu_s_since "$cpu0")"
    return 0
}

# root_prepare V: V's root (built if missing), the tree copied into it, and
# Citus built inside it where a Citus release supports V.
root_prepare() {
    local v=$1
    root_ensure "$v" || return 1
    root_copy_source "$v" || return 1
    # Citus, built in the root in the background: its suite waits for it
    # (a lock in the root), the package suite before it need not (the
    # root's packages include Citus' build dependencies: no apt meanwhile).
    # The build must not hold the lock root_prepared holds (fd 9): with it,
    # the lane asking for the root waited for Citus' build before the
    # package suite, as if it were part of the root.
    if citus_root "$v" && citus_source "$(citus_version_for "$v")" >/dev/null 2>&1; then
        ( citus_root_ensure "$v" >&2 || log "Citus did not build in the PostgreSQL $v root" ) 9>&- &
    fi
    return 0
}

# root_version SHIFT V: V's suites in its root, prepared first unless done.
# The steps that serve on a port postgresql-common picks as free (pg_buildext
# installcheck, pg_upgradecluster) take turns on SHARDID_PORT_LOCK inside
# the root (test/versions/in_root.sh: port_turn); the rest runs at once.
root_version() {
    local shift=$1 v=$2 started suites
    started=$SECONDS
    if ! root_prepared "$v"; then
        cat "$lanes/roots-$v.log" >&2
        broken "PG $v (Debian root)" "could not build the root or copy the source"
        return
    fi
    log "PostgreSQL $v root ready in $((SECONDS - started))s"
    root_suites "$v" "$shift" package
    [ "$v" = "$PG_MAJOR" ] && return
    # 17's root gets this machine's PostgreSQL 15 and its shardid (this
    # tree's, built and installed before the lanes), the old server of its
    # upgrade suites.
    if [ "$v" = 17 ]; then
        if root_add_host_server 17 "$PG_MAJOR" >>"$lanes/roots-$v.log" 2>&1; then
            [ -n "$built" ] && root_add_host_shardid 17 "$PG_MAJOR"
        else
            log "PostgreSQL $PG_MAJOR could not be copied into the 17 root: $(tail -3 "$lanes/roots-$v.log")"
        fi
        root_suites "$v" "$shift" upgrade
    fi
    suites="integration tap"
    [ "$v" = 17 ] && suites+=" partman"
    # Citus' suite in the roots that run it, listed as skipped where no
    # Citus release supports the version (19).
    if citus_root "$v"; then
        suites+=" citus"
    elif ! citus_supports "$v"; then
        skip_suite "citus (PG $v): $(citus_unsupported_why "$v")"
    fi
    root_suites "$v" "$shift" "$suites"
}
# root_prepared V: root_prepare once per run (a lock per version: the
# builders below and a lane may ask at once), its lines in a log.
root_prepared() {
    ( flock 9
      [ -e "$lanes/prepared-$1" ] && exit 0
      root_prepare "$1" >>"$lanes/roots-$1.log" 2>&1 && touch "$lanes/prepared-$1" ) 9>"$lanes/prepare-$(root_name "$1").lock"
}
# The versions wait in a queue, the longest first (17 and 18 run Citus'
# suite): each roots lane takes the next when it is free.
printf '%s\n' $(for v in 17 $versions; do [ "$v" = 17 ] || citus_root "$v" && [[ " $versions " == *" $v "* ]] && echo "$v"; done | awk '!seen[$0]++') \
    $(for v in $versions; do [ "$v" = 17 ] || citus_root "$v" || echo "$v"; done) >"$lanes/versions"
cp "$lanes/versions" "$lanes/versions.all"  # the queue empties; the builders read this
next_version() {
    ( flock 9
      head -1 "$lanes/versions"
      sed -i 1d "$lanes/versions" ) 9>"$lanes/versions.lock"
}
root_worker() {  # SHIFT
    local v
    while v=$(next_version) && [ -n "$v" ]; do root_version "$1" "$v"; done
}

# Every root is prepared in the background from the start, two at a time,
# niced (a root's build waits on the network and dpkg's writes as much as
# on the processor), while shardid is built; each roots lane then takes
# versions from the queue, waiting for that root if it is not ready yet.
root_builders() {
    local i
    for i in 0 1; do
        ( renice -n 10 -p "$BASHPID" >/dev/null 2>&1; ionice -c 2 -n 7 -p "$BASHPID" 2>/dev/null
          SHARDID_LANE=roots-prepare cpu_group_enter "prepare-$i"
          started=$SECONDS cpu0=$(cpu_ms)
          sed -n "$((i + 1))~2p" "$lanes/versions.all" | while read -r v; do root_prepared "$v"; done
          times_row "Debian roots prepared: $(sed -n "$((i + 1))~2p" "$lanes/versions.all" | tr '\n' ' ')(debootstrap, packages, Citus)" \
              $((SECONDS - started)) "$(cpu_s_since "$cpu0")" ) &
        builders+=($!)
    done
}
# The roots' builds first (debootstrap is all they need of this machine),
# then everything the suites need, while they run.
builders=()
if [ -n "$versions" ]; then
    ensure_packages "/usr/sbin/debootstrap:debootstrap" || log "could not install debootstrap"
    root_builders
fi
# What the build needs, first; the rest of what the suites need (and the
# clients' tools) in the background while shardid builds, apt's turn then
# going to Citus' build dependencies: Citus for the Citus suites
# (scripts/citus.sh), built once per machine and cached, at full priority
# (about 80 s of CPU: niced, it took 11 minutes on a busy fresh machine);
# its suites wait for it (a lock), and the citus lane runs its other
# suites first.
# (Its errors, if any, come again from the suite's own call.)
ensure_deps quick || { broken setup "could not install the build's dependencies"; finish; }
( started=$SECONDS
  SHARDID_LANE=deps cpu_group_enter deps
  mapfile -t clients_deps < <(deps_clients)
  { ensure_deps full && ensure_packages "${clients_deps[@]}"; } >"$lanes/deps.log" 2>&1
  echo $? >"$lanes/deps.rc"
  times_row "dependencies of the suites installed (beside the build)" $((SECONDS - started)) "$(cpu_s_since)"
  SHARDID_LANE=citus-build cpu_group_enter citus-build
  started=$SECONDS
  citus_ensure >/dev/null 2>&1
  times_row "Citus $CITUS_VERSION built for PostgreSQL $PG_MAJOR (cached once per machine)" $((SECONDS - started)) \
      "$(cpu_s_since)" ) &

# --- the build: once, at full priority, before any suite ---------------------
# The extension (installed) and the core's unit tests, plain (linking the
# extension's core objects) and under ASan + UBSan.
log "building and installing shardid, and the unit tests"
started=$SECONDS
built=""
mkdir -p build
if build_install; then built=yes; else broken build "make or make install failed"; fi
if ! make -s -j2 unit >/dev/null 2>build/unit.log; then
    cat build/unit.log >&2
    broken unit "unit tests did not build"
fi
times_row "build: shardid, installed, and the unit tests" $((SECONDS - started)) "$(cpu_s_since)"
# The suites start once their dependencies are in.
wait_until "the suites' dependencies installed" 1800 test -s "$lanes/deps.rc"
if [ "$(cat "$lanes/deps.rc" 2>/dev/null)" != 0 ]; then
    cat "$lanes/deps.log" >&2
    broken setup "could not install dependencies"
    finish
fi

# --- native: the unit tests, pg_regress, TAP, integration, the script suites -
native_lane() {
    work=$(pg_tmpdir)
    if [ -x build/unit_tests ] && [ -x build/unit_tests_san ]; then
        run_gtest "unit (core)" build/unit_tests
        run_gtest "unit (core, ASan+UBSan)" build/unit_tests_san
    fi
    run_regress_all   # pg_regress, preloaded and not
    run_tap           # PostgreSQL::Test::Cluster: failover and replication
    run_integration   # libpqxx, real servers
    # The structure check, faults on real servers (restarts, crashes, clock
    # steps), several nodes, upgrades, the docs, one version truth.
    run_scripts native
    rm -rf "$work"
}
# --- the lanes ------------------------------------------------------------------
# (Without an installed build only the roots run: they build their own.)
if [ -n "$built" ]; then
    lane etcd 0 run_scripts etcd
    lane etcd2 0 run_scripts etcd2
    lane native 5 native_lane
    lane citus 5 run_scripts citus
fi
lane roots 10 root_worker 4000
lane roots2 10 root_worker 5000
wait "${lane_pids[@]}"
wait "${builders[@]}"

# Every suite's counted line, lane by lane; a lane that did not end is a
# failure. (Their times are in the table already.)
SHARDID_TIMES_DONE=$SHARDID_TIMES
SHARDID_TIMES=""
for name in native citus etcd etcd2 roots roots2; do
    [ -e "$lanes/$name.tsv" ] || continue
    while IFS=$'\t' read -r suite ok bad took; do
        if [ "$suite" = SKIP ]; then skipped+=("$ok"); else record "$suite" "$ok" "$bad" "$took"; fi
    done <"$lanes/$name.tsv"
    [ -s "$lanes/$name.rc" ] || broken "lane $name" "it ended before its last suite"
done
SHARDID_TIMES=$SHARDID_TIMES_DONE
finish
