#!/usr/bin/env bash
# shardid's whole test suite, from a fresh machine: installs what is missing,
# builds, installs, then runs
#   - the core's unit tests (GoogleTest), plain and under ASan + UBSan,
#   - pg_regress, with shared_preload_libraries and without it,
#   - the libpqxx integration tests against throwaway clusters,
#   - PostgreSQL's TAP framework: failover to a streaming standby,
#   - fault, hostile, multi-node and randomness scenarios on real servers,
#   - the one-version-truth check (control file, META.json, debian/, SQL),
#   - Citus: a coordinator and two workers (test/citus/citus.sh), with Citus
#     built once per machine from ../shared/vendor (scripts/citus.sh),
# all on PostgreSQL 15 natively; meanwhile, in cached Debian roots (scripts/
# roots.sh), the Debian package of PostgreSQL 15, 17, 18 and 19 and, on 17,
# 18 and 19, pg_regress, the integration tests and the TAP scenarios against it;
# on 17 and 18 the Citus suite too, with Citus built in those roots. The
# suites run in five lanes at once (below).
# Works as root (servers run as the postgres OS user) or as a user with sudo.
# Ends with one line "N passed, N failed"; exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh

. scripts/suites.sh

ensure_deps || { broken setup "could not install dependencies"; finish; }

# --- five lanes at once -------------------------------------------------------
# One after another the suites took 68 minutes here; most of that is waiting
# (leases, fences, failovers, a nemesis' seconds), so they run in five
# lanes, each suite's servers on its own ports (below the kernel's
# ephemeral range: private_port in scripts/lib.sh; the roots' shifted by
# SHARDID_PORT_SHIFT):
#   etcd   the suites whose bounds are times (test/suites.list's lane
#          "etcd": leases, fences, claims), at full priority;
#   etcd2  the same kind (lane "etcd2": etcd's recovery, outages, Patroni,
#          the setup); they wait far more than they compute, so two such
#          lanes at once cost little (one took 29 to 34 minutes);
#   native pg_regress, TAP, the integration tests, every other script
#          suite (lane "native"; Citus' last, its build ready by then) and
#          the benchmark's smoke run, niced a little so that under load
#          the etcd lanes' bounds come first;
#   roots  niced: the unit tests, then Debian roots from a queue (built
#          meanwhile, two at a time, or cached in /var/cache/shardid-test)
#          and their suites;
#   roots2 niced: the fuzzer, then the same queue.
# A lane's lines come as they happen, prefixed with its name; the counted
# line of every suite comes at the end, lane by lane.
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
# Every script suite's FAIL lines, repeated before the final count.
export SHARDID_FAILS=$lanes/fails
trap 'rm -rf "$lanes"; case ${TMPDIR:-} in /dev/shm/shardid-test.*) rm -rf "$TMPDIR" ;; esac' EXIT

# lane NAME NICENESS FUNCTION: FUNCTION in the background, its results in
# $lanes/NAME.tsv (record() appends there) and its status in NAME.rc.
lane() {
    local name=$1 niceness=$2
    shift 2
    : >"$lanes/$name.tsv"
    ( [ "$niceness" -gt 0 ] && renice -n "$niceness" -p "$BASHPID" >/dev/null 2>&1
      [ "$niceness" -ge 10 ] && ionice -c 2 -n 7 -p "$BASHPID" 2>/dev/null
      export SHARDID_RESULTS=$lanes/$name.tsv
      last_record_at=$SECONDS
      "$@"
      echo $? >"$lanes/$name.rc"
    ) 2>&1 | grep --line-buffered -vE '[0-9]+ passed, [0-9]+ failed$' | sed -u "s/^/[$name] /" &
    lane_pids+=($!)
}
lane_pids=()

