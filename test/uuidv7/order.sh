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
S=${UUIDV7_SESSIONS:-16}
N=${UUIDV7_N:-100000}
CONTROL=${UUIDV7_CONTROL:-gen_random_uuid()}

dir=$(pg_tmpdir)
port=${UUIDV7_PORT:-55470}
trap 'cluster_stop "$dir" immediate; rm -rf "$dir"' EXIT
cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "max_connections = 40" || exit 1
cluster_start "$dir" "$port" || exit 1
q() { PGOPTIONS="-c client_min_messages=warning" cluster_psql "$dir" "$port" -At "$@"; }
q -c "CREATE EXTENSION shardid"

# run EXPR TABLE: S sessions at once, N rows each, into TABLE.
run() {
    q -c "CREATE UNLOGGED TABLE $2 (before bigint, u uuid, after bigint, session int)" -c "CREATE SEQUENCE ${2}_seq"
    local pids=() s
    for s in $(seq 1 "$S"); do
        q -c "INSERT INTO $2 SELECT nextval('${2}_seq'), $1, nextval('${2}_seq'), $s FROM generate_series(1, $N)" &
        pids+=($!)
    done
    wait "${pids[@]}"
    q -c "CREATE INDEX ON $2 (after)" -c "ANALYZE $2"
}
# violations TABLE: rows B with a row A finished before B began and A >= B.
# uuid has no max() before PostgreSQL 16; its text sorts as its bytes do.
violations() {
    q -c "CREATE TABLE ${1}_done AS SELECT after, max(u::text) OVER (ORDER BY after) AS max_before FROM $1" \
      -c "CREATE INDEX ON ${1}_done (after)" -c "ANALYZE ${1}_done" \
      -c "SELECT count(*) FROM $1 b
          WHERE (SELECT d.max_before FROM ${1}_done d WHERE d.after < b.before ORDER BY d.after DESC LIMIT 1) >= b.u::text"
}

run "next_uuidv7()" shardid_u
check "$S sessions x $N next_uuidv7(): all rows in" "$((S * N))" "$(q -c "SELECT count(*) FROM shardid_u")"
check "no UUID twice" "$((S * N))" "$(q -c "SELECT count(DISTINCT u) FROM shardid_u")"
# Rows that began after a row of another session had finished: the pairs
# across sessions that the witness checks.
pairs=$(q -c "WITH m AS MATERIALIZED (SELECT session, min(after) AS first_done FROM shardid_u GROUP BY session)
              SELECT count(*) FROM shardid_u b WHERE b.before > (SELECT min(first_done) FROM m WHERE m.session <> b.session)")
[ "${pairs:-0}" -gt 0 ] && pass "the witness has rows of other sessions that began after a row finished ($pairs rows)" ||
    fail "the witness saw no row of another session begin after one finished: it proves nothing"
check "every UUID is above every UUID handed out before it was asked for, across sessions" 0 "$(violations shardid_u)"
check "each session's UUIDs increase (its rows in generation order)" 0 \
    "$(q -c "SELECT count(*) FROM (SELECT u, lag(u) OVER (PARTITION BY session ORDER BY before) AS p FROM shardid_u) x
             WHERE p >= u")"
check "all are version 7, variant 10" "$((S * N))" \
    "$(q -c "SELECT count(*) FROM shardid_u WHERE substr(u::text, 15, 1) = '7' AND substr(u::text, 20, 1) IN ('8','9','a','b')")"

run "$CONTROL" control_u
bad=$(violations control_u)
[ "${bad:-0}" -gt 0 ] && pass "control: $CONTROL fails the witness ($bad UUIDs below one handed out before them)" ||
    fail "control: $CONTROL passed the witness (expected violations)"
