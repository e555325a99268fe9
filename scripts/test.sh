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

# The Debian roots of the other versions (scripts/roots.sh) are built in the
# background while the native suites run (a no-op when they are cached);
# the root loop at the end waits for them.
. scripts/roots.sh
. scripts/citus.sh
versions=${SHARDID_PG_VERSIONS-15 17 18 19}
roots_log=$(mktemp)
# Niced and idle-class for the disk, like the Citus build below: the suites
# with timing bounds that run meanwhile must not pay for them (and those
# bounds are measured against what the machine is doing: test/coord/outage.sh).
( renice -n 19 -p "$BASHPID" >/dev/null 2>&1; ionice -c 3 -p "$BASHPID" 2>/dev/null
  for v in $versions; do
      root_ensure "$v" >>"$roots_log" 2>&1 || continue
      # Citus for the roots' Citus suite, built inside the root (17, 18).
      if citus_supports "$v" && [ "$v" != "$PG_MAJOR" ] && citus_source >/dev/null 2>&1; then
          { root_copy_source "$v" && citus_root_ensure "$v"; } >>"$roots_log" 2>&1
      fi
  done ) &
roots_job=$!
# Citus for test/citus/citus.sh (scripts/citus.sh): built once per machine,
# in the background and niced; the suite waits for it (a lock) when it runs.
# (Its errors, if any, come again from the suite's own call.)
( renice -n 19 -p "$BASHPID" >/dev/null 2>&1; ionice -c 3 -p "$BASHPID" 2>/dev/null
  citus_ensure >/dev/null 2>&1 ) &
log "building and installing shardid"
build_install || { broken build "make or make install failed"; finish; }

# --- unit tests -------------------------------------------------------------
mkdir -p build
if make -s -j2 unit >/dev/null 2>build/unit.log; then  # the plain and the sanitized build side by side
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
work=$(pg_tmpdir)
trap 'rm -rf "$work"' EXIT
run_regress_all

# --- TAP (PostgreSQL::Test::Cluster): failover and replication ------------
run_tap

# --- integration tests (libpqxx, real servers) -----------------------------
run_integration

# --- the benchmark, in smoke mode: it must keep running ----------------------
if out=$(bash scripts/bench.sh --smoke 2>&1) && grep -q '^## The C++ core' <<<"$out" && grep -q 'next_trace_id()' <<<"$out"; then
    record "benchmark ($PGV, smoke)" 1 0
else
    tail -20 <<<"$out"
    record "benchmark ($PGV, smoke)" 0 1
fi

# --- every script suite of test/suites.list, in its order: the structure ---
# --- check, faults on real servers (restarts, crashes, clock steps), ------
# --- several nodes, etcd and Patroni, the docs, one version truth ---------
for script in $(suite_files script); do
    out=$(bash "$script" 2>&1)
    record_script "$(basename "$(dirname "$script")") ($PGV, $(basename "$script" .sh))" "$out" $?
done

# --- PostgreSQL 17, 18 and 19, and the Debian package of each version ------
# Each runs in a Debian root of the release that ships it (scripts/roots.sh,
# cached in /var/cache/shardid-test): the package is built there with
# dpkg-buildpackage, installed into the root and tested (pg_buildext
# installcheck runs the whole pg_regress suite, preloaded and not); on 17
# and 18 the integration tests and the TAP scenarios run against it too.
# PostgreSQL 15's own suites ran natively above; its root checks the package.
# SHARDID_PG_VERSIONS="" runs none of them (set but empty is not unset).
wait "$roots_job"
cat "$roots_log" >&2; rm -f "$roots_log"
for v in $versions; do
    started=$SECONDS
    if ! root_ensure "$v"; then broken "PG $v (Debian root)" "could not build the root"; continue; fi
    log "PostgreSQL $v root ready in $((SECONDS - started))s"
    root_copy_source "$v" || { broken "PG $v (Debian root)" "could not copy the source"; continue; }
    suites="package integration tap"
    [ "$v" = 17 ] && suites+=" partman"
    # Citus' suite where a Citus release supports the version (17 and 18:
    # Citus 14), listed as skipped where none does (19).
    if citus_supports "$v"; then
        suites+=" citus"
    else
        skipped+=("citus (PG $v): $(citus_unsupported_why "$v")")
    fi
    [ "$v" = "$PG_MAJOR" ] && suites="package"
    results="$(root_dir "$v")/build/results.tsv"
    as_root rm -f "$results"
    log "PostgreSQL $v in $(root_dir "$v"): $suites"
    root_run "$v" env PG_MAJOR="$v" SHARDID_ROOT_SUITES="$suites" SHARDID_RESULTS=/build/results.tsv SHARDID_VENDOR=/build/vendor \
        bash /build/shardid/test/versions/in_root.sh 2>&1 | grep -vE '[0-9]+ passed, [0-9]+ failed$|^== .* took [0-9]+s$' | sed "s/^/[PG $v] /"
    if [ -s "$results" ]; then
        while IFS=$'\t' read -r name ok bad took; do
            if [ "$name" = SKIP ]; then skipped+=("$ok"); else record "$name" "$ok" "$bad" "$took"; fi
        done <"$results"
    else
        broken "PG $v (Debian root)" "the suites in the root reported nothing"
    fi
done

finish
