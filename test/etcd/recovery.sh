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
#   4 nodes of different lease TTLs when etcd loses its data: the prefix
#     deleted right after a renewal of node y (TTL 40 s, a renewal every
#     8 s), which holds shard 5 of snowflake's and Instagram's layouts;
#     node x (TTL 3 s) asks for both all along: x's first ID with them
#     comes after y's last (issue 64: the settling lasted x's TTL and
#     margin, 4 s, while y went on until its next renewal; 3,971 snowflake
#     and 4,471 Instagram IDs issued twice).
#   5 junk in the claim space: 400 keys of 100 kB under
#     <prefix>/shard/zz-junk/ while two nodes issue (the re-check's watch
#     then sends more than 16 MiB in one message); a held key deleted by
#     hand meanwhile; the junk deleted: the nodes issue all along, with no
#     compaction by hand, and their log names the cause and the remedy
#     (issue 64: no ID of any layout for 90 s, until a compaction by hand).
#   6 <prefix>/history overwritten with garbage: the values held go on,
#     new claims wait; deleted, it is made anew, and last_error is empty
#     once the node is held again (issue 64: every ID stopped within 2.3 s
#     for as long as it stood; last_error kept the message).
#   7 a range of logical shards moved while a statement writes them: the
#     statement fails with 55000 within a second of the reload, the old
#     node never claims them again, and the new node gets all of them
#     (issue 64: 79,479 IDs for 21.9 s after the reload; the old node
#     claimed 8-11 again and held them).
#   8 shardid.etcd_wait bounds every wait of a generator: a fresh prefix,
#     nodes 5 s ahead and 4 s behind, layouts of one-minute and one-hour
#     ticks (issue 64: the session waited 5 minutes, for the next hour).
#   9 the backup and restore procedure of docs/coordination.md, run with
#     its very script (docs/setup/etcd-backup.sh) on a member that
#     docs/setup/etcd-member.sh starts: a snapshot saved while two nodes
#     issue, etcd's data lost, the snapshot restored, the history made
#     anew: no ID and no generator id twice, both nodes held again.
#  10 etcd restored to a history the nodes left: a snapshot saved under
#     one history, etcd lost the prefix (a new history made), node b took
#     shard 5 from node a (whose clock runs 30 s behind) under the new one
#     and issued; then the snapshot restored: a asks for shard 5 again (the
#     test command's nemesis, seed 20261125: the nodes took the restored
#     history up again, and a resumed at its own mark in it, below b's IDs
#     of the forgotten history: 9 IDs issued twice, 186 below a previous
#     holder).
set -u
. scripts/lib.sh
. test/etcd/lib.sh

coord_setup 16200
ETCD_PEER=24891
etcd_main 24791 $ETCD_PEER
PY=/usr/bin/python3
sections=" ${RECOVERY_SECTIONS:-1 2 3 4 5 6 7 8 9 10} "

# Batches of 200 with a pause after each (issue_for): a few thousand IDs a
# second are plenty to find an ID issued twice, and the test command's other
# lanes need the processor more than this one needs more of them.
ISSUE_BATCH=200 ISSUE_PAUSE=0.03
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
    wait_state a held 60 && wait_state b held 60 || stop_suite "the nodes did not claim their ids"
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
    # After the snapshot: a gives shard 5 back, b takes it and issues, a
    # asks for it again all along; b takes a new generator id; c starts.
    q a -c "SELECT shardid_release_shard('twenty', 5)" >/dev/null
    q b -c "SET shardid.etcd_wait = '20s'; INSERT INTO m SELECT next_id('twenty', 5) FROM generate_series(1, 100)" ||
        fail "$what: node b did not take shard 5 after node a gave it back"
    # a asks for it again from then on (started before b held it, a's
    # asks could take it back first on a loaded machine: CI's clone run).
    issue_for a 300 "next_id('twenty', 5)" m & local a_load=$!
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

