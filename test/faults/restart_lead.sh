#!/usr/bin/env bash
# A restart is not a clock step. The node's time mark runs ahead of the IDs
# issued (so generators rarely wait for a write); a clean stop brings it
# down to the last issued tick, so that right after a fast restart:
#   - the first IDs are dated at or before the wall clock, not the mark's
#     lead ahead of it (the figure printed: their lead, in ms);
#   - shardid_status's moved_ahead and issued_behind_clock stay 0 and
#     clock_lead_ms is 0;
#   - README's "none_from_the_future" example holds;
# and every new ID is still above every ID issued before the stop, also
# after an immediate stop.
# The same in etcd mode, where the claim also starts above the etcd mark.
# Prints PASS/FAIL lines and "# figure" lines. Run from the repository root.
set -u
. scripts/lib.sh
. test/etcd/lib.sh

coord_setup 17560
etcd_main 26161 26162
PREFIX=/lead

# settings mode: node "s" with shardid.node_id = 7.
d=$(pg_tmpdir); coord_dirs+=("$d"); dir_of[s]=$d; port_of[s]=17561
cluster_init "$d" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "shardid.launch_id = 1" || exit 1
node_start s || exit 1
q s -c "CREATE EXTENSION shardid"
node_up e 17562 "" || { fail "the etcd node did not start"; exit 1; }
wait_state e held 30 || fail "the etcd node holds no id"

node_restart() {  # NAME MODE
    as_pg "$PG_BIN/pg_ctl" -D "${dir_of[$1]}/data" -m "$2" -w stop >/dev/null 2>&1
    node_start "$1"
}

# restart_and_check NAME MODE LABEL: IDs before, a restart in MODE, IDs right after.
restart_and_check() {
    local n=$1 mode=$2 label=$3 before out lead status
    before=$(q "$n" -c "SELECT max(next_snowflake_id()) FROM generate_series(1, 5000)")
    node_restart "$n" "$mode" || { fail "$label: the node did not start again"; return; }
    [ "$n" = e ] && { wait_state e held 30 || fail "$label: no claim after the restart"; }
    out=$(q "$n" -F' ' -c "CREATE TEMP TABLE events AS SELECT next_snowflake_id() AS id FROM generate_series(1, 1000)" \
        -c "SELECT min(id) > $before, extract(epoch from (max(snowflake_timestamp(id)) - clock_timestamp())) * 1000,
                   max((snowflake_decode(id)).created_at) <= now() FROM events")
    status=$(q "$n" -F' ' -c "SELECT moved_ahead, issued_behind_clock, clock_lead_ms FROM shardid_status WHERE layout = 'snowflake'")
    read -r above lead future <<<"$out"
    echo "# figure restart lead ($label): $(printf '%.0f' "$lead") ms"
    [ "$above" = t ] && pass "$label: every new ID is above every ID issued before the stop" ||
        fail "$label: an ID at or below one issued before the stop ($out)"
    if [ "$mode" = fast ]; then
        [ "$future" = t ] && pass "$label: no ID from the future right after the restart (lead $(printf '%.0f' "$lead") ms)" ||
            fail "$label: IDs dated $(printf '%.0f' "$lead") ms ahead of the clock right after the restart"
        [ "$status" = "0 0 0" ] && pass "$label: moved_ahead, issued_behind_clock and clock_lead_ms stay 0" ||
            fail "$label: the restart counts as a clock step (moved_ahead, issued_behind_clock, clock_lead_ms: $status)"
    fi
}
restart_and_check s fast "settings, fast restart"
grep -q "lowered the node's time mark" "${dir_of[s]}/server.log" &&
    pass "settings: the server log says the mark came down at the clean stop" ||
    fail "settings: no log line about the mark at the clean stop"
restart_and_check s immediate "settings, immediate stop"
restart_and_check e fast "etcd, fast restart"
