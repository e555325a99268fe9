#!/usr/bin/env bash
# etcd's disaster recovery (issue 64; docs/coordination.md, "etcd restored
# from a backup" and "Failure modes"): a real etcd on private ports, nodes
# issuing under load while an operator has a bad hour. Prints PASS/FAIL
# lines; run from the repository root. RECOVERY_SECTIONS="1 3" runs some
# sections only.
#   1 etcd restored from an older snapshot: node a gave shard 5 of a
#     one-minute layout back after the snapshot, b took it and issued, b
#     took a new DecimalId generator id, c started after the snapshot; a
#     asks for shard 5 again (issue 64: 38,500 minute IDs and 2,000
#     DecimalIds issued twice).
#   2 the same from a recent snapshot, etcd's revision driven past every
#     node's by another writer before the nodes see it.
#   3 the same, restored into a new cluster (another cluster id).
#   4 the backup and restore procedure of docs/coordination.md, run as
#     written.
set -u
. scripts/lib.sh
. test/coord/lib.sh

coord_setup 16200
ETCD_PEER=24891
etcd_main 24791 $ETCD_PEER
PY=/usr/bin/python3
sections=" ${RECOVERY_SECTIONS:-1 2 3 4} "
want() { [[ "$sections" == *" $1 "* ]]; }
ms_now() { date +%s%3N; }

