#!/usr/bin/env bash
# Hostile scenarios that need a real server and several sessions:
#   - a backend waiting for the next tick shows a wait event, and
#     pg_cancel_backend, pg_terminate_backend and pg_ctl stop -m fast end it
#     at once;
#   - a superuser's open ALTER SEQUENCE plus decimal_id_new_generator()
#     while another session needs a DecimalId generator: no deadlock that
#     nobody can see, other databases unaffected;
#   - after a clean restart and after kill -9, a layout with hour-long ticks
#     goes on generating within its tick (and above every earlier ID);
#   - DROP/CREATE EXTENSION followed by a restart: no DecimalId and no call
#     number comes again.
# Prints PASS/FAIL lines. Run from the repository root (uses scripts/lib.sh).
set -u
. scripts/lib.sh

scenario_cluster 15430 "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "shardid.launch_id = 65" \
    "max_connections = 30" "deadlock_timeout = '200ms'"
# qt SECONDS ARGS...: q that gives up (and fails) after SECONDS, so that a
# regression makes a test fail instead of hanging the suite.
qt() { timeout "$1" psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres -At "${@:2}"; }
# wait_for SECONDS SQL: polls until the query prints t.
wait_for() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        [ "$(q -c "$2" 2>/dev/null)" = t ] && return 0
        sleep 0.1
    done
    return 1
}
# ended_within SECONDS PID: waits for a background job to end.
ended_within() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        kill -0 "$2" 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}

q -c "CREATE EXTENSION shardid" \
  -c "SELECT create_layout('two_a_month', '2020-01-01', '30 days', 30, 4, 1)" \
  -c "SELECT create_layout('hourly_wide', '2020-01-01', '1 hour', 30, 4, 8)" >/dev/null
q -c "SELECT next_id('two_a_month', 1), next_id('two_a_month', 1)" >/dev/null  # this tick's two IDs

# --- 1. waits for the next tick: visible, cancellable, terminable ---------
waiter() {  # NAME: a session whose next_id waits for the next 30-day tick
    PGAPPNAME=$1 q -c "SELECT next_id('two_a_month', 1)" >"$dir/$1.out" 2>&1 &
    echo $!
}
waiting="SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '%s'
         AND wait_event_type = 'Extension' AND state = 'active'"
pid=$(waiter cancel_me)
if wait_for 10 "$(printf "$waiting" cancel_me)"; then
    echo "PASS waiting_for_a_tick_shows_an_extension_wait_event"
    q -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'cancel_me'" >/dev/null
    if ended_within 5 "$pid" && grep -q "canceling statement due to user request" "$dir/cancel_me.out"; then
        echo "PASS pg_cancel_backend_ends_a_wait_for_the_next_tick"
    else
        echo "FAIL pg_cancel_backend_ends_a_wait_for_the_next_tick: $(cat "$dir/cancel_me.out")"
    fi
else
    echo "FAIL waiting_for_a_tick_shows_an_extension_wait_event: $(q -c "SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE application_name = 'cancel_me'")"
    echo "FAIL pg_cancel_backend_ends_a_wait_for_the_next_tick: not waiting"
fi
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null

pid=$(waiter terminate_me)
wait_for 10 "$(printf "$waiting" terminate_me)"
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'terminate_me'" >/dev/null
if ended_within 5 "$pid" && grep -q "terminating connection due to administrator command" "$dir/terminate_me.out"; then
    echo "PASS pg_terminate_backend_ends_a_wait_for_the_next_tick"
else
    echo "FAIL pg_terminate_backend_ends_a_wait_for_the_next_tick: $(cat "$dir/terminate_me.out")"
fi
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null

pid=$(waiter stop_me)
wait_for 10 "$(printf "$waiting" stop_me)"
start=$(date +%s)
as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w -t 20 stop >/dev/null 2>&1
stopped=$?
took=$(($(date +%s) - start))
# The tick waited for is far off: a stop that waited for it would outlast
# pg_ctl's own wait (20 s), which the check needs, not a time of its own.
if [ "$stopped" -eq 0 ] && [ ! -e "$dir/data/postmaster.pid" ]; then
    echo "PASS pg_ctl_stop_fast_does_not_wait_for_the_tick (${took}s)"