# The suites of test/suites.list's LANE, in its order.
run_scripts() {  # LANE
    local script out
    for script in $(suite_files script "$1"); do
        out=$(bash "$script" 2>&1)
        record_script "$(basename "$(dirname "$script")") ($PGV, $(basename "$script" .sh))" "$out" $?
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

# root_suites V SHIFT SUITES: SUITES inside V's root, their results recorded.
root_suites() {
    local v=$1 shift=$2 suites=$3 results name ok bad took
    results="$(root_dir "$v")/build/results.tsv"
    as_root rm -f "$results"
    log "PostgreSQL $v in $(root_dir "$v"): $suites"
    root_run "$v" env PG_MAJOR="$v" SHARDID_ROOT_SUITES="$suites" SHARDID_RESULTS=/build/results.tsv \
        SHARDID_VENDOR=/build/vendor SHARDID_PORT_SHIFT="$shift" \
        bash /build/shardid/test/versions/in_root.sh 2>&1 |
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
}

# root_prepare V: V's root (built if missing), the tree copied into it, and
# Citus built inside it where a Citus release supports V.
root_prepare() {
    local v=$1
    root_ensure "$v" || return 1
    root_copy_source "$v" || return 1
    # 17's root gets this machine's PostgreSQL 15, the old server of its
    # pg_upgrade suite (test/upgrade/paths.sh).
    [ "$v" = 17 ] && { root_add_host_server 17 "$PG_MAJOR" || return 1; }
    if citus_supports "$v" && [ "$v" != "$PG_MAJOR" ] && citus_source "$(citus_version_for "$v")" >/dev/null 2>&1; then
        citus_root_ensure "$v" >&2 || log "Citus did not build in the PostgreSQL $v root"
    fi
    return 0
}

# root_version SHIFT V: V's suites in its root, prepared first unless done.
# The package suite's pg_buildext installcheck serves on a port
# postgresql-common picks as free when it starts a server: one root's at a
# time (a lock between the two lanes).
root_version() {
    local shift=$1 v=$2 started suites
    started=$SECONDS
    if ! root_prepared "$v"; then
        cat "$lanes/roots-$v.log" >&2
        broken "PG $v (Debian root)" "could not build the root or copy the source"
        return
    fi
    log "PostgreSQL $v root ready in $((SECONDS - started))s"
    ( flock 9; root_suites "$v" "$shift" package ) 9>"$lanes/package.lock"
    [ "$v" = "$PG_MAJOR" ] && return
    suites="integration tap"
    [ "$v" = 17 ] && suites+=" partman upgrade"
    # Citus' suite where a Citus release supports the version (17 and 18:
    # Citus 14), listed as skipped where none does (19).
    if citus_supports "$v"; then
        suites+=" citus"
    else
        skip_suite "citus (PG $v): $(citus_unsupported_why "$v")"
    fi
    root_suites "$v" "$shift" "$suites"
}
# root_prepared V: root_prepare once per run (a lock per version: the
# builders below and a lane may ask at once), its lines in a log.
root_prepared() {
    ( flock 9
      [ -e "$lanes/prepared-$1" ] && exit 0
      root_prepare "$1" >>"$lanes/roots-$1.log" 2>&1 && touch "$lanes/prepared-$1" ) 9>"$lanes/prepare-$1.lock"
}
# The versions wait in a queue, the longest first (17 and 18 run Citus'
# suite): each roots lane takes the next when it is free.
printf '%s\n' $(for v in $versions; do citus_supports "$v" && [ "$v" != "$PG_MAJOR" ] && echo "$v"; done) \
    $(for v in $versions; do citus_supports "$v" && [ "$v" != "$PG_MAJOR" ] || echo "$v"; done) >"$lanes/versions"
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

# The first roots lane: the core's unit tests (GoogleTest, plain and under
# ASan + UBSan, built side by side) while every root is prepared, two at a
# time (a root's build waits on the network and dpkg's writes as much as
# on the processor; one after another, the 18 root was ready 4 minutes
# after the unit tests in a fresh-machine run), then versions from the
# queue.
roots_lane() {
    local builders=() i
    for i in 0 1; do
        ( sed -n "$((i + 1))~2p" "$lanes/versions.all" | while read -r v; do root_prepared "$v"; done ) &
        builders+=($!)
    done
    mkdir -p build
    if make -s -j2 unit >/dev/null 2>build/unit.log; then
        run_gtest "unit (core)" build/unit_tests
        run_gtest "unit (core, ASan+UBSan)" build/unit_tests_san
    else
        cat build/unit.log >&2
        broken unit "unit tests did not build"
    fi
    root_worker 4000
    wait "${builders[@]}"
}
# The second: libFuzzer over the core's decoders, composers and engine
# while the first root is prepared, then versions from the queue.
roots2_lane() {
    mkdir -p build
    if make -s build/core_fuzz >/dev/null 2>build/fuzz.log; then
        local out runs
        out=$(make -s fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-20}" 2>&1)
        runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' <<<"$out" | grep -o '[0-9]*$')
        if grep -q 'Done [0-9]* runs' <<<"$out" && ! grep -qE 'ERROR|deadly|crash-' <<<"$out"; then
            record "fuzz (core, ${runs:-?} inputs)" 1 0
        else
            grep -E 'ERROR|SUMMARY|crash-|==' <<<"$out" | head -20
            record "fuzz (core)" 0 1
        fi
    else
        cat build/fuzz.log >&2
        broken fuzz "the fuzz target did not build"
    fi
    root_worker 5000
}
lane roots 19 roots_lane
lane roots2 19 roots2_lane
# Citus for test/citus/citus.sh (scripts/citus.sh): built once per machine,
# in the background and niced; the suite waits for it (a lock) when it runs.
# (Its errors, if any, come again from the suite's own call.)
( renice -n 5 -p "$BASHPID" >/dev/null 2>&1; ionice -c 2 -n 7 -p "$BASHPID" 2>/dev/null
  citus_ensure >/dev/null 2>&1 ) &

log "building and installing shardid"
if build_install; then built=yes; else built=""; broken build "make or make install failed"; fi

# --- native: pg_regress, TAP, integration, the benchmark, the script suites --
native_lane() {
    work=$(pg_tmpdir)
    run_regress_all   # pg_regress, preloaded and not
    run_tap           # PostgreSQL::Test::Cluster: failover and replication
    run_integration   # libpqxx, real servers
    # The structure check, faults on real servers (restarts, crashes, clock
    # steps), several nodes, the docs, one version truth, and Citus last:
    # on a fresh machine its build (in the background since the start) is
    # ready by then, where a suite that needs it earlier waits for it.
    run_scripts native
    # The benchmark, in smoke mode: it must keep running (it runs the Citus
    # benchmark too).
    local out
    if out=$(bash scripts/bench.sh --smoke 2>&1) && grep -q '^## The C++ core' <<<"$out" && grep -q 'next_trace_id()' <<<"$out"; then
        record "benchmark ($PGV, smoke)" 1 0
    else
        tail -20 <<<"$out"
        record "benchmark ($PGV, smoke)" 0 1
    fi
    rm -rf "$work"
}
# --- etcd: leases, fences, outages, Patroni -----------------------------------
# (Without an installed build only the roots run: they build their own.)
if [ -n "$built" ]; then
    lane native 5 native_lane
    lane etcd 0 run_scripts etcd
    lane etcd2 0 run_scripts etcd2
fi
wait "${lane_pids[@]}"

# Every suite's counted line, lane by lane; a lane that did not end is a failure.
for name in native etcd etcd2 roots roots2; do
    [ -e "$lanes/$name.tsv" ] || continue
    while IFS=$'\t' read -r suite ok bad took; do
        if [ "$suite" = SKIP ]; then skipped+=("$ok"); else record "$suite" "$ok" "$bad" "$took"; fi
    done <"$lanes/$name.tsv"
    [ -s "$lanes/$name.rc" ] || broken "lane $name" "it ended before its last suite"
done
finish
