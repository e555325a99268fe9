#!/usr/bin/env bash
# UUIDv7 on the server at hand (PostgreSQL 15, 17 or 18: the integration
# suite runs this on each). Everywhere: shardid's UUIDs are version 7,
# variant 10, the readers agree with the bytes, and next_uuidv7() from four
# sessions at once passes the witness of real-time order of
# test/uuidv7/order.sh. On PostgreSQL 18 also:
# its uuid_extract_version() and uuid_extract_timestamp() agree with
# shardid's readers on shardid's UUIDs, shardid's readers decode uuidv7()'s
# UUIDs (time and version); and (the
# control) PostgreSQL's uuidv7() keeps order only within one backend: after
# the server's clock steps back, a new session's UUIDs sort below an older
# session's, where next_uuidv7() stays above.
# Needs SHARDID_TEST_HOST and SHARDID_TEST_PORT. Prints PASS/FAIL lines.
set -u
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/../uuidv7/witness.sh"
export PGHOST=$SHARDID_TEST_HOST PGPORT=$SHARDID_TEST_PORT PGUSER=postgres
psql -X -q -At -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS uuidv7_versions" \
    -c "CREATE DATABASE uuidv7_versions" >/dev/null
export PGDATABASE=uuidv7_versions
q -c "CREATE EXTENSION shardid"
major=$(q -c "SHOW server_version_num")
major=$((major / 10000))

# The bytes, read by hand in SQL, against the readers.
check "PG $major: next_uuidv7()'s version, variant, time and counter agree with uuidv7_decode()" "10000" "$(q -c "
    SELECT count(*) FROM (SELECT u, uuid_send(u) AS b FROM (SELECT next_uuidv7() AS u FROM generate_series(1, 10000)) g) x
    WHERE get_byte(b, 6) >> 4 = 7 AND get_byte(b, 8) >> 6 = 2
      AND (uuidv7_decode(u)).created_at = 'epoch'::timestamptz + ('x' || encode(substr(b, 1, 6), 'hex'))::bit(48)::bigint * interval '1 ms'
      AND (uuidv7_decode(u)).counter = ((get_byte(b, 6) & 15) << 8) | get_byte(b, 7)")"

# The witness, four sessions at once (test/uuidv7/witness.sh).
check "PG $major: next_uuidv7() from four sessions at once passes the witness of real-time order" 0 "$(witness_load 'next_uuidv7()' mine 4 50000 && witness_violations mine)"

if [ "$major" -lt 18 ]; then
    psql -X -q -d postgres -c "DROP DATABASE uuidv7_versions" >/dev/null
    exit 0
fi

check "PG $major: uuid_extract_version() and uuid_extract_timestamp() agree with shardid's readers on next_uuidv7()" "10000" \
    "$(q -c "SELECT count(*) FROM (SELECT next_uuidv7() AS u FROM generate_series(1, 10000)) g
             WHERE uuid_extract_version(u) = 7 AND uuid_extract_timestamp(u) = uuidv7_timestamp(u)")"
check "PG $major: shardid's readers decode uuidv7()'s UUIDs as uuid_extract_timestamp() does" "10000" \
    "$(q -c "SELECT count(*) FROM (SELECT uuidv7() AS u FROM generate_series(1, 10000)) g
             WHERE uuidv7_timestamp(u) = uuid_extract_timestamp(u) AND (uuidv7_decode(u)).created_at = uuid_extract_timestamp(u)
               AND uuidv7_created_within(u, tstzrange(uuid_extract_timestamp(u), uuid_extract_timestamp(u), '[]'))")"

psql -X -q -d postgres -c "DROP DATABASE uuidv7_versions" >/dev/null

# Control: PostgreSQL's uuidv7() keeps order only within one backend. A
# server of its own under libfaketime, whose clock steps back an hour (as an
# NTP step would) between two sessions: the second session's uuidv7() values
# sort below the first's, though asked for after them; next_uuidv7()
# (node-wide) stays above. Within the first session, both stay in order.
# (With steps of 2 s and 20 s the control saw nothing in CI, where this
# runs niced beside four other lanes: the second session began more than a
# step after the first's values. next_uuidv7()'s 2,000 values after the
# step fit in its last tick: no lead over the wall clock to refuse.)
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
cdir=$(pg_tmpdir)
trap 'cluster_stop "$cdir" immediate; rm -rf "$cdir"' EXIT
cport=$((SHARDID_TEST_PORT + 50))
echo "+0" | as_pg tee "$cdir/faketime" >/dev/null
cluster_init "$cdir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" || exit 1
as_pg env LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$cdir/faketime" FAKETIME_NO_CACHE=1 \
    FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_DISABLE_SHM=1 FAKETIME_DONT_RESET=1 \
    "$PG_BIN/pg_ctl" -D "$cdir/data" -l "$cdir/server.log" -o "-p $cport" -w start >/dev/null || exit 1
c() { PGHOST=$cdir PGPORT=$cport psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
c -c "CREATE EXTENSION shardid" -c "CREATE SEQUENCE w" \
  -c "CREATE TABLE steps (phase int, before bigint, theirs uuid, after_theirs bigint, mine uuid, after_mine bigint)"
row() { echo "INSERT INTO steps SELECT $1, nextval('w'), uuidv7(), nextval('w'), next_uuidv7(), nextval('w') FROM generate_series(1, 1000);"; }
began=$(date +%s%3N)
{ row 1; echo "\\! echo -1h > $cdir/faketime"; row 2; } | c
row 3 | c
took=$(($(date +%s%3N) - began))
# Pairs (a, b): a finished before b began (a's last sequence value below b's first).
viol() {  # COLUMN AFTER_COLUMN PHASES_OF_B
    c -c "SELECT count(*) FROM steps b WHERE b.phase IN ($3) AND EXISTS (
              SELECT 1 FROM steps a WHERE a.$2 < b.before AND a.$1::text >= b.$1::text)"
}
check "PG $major: within the first session, uuidv7() stays in order across the clock's step back" 0 "$(viol theirs after_theirs 2)"
check "PG $major: next_uuidv7() stays in real-time order across the step and the sessions" 0 "$(viol mine after_mine '2, 3')"
theirs=$(viol theirs after_theirs 3)
[ "${theirs:-0}" -gt 0 ] &&
    pass "PG $major: control: PostgreSQL's uuidv7() of a second session sorts below the first's after the clock stepped back ($theirs UUIDs)" ||
    fail "PG $major: control: PostgreSQL's uuidv7() of the second session stayed in order (${theirs:-?} violations; expected some; the sessions took $took ms)"
