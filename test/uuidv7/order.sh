#!/usr/bin/env bash
# UUIDv7 order across backends: 16 sessions at once, 100,000 UUIDs each
# (UUIDV7_SESSIONS, UUIDV7_N). A witness of real-time order: each row takes
# a sequence value before and after its UUID (nextval is one global order).
# When A's "after" is below B's "before", A was handed out before B was
# asked for, so A < B must hold: for every B, the largest UUID of all rows
# finished before B began is below B. With 0 duplicates, that is the whole
# guarantee ("strictly increasing across all backends of the node").
# Negative control: gen_random_uuid() in the same harness fails the witness
# (and on PostgreSQL 18, uuidv7(), monotonic only within one backend:
# test/versions runs this script there with UUIDV7_CONTROL=uuidv7()).
# Prints PASS/FAIL lines; run from the repository root.
set -u
. scripts/lib.sh
. test/uuidv7/witness.sh
S=${UUIDV7_SESSIONS:-16}
N=${UUIDV7_N:-100000}
CONTROL=${UUIDV7_CONTROL:-gen_random_uuid()}

dir=$(pg_tmpdir)
port=${UUIDV7_PORT:-15470}
trap 'cluster_stop "$dir" immediate; rm -rf "$dir"' EXIT
cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "max_connections = 40" || exit 1
cluster_start "$dir" "$port" || exit 1
export PGOPTIONS="-c client_min_messages=warning"
q -c "CREATE EXTENSION shardid"

witness_load "next_uuidv7()" shardid_u "$S" "$N"
check "$S sessions x $N next_uuidv7(): all rows in" "$((S * N))" "$(q -c "SELECT count(*) FROM shardid_u")"
check "no UUID twice" "$((S * N))" "$(q -c "SELECT count(DISTINCT u) FROM shardid_u")"
# Rows that began after a row of another session had finished: the pairs
# across sessions that the witness checks.
pairs=$(q -c "WITH m AS MATERIALIZED (SELECT session, min(after) AS first_done FROM shardid_u GROUP BY session)
              SELECT count(*) FROM shardid_u b WHERE b.before > (SELECT min(first_done) FROM m WHERE m.session <> b.session)")
[ "${pairs:-0}" -gt 0 ] && pass "the witness has rows of other sessions that began after a row finished ($pairs rows)" ||
    fail "the witness saw no row of another session begin after one finished: it proves nothing"
check "every UUID is above every UUID handed out before it was asked for, across sessions" 0 "$(witness_violations shardid_u)"
check "each session's UUIDs increase (its rows in generation order)" 0 \
    "$(q -c "SELECT count(*) FROM (SELECT u, lag(u) OVER (PARTITION BY session ORDER BY before) AS p FROM shardid_u) x
             WHERE p >= u")"
check "all are version 7, variant 10" "$((S * N))" \
    "$(q -c "SELECT count(*) FROM shardid_u WHERE substr(u::text, 15, 1) = '7' AND substr(u::text, 20, 1) IN ('8','9','a','b')")"

witness_load "$CONTROL" control_u "$S" "$N"
bad=$(witness_violations control_u)
[ "${bad:-0}" -gt 0 ] && pass "control: $CONTROL fails the witness ($bad UUIDs below one handed out before them)" ||
    fail "control: $CONTROL passed the witness (expected violations)"
