#!/usr/bin/env bash
# The node state's bounds, in scenarios that need a real server, restarts
# and several databases:
#   1. a layout name the node state once could not read back (a superuser's
#      direct INSERT of "hourly orders"): refused when read, and the node
#      state stays readable, so a clean restart and a crash both come back
#      generating (the codec itself is total: test/unit/node_state_test.cpp
#      and the fuzz target);
#   2. coarse layouts (hour- and day-long ticks) used before a restart, first
#      used after it, and never used: none waits for its next tick;
#   3. node-wide layout slots: one database cannot take the node's table,
#      marks of ticks that are over leave the node state, and a restart frees
#      what its hint says it frees;
#   4. DecimalId state of dropped databases is freed for others.
# Prints PASS/FAIL lines. Run from the repository root (uses scripts/lib.sh).
set -u
. scripts/lib.sh

scenario_cluster 15436 "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "shardid.launch_id = 65" \
    "max_connections = 30"
qdb() { local db=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d "$db" -At "$@"; }
restart_server() {  # fast | kill9
    if [ "$1" = kill9 ]; then
        local pm
        pm=$(head -1 "$dir/data/postmaster.pid")
        kill -9 $(pgrep -P "$pm") "$pm" 2>/dev/null
        while kill -0 "$pm" 2>/dev/null; do sleep 0.1; done
    else
        cluster_stop "$dir" fast
    fi
    cluster_start "$dir" "$port"
}

q -c "CREATE EXTENSION shardid" >/dev/null

# --- 2. coarse layouts around a restart: used before, first after, never ----
q -c "SELECT create_layout('hourly_before', '2020-01-01', '1 hour', 30, 4, 8)" \
  -c "SELECT create_layout('daily_after', '2020-01-01', '1 day', 25, 4, 8)" \
  -c "SELECT create_layout('hourly_after', '2020-01-01', '1 hour', 30, 4, 9)" \
  -c "SELECT create_layout('daily_never', '2020-01-01', '1 day', 25, 4, 9)" >/dev/null