# --- 4: nodes of different TTLs when etcd loses its data ----------------------------
if want 4; then
    PREFIX=/rc4
    rm -f "$work"/stop-*
    # x first: the prefix's first settling is its TTL's (a node of a
    # longer TTL starting meanwhile lengthens it to its own).
    node_up x $((base + 41)) "" "shardid.node_id = 41" || stop_suite "node x did not start"
    wait_state x held 60 || stop_suite "node x did not claim its id"
    node_up y $((base + 42)) "" "shardid.node_id = 42" "shardid.etcd_lease_ttl = 40s" "shardid.etcd_wait = 10s" ||
        stop_suite "node y did not start"
    wait_state y held 60 || stop_suite "node y did not claim its id"
    for n in x y; do q $n -c "CREATE TABLE s (id bigint); CREATE TABLE i (id bigint)"; done
    q y -c "SELECT next_snowflake_id(5), next_instagram_id(5)" >/dev/null || stop_suite "node y did not take shard 5"
    check "node y's lease TTL is recorded in etcd's history" "40000" \
        "$(ectl get "$PREFIX/history" --print-value-only | cut -d' ' -f3)"
    issue_for y 120 "next_snowflake_id(5)" s & y1=$!
    issue_for y 120 "next_instagram_id(5)" i & y2=$!
    issue_for x 120 "next_snowflake_id(5)" s & x1=$!
    issue_for x 120 "next_instagram_id(5)" i & x2=$!
    wait_rows y s 500 30 && wait_rows y i 500 30 || fail "node y issued nothing"
    # Right after one of y's renewals (its issuing_until moves).
    was=$(q y -c "SELECT issuing_until FROM shardid_coordination()")
    for _ in $(seq 200); do
        [ "$(q y -c "SELECT issuing_until FROM shardid_coordination()")" != "$was" ] && break
        sleep 0.05
    done
    ectl del --prefix "$PREFIX" >/dev/null
    deleted=$(ms_now)
    # y asks until it could no longer issue in any case (its next renewal,
    # 8 s), then stops asking; the history settles for y's TTL and margin
    # (48 s), then x issues.
    sleep 10
    touch "$work/stop-y"
    # Its statements that still wait (through the settling) are cancelled.
    q y -c "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" >/dev/null
    # x issues once the history settled (y's TTL and margin, 48 s): until
    # it has issued with both of the shard's spaces.
    wait_until "node x issues with shard 5 after the settling" 120 \
        shows t q x -c "SELECT (SELECT count(*) FROM s) >= 1000 AND (SELECT count(*) FROM i) >= 1000"
    touch "$work/stop-x"
    wait $y1 $y2 $x1 $x2
    copy_to x y s x_s
    copy_to x y i x_i
    check "nodes of TTLs 3 s and 40 s, the prefix deleted: no snowflake ID of shard 5 issued twice" "0" \
        "$(q y -c "SELECT count(*) FROM s JOIN x_s USING (id)")"
    check "... nor an Instagram ID of shard 5" "0" "$(q y -c "SELECT count(*) FROM i JOIN x_i USING (id)")"
    check "... node x took both and issued with them, above every ID of node y" "t|t" \
        "$(q y -c "SELECT (SELECT min(id) FROM x_s) > (SELECT max(id) FROM s), (SELECT min(id) FROM x_i) > (SELECT max(id) FROM i)")"
    first=$(q y -c "SELECT (extract(epoch FROM snowflake_timestamp(min(id))) * 1000)::bigint FROM x_s")
    last=$(q y -c "SELECT (extract(epoch FROM snowflake_timestamp(max(id))) * 1000)::bigint FROM s")
    echo "# node y's last ID $((last - deleted)) ms after the deletion, node x's first $((first - deleted)) ms after it"
    [ -n "$first" ] && [ $((first - deleted)) -ge 40000 ] &&
        pass "... node x's first ID came $((first - deleted)) ms after the deletion: the settling lasted y's TTL and margin" ||
        fail "... node x's first ID came $((${first:-0} - deleted)) ms after the deletion"
    for n in x y; do cluster_stop "${dir_of[$n]}" fast; done
fi