# issue_for NODE SECONDS SQL TABLE [STOP]: batches of SQL's IDs into TABLE
# for SECONDS, or until the file $work/stop-STOP (NODE) exists; a failed
# batch (55000 while the node waits) is retried.
issue_for() {
    local end=$((SECONDS + $2))
    while [ $SECONDS -lt "$end" ] && [ ! -e "$work/stop-${5:-$1}" ]; do
        q "$1" -c "INSERT INTO $4 SELECT $3 FROM generate_series(1, 200)" >/dev/null 2>&1 || sleep 0.05
    done
}
# copy_to FROM TO TABLE NEWTABLE: FROM's TABLE into NEWTABLE on TO.
copy_to() {
    q "$2" -c "DROP TABLE IF EXISTS $4; CREATE TABLE $4 (id bigint)" >/dev/null
    q "$1" -c "COPY $3 TO STDOUT" | q "$2" -c "COPY $4 FROM STDIN"
}
# restore_etcd SNAPSHOT [TOKEN]: etcd killed, the snapshot restored into a
# new data directory (into a new cluster when TOKEN is given), and etcd
# started on the same endpoint.
restore_etcd() {
    kill -9 "${etcd_pid_of[main]}"
    wait "${etcd_pid_of[main]}" 2>/dev/null
    rm -rf "$work/etcd-main"
    ETCDCTL_API=3 etcdctl snapshot restore "$1" --name main --data-dir "$work/etcd-main" \
        --initial-cluster "main=http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
        --initial-cluster-token "${2:-etcd-cluster}" >"$work/restore.log" 2>&1 || { cat "$work/restore.log"; return 1; }
    etcd_start main "$ETCD_PORT" $ETCD_PEER
    etcd_wait_up "$ETCD_PORT"
}
cluster_id() { ectl endpoint status -w json | grep -o '"cluster_id":[0-9]*' | cut -d: -f2; }
revision() { ectl endpoint status -w json | grep -o '"revision":[0-9]*' | cut -d: -f2; }
# drive_up PORT N: N writes of another writer (a key outside any prefix the
# nodes use) through etcd at PORT: its revision goes up by N.
drive_up() {
    $PY - "$1" "$2" <<'PY'
import base64, json, sys, urllib.request
port, n = sys.argv[1], int(sys.argv[2])
key = base64.b64encode(b"/another-writer").decode()
for i in range(n):
    body = json.dumps({"key": key, "value": base64.b64encode(str(i).encode()).decode()}).encode()
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v3/kv/put", body), timeout=5).read()
PY
}
# restore_driven SNAPSHOT: restored as restore_etcd does, but first started
# on a port no node uses, where another writer drives its revision past
# the highest any node saw (the revision of the etcd it replaces, and 200
# more); then on the usual endpoint.
restore_driven() {
    local past need
    past=$(revision)
    kill -9 "${etcd_pid_of[main]}"
    wait "${etcd_pid_of[main]}" 2>/dev/null
    rm -rf "$work/etcd-main"
    ETCDCTL_API=3 etcdctl snapshot restore "$1" --name main --data-dir "$work/etcd-main" \
        --initial-cluster "main=http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
        >"$work/restore.log" 2>&1 || { cat "$work/restore.log"; return 1; }
    etcd_start main 24792 $ETCD_PEER && etcd_wait_up 24792 || return 1
    need=$((past + 200 - $(etcdctl --endpoints=http://127.0.0.1:24792 endpoint status -w json | grep -o '"revision":[0-9]*' | cut -d: -f2)))
    drive_up 24792 "$need" || return 1
    echo "# the restored etcd driven from the snapshot's revision past $past (every node's) by $need writes"
    kill -9 "${etcd_pid_of[main]}"
    wait "${etcd_pid_of[main]}" 2>/dev/null
    etcd_start main "$ETCD_PORT" $ETCD_PEER
    etcd_wait_up "$ETCD_PORT"
}
restore_new_cluster() { restore_etcd "$1" another-cluster-token; }

# The restore cases (1-3): nodes a, b, c. a issues with shard 5 of a
# layout of 20-second ticks (a one-minute layout's case, shorter) and
# DecimalIds. At the start of a tick: the snapshot; a gives shard 5 back
# (and asks for it again all along), b takes it and issues with it until
# the restore, b takes a new generator id and issues DecimalIds; c starts
# after the snapshot; the restore (HOW...), all in the same tick; c takes
# its first generator id at once and issues DecimalIds with it, b goes on
# with its own. Then every ID of the layout and every DecimalId once, a's
# IDs after the restore above b's, and the history made anew. (Before
# issue 64 a claimed shard 5 again under the restored history, in b's
# tick, from its own mark: below b's IDs, the same IDs; c was handed b's
# generator id: 5,700 and 2,000 issued twice here.)
restore_case() {  # SECTION NAME HOW...
    local sec=$1 what=$2 snap n; shift 2
    PREFIX=/rc$sec
    snap=$work/snap-$sec.db
    rm -f "$work"/stop-*
    node_up a $((base + 10 * sec + 1)) "" "shardid.node_id = $((10 * sec + 1))" || stop_suite "node a did not start"
    node_up b $((base + 10 * sec + 2)) "" "shardid.node_id = $((10 * sec + 2))" || stop_suite "node b did not start"
    # c's data directory now, its server after the snapshot.
    local cd
    cd=$(pg_tmpdir); coord_dirs+=("$cd"); dir_of[c]=$cd; port_of[c]=$((base + 10 * sec + 3))
    cluster_init "$cd" "shared_preload_libraries = 'shardid'" "shardid.node_id_source = etcd" \
        "shardid.etcd_endpoints = '$ETCD_URLS'" "shardid.etcd_prefix = '$PREFIX'" "shardid.etcd_lease_ttl = 3s" \
        "shardid.etcd_wait = 20s" "shardid.launch_id = 1" "shardid.node_id = $((10 * sec + 3))" ||
        stop_suite "node c's data directory was not made"
    wait_state a held 20 && wait_state b held 20 || stop_suite "the nodes did not claim their ids"
    for n in a b; do
        q $n -c "SELECT create_layout('twenty', '2024-01-01', '20 seconds', 31, 10, 20)" >/dev/null
        q $n -c "CREATE TABLE m (id bigint); CREATE TABLE d (id bigint)"
    done
    q a -c "SET shardid.etcd_wait = '20s'; INSERT INTO m SELECT next_id('twenty', 5) FROM generate_series(1, 100)" ||
        stop_suite "node a did not issue with shard 5"
    q a -c "INSERT INTO d SELECT next_decimal_id() FROM generate_series(1, 100)"
    # The start of a tick: what follows, to the restore, lies in it.
    while [ $(($(ms_now) % 20000)) -gt 300 ]; do sleep 0.1; done
    local tick=$(($(ms_now) / 20000))
    ectl snapshot save "$snap" >/dev/null 2>&1 || stop_suite "etcdctl snapshot save failed"
    # After the snapshot: a gives shard 5 back and asks for it again all
    # along, b takes it and issues; b takes a new generator id; c starts.
    q a -c "SELECT shardid_release_shard('twenty', 5)" >/dev/null
    issue_for a 300 "next_id('twenty', 5)" m & local a_load=$!
    q b -c "SET shardid.etcd_wait = '20s'; INSERT INTO m SELECT next_id('twenty', 5) FROM generate_series(1, 100)" ||
        fail "$what: node b did not take shard 5 after node a gave it back"
    issue_for b 300 "next_id('twenty', 5)" m b-twenty & local b_load=$!
    q b -c "SELECT decimal_id_new_generator()" >/dev/null
    q b -c "INSERT INTO d SELECT next_decimal_id() FROM generate_series(1, 2000)"
    node_start c && q c -c "CREATE EXTENSION shardid" || stop_suite "node c did not start"
    q c -c "CREATE TABLE d (id bigint)"
    wait_state c held 10 || fail "$what: node c did not claim its id"
    sleep 2
    cluster_before=$(cluster_id)
    touch "$work/stop-b-twenty"
    "$@" "$snap" || stop_suite "etcd was not restored"
    # c takes its first generator id at once, and issues with it.
    q c -c "INSERT INTO d SELECT next_decimal_id() FROM generate_series(1, 2000)"
    [ $(($(ms_now) / 20000)) = "$tick" ] && pass "$what: the restore came in the tick of b's IDs" ||
        fail "$what: the restore came $(($(ms_now) / 1000 - tick * 20)) s after the tick of b's IDs began (a loaded machine)"
    # a asks for shard 5 again meanwhile (its load above); c issues
    # DecimalIds; until 5 s into the next tick (the history settles, then
    # the layout continues in the tick after that).
    while [ $(($(ms_now) / 20000)) -le "$tick" ]; do sleep 0.2; done
    sleep 5
    touch "$work/stop-a"
    wait $a_load $b_load
    # After the restore, b goes on with its generator id.
    q b -c "INSERT INTO d SELECT next_decimal_id() FROM generate_series(1, 2000)" 2>/dev/null
    copy_to b a m b_m
    copy_to b a d b_d
    copy_to c a d c_d
    echo "# $what: cluster $cluster_before -> $(cluster_id); shard 5: a $(q a -c "SELECT count(*) FROM m") IDs, b $(q a -c "SELECT count(*) FROM b_m")"
    check "$what: no ID of the 20-second layout's shard 5 issued twice" "0" \
        "$(q a -c "SELECT count(*) FROM m JOIN b_m USING (id)")"
    check "... no DecimalId issued twice by nodes a, b and c" "0" \
        "$(q a -c "SELECT count(*) - count(DISTINCT id) FROM (SELECT id FROM d UNION ALL SELECT id FROM b_d UNION ALL SELECT id FROM c_d) x")"
    check "... no generator id used by two nodes" "0" \
        "$(q a -c "SELECT count(*) FROM (SELECT g FROM (SELECT 'a' n, (decimal_id_decode(id)).generator_id g FROM d
                   UNION SELECT 'b', (decimal_id_decode(id)).generator_id FROM b_d
                   UNION SELECT 'c', (decimal_id_decode(id)).generator_id FROM c_d) x GROUP BY g HAVING count(DISTINCT n) > 1) y")"
    check "... node a issued with shard 5 again after the restore, above every ID of node b's" "t|t" \
        "$(q a -c "SELECT (SELECT max(id) FROM m) > (SELECT max(id) FROM b_m),
                          (SELECT min(id) FROM m WHERE id > (SELECT max(id) FROM b_m)) IS NOT NULL")"
    for n in a b c; do
        grep -q "etcd's history under the prefix went back" "${dir_of[$n]}/server.log" &&
            pass "... node $n saw etcd's history go back" || fail "... node $n did not say etcd's history went back"
    done
    grep -h "made a new history" "${dir_of[a]}/server.log" "${dir_of[b]}/server.log" "${dir_of[c]}/server.log" |
        grep -q "went back\|missing" && pass "... and the history was made anew" || fail "... no node made a new history"
    [ -n "${RECOVERY_DEBUG:-}" ] && for n in a b c; do echo "--- $n"; grep "shardid coordinator" "${dir_of[$n]}/server.log" | cut -c12-; done
    for n in a b c; do cluster_stop "${dir_of[$n]}" fast; done
}

# --- 1: restored from an older snapshot ---------------------------------------------
if want 1; then
    restore_case 1 "etcd restored from an older snapshot" restore_etcd
fi

# --- 2: restored, its revision driven past every node's -----------------------------
if want 2; then
    restore_case 2 "etcd restored, its revision driven past every node's" restore_driven
fi

# --- 3: restored into a new cluster ---------------------------------------------------
if want 3; then
    restore_case 3 "etcd restored into a new cluster" restore_new_cluster
    check "... whose id is not the old one's" "t" "$([ "$(cluster_id)" != "${cluster_before:-}" ] && echo t)"
fi

no_crashes
