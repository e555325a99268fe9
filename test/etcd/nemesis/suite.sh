#!/usr/bin/env bash
# The nemesis run as the test command runs it: 90 seconds with a fixed seed
# (at least 5 kinds of fault, etcd losing its data twice and restored from
# an older snapshot once, no anomaly), then
# each negative control for 40 seconds (each must find anomalies; node id
# 7's second holder then holds it for some seconds, even when an etcd
# leader change extends the first one's lease). One PASS/FAIL line per
# check.
set -u
cd "$(dirname "$0")/../../.."
. scripts/lib.sh
SEED=${NEMESIS_SEED:-20261125}

judge_run() {  # NAME EXPECT(clean|anomalies) ARGS...
    local name=$1 expect=$2 out rc last kinds ops anomalies; shift 2
    out=$(bash test/etcd/nemesis/run.sh "$@" 2>&1); rc=$?
    last=$(tail -1 <<<"$out")
    kinds=$(sed -n 's/^faults: [0-9]* of \([0-9]*\) kinds$/\1/p' <<<"$out")
    ops=$(sed -n 's/.*), \([0-9]*\) operations$/\1/p' <<<"$last")
    anomalies=$(sed -n 's/^anomalies: \([0-9]*\) .*/\1/p' <<<"$last")
    grep -E '^fault |^# history' <<<"$out" | head -3
    grep -A40 '^faults:' <<<"$out" | grep -v '^  \(snowflake\|trace\|uuidv7\|minute\|call\|DecimalId\) ' | head -45
    if [ "$expect" = clean ]; then
        # A failure's line carries the first examples of each kind of
        # anomaly and the faults: CI's log keeps only the failures' lines.
        local why
        why=$(grep -A2 -E '^(duplicates|order violations|below a previous holder|shared counters|key violations), for example:' <<<"$out" |
            grep -v '^--$' | tr '\n' ' ' | tr -s ' ')
        why="$why; faults: $(grep '^fault ' <<<"$out" | sed 's/^fault //' | paste -sd';' -)"
        [ "$rc" = 0 ] && [ "${anomalies:-x}" = 0 ] && pass "$name: $last" || fail "$name: exit $rc, $last; $why"
        [ "${kinds:-0}" -ge 5 ] && pass "$name: $kinds kinds of fault" || fail "$name: only ${kinds:-0} kinds of fault"
        grep -q '^  delete-prefix  *1$' <<<"$out" && grep -q '^  replace-etcd  *1$' <<<"$out" &&
            grep -q '^  restore-snapshot  *1$' <<<"$out" &&
            pass "$name: etcd lost its data twice (the prefix deleted, then replaced by an empty cluster) and was restored from an older snapshot" ||
            fail "$name: etcd did not lose its data twice and was not restored from a snapshot"
        # Enough operations to have met every fault: 11,758 on an idle machine,
        # 8,264 in a fresh-machine run of the test command (load 7 to 11 on 2
        # cores); CI's machine is slower still.
        [ "${ops:-0}" -ge 3000 ] && pass "$name: ${ops} operations checked" || fail "$name: only ${ops:-0} operations"
    else
        [ "$rc" = 0 ] && [ "${anomalies:-0}" -gt 0 ] && pass "$name finds anomalies: $last" ||
            fail "$name: the checker found nothing (exit $rc): $last"
    fi
}
# The checker first, on planted histories: each anomaly it must catch.
/usr/bin/python3 test/etcd/nemesis/checker.py --self-test || fail "the checker's self-test"
judge_run "nemesis (90 s, seed $SEED)" clean --seconds 90 --seed "$SEED"
judge_run "nemesis control same-id (two nodes given id 7 by setting: duplicates)" anomalies --seconds 40 --seed "$SEED" --control same-id
judge_run "nemesis control no-mark (the marks deleted from etcd: IDs below a previous holder)" anomalies --seconds 40 --seed "$SEED" --control no-mark