# --- 5: junk in the claim space ---------------------------------------------------------
if want 5; then
    PREFIX=/rc5
    rm -f "$work"/stop-*
    # A TTL of 30 s: the lease outlasts the coordinators' pause below (the
    # junk's writing, 4-6 s on an idle machine, over 10 s in a loaded CI; a
    # pause past the TTL loses the lease, and the nodes start over with a
    # listing, not a watch: so CI failed with a TTL of 10 s).
    TTL30=("shardid.etcd_lease_ttl = 30s" "shardid.etcd_wait = 10s")
    node_up p $((base + 51)) "" "shardid.node_id = 51" "${TTL30[@]}" || stop_suite "node p did not start"
    node_up r $((base + 52)) "" "shardid.node_id = 52" "${TTL30[@]}" || stop_suite "node r did not start"
    wait_state p held 60 && wait_state r held 60 || stop_suite "the nodes did not claim their ids"
    for n in p r; do
        q $n -c "SELECT create_layout('one_s', '2024-01-01', '1 second', 36, 10, 17)" >/dev/null
        q $n -c "CREATE TABLE t (id bigint, at timestamptz DEFAULT clock_timestamp())"
    done
    q p -c "SELECT next_snowflake_id(7), next_id('one_s', 7)" >/dev/null || stop_suite "node p did not take shard 7"
    issue_for p 200 "next_snowflake_id()" t & l1=$!
    issue_for r 200 "next_id('one_s')" t & l2=$!
    issue_for p 200 "next_snowflake_id(7)" t p7 & l3=$!
    started=$(ms_now)
    # 400 keys of 100 kB each, one write each, eight writers at once,
    # between two re-checks of each node (their coordinators paused
    # meanwhile, as on a busy machine): the
    # next watch of each gets them all at once. (The lease's fence is 24 s
    # away, renewed every 6 s.)
    workers="$(coordinator_of p) $(coordinator_of r)"
    paused_at=$(ms_now)
    kill -STOP $workers
    $PY - "$ETCD_PORT" "$PREFIX" <<'PY'
import base64, json, sys, threading, urllib.request
port, prefix = sys.argv[1], sys.argv[2]
value = base64.b64encode(b"x" * 100000).decode()
def put(first):
    for i in range(first, 400, 8):
        key = base64.b64encode(f"{prefix}/shard/zz-junk/{i:04d}".encode()).decode()
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v3/kv/put",
                               json.dumps({"key": key, "value": value}).encode()), timeout=10).read()
