#!/usr/bin/env bash
# Faults on a real server: a clean restart, an immediate shutdown and a
# kill -9 of the postmaster and all its children in the middle of a
# concurrent insert load, each followed by more load. After each, every new
# ID (snowflake primary key, TraceId and UUIDv7 columns) must be above every ID
# committed before, with no duplicate keys; also with the wall clock moved a
# minute back across the restart. Deleting the state file before such a
# restart loses nothing (crash recovery replays the mark from WAL); a
# negative control that also turns the WAL records off must see the failure.
# Prints PASS/FAIL lines. Run from the repository root (uses scripts/lib.sh).
set -u
. scripts/lib.sh

dir=$(pg_tmpdir)
port=15420
trap 'cluster_stop "$dir" immediate; rm -rf "$dir"' EXIT
cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "max_connections = 30" || exit 1
cluster_start "$dir" "$port" || exit 1
q -c "CREATE EXTENSION shardid" \
  -c "CREATE TABLE events (id bigint PRIMARY KEY DEFAULT next_snowflake_id(),
                           trace bigint UNIQUE DEFAULT next_trace_id(), u uuid UNIQUE DEFAULT next_uuidv7(),
                           phase int NOT NULL)"
load_script=$(mktemp)
chmod 644 "$load_script"
echo 'INSERT INTO events (phase) VALUES (:phase);' >"$load_script"

phase=0
# load SECONDS: pgbench inserts with 4 clients; prints its errors count.
pgbench_seconds() {
    phase=$((phase + 1))
    "$PG_BIN/pgbench" -n -h "$dir" -p "$port" -U postgres -c 4 -j 2 -T "$1" -D phase=$phase \
        -f "$load_script" postgres >"$dir/pgbench.$phase.log" 2>&1
}

kill_all() {  # kill -9 the postmaster and every child at once; returns once all are gone
    local pm kids p
    pm=$(head -1 "$dir/data/postmaster.pid")
    kids=$(pgrep -P "$pm")
    kill -9 $kids "$pm" 2>/dev/null
    # Gone as a new postmaster sees it: kill -0 fails (a zombie not yet
    # reaped still counts: the lock file check would find it). At most 10 s each.
    for p in $kids $pm; do
        for _ in $(seq 200); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.05
        done
    done
}

