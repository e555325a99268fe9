#!/usr/bin/env bash
# The quick loop, for every change: build, the house's rules on the tree,
# the core's unit tests, and pg_regress (preloaded and not) on throwaway
# instances. About 2 minutes on a 2-core machine, as root or as a user with
# sudo (for make install). On a machine without them it installs only what
# these use (scripts/lib.sh, deps_quick), and says which before it does. `make quick` runs it. The full run, which CI
# calls, is scripts/test.sh. Ends with "N passed, N failed".
#   bash scripts/quick.sh
set -u
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/suites.sh

ensure_deps quick || { broken setup "could not install dependencies"; finish; }
log "building and installing shardid"
build_install || { broken build "make or make install failed"; finish; }

out=$(python3 test/structure/check.py . 2>&1)
record_script "structure ($PGV)" "$out" $?

mkdir -p build
if make -s -j2 build/unit_tests >/dev/null 2>build/unit.log; then
    run_gtest "unit (core)" build/unit_tests
else
    cat build/unit.log >&2
    broken unit "unit tests did not build"
fi

work=$(pg_tmpdir)
trap 'rm -rf "$work"' EXIT
run_regress_all
finish