before=$(q -c "SELECT next_id('hourly_before', 2)")
for how in fast kill9; do
    restart_server "$how"
    # statement_timeout: a wait for the next tick fails the check instead of
    # hanging the suite. The tick is now()'s, or the one before when now()
    # has just passed its start: IDs read the kernel's coarse clock, which
    # can lag now()'s by a tick (sql/trace_id.sql allows the same).
    out=$(q -c "SET statement_timeout = '5s'" \
            -c "SELECT next_id('hourly_before', 2) > $before
                   AND id_timestamp('hourly_before', next_id('hourly_before', 2)) IN (date_trunc('hour', now()), date_trunc('hour', now() - interval '50 milliseconds'))" 2>&1)
    check "used_before_a_${how}_restart_goes_on_within_its_hour_above_earlier_ids" t "$out"
    out=$(q -c "SET statement_timeout = '5s'" \
            -c "SELECT id_timestamp('daily_after', next_id('daily_after', 1)) IN (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', date_trunc('day', (now() - interval '50 milliseconds') AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')" 2>&1)
    check "first_used_after_a_${how}_restart_a_daily_layout_issues_in_today_at_once" t "$out"
    before=$(q -c "SELECT next_id('hourly_before', 2)")
done
out=$(q -c "SET statement_timeout = '5s'" \
        -c "SELECT (id_decode('hourly_after', next_id('hourly_after', 1))).created_at IN (date_trunc('hour', now()), date_trunc('hour', now() - interval '50 milliseconds'))" 2>&1)
check an_hourly_layout_first_used_after_restarts_issues_in_this_hour_at_once t "$out"
check a_layout_never_used_has_no_node_state 0 \
    "$(q -c "SELECT count(*) FROM shardid_status WHERE layout = 'daily_never'")"
check a_layout_never_used_issues_in_its_current_day_when_first_used t \
    "$(q -c "SET statement_timeout = '5s'" \
         -c "SELECT id_timestamp('daily_never', next_id('daily_never', 1)) IN (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', date_trunc('day', (now() - interval '50 milliseconds') AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')" 2>&1)"

# --- 3. layout slots: bounded per database, freed when their tick is over ---
q -c "CREATE DATABASE tenant" -c "CREATE ROLE tenant LOGIN" >/dev/null
qdb tenant -c "CREATE EXTENSION shardid" \
    -c "GRANT EXECUTE ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) TO tenant" >/dev/null
# The tenant makes 64 layouts of 2-second ticks, each a shape of its own,
# and uses each once (as the review did).
out=$(psql -X -q -h "$dir" -p "$port" -U tenant -d tenant -At <<'SQL' 2>&1
SELECT create_layout('t' || i, '2020-01-01'::timestamptz + i * interval '1 ms', '2 s', 35, 4, 8)
FROM generate_series(1, 64) i \g /dev/null
DO $$
DECLARE ok int := 0; refused int := 0;
BEGIN
    FOR i IN 1..64 LOOP
        BEGIN
            PERFORM next_id('t' || i, 1);
            ok := ok + 1;
        EXCEPTION WHEN configuration_limit_exceeded THEN
            refused := refused + 1;
        END;
    END LOOP;
    RAISE NOTICE 'tenant: % in use, % refused', ok, refused;
END $$;
SQL
)
check one_database_brings_at_most_32_layout_shapes_into_use 1 \
    "$(grep -c 'tenant: 32 in use, 32 refused' <<<"$out")"
# Right away (a later write of the node state retires the marks of ticks
# that are over, and these ticks are 2 s long): the tenant's marks are there.
marks_of_t() { as_pg grep -cE '^(layout|slot) t[0-9]' "$dir/data/shardid.hwm"; }
check precondition_the_tenants_layouts_have_marks_in_the_node_state t "$(q -c "SELECT $(marks_of_t) > 0")"
q -c "SELECT create_layout('other_' || i, '2021-01-01'::timestamptz + i * interval '1 ms', '2 s', 35, 4, 8)
      FROM generate_series(1, 8) i" >/dev/null
check another_database_still_brings_new_shapes_into_use ok \
    "$(sqlstate_of q -c "SELECT count(next_id('other_' || i, 1)) FROM generate_series(1, 8) i")"
sleep 2.2
# Any write of the node state drops the marks whose tick is over.
q -c "SELECT next_snowflake_id()" >/dev/null
check marks_whose_tick_is_over_leave_the_node_state t \
    "$(q -c "SELECT $(marks_of_t) = 0")"
restart_server fast
check after_a_restart_the_tenant_brings_its_shapes_into_use_again ok \
    "$(psql -X -q -h "$dir" -p "$port" -U tenant -d tenant -At -v ON_ERROR_STOP=1 \
         -c "SELECT count(next_id('t' || i, 1)) FROM generate_series(33, 64) i" >/dev/null 2>&1 && echo ok)"

# --- 4. DecimalId state of dropped databases is freed ----------------------
for i in $(seq 1 70); do
    q -c "CREATE DATABASE shortlived" >/dev/null &&
        qdb shortlived -c "CREATE EXTENSION shardid" -c "SELECT next_decimal_id()" >/dev/null &&
        q -c "DROP DATABASE shortlived" >/dev/null || { echo "FAIL short-lived database $i"; break; }
done
check decimal_ids_after_70_short_lived_databases_used_them ok "$(sqlstate_of q -c "SELECT next_decimal_id()")"
check decimal_ids_in_the_tenant_database_too ok \
    "$(qdb tenant -c "SELECT next_decimal_id()" >/dev/null 2>&1 && echo ok)"

# --- 1. (last: before the fix it left the node unable to generate) a name
# --- the node state could not read back
q -c "INSERT INTO shardid_user_layout (name, epoch, time_unit, time_bits, shard_bits, sequence_bits)
      VALUES ('hourly orders', '2020-01-01', '1 hour', 30, 4, 8)" >/dev/null
check a_catalog_row_with_a_name_outside_the_rule_is_refused_when_read 22023 \
    "$(sqlstate_of q -c "SELECT next_id('hourly orders', 1)")"
q -c "SELECT create_layout('hourly_ok', '2020-01-01', '1 hour', 30, 4, 8)" \
  -c "SELECT next_id('hourly_ok', 1)" >/dev/null
for how in fast kill9; do
    restart_server "$how" || echo "FAIL the server did not start after a $how restart"
    check "after_a_${how}_restart_every_generator_works" ok \
        "$(sqlstate_of q -c "SELECT next_snowflake_id(), next_id('hourly_ok', 1), next_decimal_id(), next_call_number()")"
done
check the_state_file_is_version_3_and_reads_back t \
    "$(q -c "SELECT NOT high_water_mark_unreadable FROM shardid_status LIMIT 1")"

