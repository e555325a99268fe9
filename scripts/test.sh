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
# all on PostgreSQL 15 natively; then, in cached Debian roots (scripts/
# roots.sh), the Debian package of PostgreSQL 15, 17, 18 and 19 and, on 17,
# 18 and 19, pg_regress, the integration tests and the TAP scenarios against it;
# on 17 the Citus suite too, with Citus built in that root.
# Works as root (servers run as the postgres OS user) or as a user with sudo.
# Ends with one line "N passed, N failed"; exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh

. scripts/suites.sh

ensure_deps || { broken setup "could not install dependencies"; finish; }

# --- three lanes at once ------------------------------------------------------
# One after another the suites took 68 minutes here; most of that is waiting
# (leases, fences, failovers, a nemesis' seconds), so they run in three
# lanes, each suite's servers on its own ports (below the kernel's
# ephemeral range: private_port in scripts/lib.sh; the roots' shifted by
# SHARDID_PORT_SHIFT):
#   etcd   the suites whose bounds are times (test/suites.list's lane
#          "etcd": leases, fences, outages, the nemesis), at full priority;
#   native pg_regress, TAP, the integration tests, the benchmark's smoke
#          run and every other script suite (lane "native");
#   roots  niced, and last for the disk, so the suites with timing
#          bounds do not pay for it: the unit tests, the fuzzer, then the
#          Debian roots (built meanwhile, or cached in /var/cache/shardid-
#          test) and their suites.
# A lane's lines come as they happen, prefixed with its name; the counted
# line of every suite comes at the end, lane by lane.
lanes=$(mktemp -d)
chmod 755 "$lanes"
trap 'rm -rf "$lanes"' EXIT

