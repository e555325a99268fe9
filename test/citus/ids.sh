#!/usr/bin/env bash
# shardid's node ids on Citus (docs/citus.md): every scheme's values unique
# across a coordinator and two workers with metadata (MX) whose node ids are
# their Citus group ids, under load, while nodes join, leave and fail; and
# the negative control. Citus 13.2.2 on PostgreSQL 15, 14.0.1 in the 18
# root, built from ../shared/vendor (scripts/citus.sh, cached once per
# machine). Prints PASS/FAIL lines; run from the repository root. Where
# there is neither a built Citus nor its source, prints one SKIP line with
# the reason and exits 0. The key ring is test/citus/keys.sh's, the fences
# test/citus/fences.sh's (the sections keep the numbers docs/citus.md
# gives them).
#   1 CREATE EXTENSION shardid on the coordinator reaches the workers;
#     shardid.node_id_source = citus: each node's id is its group id; a
#     node not yet in a cluster refuses (55000) instead of issuing under
#     group 0, the coordinator's; a worker of a cluster whose metadata has
#     no coordinator refuses at once, with the coordinator's hint.
#   2 create_layout() on the coordinator (before: "distributed functions are
#     not allowed to depend on an extension"); the layout on every worker;
#     create_layout() on a worker refused (55000); per-shard defaults
#     (next_instagram_id(5)) refused with a hint, never duplicated, unless
#     shardid.shards lists the shard; a group id beyond a layout's node
#     field, and a database without Citus, refused (55000).
#   3 a load through all three nodes (CITUS_ROWS, 5,000, before, between and
#     after its events) on every write
#     path (test/citus/load.py: router, multi-row, COPY, reference table,
#     tenant schemas, INSERT ... SELECT pushed down and repartitioned),
#     with a shard move, a tenant schema move and a rebalance meanwhile:
#     no duplicate, IDs in order per client, each decoding to its node.
#   4 a worker added after the layout exists has it; pg_dump of the
#     coordinator carries the layouts; DROP EXTENSION drops every carrier.
#   5 negative control: the same load with every node on one hand-set id
#     (shardid.node_id_source = setting) gives duplicates.
#   6 a backend open while its node joins a cluster issues its next ID
#     under the node's new group, not the single-node cluster's 0; removed
#     while it runs, it refuses, and a server added under its group id
#     issues above its IDs.
#   6b a server added under a value the coordinator or a worker declares in
#     shardid.shards refuses while the declaration lives, and then issues
#     above the declarer's IDs; the declarer then refuses the value.
set -u
. scripts/lib.sh
. scripts/roots.sh
. scripts/citus.sh

citus_suite

# on each node at once, into $cwork/gen/<scheme>/<node>.<session>;
# dups SCHEME: how many values of SCHEME more than one session issued, and
# how many there were ("dups total").
GEN_N=${GEN_N:-20000}
GENERATORS=(trace "next_trace_id()" snowflake "next_snowflake_id()" instagram "next_instagram_id()"
    decimal "next_decimal_id()" call "next_call_number()" eightbyte "encode(next_eightbyte_id('time_sequential'), 'hex')"
    uuidv7 "next_uuidv7()")