writers = [threading.Thread(target=put, args=(k,)) for k in range(8)]
for w in writers: w.start()
for w in writers: w.join()
PY
    kill -CONT $workers
    # The coordinators' pause is the test's, not the junk's: past about 6 s
    # (the junk written slowly on a busy machine; the fence at least 18 s
    # away when it began, and the first check after it reads the junk for
    # up to 5 s) the fence runs short and IDs wait for it, as they would
    # for any paused coordinator.
    paused=$(($(ms_now) - paused_at))
    gap_bound=$((4000 + (paused > 6000 ? paused - 6000 : 0)))
    sleep 3
    # A held key deleted by hand while the junk stands: p stops the value.
    touch "$work/stop-p7"
    wait $l3
    ectl del "$PREFIX/shard/e1577836800000u1t41s10q12/7" >/dev/null
    deleted=$(ms_now)
    for _ in $(seq 120); do
        grep -q "the key \"$PREFIX/shard/e1577836800000u1t41s10q12/7\" is no longer held" "${dir_of[p]}/server.log" && break
        sleep 0.1
    done
    grep -q "the key \"$PREFIX/shard/e1577836800000u1t41s10q12/7\" is no longer held" "${dir_of[p]}/server.log" &&
        pass "junk of 40 MB in the claim space: a held key deleted by hand meanwhile is still found gone" ||
        fail "junk in the claim space: node p did not find its deleted key gone"
    sleep 3
    ectl del --prefix "$PREFIX/shard/zz-junk/" >/dev/null
    cleared=$(ms_now)
    sleep 6
    touch "$work/stop-p" "$work/stop-r"
    wait $l1 $l2
    watch_failed=0
    for n in p r; do
        gap=$(q $n -c "SELECT coalesce(max(g), 0) FROM (SELECT (extract(epoch FROM at - lag(at) OVER (ORDER BY at)) * 1000)::bigint g FROM t) x")
        last=$(q $n -c "SELECT (extract(epoch FROM max(at)) * 1000)::bigint FROM t")
        echo "# node $n: $(q $n -c "SELECT count(*) FROM t") IDs from the junk's start to $((last - started)) ms after it, longest gap $gap ms"
        promise "... node $n issued all along, the junk written and deleted (bound $gap_bound ms; coordinators paused $paused ms)" \
            "$([ "$gap" -lt "$gap_bound" ] && echo t || echo f)" "longest gap $gap ms"
        [ "$last" -gt "$cleared" ] && pass "... and after the junk was deleted, with no compaction" ||
            fail "... node $n's last ID $((last - cleared)) ms after the junk was deleted"
        # Where the watch could not be read (the junk arrived at once), the
        # log says it was checked by a listing, why, and what to do.
        if grep -q "could not be read" "${dir_of[$n]}/server.log"; then
            watch_failed=$((watch_failed + 1))
            grep "could not be read" "${dir_of[$n]}/server.log" | sed 's/.*shardid coordinator: /# /' | cut -c1-300
            grep "could not be read" "${dir_of[$n]}/server.log" |
                grep -q "checked by a listing of keys instead; [0-9]* keys there are not shardid's (such as \"$PREFIX/shard/zz-junk/" &&
                grep -q "remove the keys under it that shardid does not write" "${dir_of[$n]}/server.log" &&
                pass "... node $n's log names the cause and the remedy" || fail "... node $n's log does not say why and what to do"
        fi
        lacks "... and no \"etcd unreachable\" while etcd answered" "$(grep "shardid coordinator" "${dir_of[$n]}/server.log")" "etcd unreachable"
    done
    if [ "$watch_failed" -gt 0 ]; then
        pass "... the junk reached $watch_failed node(s) as a watch that could not be read"
    else
        fail "... no node's watch failed: the junk did not arrive at once (coordinators paused $paused ms)"
        for n in p r; do grep "shardid coordinator" "${dir_of[$n]}/server.log" | tail -8 | sed "s/^/# $n: /" | cut -c1-300; done
    fi
    check "... the states: held" "held held" "$(q p -c "SELECT state FROM shardid_coordination()") $(q r -c "SELECT state FROM shardid_coordination()")"
    [ -n "${RECOVERY_DEBUG:-}" ] && for n in p r; do echo "--- $n"; grep "shardid" "${dir_of[$n]}/server.log" | cut -c12- | tail -30; done
    for n in p r; do cluster_stop "${dir_of[$n]}" fast; done
fi