# lane NAME NICENESS FUNCTION: FUNCTION in the background, its results in
# $lanes/NAME.tsv (record() appends there) and its status in NAME.rc.
lane() {
    local name=$1 niceness=$2
    shift 2
    : >"$lanes/$name.tsv"
    ( if [ "$niceness" -gt 0 ]; then
          renice -n "$niceness" -p "$BASHPID" >/dev/null 2>&1
          ionice -c 2 -n 7 -p "$BASHPID" 2>/dev/null
      fi
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
versions=${SHARDID_PG_VERSIONS-15 17 18 19}
roots_lane() {
    # The roots (a no-op when cached) and Citus inside them (17, 18) are
    # built while the core's tests compile and run.
    local roots_log v
    roots_log=$(mktemp)
    ( for v in $versions; do
          root_ensure "$v" >>"$roots_log" 2>&1 || continue
          if citus_supports "$v" && [ "$v" != "$PG_MAJOR" ] && citus_source >/dev/null 2>&1; then
              { root_copy_source "$v" && citus_root_ensure "$v"; } >>"$roots_log" 2>&1
          fi
      done ) &
    local builder=$!

    # The core's unit tests (GoogleTest), plain and under ASan + UBSan,
    # built side by side.
    mkdir -p build
    if make -s -j2 unit >/dev/null 2>build/unit.log; then
        run_gtest "unit (core)" build/unit_tests
        run_gtest "unit (core, ASan+UBSan)" build/unit_tests_san
    else
        cat build/unit.log >&2
        broken unit "unit tests did not build"
    fi
    # libFuzzer over the core's decoders, composers and engine, for a bounded time.
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

    # PostgreSQL 17, 18 and 19, and the Debian package of each version.
    # Each runs in a Debian root of the release that ships it (scripts/
    # roots.sh, cached in /var/cache/shardid-test): the package is built
    # there with dpkg-buildpackage, installed into the root and tested
    # (pg_buildext installcheck runs the whole pg_regress suite, preloaded
    # and not); on 17, 18 and 19 the integration tests and the TAP
    # scenarios run against it too, and Citus' suite where a Citus release
    # supports the version. PostgreSQL 15's own suites run natively; its
    # root checks the package. SHARDID_PG_VERSIONS="" runs none of them.
    wait "$builder"
    cat "$roots_log" >&2; rm -f "$roots_log"
    local started suites results name ok bad took
    for v in $versions; do
        started=$SECONDS
        if ! root_ensure "$v"; then broken "PG $v (Debian root)" "could not build the root"; continue; fi
        log "PostgreSQL $v root ready in $((SECONDS - started))s"
        root_copy_source "$v" || { broken "PG $v (Debian root)" "could not copy the source"; continue; }
        suites="package integration tap"
        [ "$v" = 17 ] && suites+=" partman"
        if citus_supports "$v"; then
            suites+=" citus"
        else
            skip_suite "citus (PG $v): $(citus_unsupported_why "$v")"
        fi
        [ "$v" = "$PG_MAJOR" ] && suites="package"
        results="$(root_dir "$v")/build/results.tsv"
        as_root rm -f "$results"
        log "PostgreSQL $v in $(root_dir "$v"): $suites"
        root_run "$v" env PG_MAJOR="$v" SHARDID_ROOT_SUITES="$suites" SHARDID_RESULTS=/build/results.tsv \
            SHARDID_VENDOR=/build/vendor SHARDID_PORT_SHIFT=4000 \
            bash /build/shardid/test/versions/in_root.sh 2>&1 |
            grep -vE '[0-9]+ passed, [0-9]+ failed$|^== .* took [0-9]+s$' | sed "s/^/[PG $v] /"
        if [ -s "$results" ]; then
            while IFS=$'\t' read -r name ok bad took; do
                if [ "$name" = SKIP ]; then skip_suite "$ok"; else record "$name" "$ok" "$bad" "$took"; fi
            done <"$results"
        else
            broken "PG $v (Debian root)" "the suites in the root reported nothing"
        fi
    done
}
. scripts/roots.sh
. scripts/citus.sh
lane roots 19 roots_lane
# Citus for test/citus/citus.sh (scripts/citus.sh): built once per machine,
# in the background and niced; the suite waits for it (a lock) when it runs.
# (Its errors, if any, come again from the suite's own call.)
( renice -n 19 -p "$BASHPID" >/dev/null 2>&1; ionice -c 3 -p "$BASHPID" 2>/dev/null
  citus_ensure >/dev/null 2>&1 ) &

log "building and installing shardid"
if build_install; then built=yes; else built=""; broken build "make or make install failed"; fi

# --- native: pg_regress, TAP, integration, the benchmark, the script suites --
native_lane() {
    work=$(pg_tmpdir)
    run_regress_all   # pg_regress, preloaded and not
    run_tap           # PostgreSQL::Test::Cluster: failover and replication
    run_integration   # libpqxx, real servers
    # The benchmark, in smoke mode: it must keep running.
    local out
    if out=$(bash scripts/bench.sh --smoke 2>&1) && grep -q '^## The C++ core' <<<"$out" && grep -q 'next_trace_id()' <<<"$out"; then
        record "benchmark ($PGV, smoke)" 1 0
    else
        tail -20 <<<"$out"
        record "benchmark ($PGV, smoke)" 0 1
    fi
    # The structure check, faults on real servers (restarts, crashes, clock
    # steps), several nodes, Citus, the docs, one version truth.
    run_scripts native
    rm -rf "$work"
}
# --- etcd: leases, fences, outages, Patroni -----------------------------------
# (Without an installed build only the roots run: they build their own.)
if [ -n "$built" ]; then
    lane native 0 native_lane
    lane etcd 0 run_scripts etcd
fi
wait "${lane_pids[@]}"

# Every suite's counted line, lane by lane; a lane that did not end is a failure.
for name in native etcd roots; do
    [ -e "$lanes/$name.tsv" ] || continue
    while IFS=$'\t' read -r suite ok bad took; do
        if [ "$suite" = SKIP ]; then skipped+=("$ok"); else record "$suite" "$ok" "$bad" "$took"; fi
    done <"$lanes/$name.tsv"
    [ -s "$lanes/$name.rc" ] || broken "lane $name" "it ended before its last suite"
done
finish
