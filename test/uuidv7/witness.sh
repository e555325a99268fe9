# The witness of real-time order for UUID generators, shared by
# test/uuidv7/order.sh and test/scenarios/uuidv7_versions.sh. Each row takes
# a sequence value before and after its UUID (nextval is one global order):
# when A's "after" is below B's "before", A was handed out before B was
# asked for, so A < B must hold. Source it; the caller defines q (psql -At).

# witness_load EXPR TABLE SESSIONS N: SESSIONS sessions at once, N rows each.
witness_load() {
    q -c "CREATE UNLOGGED TABLE $2 (before bigint, u uuid, after bigint, session int)" -c "CREATE SEQUENCE ${2}_seq"
    local pids=() s
    for s in $(seq 1 "$3"); do
        q -c "INSERT INTO $2 SELECT nextval('${2}_seq'), $1, nextval('${2}_seq'), $s FROM generate_series(1, $4)" &
        pids+=($!)
    done
    wait "${pids[@]}"
    q -c "CREATE INDEX ON $2 (after)" -c "ANALYZE $2"
}

# witness_violations TABLE: rows B with a row A finished before B began and
# A >= B. uuid has no max() before PostgreSQL 16; its text sorts as its
# bytes do.
witness_violations() {
    q -c "CREATE TABLE ${1}_done AS SELECT after, max(u::text) OVER (ORDER BY after) AS max_before FROM $1" \
      -c "CREATE INDEX ON ${1}_done (after)" -c "ANALYZE ${1}_done" \
      -c "SELECT count(*) FROM $1 b
          WHERE (SELECT d.max_before FROM ${1}_done d WHERE d.after < b.before ORDER BY d.after DESC LIMIT 1) >= b.u::text"
}
