#!/usr/bin/env bash
# The long runs beside the test command (docs/testing.md, "Tiers"):
# randomized exploration whose coverage grows with the time it is given and
# whose thresholds count operations, which a loaded machine makes fewer.
# The test command (scripts/test.sh) stays fast and deterministic; every
# anomaly a run here ever found keeps a deterministic test there
# (docs/testing.md lists them).
#
#   bash scripts/soak.sh             about 15 minutes on 2 cores:
#       - the etcd nemesis (test/etcd/nemesis/suite.sh): 90 s with a fixed seed,
#         then each negative control, which must find anomalies;
#       - the Citus nemesis (test/citus/nemesis.sh): 200 s with a fixed
#         seed, every kind of fault, then its control;
#       - libFuzzer over the core for FUZZ_SECONDS (300), its corpus kept
#         across runs in $SHARDID_ROOTS/fuzz-corpus;
#       - SQLsmith as an ordinary role, SQLSMITH_SECONDS (300) with a fresh
#         seed;
#       - the benchmark's smoke run (scripts/bench.sh --smoke: every
#         benchmark still runs; its figures mean nothing).
#   bash scripts/soak.sh --release   the runs a release is judged by: both
#       nemeses for 30 minutes with a fresh seed (NEMESIS_SECONDS, 1800).
#
# Installs what it needs, as the test command does. Ends with "N passed,
# N failed"; exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/suites.sh
. scripts/roots.sh

release=no
[ "${1:-}" = --release ] && release=yes
ensure_deps soak || { broken setup "could not install dependencies"; finish; }
log "building and installing shardid"
build_install || { broken build "make or make install failed"; finish; }
work=$(pg_tmpdir)
trap 'rm -rf "$work"' EXIT

if [ $release = yes ]; then
    seconds=${NEMESIS_SECONDS:-1800}
    out=$(bash test/etcd/nemesis/run.sh --seconds "$seconds" --seed fresh 2>&1)
    rc=$?
    tail -30 <<<"$out"
    [ "$rc" = 0 ] && grep -q '^anomalies: 0 ' <<<"$out" && record "nemesis ($seconds s, fresh seed)" 1 0 ||
        record "nemesis ($seconds s, fresh seed)" 0 1
    out=$(CITUS_NEMESIS_SECONDS=$seconds CITUS_NEMESIS_SEED=fresh bash test/citus/nemesis.sh 2>&1)
    record_script "citus nemesis ($seconds s, fresh seed)" "$out" $?
    finish
fi

out=$(bash test/etcd/nemesis/suite.sh 2>&1)
record_script "nemesis (90 s, fixed seed, and its controls)" "$out" $?
out=$(bash test/citus/nemesis.sh 2>&1)
record_script "citus nemesis (200 s, fixed seed, and its control)" "$out" $?

# libFuzzer, from the corpus the runs before kept.
mkdir -p build
corpus=$SHARDID_ROOTS/fuzz-corpus
as_root mkdir -p "$corpus" && as_root chown "$(id -u)" "$corpus"
if make -s build/core_fuzz >/dev/null 2>"$work/fuzz-build.log"; then
    out=$(build/core_fuzz -max_total_time="${FUZZ_SECONDS:-300}" -print_final_stats=1 -artifact_prefix=build/ \
        "$corpus" 2>&1)
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' <<<"$out" | grep -o '[0-9]*$')
    if grep -q 'Done [0-9]* runs' <<<"$out" && ! grep -qE 'ERROR|deadly|crash-' <<<"$out"; then
        record "fuzz (core, ${runs:-?} inputs, corpus of $(ls "$corpus" | wc -l))" 1 0
    else
        grep -E 'ERROR|SUMMARY|crash-|==' <<<"$out" | head -20
        record "fuzz (core)" 0 1
    fi
else
    cat "$work/fuzz-build.log" >&2
    broken fuzz "the fuzz target did not build"
fi

out=$(SQLSMITH_SEED=fresh SQLSMITH_QUERIES=1000000 SQLSMITH_SECONDS=${SQLSMITH_SECONDS:-300} bash test/hostile/sqlsmith.sh 2>&1)
record_script "sqlsmith (${SQLSMITH_SECONDS:-300} s, fresh seed)" "$out" $?

if out=$(bash scripts/bench.sh --smoke 2>&1) && grep -q '^## The C++ core' <<<"$out" && grep -q 'next_trace_id()' <<<"$out"; then
    record "benchmark (smoke)" 1 0
else
    tail -20 <<<"$out"
    record "benchmark (smoke)" 0 1
fi
finish
