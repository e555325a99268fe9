#!/usr/bin/env bash
# A Citus cluster whose nodes are upgraded one by one with pg_upgrade
# (issue 71; docs/install.md, "Upgrading PostgreSQL", and docs/citus.md):
# a coordinator and two workers with metadata, node ids from their Citus
# group ids (shardid.node_id_source = citus), every node issuing IDs of an
# hourly layout and TraceIds, DecimalIds and call numbers (whose generator
# ids and run ids a worker takes from the coordinator). Then w1, w2 and the
# coordinator in turn, each as Citus' documentation says
# (citus_prepare_pg_upgrade(), pg_upgrade --link into a new data directory,
# citus_finish_pg_upgrade()):
#   - the upgraded node issues nothing (55000) until its old node state is
#     adopted, while the nodes not being upgraded go on issuing;
#   - once adopted, it issues again, and none of its IDs equals one the
#     cluster issued before (hourly IDs in the old IDs' hour, above them);
# and at the end no value of any scheme was issued twice in the cluster.
# Needs Citus (scripts/citus.sh; a SKIP line where there is none). Prints
# PASS/FAIL lines. Run from the repository root.
set -u
. scripts/lib.sh
. scripts/roots.sh
. scripts/citus.sh

citus_suite

base=$(test_port 18760)
cwork=$(pg_tmpdir)
trap 'cnodes_stop; rm -rf "$cwork"' EXIT
# Every statement has a hang guard (SHARDID_HANG_SCALE scales it): a
# generator of a layout of hourly ticks waits for its next tick when the
# one in progress is used up.
export PGOPTIONS="-c client_min_messages=warning -c statement_timeout=$((60 * ${SHARDID_HANG_SCALE:-1}))s"
N=1000
# Every node's clock five minutes into the next UTC day: old and new hourly
# IDs share an hour however long the run takes.
now_ms=$(date +%s%3N)
offset=$(((now_ms / 86400000 + 1) * 86400000 + 300000 - now_ms))
conf=("shardid.node_id_source = citus" "shardid.clock_offset_ms = $offset" "shardid.launch_id = 65")

cnode_up c "$base" "${conf[@]}" && cnode_up w1 $((base + 1)) "${conf[@]}" && cnode_up w2 $((base + 2)) "${conf[@]}" ||
    stop_suite "a node did not start: $(cnode_why c) $(cnode_why w1) $(cnode_why w2)"
cq c -c "SELECT citus_set_coordinator_host('127.0.0.1', $base)" >/dev/null
cnode_add w1 && cnode_add w2 || stop_suite "citus_add_node() failed"
cq c -c "CREATE EXTENSION shardid" -c "SELECT create_layout('hourly', '2024-01-01', '1 hour', 20, 8, 20)" >/dev/null ||
    stop_suite "CREATE EXTENSION shardid or create_layout() failed"

# issue NODE TAG: N IDs of each scheme on NODE, into its local table ids_TAG
# (scheme, id).
issue() {
    cq "$1" -c "CREATE TABLE ids_$2 AS
        SELECT 'hourly' AS scheme, next_id('hourly')::text AS id FROM generate_series(1, $N)
        UNION ALL SELECT 'trace', next_trace_id()::text FROM generate_series(1, $N)
        UNION ALL SELECT 'decimal', next_decimal_id()::text FROM generate_series(1, $N)
        UNION ALL SELECT 'call', next_call_number() FROM generate_series(1, $N)" >/dev/null
}
# every_id: "node tag scheme id" of every table ids_* on every node.
every_id() {
    local n t
    for n in c w1 w2; do
        for t in $(cq "$n" -c "SELECT relname FROM pg_class WHERE relname LIKE 'ids\_%' AND relkind = 'r'"); do
            cq "$n" -F' ' -c "SELECT '$n', '$t', scheme, id FROM $t"
        done
    done
}

for n in c w1 w2; do issue "$n" old || stop_suite "the old IDs of $n could not be made"; done