# --- 6: a hand-edited history --------------------------------------------------------------
if want 6; then
    PREFIX=/rc6
    rm -f "$work"/stop-*
    node_up h $((base + 61)) "" "shardid.node_id = 61" || stop_suite "node h did not start"
    wait_state h held 60 || stop_suite "node h did not claim its id"
    q h -c "CREATE TABLE t (id bigint, at timestamptz DEFAULT clock_timestamp())"
    q h -c "SELECT next_snowflake_id(5), next_snowflake_id()" >/dev/null || stop_suite "node h did not take shard 5"
    issue_for h 200 "next_snowflake_id(5)" t & l1=$!
    issue_for h 200 "next_snowflake_id()" t & l2=$!
    wait_rows h t 1000 30 || fail "node h issued nothing"
    ectl put "$PREFIX/history" "garbage written by hand" >/dev/null
    edited=$(ms_now)
    # A claim tried at once reads it (as the next renewal does).
    check "the history overwritten with garbage: a value not held yet is not claimed: 55000" "55000" \
        "$(q_err h "SET shardid.etcd_wait = '1s'; SELECT next_snowflake_id(6)" | cut -c1-5)"
    sleep 7
    state=$(q h -c "SELECT state || '|' || coalesce(last_error, '') FROM shardid_coordination()")
    contains "... last_error names the key" "$state" "the key \"$PREFIX/history\" holds \"garbage written by hand\""
    contains "... and says what goes on" "$state" "what this node holds goes on"
    ectl del "$PREFIX/history" >/dev/null
    fixed=$(ms_now)
    sleep 6
    touch "$work/stop-h"
    wait $l1 $l2
    # The longest time without an ID up to the deletion, its end included.
    gap=$(q h -c "SELECT coalesce(max(g), 0) FROM (SELECT (extract(epoch FROM at - lag(at) OVER (ORDER BY at)) * 1000)::bigint g
                  FROM (SELECT at FROM t WHERE at < to_timestamp($fixed / 1000.0) UNION ALL SELECT to_timestamp($fixed / 1000.0)) a) x")
    n=$(q h -c "SELECT count(*) FROM t WHERE at BETWEEN to_timestamp($edited / 1000.0) AND to_timestamp($fixed / 1000.0)")
    [ "$n" -gt 0 ] && [ "$(q h -c "SELECT count(*) FROM t WHERE at > to_timestamp($fixed / 1000.0)")" -gt 0 ] 2>/dev/null &&
        pass "... the values held go on issuing while it stands, and after ($n IDs while it stood)" ||
        fail "... the values held stopped while it stood ($n IDs in 8 s, longest gap $gap ms)"
    promise "... with no gap over 1.5 s" "$([ "$gap" -lt 1500 ] && echo t || echo f)" "longest gap $gap ms, $n IDs in 8 s"
    check "... deleted: made anew, the node held, and last_error empty" "held|" \
        "$(q h -c "SELECT state || '|' || coalesce(last_error, '') FROM shardid_coordination()")"
    check "... and a new value is claimed" "1000" "$(q h -c "SET shardid.etcd_wait = '10s'; SELECT count(DISTINCT next_snowflake_id(6)) FROM generate_series(1, 1000)")"
    cluster_stop "${dir_of[h]}" fast
fi

# --- 7: a range of logical shards moved while a statement writes them -----------------
if want 7; then
    PREFIX=/rc7
    node_up o $((base + 71)) "" "shardid.node_id = 71" "shardid.shards = '0-15'" || stop_suite "node o did not start"
    node_up w $((base + 72)) "" "shardid.node_id = 72" "shardid.shards = '16-31'" || stop_suite "node w did not start"
    wait_state o held 60 && wait_state w held 60 || stop_suite "the nodes did not claim their ids"
    q o -c "SELECT next_instagram_id(8)" >/dev/null
    # A statement writing shards 8-11 for a long time (20,000,000 IDs at
    # Instagram's 1,024 a millisecond a shard: several seconds). The series
    # in its target list, which streams: in FROM, PostgreSQL materializes
    # all 20,000,000 rows before the first ID (a second and more here), and
    # a reload meanwhile was timed from before the statement issued at all.
    began=$(q o -c "SELECT clock_timestamp()")
    ( q_err o "SELECT count(next_instagram_id(8 + s % 4)) FROM (SELECT generate_series(1, 20000000) s) g" >"$work/stmt"
      ms_now >"$work/stmt_end" ) & stmt=$!
    # Every declared value held (the worker done claiming them), and the
    # statement issuing with 8-11 (each one's last use after it began).
    wait_until "the statement issuing with shards 8-11, shards 0-15 held" 30 shows t q o -c "
        SELECT (SELECT count(*) FROM shardid_shard_claims() WHERE state = 'held' AND shard BETWEEN 0 AND 15) = 16
           AND (SELECT count(*) FROM shardid_shard_claims() WHERE shard BETWEEN 8 AND 11 AND last_used > '$began') = 4"
    q o -c "ALTER SYSTEM SET shardid.shards = '0-7'" -c "SELECT pg_reload_conf()" >/dev/null
    reloaded=$(ms_now)
    wait $stmt
    contains "shards 8-15 moved away while a statement writes 8-11: the statement fails with 55000" "$(cat "$work/stmt")" \
        "55000: shard"
    took=$(($(cat "$work/stmt_end") - reloaded))
    promise "... within 1 s of the reload" "$([ "$took" -lt 1000 ] && echo t || echo f)" "$took ms after the reload returned"
    q w -c "ALTER SYSTEM SET shardid.shards = '8-31'" -c "SELECT pg_reload_conf()" >/dev/null
    q w -c "SELECT next_instagram_id(20)" >/dev/null
    for _ in $(seq 100); do
        [ "$(q w -c "SELECT count(*) FROM shardid_shard_claims() WHERE state = 'held' AND shard BETWEEN 8 AND 15")" = 8 ] && break
        sleep 0.1
    done
    check "... the new node holds all of 8-15 within 10 s, 8-11 with them" "8" \
        "$(q w -c "SELECT count(*) FROM shardid_shard_claims() WHERE state = 'held' AND shard BETWEEN 8 AND 15")"
    sleep 2
    check "... and the old node holds none of them again" "0" \
        "$(q o -c "SELECT count(*) FROM shardid_shard_claims() WHERE state IN ('held', 'claiming', 'taking over') AND shard BETWEEN 8 AND 15")"
    check "... it refuses them at once" "55000: shard 9 is not one of this node's shards" \
        "$(q_err o "SELECT next_instagram_id(9)")"
    [ -n "${RECOVERY_DEBUG:-}" ] && for n in o w; do echo "--- $n"; grep "shardid" "${dir_of[$n]}/server.log" | cut -c12- | tail -30; done
    for n in o w; do cluster_stop "${dir_of[$n]}" fast; done