# check_phase NAME: phase $phase's IDs all above every earlier phase's, the
# latest load inserted rows, and none of its inserts failed on a duplicate
# key (the keys are PRIMARY KEY and UNIQUE: a reissued ID shows as the
# insert's error in pgbench's log, never as a second row).
check_phase() {
    local out dups
    out=$(q -c "SELECT
        (SELECT count(*) FROM events WHERE phase = $phase) > 0,
        (SELECT min(id) FROM events WHERE phase = $phase) > (SELECT max(id) FROM events WHERE phase < $phase),
        (SELECT min(trace) FROM events WHERE phase = $phase) > (SELECT max(trace) FROM events WHERE phase < $phase),
        (SELECT min(u::text) FROM events WHERE phase = $phase) > (SELECT max(u::text) FROM events WHERE phase < $phase)")
    dups=$(grep -c "duplicate key" "$dir/pgbench.$phase.log" 2>/dev/null)
    out="$out|$([ "${dups:-0}" -eq 0 ] && echo t || echo f)"
    if [ "$out" = "t|t|t|t|t" ]; then
        echo "PASS $1"
    else
        echo "FAIL $1: rows|snowflake above|trace above|UUIDv7 above|no duplicate key errors = $out"
        tail -5 "$dir/pgbench.$phase.log" 2>/dev/null
    fi
}

set_conf() { q -c "ALTER SYSTEM SET $1" >/dev/null; }

pgbench_seconds 2
# 1. clean restart
cluster_stop "$dir" fast; cluster_start "$dir" "$port"; pgbench_seconds 2
check_phase "clean_restart_resumes_above"
# 2. immediate shutdown
cluster_stop "$dir" immediate; cluster_start "$dir" "$port"; pgbench_seconds 2
check_phase "immediate_shutdown_resumes_above"
# 3. kill -9 of the postmaster and its children in the middle of the load
pgbench_seconds 4 & loader=$!
sleep 2; kill_all; wait $loader
cluster_start "$dir" "$port"; pgbench_seconds 2
check_phase "kill_9_mid_load_resumes_above"
# 4. the same, with the wall clock a minute back after the restart
pgbench_seconds 4 & loader=$!
sleep 2; kill_all; wait $loader
{ echo "shardid.clock_offset_ms = -60000"; echo "shardid.max_clock_lead = '5min'"; } \
    | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
cluster_start "$dir" "$port"; pgbench_seconds 2
check_phase "kill_9_clock_back_a_minute_resumes_above"
lead=$(q -c "SELECT min(clock_lead_ms) > 50000 FROM shardid_status")
[ "$lead" = t ] && echo "PASS status_shows_clock_lead" || echo "FAIL status_shows_clock_lead: $lead"
# 5. the default lead limit refuses, rather than reissuing, when the clock
#    is further behind the mark than shardid.max_clock_lead.
as_pg sed -i "/shardid.max_clock_lead = '5min'/d" "$dir/data/postgresql.conf"
cluster_stop "$dir" immediate; cluster_start "$dir" "$port"
err=$(q -c "SELECT count(next_snowflake_id()) FROM generate_series(1, 10000)" 2>&1)
case "$err" in
*"would lead the wall clock"*) echo "PASS clock_behind_mark_refused_with_default_lead" ;;
*) echo "FAIL clock_behind_mark_refused_with_default_lead: $err" ;;
esac
# 6. The state file deleted while the server is down after a crash: crash
#    recovery replays the mark from WAL (shardid is preloaded), so the
#    restart with the clock a minute back still resumes above.
as_pg sed -i '/shardid.clock_offset_ms/d' "$dir/data/postgresql.conf"
cluster_stop "$dir" fast; cluster_start "$dir" "$port"
sleep 1; pgbench_seconds 2   # a phase of IDs at the real time
pgbench_seconds 1 & loader=$!; sleep 0.5; kill_all; wait $loader
rm -f "$dir/data/shardid.hwm"
{ echo "shardid.clock_offset_ms = -60000"; echo "shardid.max_clock_lead = '5min'"; } \
    | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
cluster_start "$dir" "$port"; pgbench_seconds 1
check_phase "deleted_mark_file_recovered_from_wal_after_kill_9"
# 7. negative control: without the mark in the file or in WAL
#    (shardid.wal_log_mark off), the same restart reissues IDs below earlier
#    ones, and the check above must notice.
as_pg sed -i "/shardid.clock_offset_ms/d; /shardid.max_clock_lead = '5min'/d" "$dir/data/postgresql.conf"
echo "shardid.wal_log_mark = off" | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
cluster_stop "$dir" fast; cluster_start "$dir" "$port"
sleep 1; pgbench_seconds 2   # a phase of IDs at the real time
pgbench_seconds 1 & loader=$!; sleep 0.5; kill_all; wait $loader
rm -f "$dir/data/shardid.hwm"
echo "shardid.clock_offset_ms = -60000" | as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
cluster_start "$dir" "$port"
# The new file starts a new history, which the database refuses (1.4) until
# it is told the old one is over, as an operator who removed the file does
# (docs/restart-safety.md): then the reissue this control needs happens.
cluster_psql "$dir" "$port" -c "DELETE FROM shardid_lineage" \
    -c "INSERT INTO shardid_lineage (history) SELECT history FROM shardid_node_history()" >/dev/null
pgbench_seconds 1
if check_phase "negative_control" | grep -q '^FAIL'; then
    echo "PASS negative_control_without_high_water_mark_is_detected"
else
    echo "FAIL negative_control_without_high_water_mark_is_detected: the check did not notice reissued IDs"
fi
mv "$dir/pgbench.$phase.log" "$dir/negative-control.log"  # may hit duplicate keys: that is its point
# No insert of any phase failed on a duplicate key.
if grep -l "duplicate key" "$dir"/pgbench.*.log >/dev/null 2>&1; then
    echo "FAIL no_duplicate_key_errors_during_load: $(grep -h "duplicate key" "$dir"/pgbench.*.log | head -2)"
else
    echo "PASS no_duplicate_key_errors_during_load"
fi
rm -f "$load_script"