else
    echo "FAIL pg_ctl_stop_fast_does_not_wait_for_the_tick: took ${took}s"
fi
wait "$pid" 2>/dev/null
cluster_stop "$dir" immediate
cluster_start "$dir" "$port" || exit 1

# --- 2. no LWLock held while waiting for a heavyweight lock ----------------
# After the restart this database's DecimalId state has no generator id, so
# the first next_decimal_id() takes one. A superuser holds the generator
# sequence with ALTER SEQUENCE in an open transaction and then takes a new
# generator itself: with the old node-wide LWLock, the two sessions waited
# for each other forever, invisible to the deadlock detector.
q -c "CREATE DATABASE other" >/dev/null
q -d other -c "CREATE EXTENSION shardid" >/dev/null
PGAPPNAME=holder q >"$dir/holder.out" 2>&1 <<'SQL' &
BEGIN;
ALTER SEQUENCE shardid_generator_seq CACHE 1;
SELECT pg_sleep(2);
SELECT 'holder took ' || decimal_id_new_generator();
SELECT pg_sleep(1);
COMMIT;
SQL
holder=$!
# The holder's transaction is open (it sleeps inside it) before the other
# session asks for a generator.
wait_for 5 "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'holder' AND state = 'active' AND query LIKE 'SELECT pg_sleep(2)%'" ||
    echo "FAIL the holder session did not start its transaction"
PGAPPNAME=needs_generator q -c "SELECT (decimal_id_decode(next_decimal_id())).generator_id" >"$dir/needs.out" 2>&1 &
needs=$!
if wait_for 5 "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'needs_generator' AND wait_event_type = 'Lock'"; then
    echo "PASS taking_a_generator_waits_on_a_heavyweight_lock_the_deadlock_detector_sees"
else
    echo "FAIL taking_a_generator_waits_on_a_heavyweight_lock_the_deadlock_detector_sees: $(q -c "SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE application_name = 'needs_generator'")"
fi
other=$(timeout 5 env PGAPPNAME=other_db psql -X -At -h "$dir" -p "$port" -U postgres -d other \
    -c "SELECT next_decimal_id() > 0" 2>&1)
check other_database_generates_meanwhile t "$other"
if ended_within 20 "$holder" && ended_within 20 "$needs"; then
    took=$(grep -o 'holder took [0-9]*' "$dir/holder.out" | grep -o '[0-9]*$')
    got=$(cat "$dir/needs.out")
    check alter_sequence_and_new_generator_do_not_deadlock_with_a_waiting_generator "$took" "$got"
else
    echo "FAIL alter_sequence_and_new_generator_do_not_deadlock_with_a_waiting_generator: still waiting after 20 s"
    q -c "SELECT application_name, wait_event_type, wait_event FROM pg_stat_activity WHERE application_name IN ('holder', 'needs_generator')"
fi
kill "$holder" "$needs" 2>/dev/null; wait 2>/dev/null

# --- 3. a restart does not stop a coarse layout for the rest of its tick ---
q -c "CREATE TABLE hourly (id bigint PRIMARY KEY, phase int)" \
  -c "INSERT INTO hourly SELECT next_id('hourly_wide', 1), 0 FROM generate_series(1, 10)" >/dev/null
for how in fast kill9; do
    if [ "$how" = fast ]; then
        cluster_stop "$dir" fast
    else
        pm=$(head -1 "$dir/data/postmaster.pid")
        kill -9 $(pgrep -P "$pm") "$pm" 2>/dev/null
        while kill -0 "$pm" 2>/dev/null; do sleep 0.1; done
    fi
    cluster_start "$dir" "$port" || exit 1
    out=$(qt 30 -c "SET statement_timeout = '5s'" \
            -c "INSERT INTO hourly SELECT next_id('hourly_wide', 1), 1 FROM generate_series(1, 10)" \
            -c "SELECT (SELECT min(id) FROM hourly WHERE phase = 1) > (SELECT max(id) FROM hourly WHERE phase = 0)" 2>&1)
    check "hour_long_ticks_generate_at_once_after_restart_${how}_and_above_earlier_ids" t "$out"
    q -c "UPDATE hourly SET phase = 0" >/dev/null
