#!/usr/bin/env bash
# The Citus nemesis as the test command runs it (docs/testing.md): the
# checker's self-test; 200 seconds with a fixed seed, every kind of fault
# once (worker failovers with the old primary running, frozen and gone,
# the coordinator killed and its standby promoted, workers swapped in the
# metadata, a shard move, a rebalance, coordinator pauses shorter and
# longer than shardid.citus_fence, a key change, a change of the
# call-number key, a clock step, the metadata of a worker that had shardid
# before it joined taken away and given back), half the SELECTs sent as
# messages of several statements, no anomaly; then the negative control (two servers given group 1 by hand)
# for 40 seconds, which must find duplicates. One PASS/FAIL line per check.
set -u
cd "$(dirname "$0")/../.."
. scripts/lib.sh
SEED=${CITUS_NEMESIS_SEED:-20261129}
SECONDS_RUN=${CITUS_NEMESIS_SECONDS:-200}

/usr/bin/python3 test/citus/checker.py --self-test || fail "the Citus checker's self-test"
out=$(bash test/citus/nemesis_run.sh --seconds "$SECONDS_RUN" --seed "$SEED" 2>&1)
rc=$?
if [ "$rc" = 2 ]; then  # no Citus for this PostgreSQL: the SKIP line says why
    grep '^SKIP' <<<"$out"
    exit 0
fi
last=$(tail -1 <<<"$out")
sed -n '/^# history/p; /^fault /p; /^faults:/,/^rows read back/p' <<<"$out" | head -80
name="citus nemesis ($SECONDS_RUN s, seed $SEED)"
anomalies=$(sed -n 's/^anomalies: \([0-9]*\) .*/\1/p' <<<"$last")
[ "$rc" = 0 ] && [ "${anomalies:-x}" = 0 ] && pass "$name: $last" || { fail "$name: exit $rc, $last"; tail -30 <<<"$out"; }
kinds=$(sed -n 's/^faults: [0-9]* of \([0-9]*\) kinds$/\1/p' <<<"$out")
check "$name: every kind of fault (13) ran" "13" "${kinds:-0}"
failed_steps=$(grep -c "the fault's own step failed" <<<"$out")
check "$name: every fault's own steps succeeded (failovers, moves, key change)" "0" "$failed_steps"
ops=$(sed -n 's/.*), \([0-9]*\) operations$/\1/p' <<<"$last")
[ "${ops:-0}" -ge 5000 ] && pass "$name: $ops operations checked" || fail "$name: only ${ops:-0} operations"
out=$(bash test/citus/nemesis_run.sh --seconds 40 --seed "$SEED" --control same-group 2>&1)
rc=$?
last=$(tail -1 <<<"$out")
[ "$rc" = 0 ] && pass "citus nemesis control same-group (w1 and a copy of it given group 1 by hand) finds duplicates: $last" ||
    fail "citus nemesis control same-group: the checker found no duplicates (exit $rc): $last"
