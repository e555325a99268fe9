#!/usr/bin/env bash
# shardid's whole test suite, from a fresh machine: installs what is missing,
# builds, installs, then runs
#   - the core's unit tests (GoogleTest), plain and under ASan + UBSan,
#   - pg_regress, with shared_preload_libraries and without it,
#   - the libpqxx integration tests against throwaway clusters,
#   - PostgreSQL's TAP framework: failover to a streaming standby,
#   - fault, hostile, multi-node and randomness scenarios on real servers.
# Works as root (servers run as the postgres OS user) or as a user with sudo.
# Ends with one line "N passed, N failed"; exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh

passed=0
failed=0
failures=()

# record NAME PASSED FAILED
record() {
    passed=$((passed + $2))
    failed=$((failed + $3))
    [ "$3" -gt 0 ] && failures+=("$1")
    printf '%-34s %4d passed, %d failed\n' "$1" "$2" "$3"
}

# A suite that could not run at all counts as one failure.
broken() { log "$1: $2"; record "$1" 0 1; }

finish() {
    [ ${#failures[@]} -gt 0 ] && log "failed: ${failures[*]}"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

ensure_deps || { broken setup "could not install dependencies"; finish; }
log "building and installing shardid"
build_install || { broken build "make or make install failed"; finish; }

# --- unit tests -------------------------------------------------------------
run_gtest() {  # NAME BINARY
    local out
    out=$("$2" 2>&1)
    local rc=$?
    local ok bad
    ok=$(grep -c '^\[       OK \]' <<<"$out")
    bad=$(grep -c '^\[  FAILED  \] [A-Za-z].*\..* (' <<<"$out")
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi  # crashed, or a sanitizer fired
    [ "$bad" -gt 0 ] && tail -40 <<<"$out"
    record "$1" "$ok" "$bad"
}
mkdir -p build
if make -s unit >/dev/null 2>build/unit.log; then
    run_gtest "unit (core)" build/unit_tests
    run_gtest "unit (core, ASan+UBSan)" build/unit_tests_san
else
    cat build/unit.log >&2
    broken unit "unit tests did not build"
fi

# libFuzzer over the core's decoders, composers and engine, for a bounded time.
if make -s build/core_fuzz >/dev/null 2>build/fuzz.log; then
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

# --- pg_regress -------------------------------------------------------------
# pg_regress starts its own temporary instance, which must not run as root:
# run it on a copy of the test files owned by the server's user.
work=$(pg_tmpdir)
trap 'rm -rf "$work"' EXIT
run_regress() {  # NAME CONF TESTS...
    local name=$1 conf=$2; shift 2
    local dir="$work/regress-${name// /_}"
    mkdir -p "$dir"
    cp -r Makefile shardid.control sql expected test "$dir"/
    [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
    local out
    out=$(cd "$dir" && as_pg make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS="$*" REGRESS_CONF="$conf" 2>&1)
    local ok bad
    ok=$(grep -cE '\.\.\. ok' <<<"$out")
    bad=$(grep -cE '\.\.\. FAILED' <<<"$out")
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
        tail -30 <<<"$out" >&2
        bad=1
    fi
    if [ "$bad" -gt 0 ] && [ -f "$dir/regression.diffs" ]; then
        head -150 "$dir/regression.diffs"
        mkdir -p results && cp "$dir/regression.diffs" "results/regression-${name// /_}.diffs"
    fi
    record "pg_regress ($name)" "$ok" "$bad"
}
run_regress "preloaded" test/regress/regress.conf trace_id guc layouts bad_input counters eightbyte keys timefilter upgrade hostile
run_regress "not preloaded" test/regress/nopreload.conf nopreload

# --- TAP (PostgreSQL::Test::Cluster): failover and replication ------------
run_tap() {
    local dir="$work/tap"
    mkdir -p "$dir"
    cp -r Makefile shardid.control sql expected test src "$dir"/
    [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
    local out
    out=$(cd "$dir" && as_pg make -s tapcheck PG_CONFIG="$PG_CONFIG" 2>&1)
    grep -E '^(not )?ok [0-9]+ ' <<<"$out" | sed -E 's/^ok [0-9]+ - /PASS /; s/^not ok [0-9]+ - /FAIL /'
    local ok bad
    ok=$(grep -cE '^ok [0-9]+ ' <<<"$out")
    bad=$(grep -cE '^not ok [0-9]+ ' <<<"$out")
    if ! grep -q '^Result: PASS' <<<"$out"; then
        [ "$bad" -eq 0 ] && bad=1
        tail -40 <<<"$out"
        ls "$dir"/tmp_check/log/ >/dev/null 2>&1 && mkdir -p results && cp -r "$dir"/tmp_check/log results/tap-log
    fi
    record "tap (failover)" "$ok" "$bad"
}
run_tap

# --- integration tests (libpqxx, real servers) -----------------------------
if make -s build/integration_tests >/dev/null 2>build/integration.log; then
    port=55400
    for mode in preloaded "not preloaded"; do
        dir=$(pg_tmpdir)
        conf=("shardid.node_id = 7" "shardid.launch_id = 65" "max_connections = 40")
        [ "$mode" = preloaded ] && conf+=("shared_preload_libraries = 'shardid'")
        if cluster_init "$dir" "${conf[@]}" && cluster_start "$dir" "$port"; then
            out=$(SHARDID_TEST_DSN="host=$dir port=$port user=postgres dbname=postgres" build/integration_tests 2>&1)
            rc=$?
            # Shell scenarios against the same server (pg_dump, ...).
            for scenario in test/scenarios/*.sh; do
                out+=$'\n'$(SHARDID_TEST_HOST=$dir SHARDID_TEST_PORT=$port bash "$scenario" 2>&1) || rc=1
            done
            grep -E '^(PASS|FAIL)' <<<"$out"
            ok=$(grep -c '^PASS' <<<"$out")
            bad=$(grep -c '^FAIL' <<<"$out")
            if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then tail -20 <<<"$out"; bad=1; fi
            record "integration ($mode)" "$ok" "$bad"
        else
            broken "integration ($mode)" "could not start a cluster"
        fi
        cluster_stop "$dir" immediate
        rm -rf "$dir"
        port=$((port + 1))
    done
else
    cat build/integration.log >&2
    broken integration "integration tests did not build"
fi

# --- the benchmark, in smoke mode: it must keep running ----------------------
if out=$(bash scripts/bench.sh --smoke 2>&1) && grep -q '^## The C++ core' <<<"$out" && grep -q 'next_trace_id()' <<<"$out"; then
    record "benchmark (smoke)" 1 0
else
    tail -20 <<<"$out"
    record "benchmark (smoke)" 0 1
fi

# --- faults on real servers (restarts, crashes, clock steps) and several ---
# --- nodes joined by logical replication -----------------------------------
for script in test/faults/*.sh test/hostile/*.sh test/multinode/*.sh test/random/*.sh; do
    out=$(bash "$script" 2>&1)
    grep -E '^(PASS|FAIL)' <<<"$out"
    ok=$(grep -c '^PASS' <<<"$out")
    bad=$(grep -c '^FAIL' <<<"$out")
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then tail -20 <<<"$out"; bad=1; fi
    record "$(basename "$(dirname "$script")") ($(basename "$script" .sh))" "$ok" "$bad"
done

finish
