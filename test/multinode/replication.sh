#!/usr/bin/env bash
# Several nodes on PostgreSQL's own distribution machinery: three writer
# clusters (shardid.node_id 1, 2, 3; wal_level = logical) publish the same
# table, whose primary key defaults to next_snowflake_id() and which has a
# unique TraceId column; one aggregator subscribes to all three with
# disable_on_error = true. Concurrent inserts on every writer must all reach
# the aggregator with no key conflict. Negative control: a fourth writer
# reusing node id 1 must make the aggregator detect a conflict.
# Prints PASS/FAIL lines. Run from the repository root.
set -u
. scripts/lib.sh

base=15430
dirs=()
replication_cleanup() { for d in "${dirs[@]}"; do cluster_stop "$d" immediate; rm -rf "$d"; done; }
trap replication_cleanup EXIT

# node INDEX NODE_ID: start a writer (NODE_ID > 0) or the aggregator (0).
node() {
    local i=$1 id=$2 d
    d=$(pg_tmpdir); dirs+=("$d"); dir_of[$i]=$d port_of[$i]=$((base + i))
    cluster_init "$d" "shared_preload_libraries = 'shardid'" "shardid.node_id = $id" "wal_level = logical" \
        "max_wal_senders = 10" "max_replication_slots = 10" "max_logical_replication_workers = 8" \
        "max_worker_processes = 16" || return 1
    cluster_start "$d" $((base + i)) || return 1
}
export PGOPTIONS="-c client_min_messages=warning"
table_ddl="CREATE TABLE events (id bigint PRIMARY KEY DEFAULT next_snowflake_id(),
                                trace bigint NOT NULL UNIQUE DEFAULT next_trace_id(),
                                node int NOT NULL, n int NOT NULL)"

setup_writer() {  # INDEX
    q "$1" -c "CREATE EXTENSION shardid" -c "$table_ddl" -c "CREATE PUBLICATION events_pub FOR TABLE events"
    q 0 -c "CREATE SUBSCRIPTION sub_$1 CONNECTION 'host=${dir_of[$1]} port=$((base + $1)) user=postgres dbname=postgres'
            PUBLICATION events_pub WITH (disable_on_error = true)"
}

# wait_for_rows EXPECTED SECONDS: until the aggregator has EXPECTED rows or
# a subscription is disabled (a conflict); prints "rows|disabled".
wait_for_rows() {
    local got
    for _ in $(seq 1 $(($2 * 4))); do
        got=$(q 0 -c "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM pg_subscription WHERE NOT subenabled)")
        [ "${got%|*}" = "$1" ] && break
        [ "${got#*|}" != 0 ] && break
        sleep 0.25
    done
    echo "$got"
}

# load INDEX: single-row inserts from pgbench plus a bulk insert, at once.
pgbench_node() {
    local i=$1 script
    script=$(mktemp); chmod 644 "$script"
    echo "INSERT INTO events (node, n) VALUES ($i, 0);" >"$script"
    "$PG_BIN/pgbench" -n -h "${dir_of[$i]}" -p $((base + i)) -U postgres -c 2 -T 3 -f "$script" postgres \
        >/dev/null 2>&1 &
    q "$i" -c "INSERT INTO events (node, n) SELECT $i, g FROM generate_series(1, 100000) g"
    wait
    rm -f "$script"
}

node 0 0 || { echo "FAIL multinode_setup: aggregator"; exit 0; }
q 0 -c "CREATE EXTENSION shardid" -c "$table_ddl"
for i in 1 2 3; do
    node "$i" "$i" || { echo "FAIL multinode_setup: writer $i"; exit 0; }
    setup_writer "$i"
done

for i in 1 2 3; do pgbench_node "$i" & done
wait
expected=0
for i in 1 2 3; do expected=$((expected + $(q "$i" -c "SELECT count(*) FROM events"))); done
got=$(wait_for_rows "$expected" 60)
if [ "$got" = "$expected|0" ]; then
    echo "PASS three_writers_replicate_without_conflict ($expected rows)"
else
    echo "FAIL three_writers_replicate_without_conflict: expected $expected rows and 0 disabled, got $got"
fi
check=$(q 0 -c "SELECT count(DISTINCT id) = count(*) AND count(DISTINCT trace) = count(*),
                       array_agg(DISTINCT d.shard ORDER BY d.shard)::text,
                       bool_and(d.shard = node)
                FROM events, snowflake_decode(id) d")
[ "$check" = "t|{1,2,3}|t" ] && echo "PASS aggregated_ids_decode_to_their_writer" \
    || echo "FAIL aggregated_ids_decode_to_their_writer: $check"

# Negative control: writer 4 is misconfigured with writer 1's node id.
node 4 1 || { echo "FAIL multinode_setup: writer 4"; exit 0; }
setup_writer 4
pgbench_node 1 & pgbench_node 4 & wait
total=0
for i in 1 2 3 4; do total=$((total + $(q "$i" -c "SELECT count(*) FROM events"))); done
got=$(wait_for_rows "$total" 30)
if [ "${got#*|}" != 0 ] || [ "${got%|*}" != "$total" ]; then
    echo "PASS negative_control_duplicate_node_id_is_detected (aggregator: $got of $total rows|disabled subscriptions)"
else
    echo "FAIL negative_control_duplicate_node_id_is_detected: all $total rows arrived without a conflict"
fi