fi

# --- 8: shardid.etcd_wait bounds every wait ---------------------------------------------
if want 8; then
    PREFIX=/rc8
    node_up f $((base + 81)) "" "shardid.node_id = 81" "shardid.clock_offset_ms = 5000" || stop_suite "node f did not start"
    node_up s $((base + 82)) "" "shardid.node_id = 82" "shardid.clock_offset_ms = -4000" || stop_suite "node s did not start"
    for n in f s; do
        q $n -c "SELECT create_layout('minute', '2024-01-01', '1 minute', 32, 10, 20), create_layout('hour', '2024-01-01', '1 hour', 28, 10, 24)" >/dev/null
    done
    t0=$(ms_now)
    out=$(timeout 120 psql -X -q -h "${dir_of[f]}" -p "${port_of[f]}" -U postgres -d postgres -At -v VERBOSITY=verbose \
        -c "SET shardid.etcd_wait = '5s'" -c "SELECT next_id('minute', 5), next_id('hour', 5)" 2>&1)
    took=$(($(ms_now) - t0))
    echo "# $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
    # The history of the fresh prefix settles first (4 s), which the docs
    # say lengthens a wait by as much.
    # It ended by itself (the hang guard of 120 s did not end it).
    [ -n "$out" ] && ! grep -q 'statement timeout\|^$' <<<"$out" &&
        pass "shardid.etcd_wait = 5s, a fresh prefix, minute and hour layouts: the statement ends by itself" ||
        fail "the statement did not end by itself in 120 s"
    promise "... within the wait and the history's settling (11 s)" "$([ "$took" -lt 11000 ] && echo t || echo f)" "$took ms"
    if grep -q "ERROR" <<<"$out"; then
        contains "... its error is 55000 and says what it waited for" "$out" "55000: the next ID of layout"
        contains "... and when it can go on" "$out" "Try again once the next tick has begun"
    else
        pass "... and it issued both IDs"
    fi
    for n in f s; do cluster_stop "${dir_of[$n]}" fast; done
fi