done

# --- 4. DROP/CREATE EXTENSION, then a restart: nothing comes again ---------
q -c "CREATE TABLE issued_decimal (id bigint PRIMARY KEY)" -c "CREATE TABLE issued_call (c text PRIMARY KEY)" \
  -c "INSERT INTO issued_decimal SELECT next_decimal_id() FROM generate_series(1, 1000)" \
  -c "INSERT INTO issued_call SELECT next_call_number() FROM generate_series(1, 100)" \
  -c "CREATE TABLE issued_runs AS SELECT (call_number_decode(c)).run_id FROM issued_call" \
  -c "DROP TABLE issued_call" >/dev/null
q -c "DROP EXTENSION shardid CASCADE" -c "CREATE EXTENSION shardid" >/dev/null 2>&1
cluster_stop "$dir" fast
cluster_start "$dir" "$port" || exit 1
out=$(qt 60 -c "INSERT INTO issued_decimal SELECT next_decimal_id() FROM generate_series(1, 1000)" \
        -c "SELECT count(*) FROM issued_decimal" 2>&1)
check decimal_ids_after_drop_create_and_restart_are_new 2000 "$out"
out=$(qt 60 -c "SELECT count(*) FROM (SELECT (call_number_decode(next_call_number())).run_id AS run FROM generate_series(1, 100)) n
            WHERE run <= (SELECT max(run_id) FROM issued_runs)" 2>&1)
check call_number_runs_after_drop_create_and_restart_are_new 0 "$out"

# --- 5. the node state file: 1.1's one-line format is honoured, a damaged
# ---    file refuses generation rather than guessing ----------------------
cluster_stop "$dir" fast
mark=$(( ($(date +%s) + 3600) * 1000 ))
printf 'shardid high-water mark v1\n%s\n' "$mark" | as_pg tee "$dir/data/shardid.hwm" >/dev/null
cluster_start "$dir" "$port" || exit 1
# A file of 1.1 holds no history: the server starts a new one, and this
# database, which records the one it had, is refused until told otherwise
# (the operator's step after replacing the file: docs/restart-safety.md).
check a_state_file_without_the_history_the_database_records_refuses 55000 \
    "$(psql -X -q -h "$dir" -p "$port" -U postgres -d postgres -At -v VERBOSITY=verbose -c "SELECT next_trace_id()" 2>&1 |
       grep -oE 'ERROR:  [0-9A-Z]{5}' | cut -c9-)"
q -c "DELETE FROM shardid_lineage" -c "INSERT INTO shardid_lineage (history) SELECT history FROM shardid_node_history()" >/dev/null
node_setting "$dir" "$port" shardid.max_clock_lead 2h
out=$(q -c "SELECT next_trace_id() > 0" \
        -c "SELECT (extract(epoch FROM restart_floor) * 1000)::bigint FROM shardid_status LIMIT 1" 2>&1)
check a_mark_file_of_shardid_1_1_is_honoured "$(printf 't\n%s' "$mark")" "$out"
node_setting "$dir" "$port" shardid.max_clock_lead DEFAULT
cluster_stop "$dir" fast
printf 'shardid node state v2\nmark 12x\n' | as_pg tee "$dir/data/shardid.hwm" >/dev/null
cluster_start "$dir" "$port" || exit 1
out=$(q -c "SELECT next_snowflake_id()" 2>&1; q -c "SELECT next_decimal_id()" 2>&1; q -c "SELECT next_call_number()" 2>&1)
check a_damaged_state_file_refuses_every_generator 3 "$(grep -c 'high-water mark file "shardid.hwm" is unreadable' <<<"$out")"