every_generator() {  # (GEN_ONLY=SCHEME: that scheme's generator only, again)
    local i n k
    [ -n "${GEN_ONLY:-}" ] && rm -rf "$cwork/gen/$GEN_ONLY" || rm -rf "$cwork/gen"
    for ((i = 0; i < ${#GENERATORS[@]}; i += 2)); do
        [ -n "${GEN_ONLY:-}" ] && [ "${GENERATORS[i]}" != "$GEN_ONLY" ] && continue
        mkdir -p "$cwork/gen/${GENERATORS[i]}"
        # Every session starts at one instant, 200 ms into a second (the
        # negative control needs them to meet: on a busy machine, sessions
        # started one after another may each finish before the next
        # begins; started near a second's end, TraceIds of one second on
        # some nodes and of the next on others need not meet).
        local start
        start=$(date +%s | awk '{ printf "%.3f", $1 + 2.2 }')
        for n in "$@"; do
            for k in 1 2; do
                cq "$n" -c "COPY (WITH s AS MATERIALIZED (SELECT pg_sleep(greatest(0, $start - extract(epoch FROM clock_timestamp()))))
                           SELECT ${GENERATORS[i + 1]} FROM s, generate_series(1, $GEN_N)) TO STDOUT" \
                    >"$cwork/gen/${GENERATORS[i]}/$n.$k" 2>&1 &
            done
        done
        wait
    done
}
dups() { echo "$(cat "$cwork/gen/$1"/* | sort | uniq -d | wc -l) $(cat "$cwork/gen/$1"/* | wc -l)"; }

# --- 1: the extension and the node ids ------------------------------------------
citus_cluster_up "$(test_port 18700)"
version=$(sed -n "s/^default_version = '\\(.*\\)'/\\1/p" shardid.control)
check "CREATE EXTENSION shardid on the coordinator reaches both workers" "$version $version" \
    "$(cq w1 -c "SELECT extversion FROM pg_extension WHERE extname = 'shardid'") $(cq w2 -c "SELECT extversion FROM pg_extension WHERE extname = 'shardid'")"
for n in c w1 w2; do
    check "node_id_source = citus: $n's node id is its Citus group id" \
        "$(cq "$n" -c "SELECT groupid FROM pg_dist_local_group")" \
        "$(cq "$n" -c "SELECT node_id FROM shardid_coordination() WHERE source = 'citus' AND state = 'configured'")"
done
check "a TraceId made on w2 decodes to group 2" "2" "$(cq w2 -c "SELECT (trace_id_decode(next_trace_id())).node_no")"
cnode_up w3 $((base + 3)) "$citus_src" || stop_suite "w3 did not start: $(cnode_why w3)"
cq w3 -c "CREATE EXTENSION shardid" >/dev/null
err=$(cq_err w3 "SELECT next_trace_id()")
contains "a Citus node not yet in a cluster refuses to issue (55000)" "$err" "55000"
contains "... saying it is not in the cluster's metadata" "$err" "is not in the cluster's metadata"
contains "... naming its group, 0 (issue 48: it said -1)" "$err" "Citus group 0 is not in the cluster's metadata"
check "... and shardid_coordination() says misconfigured" "misconfigured" \
    "$(cq w3 -c "SELECT state FROM shardid_coordination()")"
cq w3 -c "DROP EXTENSION shardid" >/dev/null
# A cluster whose metadata has no coordinator (no citus_set_coordinator_host(),
# as in most of Citus' own test clusters): x1 the coordinator, x2 its worker.
# Issue 58: the coordinator refused at once with a hint, but a worker's
# statements waited about 50 s before they gave up.
cnode_up x1 $((base + 13)) "$citus_src" && cnode_up x2 $((base + 14)) "$citus_src" || stop_suite "x1 or x2 did not start: $(cnode_why x1) $(cnode_why x2)"
cq x1 -c "CREATE EXTENSION shardid" -c "SELECT citus_add_node('127.0.0.1', $((base + 14)))" >/dev/null ||
    fail "x1: citus_add_node(x2) failed"
err=$(timed_in_server x2 "next_trace_id()")
took=$(took_of "$err")
contains "a worker whose cluster's metadata has no coordinator refuses to issue (55000)" "$err" ": 55000 "
contains "... saying the coordinator is not in the metadata" "$err" "Citus coordinator of this node's group"
contains "... with the coordinator's hint" "$err" "citus_set_coordinator_host"
promise "... at once (under 2 s in the server; before: about 50 s)" "$([ "${took:-99999}" -lt 2000 ] && echo t || echo f)" "${took:-no} ms"
contains "... as its coordinator does" "$(cq_err x1 "SELECT next_trace_id()")" "citus_set_coordinator_host"
cnode_stop x1
cnode_stop x2

# Every scheme is unique across the cluster: the node-id schemes by the
# group id, DecimalId generator ids and call-number run ids by the
# coordinator, which hands out every one (each node's own sequences start
# at the same value: 20,000 of 20,000 were shared). Section 5 runs the same
# with every node on one hand-set id: the negative control.
for n in c w1 w2; do cnode_conf "$n" "shardid.launch_id = 1"; cq "$n" -c "SELECT pg_reload_conf()" >/dev/null; done
for n in c w1 w2; do wait_until "$n reloaded shardid.launch_id" 30 shows 1 cq "$n" -c "SHOW shardid.launch_id"; done
every_generator c w1 w2
for ((i = 0; i < ${#GENERATORS[@]}; i += 2)); do
    check "${GENERATORS[i + 1]} on the coordinator and both workers at once, two sessions each: no value twice" \
        "0 $((6 * GEN_N))" "$(dups "${GENERATORS[i]}")"
done
check "... the DecimalIds of the three nodes carry three or more generator ids" "t" \
    "$(cat "$cwork"/gen/decimal/* | awk '{ g[int($1 / 100000) % 100000] = 1 } END { print (length(g) >= 3 ? "t" : "f") }')"

# --- 2: layouts -------------------------------------------------------------------
out=$(cq c -c "SELECT create_layout('per_minute', '2024-01-01', '1 minute', 30, 13, 20)" 2>&1)
check "create_layout() on the Citus coordinator succeeds" "" "$out"
check "... its carrier is dropped with the extension (an automatic dependency, not DEPENDS ON EXTENSION)" "a" \
    "$(cq c -c "SELECT string_agg(deptype::text, '') FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND objid = 'shardid_carrier.\"shardid_layout\$per_minute\"()'::regprocedure")"
body=$(cq c -c "SELECT shardid_carrier.\"shardid_layout\$per_minute\"()")
for n in w1 w2; do
    check "the layout is on $n, identical" "$body" "$(cq "$n" -c "SELECT shardid_carrier.\"shardid_layout\$per_minute\"()")"
done
check "next_id('per_minute') on w1 decodes to shard 1" "1" \
    "$(cq w1 -c "SELECT (id_decode('per_minute', next_id('per_minute'))).shard")"
err=$(cq_err w1 "SELECT create_layout('on_worker', '2024-01-01', '1 second', 41, 10, 12)")
contains "create_layout() on a worker is refused (55000)" "$err" "55000"
contains "... pointing to the coordinator" "$err" "layouts are created on the Citus coordinator"
err=$(cq_err w1 "SELECT next_instagram_id(5)")
contains "a per-shard default (next_instagram_id(5)) without an owner is refused (55000)" "$err" "55000"
contains "... naming the shard" "$err" "shard 5 has no owner on this Citus node"
cq w1 -c "ALTER SYSTEM SET shardid.shards = '5'" -c "SELECT pg_reload_conf()" >/dev/null
wait_until "w1 reloaded shardid.shards" 30 shows 5 cq w1 -c "SHOW shardid.shards"
check "... and issued once shardid.shards on the node lists it" "5" \
    "$(cq w1 -c "SELECT (instagram_decode(next_instagram_id(5))).shard" 2>&1)"
cq w1 -c "ALTER SYSTEM RESET shardid.shards" -c "SELECT pg_reload_conf()" >/dev/null
# A declared shard that is another node's group id (issue 48: the
# coordinator declaring 1 shared 13,734 to 27,632 of 100,000 Instagram IDs
# with w1, group 1).
cq c -c "ALTER SYSTEM SET shardid.shards = '1,9'" -c "SELECT pg_reload_conf()" >/dev/null
wait_until "c reloaded shardid.shards" 30 shows 1,9 cq c -c "SHOW shardid.shards"
err=$(cq_err c "SELECT next_instagram_id(1)")
contains "a declared shard equal to another node's group (w1's 1) is refused (55000)" "$err" "55000"
contains "... naming why" "$err" "shard 1 is the Citus group id of another node"
check "... while a declared shard no node has as its group issues" "9" \
    "$(cq c -c "SELECT (instagram_decode(next_instagram_id(9))).shard" 2>&1)"
# w1 goes on once it has seen the declaration: the coordinator recorded
# it, and w1 confirmed its group again since.
wait_until "the coordinator's declaration recorded" 30 shows t cq c -c "SELECT count(*) > 0 FROM shardid_citus_declared WHERE groupid = 0"
w1_until=$(cq w1 -c "SELECT issuing_until FROM shardid_coordination()")
wait_until "w1 confirmed its group after the declaration" 30 shows t cq w1 -c "SELECT issuing_until > '$w1_until' FROM shardid_coordination()"
check "... and w1, whose group 1 came before the declaration, goes on issuing under it" "1" \
    "$(cq w1 -c "SELECT (instagram_decode(next_instagram_id())).shard" 2>&1)"
cq c -c "ALTER SYSTEM RESET shardid.shards" -c "SELECT pg_reload_conf()" >/dev/null
cq c -c "SELECT create_layout('two_nodes', '2024-01-01', '1 second', 41, 1, 12)" >/dev/null
err=$(cq_err w2 "SELECT next_id('two_nodes')")
contains "a group id beyond a layout's node field is refused (55000)" "$err" "55000"
contains "... naming the range" "$err" "group id 2 does not fit the two_nodes layout"
cq c -c "CREATE DATABASE plain" >/dev/null 2>&1
err=$(as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$base" -U postgres -X -At -d plain \
    -c "CREATE EXTENSION shardid" -c "SELECT next_trace_id()" 2>&1 | tr '\n' ' ')
contains "a database without the citus extension refuses, naming it" "$err" "Citus is not installed in this database"

# --- 3: the load -----------------------------------------------------------------
cq c >/dev/null <<'SQL'
CREATE TABLE events (id bigint NOT NULL DEFAULT next_trace_id(), tenant int NOT NULL, note text);
SELECT create_distributed_table('events', 'tenant', shard_count := 8);
CREATE TABLE events_copy (id bigint NOT NULL DEFAULT next_trace_id(), tenant int NOT NULL, note text);
SELECT create_distributed_table('events_copy', 'tenant', colocate_with := 'events');
CREATE TABLE events_by_k (id bigint NOT NULL DEFAULT next_trace_id(), k int NOT NULL, note text);
SELECT create_distributed_table('events_by_k', 'k', shard_count := 4, colocate_with := 'none');
CREATE TABLE ref_events (id bigint NOT NULL DEFAULT next_trace_id(), note text);
SELECT create_reference_table('ref_events');
SET citus.enable_schema_based_sharding TO on;
CREATE SCHEMA tenant_1; CREATE SCHEMA tenant_2; CREATE SCHEMA tenant_3; CREATE SCHEMA tenant_4;
CREATE TABLE tenant_1.orders (id bigint PRIMARY KEY DEFAULT next_trace_id(), note text);
CREATE TABLE tenant_2.orders (id bigint PRIMARY KEY DEFAULT next_trace_id(), note text);
CREATE TABLE tenant_3.orders (id bigint PRIMARY KEY DEFAULT next_trace_id(), note text);
CREATE TABLE tenant_4.orders (id bigint PRIMARY KEY DEFAULT next_trace_id(), note text);
SQL
# The load runs until the three moves are done and it wrote more after
# the last one: each move happens while it writes, counted in rows of
# events (CITUS_ROWS between one step and the next), not in seconds.
step_rows=${CITUS_ROWS:-5000}
nodes=(--node "c=$base:0" --node "w1=$((base + 1)):1" --node "w2=$((base + 2)):2")
rm -f "$cwork/load.done"
/usr/bin/python3 test/citus/load.py --seconds $((900 * ${SHARDID_HANG_SCALE:-1})) --until "$cwork/load.done" "${nodes[@]}" \
    >"$cwork/load.out" 2>&1 &
load=$!
# rows_grow: until the load wrote step_rows more rows into events.
rows_grow() {
    local from
    from=$(cq c -c "SELECT count(*) FROM events")
    wait_until "the load writes $step_rows more rows" 300 shows t cq c -c "SELECT count(*) >= $((${from:-0} + step_rows)) FROM events"
}
# Meanwhile: a shard of events from w1 to w2, a tenant schema to another
# node, and a rebalance.
rows_grow
shard=$(cq c -c "SELECT shardid FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid)
                WHERE s.logicalrelid = 'events'::regclass AND p.nodeport = $((base + 1)) ORDER BY shardid LIMIT 1")
moved=$(cq c -c "SELECT citus_move_shard_placement($shard, '127.0.0.1', $((base + 1)), '127.0.0.1', $((base + 2)),
                shard_transfer_mode := 'block_writes')" 2>&1 && echo ok)
contains "a shard of events moved from w1 to w2 under load" "$moved" "ok"
rows_grow
from=$(cq c -c "SELECT nodeport FROM citus_schemas s JOIN citus_shards h ON h.colocation_id = s.colocation_id
               WHERE s.schema_name = 'tenant_1'::regnamespace LIMIT 1")
to=$([ "$from" = "$((base + 1))" ] && echo $((base + 2)) || echo $((base + 1)))
moved=$(cq c -c "SELECT citus_schema_move('tenant_1', '127.0.0.1', $to, shard_transfer_mode := 'block_writes')" 2>&1 &&
    echo ok)
contains "the tenant schema tenant_1 moved to another node under load" "$moved" "ok"
rows_grow
moved=$(cq c -c "SELECT rebalance_table_shards('events', shard_transfer_mode := 'block_writes')" 2>&1 && echo ok)
contains "a rebalance of events under load" "$moved" "ok"
rows_grow
touch "$cwork/load.done"
wait "$load"
rc=$?
cat "$cwork/load.out"
[ "$rc" -eq 0 ] || grep -q '^FAIL' "$cwork/load.out" || fail "the load driver exited with status $rc"

# --- 4: a worker added later, pg_dump, DROP EXTENSION ------------------------------
cnode_add w3 || fail "citus_add_node(w3) failed"
check "w3, added after the layout was made, has it and issues under group 3" "3" \
    "$(cq w3 -c "SELECT (id_decode('per_minute', next_id('per_minute'))).shard" 2>&1)"
dump=$(as_pg "$PG_BIN/pg_dump" -h 127.0.0.1 -p "$base" -U postgres postgres 2>&1)
contains "pg_dump of the coordinator carries the layout's carrier" "$dump" 'shardid_carrier."shardid_layout$per_minute"()'
contains "... and its catalog row" "$dump" "per_minute"$'\t'

# The shards a move left behind are dropped by Citus' deferred cleanup;
# until then they use next_trace_id() too (docs/citus.md).
cq c -c "DROP TABLE events, events_copy, events_by_k, ref_events" -c "DROP SCHEMA tenant_1, tenant_2, tenant_3, tenant_4 CASCADE" \
    -c "CALL citus_cleanup_orphaned_resources()" >/dev/null 2>&1
out=$(cq c -c "DROP EXTENSION shardid" 2>&1)
check "DROP EXTENSION shardid on the coordinator with a layout succeeds" "DROP EXTENSION" "$out"
for n in c w1 w2 w3; do
    check "... and leaves no carrier on $n" "0" \
        "$(cq "$n" -c "SELECT count(*) FROM pg_proc WHERE proname LIKE 'shardid_layout%'")"
done

# --- 5: negative control -------------------------------------------------------------
cq c -c "CREATE EXTENSION shardid" >/dev/null
cq c >/dev/null <<'SQL'
CREATE TABLE events (id bigint NOT NULL DEFAULT next_trace_id(), tenant int NOT NULL, note text);
SELECT create_distributed_table('events', 'tenant', shard_count := 8);
SQL
for n in c w1 w2; do
    cnode_conf "$n" "shardid.node_id_source = setting" "shardid.node_id = 7"
    cnode_stop "$n" && cnode_start "$n" || fail "$n did not restart: $(cnode_why "$n")"
done
out=$(/usr/bin/python3 test/citus/load.py --seconds 10 --expect-duplicates --paths router,multi "${nodes[@]}" 2>&1)
echo "$out"
grep -q '^PASS negative control' <<<"$out" || grep -q '^FAIL' <<<"$out" || fail "the negative control's load did not run"
# Every generator on the three nodes, as in section 1: the counts a
# cluster without one owner per value gives.
every_generator c w1 w2
# DecimalIds and call numbers: a figure only (after section 1 each node's
# floor differs, so their own sequences may or may not meet again).
for scheme in decimal call; do
    [ -d "$cwork/gen/$scheme" ] || continue
    read -r shared total <<<"$(dups "$scheme")"
    echo "# negative control: $scheme: $shared of $total values shared"
done
for scheme in trace snowflake; do
    # Sessions that did not meet (one node's ran before another's began, on
    # a loaded machine: once 0 of 120,000 snowflake values in the 18 root)
    # prove nothing either way: they run again, up to twice.
    for again in 1 2; do
        read -r shared total <<<"$(dups "$scheme")"
        [ "$shared" -gt 0 ] 2>/dev/null && break
        echo "# negative control: $scheme: no value shared, the sessions run again"
        GEN_ONLY=$scheme every_generator c w1 w2
    done
    read -r shared total <<<"$(dups "$scheme")"
    echo "# negative control: $scheme: $shared of $total values shared"
    [ "$shared" -gt 0 ] 2>/dev/null && pass "negative control: every node on one id, $scheme values repeat ($shared of $total)" ||
        fail "negative control: every node on one id, yet no $scheme value repeats ($shared of $total; each node's lowest and highest: $(
            for n in c w1 w2; do echo "$n $(cat "$cwork/gen/$scheme/$n".* | sort -n | sed -n '1p;$p' | tr '\n' ' ')"; done))"
done

# --- 6: a live backend sees its node join a cluster -----------------------------------
# w4 starts as a single-node Citus cluster (its own coordinator: group 0,
# in its metadata); one backend stays open while c adds w4 as a worker.
# That backend's next ID must carry w4's new group, never 0, the
# coordinator's (issue 48: it kept group 0 for its life).
cnode_up w4 $((base + 5)) "$citus_src" || stop_suite "w4 did not start: $(cnode_why w4)"
cq w4 -c "SELECT citus_set_coordinator_host('127.0.0.1', $((base + 5)))" -c "CREATE EXTENSION shardid" >/dev/null
coproc W4 { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p $((base + 5)) -U postgres -X -At 2>&1; }
ask_w4() { echo "SELECT (trace_id_decode(next_trace_id())).node_no;" >&"${W4[1]}"; read -r -t 30 answer <&"${W4[0]}" || answer=none; echo "$answer"; }
check "a single-node Citus server issues under group 0" "0" "$(ask_w4)"
cnode_add w4 || fail "citus_add_node(w4) failed"
w4_group=$(cq w4 -c "SELECT groupid FROM pg_dist_local_group")
check "... added to the cluster, its group is a worker's" "t" "$([ "${w4_group:-0}" -gt 0 ] 2>/dev/null && echo t || echo "f (${w4_group:-none})")"
check "... and a backend open since before the join issues its next ID under that group" "$w4_group" "$(ask_w4)"
echo '\q' >&"${W4[1]}" 2>/dev/null
# A removed worker that keeps running while another server is added under
# its group id (issue 48: 100,000 of 100,000 IDs shared). w4 has no shard
# placements, so citus_remove_node() takes it out of the metadata while it
# runs; w5 is then added with groupid => w4's group.
w4_max=$(cq w4 -c "SELECT max(next_trace_id()) FROM generate_series(1, 1000)")
cq c -c "SELECT citus_remove_node('127.0.0.1', $((base + 5)))" >/dev/null || fail "citus_remove_node(w4) failed"
wait_until "w4 refuses once removed" 30 eval '! cq w4 -c "SELECT next_trace_id()"'
err=$(cq_err w4 "SELECT next_trace_id()")
contains "a worker removed from the metadata while it runs refuses to issue (55000)" "$err" \
    "has not confirmed this server as the primary of group $w4_group"
cnode_up w5 $((base + 6)) "$citus_src" || stop_suite "w5 did not start: $(cnode_why w5)"
cq c -c "SELECT citus_add_node('127.0.0.1', $((base + 6)), groupid => $w4_group)" >/dev/null ||
    fail "citus_add_node(w5, groupid => $w4_group) failed"
w5_min=$(cq w5 -c "SELECT min(next_trace_id()) FROM generate_series(1, 1000)" 2>&1)
check "a server added under the removed worker's group issues under it, above the removed worker's IDs" "$w4_group t" \
    "$(cq w5 -c "SELECT (trace_id_decode(next_trace_id())).node_no" 2>&1) $([ "$w5_min" -gt "$w4_max" ] 2>/dev/null && echo t || echo "f ($w5_min)")"
err=$(cq_err w4 "SELECT next_trace_id()")
contains "... while the removed worker still refuses" "$err" "has not confirmed this server as the primary of group $w4_group"

# --- 6b: a server added under a declared shard ------------------------------------
# Declarations live on the coordinator (shardid_citus_declared): a server
# added under a value the coordinator or a worker lists in shardid.shards is
# refused while the declaration lives, and once it has run out issues above
# every ID the declarer issued with it (issue 48: only the declaring node
# checked, so a node added later under the value shared its IDs). The
# declarer's clock runs 3 s ahead: its IDs are dated ahead of the new
# server's clock. $1: the declaring node, $2 its group, $3 the new server,
# $4 its port, $5 the value.
declared_then_added() {
    local by=$1 by_group=$2 new=$3 port=$4 v=$5 by_max new_min err i
    cq "$by" -c "ALTER SYSTEM SET shardid.shards = '$v'" -c "ALTER SYSTEM SET shardid.clock_offset_ms = 3000" \
        -c "SELECT pg_reload_conf()" >/dev/null
    wait_until "$by reloaded shardid.shards" 30 shows "$v" cq "$by" -c "SHOW shardid.shards"
    by_max=$(cq "$by" -c "SELECT max(next_instagram_id($v)) FROM generate_series(1, 20000)" 2>&1)
    check "$by (group $by_group) declares shard $v and issues 20,000 IDs with it" "t" \
        "$([ "$by_max" -gt 0 ] 2>/dev/null && echo t || echo "f ($by_max)")"
    cnode_up "$new" "$port" "$citus_src" || stop_suite "$new did not start: $(cnode_why "$new")"
    cq c -c "SELECT citus_add_node('127.0.0.1', $port, groupid => $v)" >/dev/null ||
        fail "citus_add_node($new, groupid => $v) failed"
    err=$(cq_err "$new" "SELECT next_instagram_id()")
    contains "a server added under group $v, which $by declares, refuses to issue (55000)" "$err" "55000"
    contains "... naming the declaring node's group" "$err" "group $v is an explicit shard that Citus group $by_group declares"
    err=$(cq_err "$by" "SELECT next_instagram_id($v)")
    contains "... and $by's declaration is refused now that $v is a node's group" "$err" \
        "shard $v is the Citus group id of another node"
    cq "$by" -c "ALTER SYSTEM RESET shardid.shards" -c "SELECT pg_reload_conf()" >/dev/null
    for ((i = 0; i < 40; i++)); do
        new_min=$(cq "$new" -c "SELECT min(next_instagram_id()) FROM generate_series(1, 20000)" 2>/dev/null) && break
        sleep 1
    done
    check "$v undeclared: $new issues under its group, above every ID $by issued with shard $v" "$v t" \
        "$(cq "$new" -c "SELECT (instagram_decode(next_instagram_id())).shard" 2>&1) $([ "${new_min:-0}" -gt "$by_max" ] 2>/dev/null && echo t || echo "f (${new_min:-none} after $i s, not above $by_max)")"
    cq "$by" -c "ALTER SYSTEM RESET shardid.clock_offset_ms" -c "SELECT pg_reload_conf()" >/dev/null
}
# c and w1 take their node ids from Citus again (section 5 set them by hand).
for n in c w1; do
    cnode_conf "$n" "$citus_src" "shardid.node_id = -1"
    cnode_stop "$n" && cnode_start "$n" || fail "$n did not restart: $(cnode_why "$n")"
done
declared_then_added c 0 w6 $((base + 7)) 40
declared_then_added w1 1 w7 $((base + 8)) 41

citus_no_crash c w1 w2 w3 w4 w6 w7