# --- 9: the procedure of docs/coordination.md, as written ---------------------------------
if want 9; then
    PREFIX=/shardid
    rm -f "$work"/stop-*
    member=(env NAME=m1 CLIENT_PORT=24793 PEER_PORT=24893 DATA_DIR="$work/etcd-m1")
    "${member[@]}" sh docs/setup/etcd-member.sh >"$work/etcd-m1.log" 2>&1 &
    etcd_pid_of[m1]=$!
    etcd_wait_up 24793 || stop_suite "docs/setup/etcd-member.sh did not start a member"
    backup=(env ENDPOINTS=http://127.0.0.1:24793 NAME=m1 PEER_PORT=24893 DATA_DIR="$work/etcd-m1" PREFIX=/shardid)
    ETCD_URLS_SAVED=$ETCD_URLS
    ETCD_URLS=http://127.0.0.1:24793
    node_up u $((base + 91)) "" "shardid.node_id = 91" || stop_suite "node u did not start"
    node_up v $((base + 92)) "" "shardid.node_id = 92" || stop_suite "node v did not start"
    ETCD_URLS=$ETCD_URLS_SAVED
    wait_state u held 60 && wait_state v held 60 || stop_suite "the nodes did not claim their ids"
    for n in u v; do q $n -c "CREATE TABLE s (id bigint); CREATE TABLE d (id bigint)"; done
    q u -c "SELECT next_snowflake_id(3)" >/dev/null || stop_suite "node u did not take shard 3"
    issue_for u 200 "next_snowflake_id(3)" s & l1=$!
    issue_for v 200 "next_decimal_id()" d & l2=$!
    wait_rows u s 500 30 && wait_rows v d 500 30 || fail "the nodes issued nothing"
    "${backup[@]}" sh docs/setup/etcd-backup.sh save "$work/backup.db" >"$work/backup.log" 2>&1 &&
        pass "the procedure: docs/setup/etcd-backup.sh save makes a snapshot while nodes issue" ||
        { fail "etcd-backup.sh save failed"; cat "$work/backup.log"; }
    # After the backup: u gives shard 3 to v, which issues with it; v takes
    # a new generator id.
    wait_rows u s $(($(q u -c "SELECT count(*) FROM s") + 500)) 30 || fail "node u issued nothing after the backup"
    touch "$work/stop-u"
    wait $l1
    q u -c "SELECT shardid_release_shard('snowflake', 3)" >/dev/null
    issue_for v 200 "next_snowflake_id(3)" s & l3=$!
    q v -c "SELECT decimal_id_new_generator()" >/dev/null
    wait_rows v s 500 30 && wait_rows v d $(($(q v -c "SELECT count(*) FROM d") + 500)) 30 ||
        fail "node v issued nothing with shard 3 or its new generator id"
    # etcd loses its data.
    kill -9 "${etcd_pid_of[m1]}"
    wait "${etcd_pid_of[m1]}" 2>/dev/null
    rm -rf "$work/etcd-m1"
    touch "$work/stop-v"
    wait $l2 $l3
    rm -f "$work/stop-u"
    # The procedure: restore, start the member as before, a new history.
    "${backup[@]}" sh docs/setup/etcd-backup.sh restore "$work/backup.db" >"$work/restore9.log" 2>&1 &&
        pass "... etcd-backup.sh restore restores the snapshot into the member's data directory" ||
        { fail "etcd-backup.sh restore failed"; cat "$work/restore9.log"; }
    "${member[@]}" sh docs/setup/etcd-member.sh >>"$work/etcd-m1.log" 2>&1 &
    etcd_pid_of[m1]=$!
    etcd_wait_up 24793 || stop_suite "the restored member did not start"
    "${backup[@]}" sh docs/setup/etcd-backup.sh new-history >/dev/null 2>&1 &&
        pass "... etcd-backup.sh new-history deletes the history" || fail "etcd-backup.sh new-history failed"
    # u asks for shard 3 again, v takes a new generator id.
    q u -c "SET shardid.etcd_wait = '30s'; INSERT INTO s SELECT next_snowflake_id(3) FROM generate_series(1, 1000)" ||
        fail "... node u did not issue with shard 3 again"
    q v -c "SET shardid.etcd_wait = '30s'; SELECT decimal_id_new_generator()" >/dev/null
    q v -c "INSERT INTO d SELECT next_decimal_id() FROM generate_series(1, 1000)" || fail "... node v issued no DecimalId"
    q u -c "SET shardid.etcd_wait = '30s'; INSERT INTO d SELECT next_decimal_id() FROM generate_series(1, 1000)" ||
        fail "... node u issued no DecimalId"
    copy_to v u s v_s
    copy_to v u d v_d
    check "... no snowflake ID of shard 3 issued twice" "0" "$(q u -c "SELECT count(*) FROM s JOIN v_s USING (id)")"
    check "... node u's IDs after the restore above node v's" "t" \
        "$(q u -c "SELECT max(id) > (SELECT max(id) FROM v_s) FROM s")"
    check "... no generator id used by both nodes" "0" \
        "$(q u -c "SELECT count(*) FROM (SELECT DISTINCT (decimal_id_decode(id)).generator_id FROM d
                   INTERSECT SELECT DISTINCT (decimal_id_decode(id)).generator_id FROM v_d) x")"
    check "... both nodes held again, with no error left" "held||held|" \
        "$(q u -c "SELECT state || '|' || coalesce(last_error, '') FROM shardid_coordination()")|$(q v -c "SELECT state || '|' || coalesce(last_error, '') FROM shardid_coordination()")"
    for n in u v; do cluster_stop "${dir_of[$n]}" fast; done
    kill "${etcd_pid_of[m1]}" 2>/dev/null
fi

# --- 10: restored to a history the nodes left -----------------------------------------
# Node a's clock runs 30 s behind (the nemesis' n4): under the history it
# left, its own mark of shard 5 lies 30 s below what b issued with it since.
if want 10; then
    PREFIX=/rc10
    rm -f "$work"/stop-*
    node_up a $((base + 101)) "" "shardid.node_id = 101" "shardid.clock_offset_ms = -30000" \
        "shardid.max_clock_lead = 120s" || stop_suite "node a did not start"
    node_up b $((base + 102)) "" "shardid.node_id = 102" || stop_suite "node b did not start"
    wait_state a held 60 && wait_state b held 60 || stop_suite "the nodes did not claim their ids"
    for n in a b; do q $n -c "CREATE TABLE s (id bigint); CREATE TABLE s2 (id bigint)"; done
    q a -c "SET shardid.etcd_wait = '20s'; INSERT INTO s SELECT next_snowflake_id(5) FROM generate_series(1, 1000)" ||
        stop_suite "node a did not issue with shard 5"
    ectl snapshot save "$work/snap-10.db" >/dev/null 2>&1 || stop_suite "etcdctl snapshot save failed"
    # etcd loses the prefix: the nodes make a new history, under which b
    # takes shard 5 and issues with it.
    ectl del --prefix "$PREFIX/" >/dev/null
    q b -c "SET shardid.etcd_wait = '20s'; INSERT INTO s SELECT next_snowflake_id(5) FROM generate_series(1, 2000)" ||
        fail "restored to a left history: node b did not take shard 5 under the new history"
    q b -c "SELECT shardid_release_shard('snowflake', 5)" >/dev/null
    # The snapshot, from the history both nodes left, restored: a asks for
    # shard 5 again.
    restore_etcd "$work/snap-10.db" || stop_suite "etcd was not restored"
    q a -c "SET shardid.etcd_wait = '40s'; INSERT INTO s2 SELECT next_snowflake_id(5) FROM generate_series(1, 2000)" ||
        fail "restored to a left history: node a did not issue with shard 5 after the restore"
    copy_to b a s b_s
    check "restored to a left history: no snowflake ID of shard 5 issued twice" "0" \
        "$(q a -c "SELECT count(*) FROM (SELECT id FROM s UNION ALL SELECT id FROM s2) x JOIN b_s USING (id)")"
    check "... node a's IDs after the restore above every ID of node b's" "t" \
        "$(q a -c "SELECT (SELECT min(id) FROM s2) > (SELECT max(id) FROM b_s)")"
    grep -q "deleted \"$PREFIX/history\", the history etcd went back on" "${dir_of[a]}/server.log" "${dir_of[b]}/server.log" &&
        pass "... the restored history was distrusted and made anew" || fail "... no node distrusted the restored history"
    [ -n "${RECOVERY_DEBUG:-}" ] && for n in a b; do echo "--- $n"; grep "shardid coordinator" "${dir_of[$n]}/server.log" | cut -c12-; done
    for n in a b; do cluster_stop "${dir_of[$n]}" fast; done
fi

no_crashes