# upgrade NODE: NODE's data directory upgraded with pg_upgrade --link, as
# Citus' documentation says; the old directory kept in $cwork/NODE.old.
upgrade() {
    local n=$1 d=${cdir_of[$1]}
    cq "$n" -c "SELECT citus_prepare_pg_upgrade()" >/dev/null || return 1
    cnode_stop "$n" || return 1
    as_pg mv "$d/data" "$d/data.old" || return 1
    # The new directory takes the old one's configuration: its settings and
    # what CREATE EXTENSION citus added (ssl = on, its certificate).
    as_pg "$PG_BIN/initdb" -D "$d/data" -U postgres -A trust --no-sync >/dev/null 2>&1 || return 1
    for f in postgresql.conf postgresql.auto.conf server.crt server.key; do
        [ -e "$d/data.old/$f" ] && { as_pg cp -p "$d/data.old/$f" "$d/data/$f" || return 1; }
    done
    (cd "$cwork" && as_pg "$PG_BIN/pg_upgrade" -b "$PG_BIN" -B "$PG_BIN" -d "$d/data.old" -D "$d/data" \
        -p $((base + 10)) -P $((base + 11)) -s "$cwork" --link >"$cwork/upgrade_$n.log" 2>&1) || {
        tail -5 "$cwork/upgrade_$n.log"
        return 1
    }
    cnode_start "$n" && cq "$n" -c "SELECT citus_finish_pg_upgrade()" >/dev/null
}

for n in w1 w2 c; do
    upgrade "$n" || stop_suite "$n: the upgrade failed: $(cnode_why "$n")"
    got=""
    for sql in "SELECT next_id('hourly')" "SELECT next_trace_id()" "SELECT next_decimal_id()" "SELECT next_call_number()"; do
        got+="$(sqlstate_of cq "$n" -c "$sql") "
    done
    check "$n, upgraded: every scheme refuses (55000) until its old state is adopted" "55000 55000 55000 55000 " "$got"
    # The nodes not being upgraded go on (a worker upgraded earlier has
    # adopted its state by now): their own IDs, and while a worker awaits,
    # call numbers from the coordinator's run ids too.
    for o in c w1 w2; do
        [ "$o" = "$n" ] && continue
        sql="SELECT next_id('hourly'), next_trace_id()" what="hourly IDs and TraceIds"
        [ "$n" != c ] && sql+=", next_call_number()" what+=" and call numbers"
        check "$n, upgraded and awaiting: $o issues $what meanwhile" "ok" \
            "$(cq "$o" -c "$sql" >/dev/null 2>&1 && echo ok)"
    done
    cq "$n" -c "SELECT shardid_adopt_state(pg_read_file('${cdir_of[$n]}/data.old/shardid.hwm'))" >/dev/null ||
        fail "$n: shardid_adopt_state() failed"
    check "$n: after the adoption it awaits nothing" "f" "$(cq "$n" -c "SELECT awaiting_adoption FROM shardid_node_history()")"
    # A worker is a new server of its group (its token is new): the
    # coordinator confirms it above the tick holding its predecessor's last
    # window end, so its hourly layout continues in the next hour
    # (docs/citus.md). Its clock moves there, so that no statement waits
    # for the hour to end; the coordinator's stays, and continues in the
    # old IDs' hour.
    same_hour=t
    if [ "$n" != c ]; then
        node_setting "${cdir_of[$n]}" "${cport_of[$n]}" shardid.clock_offset_ms $((offset + 3600000)) ||
            fail "$n: its clock did not move"
        same_hour=f
    fi
    issue "$n" "new_$n" || fail "$n: no new IDs after the adoption"
    check "$n: its hourly IDs sort above its old ones (in their hour: $same_hour)" "t $same_hour" \
        "$(cq "$n" -c "SELECT (SELECT min(id::bigint) FROM ids_new_$n WHERE scheme = 'hourly') > (SELECT max(id::bigint) FROM ids_old WHERE scheme = 'hourly'),
            (SELECT (id_decode('hourly', min(id::bigint))).created_at FROM ids_new_$n WHERE scheme = 'hourly')
              = (SELECT (id_decode('hourly', max(id::bigint))).created_at FROM ids_old WHERE scheme = 'hourly')" | tr '|' ' ')"
done

all=$(every_id)
for scheme in hourly trace decimal call; do
    ids=$(awk -v s="$scheme" '$3 == s { print $4 }' <<<"$all")
    check "no $scheme value issued twice in the cluster, old and new IDs of every node" "$((N * 6)) 0" \
        "$(grep -c . <<<"$ids") $(sort <<<"$ids" | uniq -d | wc -l)"
done
