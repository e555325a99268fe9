#!/usr/bin/env bash
# shardid on Citus (docs/citus.md): a coordinator and two workers with
# metadata (MX), PostgreSQL 15 (and 17 in its Debian root: scripts/test.sh),
# Citus built from ../shared/vendor
# (scripts/citus.sh, cached once per machine). Prints PASS/FAIL lines; run
# from the repository root. Where there is neither a built Citus nor its
# source, prints one SKIP line with the reason and exits 0.
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
#   2b the key ring: the coordinator's, on every worker, from CREATE
#     EXTENSION and with every change, or with none (a rollback); a
#     worker's own writes refused. On PostgreSQL 16 and later (each worker
#     reads the coordinator's keys), a worker whose metadata was taken
#     away refuses the default key its own CREATE EXTENSION made.
#   2c a worker that missed a ring change (disabled, then without
#     metadata) refuses its stale copy, to Citus' connections and to an
#     ordinary role connected to it alike (a disabled worker from its next
#     statement: its lease of the coordinator's ring differs);
#     shardid_sync_keys() repairs it and names the workers it cannot reach.
#   2d a change of the ring prepared on a worker whose COMMIT PREPARED was
#     lost: every backend of the worker refuses the key until Citus'
#     recovery commits it, then uses the coordinator's new secret.
#   2e a key changed on the coordinator while a worker runs one message of
#     several statements, or a DO block that commits: each statement after
#     the change uses the new secret. The change waits out the workers'
#     leases of the ring first; it cannot be PREPAREd on the coordinator.
#   3 a load through all three nodes for CITUS_SECONDS (60) on every write
#     path (test/citus/load.py: router, multi-row, COPY, reference table,
#     tenant schemas, INSERT ... SELECT pushed down and repartitioned),
#     with a shard move, a tenant schema move and a rebalance meanwhile:
#     no duplicate, IDs in order per client, each decoding to its node.
#   4 a worker added after the layout exists has it; its own key is refused
#     until shardid_sync_keys() gives it the coordinator's; pg_dump of the
#     coordinator carries the layouts; DROP EXTENSION drops every carrier.
#   4b a worker fails over while the old primary runs on: a standby refuses;
#     promoted (its clock 5 s behind) and named by citus_update_node(), it
#     issues under the worker's group once the old primary's confirmation
#     ran out, above all its IDs; the old primary stops within the fence.
#   4c, 4d the coordinator stopped shorter than the fence: no ID, key or
#     call number fails or stalls (a session, and a new connection per
#     statement); longer: statements that need a key fail with 55000 after
#     a bounded wait, and heal once it answers.
#   4e a statement that waits for the key lease and then for a spare run
#     waits one bound in all, not one for each.
#   5 negative control: the same load with every node on one hand-set id
#     (shardid.node_id_source = setting) gives duplicates.
#   6 a backend open while its node joins a cluster issues its next ID
#     under the node's new group, not the single-node cluster's 0; removed
#     while it runs, it refuses, and a server added under its group id
#     issues above its IDs.
#   6b a server added under a value the coordinator or a worker declares in
#     shardid.shards refuses while the declaration lives, and then issues
#     above the declarer's IDs; the declarer then refuses the value.
#   6c a server that made its own key ring and then joined as a worker, its
#     metadata taken away, and a worker added with metadata sync off whose
#     extension was made by hand: neither uses a key (no Citus metadata).
#   7 docs/setup/citus-trial.sh as docs/citus.md runs it, and its stop.
set -u
. scripts/lib.sh
. scripts/roots.sh
. scripts/citus.sh

citus_suite

base=${CITUS_PORT_BASE:-$(test_port 18700)}
cwork=$(pg_tmpdir)
trap 'cnodes_stop; rm -rf "$cwork"' EXIT
q() { cq "$@"; }
# timed_in_server NODE EXPRESSIONS: one PERFORM of EXPRESSIONS on NODE, timed
# by the server (a loaded CI's new connection alone can take seconds); its
# NOTICE "took N ms: ok" or "took N ms: SQLSTATE message (hint: ...)".
timed_in_server() {
    q "$1" -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); h text; BEGIN
    PERFORM $2;
    RAISE NOTICE 'took % ms: ok', round(extract(epoch FROM clock_timestamp() - t0) * 1000);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
    RAISE NOTICE 'took % ms: % % (hint: %)', round(extract(epoch FROM clock_timestamp() - t0) * 1000), SQLSTATE, SQLERRM, h;
END \$\$" 2>&1
}
took_of() { grep -o 'took [0-9]*' <<<"$1" | grep -o '[0-9]*$'; }
# every_generator NODE...: GEN_N values of every generator from two sessions
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
                q "$n" -c "COPY (WITH s AS MATERIALIZED (SELECT pg_sleep(greatest(0, $start - extract(epoch FROM clock_timestamp()))))
                           SELECT ${GENERATORS[i + 1]} FROM s, generate_series(1, $GEN_N)) TO STDOUT" \
                    >"$cwork/gen/${GENERATORS[i]}/$n.$k" 2>&1 &
            done
        done
        wait
    done
}
dups() { echo "$(cat "$cwork/gen/$1"/* | sort | uniq -d | wc -l) $(cat "$cwork/gen/$1"/* | wc -l)"; }
q_err() { q "$1" -c "\\set VERBOSITY verbose" -c "$2" 2>&1 >/dev/null | head -3 | tr '\n' ' '; }

# --- 1: the extension and the node ids ------------------------------------------
src="shardid.node_id_source = citus"
# The coordinator leases its key ring for 3 s at most (shardid.citus_fence
# caps its leases, key_lease.cpp): a change of the ring waits that long
# for the workers' leases, not the default 10 s.
cnode_up c "$base" "$src" "shardid.citus_fence = 3s" || { fail "citus: the coordinator did not start: $(cnode_why c)"; exit 1; }
cnode_up w1 $((base + 1)) "$src" && cnode_up w2 $((base + 2)) "$src" || { fail "citus: a worker did not start: $(cnode_why w1) $(cnode_why w2)"; exit 1; }
q c -c "SELECT citus_set_coordinator_host('127.0.0.1', $base)" >/dev/null
cnode_add w1 && cnode_add w2 || { fail "citus: citus_cnode_add failed"; exit 1; }
q c -c "CREATE EXTENSION shardid" >/dev/null
version=$(sed -n "s/^default_version = '\\(.*\\)'/\\1/p" shardid.control)
check "CREATE EXTENSION shardid on the coordinator reaches both workers" "$version $version" \
    "$(q w1 -c "SELECT extversion FROM pg_extension WHERE extname = 'shardid'") $(q w2 -c "SELECT extversion FROM pg_extension WHERE extname = 'shardid'")"
for n in c w1 w2; do
    check "node_id_source = citus: $n's node id is its Citus group id" \
        "$(q "$n" -c "SELECT groupid FROM pg_dist_local_group")" \
        "$(q "$n" -c "SELECT node_id FROM shardid_coordination() WHERE source = 'citus' AND state = 'configured'")"
done
check "a TraceId made on w2 decodes to group 2" "2" "$(q w2 -c "SELECT (trace_id_decode(next_trace_id())).node_no")"
cnode_up w3 $((base + 3)) "$src" || stop_suite "w3 did not start: $(cnode_why w3)"
q w3 -c "CREATE EXTENSION shardid" >/dev/null
err=$(q_err w3 "SELECT next_trace_id()")
contains "a Citus node not yet in a cluster refuses to issue (55000)" "$err" "55000"
contains "... saying it is not in the cluster's metadata" "$err" "is not in the cluster's metadata"
contains "... naming its group, 0 (issue 48: it said -1)" "$err" "Citus group 0 is not in the cluster's metadata"
check "... and shardid_coordination() says misconfigured" "misconfigured" \
    "$(q w3 -c "SELECT state FROM shardid_coordination()")"
q w3 -c "DROP EXTENSION shardid" >/dev/null
# A cluster whose metadata has no coordinator (no citus_set_coordinator_host(),
# as in most of Citus' own test clusters): x1 the coordinator, x2 its worker.
# Issue 58: the coordinator refused at once with a hint, but a worker's
# statements waited about 50 s before they gave up.
cnode_up x1 $((base + 13)) "$src" && cnode_up x2 $((base + 14)) "$src" || stop_suite "x1 or x2 did not start: $(cnode_why x1) $(cnode_why x2)"
q x1 -c "CREATE EXTENSION shardid" -c "SELECT citus_add_node('127.0.0.1', $((base + 14)))" >/dev/null ||
    fail "x1: citus_add_node(x2) failed"
err=$(timed_in_server x2 "next_trace_id()")
took=$(took_of "$err")
contains "a worker whose cluster's metadata has no coordinator refuses to issue (55000)" "$err" ": 55000 "
contains "... saying the coordinator is not in the metadata" "$err" "Citus coordinator of this node's group"
contains "... with the coordinator's hint" "$err" "citus_set_coordinator_host"
promise "... at once (under 2 s in the server; before: about 50 s)" "$([ "${took:-99999}" -lt 2000 ] && echo t || echo f)" "${took:-no} ms"
contains "... as its coordinator does" "$(q_err x1 "SELECT next_trace_id()")" "citus_set_coordinator_host"
cnode_stop x1
cnode_stop x2

# Every scheme is unique across the cluster: the node-id schemes by the
# group id, DecimalId generator ids and call-number run ids by the
# coordinator, which hands out every one (each node's own sequences start
# at the same value: 20,000 of 20,000 were shared). Section 5 runs the same
# with every node on one hand-set id: the negative control.
for n in c w1 w2; do cnode_conf "$n" "shardid.launch_id = 1"; q "$n" -c "SELECT pg_reload_conf()" >/dev/null; done
sleep 0.5
every_generator c w1 w2
for ((i = 0; i < ${#GENERATORS[@]}; i += 2)); do
    check "${GENERATORS[i + 1]} on the coordinator and both workers at once, two sessions each: no value twice" \
        "0 $((6 * GEN_N))" "$(dups "${GENERATORS[i]}")"
done
check "... the DecimalIds of the three nodes carry three or more generator ids" "t" \
    "$(cat "$cwork"/gen/decimal/* | awk '{ g[int($1 / 100000) % 100000] = 1 } END { print (length(g) >= 3 ? "t" : "f") }')"

# --- 2: layouts -------------------------------------------------------------------
out=$(q c -c "SELECT create_layout('per_minute', '2024-01-01', '1 minute', 30, 13, 20)" 2>&1)
check "create_layout() on the Citus coordinator succeeds" "" "$out"
check "... its carrier is dropped with the extension (an automatic dependency, not DEPENDS ON EXTENSION)" "a" \
    "$(q c -c "SELECT string_agg(deptype::text, '') FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND objid = 'shardid_carrier.\"shardid_layout\$per_minute\"()'::regprocedure")"
body=$(q c -c "SELECT shardid_carrier.\"shardid_layout\$per_minute\"()")
for n in w1 w2; do
    check "the layout is on $n, identical" "$body" "$(q "$n" -c "SELECT shardid_carrier.\"shardid_layout\$per_minute\"()")"
done
check "next_id('per_minute') on w1 decodes to shard 1" "1" \
    "$(q w1 -c "SELECT (id_decode('per_minute', next_id('per_minute'))).shard")"
err=$(q_err w1 "SELECT create_layout('on_worker', '2024-01-01', '1 second', 41, 10, 12)")
contains "create_layout() on a worker is refused (55000)" "$err" "55000"
contains "... pointing to the coordinator" "$err" "layouts are created on the Citus coordinator"
err=$(q_err w1 "SELECT next_instagram_id(5)")
contains "a per-shard default (next_instagram_id(5)) without an owner is refused (55000)" "$err" "55000"
contains "... naming the shard" "$err" "shard 5 has no owner on this Citus node"
q w1 -c "ALTER SYSTEM SET shardid.shards = '5'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
check "... and issued once shardid.shards on the node lists it" "5" \
    "$(q w1 -c "SELECT (instagram_decode(next_instagram_id(5))).shard" 2>&1)"
q w1 -c "ALTER SYSTEM RESET shardid.shards" -c "SELECT pg_reload_conf()" >/dev/null
# A declared shard that is another node's group id (issue 48: the
# coordinator declaring 1 shared 13,734 to 27,632 of 100,000 Instagram IDs
# with w1, group 1).
q c -c "ALTER SYSTEM SET shardid.shards = '1,9'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
err=$(q_err c "SELECT next_instagram_id(1)")
contains "a declared shard equal to another node's group (w1's 1) is refused (55000)" "$err" "55000"
contains "... naming why" "$err" "shard 1 is the Citus group id of another node"
check "... while a declared shard no node has as its group issues" "9" \
    "$(q c -c "SELECT (instagram_decode(next_instagram_id(9))).shard" 2>&1)"
sleep 1.5
check "... and w1, whose group 1 came before the declaration, goes on issuing under it" "1" \
    "$(q w1 -c "SELECT (instagram_decode(next_instagram_id())).shard" 2>&1)"
q c -c "ALTER SYSTEM RESET shardid.shards" -c "SELECT pg_reload_conf()" >/dev/null
q c -c "SELECT create_layout('two_nodes', '2024-01-01', '1 second', 41, 1, 12)" >/dev/null
err=$(q_err w2 "SELECT next_id('two_nodes')")
contains "a group id beyond a layout's node field is refused (55000)" "$err" "55000"
contains "... naming the range" "$err" "group id 2 does not fit the two_nodes layout"
q c -c "CREATE DATABASE plain" >/dev/null 2>&1
err=$(as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$base" -U postgres -X -At -d plain \
    -c "CREATE EXTENSION shardid" -c "SELECT next_trace_id()" 2>&1 | tr '\n' ' ')
contains "a database without the citus extension refuses, naming it" "$err" "Citus is not installed in this database"

# The key ring travels through a Citus function that builds for PostgreSQL
# 16 and later hide (src/pg/citus/key_ring.cpp): there each worker
# reads every key from the coordinator when a statement first uses it, and
# sections 2b and 2c give way to ring_pulled.
ring() { q "$1" -c "SELECT string_agg(name || '=' || encode(secret, 'hex'), ',' ORDER BY name) FROM shardid_key"; }
ring_pulled() {  # on PostgreSQL 16 and later
    local err opaque_p
    opaque_p=$(q c -c "SELECT obfuscate_id(123456789)")
    check "PG $PG_MAJOR: an ID obfuscated on the coordinator is revealed on w1 and w2 (each reads the coordinator's key)" \
        "123456789 123456789" "$(q w1 -c "SELECT reveal_id($opaque_p)" 2>&1) $(q w2 -c "SELECT reveal_id($opaque_p)" 2>&1)"
    q c -c "SELECT create_obfuscation_key('ids')" >/dev/null
    check "... a key made on the coordinator is used on w1 at once" "$(q c -c "SELECT obfuscate_id(7, 'ids')")" \
        "$(q w1 -c "SELECT obfuscate_id(7, 'ids')" 2>&1)"
    coproc W1P { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p $((base + 1)) -U postgres -X -At 2>&1; }
    ask_w1p() { echo "$1" >&"${W1P[1]}"; read -r -t 30 answer <&"${W1P[0]}" || answer=none; echo "$answer"; }
    local before
    before=$(ask_w1p "SELECT obfuscate_id(7, 'ids');")
    q c -c "SELECT drop_obfuscation_key('ids')" -c "SELECT create_obfuscation_key('ids')" >/dev/null
    check "... made again under the same name, a backend of w1 open since before uses the new one in its next statement" \
        "$(q c -c "SELECT obfuscate_id(7, 'ids')") t" "$(ask_w1p "SELECT obfuscate_id(7, 'ids');") $([ "$before" != "$(q c -c "SELECT obfuscate_id(7, 'ids')")" ] && echo t || echo f)"
    echo '\q' >&"${W1P[1]}" 2>/dev/null
    q c -c "BEGIN" -c "SELECT create_obfuscation_key('rolled_back')" -c "ROLLBACK" >/dev/null
    err=$(q_err w1 "SELECT obfuscate_id(1, 'rolled_back')")
    contains "... a key made in a transaction that rolled back does not exist for w1 (42704)" "$err" "42704"
    q c -c "SELECT drop_obfuscation_key('ids')" >/dev/null
    err=$(q_err w1 "SELECT create_obfuscation_key('on_worker')")
    contains "... create_obfuscation_key() on a worker is refused (55000)" "$err" "the key ring of a Citus worker is written by the coordinator"
    local number
    number=$(q c -c "SELECT next_call_number()")
    check "... call numbers use the coordinator's key on w1: it decodes one c issued as c does" \
        "$(q c -c "SELECT call_number_decode('$number')")" "$(q w1 -c "SELECT call_number_decode('$number')" 2>&1)"
    err=$(q c -c "SELECT shardid_sync_keys()" 2>&1)
    contains "... shardid_sync_keys() says nothing needs sending" "$err" "Citus workers read the coordinator's key ring themselves on PostgreSQL $PG_MAJOR"
    # A worker whose metadata was taken away holds only the default key its
    # own CREATE EXTENSION made, which the coordinator sent (before: it
    # obfuscated with that key, otherwise than the coordinator, no error).
    local w2port=$((base + 2))
    q c -c "SELECT stop_metadata_sync_to_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "stop_metadata_sync_to_node(w2) failed"
    err=$(q_err w2 "SELECT obfuscate_id(42)")
    contains "... w2 without metadata refuses the default key its CREATE EXTENSION made (55000)" "$err" "55000"
    contains "... saying w2 has no metadata" "$err" "without metadata"
    q c -c "SELECT start_metadata_sync_to_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "start_metadata_sync_to_node(w2) failed"
    check "... with metadata again, w2 obfuscates as the coordinator does" "$(q c -c "SELECT obfuscate_id(42)")" \
        "$(q w2 -c "SELECT obfuscate_id(42)" 2>&1)"
}
# Key eras (issue 65, part 4), on every version: the coordinator keeps the
# cluster's, a worker tells it its key; each key's run ids in its own era.
call_eras_cluster() {
    local era_a era_b
    q c -c "SELECT create_obfuscation_key('era_a')" -c "SELECT create_obfuscation_key('era_b')" >/dev/null
    q w1 -c "SET shardid.call_number_key = 'era_a'" -c "COPY (SELECT next_call_number(), 'a' FROM generate_series(1, 20000)) TO STDOUT" >"$cwork/era.txt" 2>&1
    q c -c "SET shardid.call_number_key = 'era_b'" -c "COPY (SELECT next_call_number(), 'b' FROM generate_series(1, 20000)) TO STDOUT" >>"$cwork/era.txt" 2>&1
    q w2 -c "SET shardid.call_number_key = 'era_b'" -c "COPY (SELECT next_call_number(), 'b' FROM generate_series(1, 20000)) TO STDOUT" >>"$cwork/era.txt" 2>&1
    q w1 -c "SET shardid.call_number_key = 'era_a'" -c "COPY (SELECT next_call_number(), 'a' FROM generate_series(1, 20000)) TO STDOUT" >>"$cwork/era.txt" 2>&1
    check "key eras: two keys in turn, from the coordinator and two workers, a again: 80,000 call numbers, none twice" "80000 0" \
        "$(grep -c $'\t' "$cwork/era.txt") $(grep $'\t' "$cwork/era.txt" | cut -f1 | sort | uniq -d | wc -l)"
    grep $'\t' "$cwork/era.txt" >"$cwork/era.tsv"  # (psql's SET lines out)
    era_a=$(q c -c "SET shardid.call_number_key = 'era_a'" -c "SELECT string_agg(DISTINCT ((call_number_decode(c)).run_id >> 22)::text, ',') FROM (VALUES ('$(head -1 "$cwork/era.tsv" | cut -f1)'), ('$(tail -1 "$cwork/era.tsv" | cut -f1)')) v(c)" | tail -1)
    era_b=$(q c -c "SET shardid.call_number_key = 'era_b'" -c "SELECT (call_number_decode('$(sed -n 30000p "$cwork/era.tsv" | cut -f1)')).run_id >> 22" | tail -1)
    check "... each key's numbers in an era of its own (run_id >> 22): a's, b's the next" "t" \
        "$([ "${era_a:-0}" -ge 1 ] 2>/dev/null && [ "${era_b:-0}" = $((era_a + 1)) ] && echo t || echo "a $era_a, b $era_b")"
}
call_eras_cluster

if [ "$PG_MAJOR" -lt 16 ]; then
# --- 2b: the key ring --------------------------------------------------------------
# The coordinator's ring is every worker's: sent at CREATE EXTENSION and with
# every change, in the same transaction (src/pg/citus/key_ring.cpp).
for n in w1 w2; do
    check "the default key on $n is the coordinator's (each node's CREATE EXTENSION made its own)" "$(ring c)" "$(ring "$n")"
done
opaque=$(q c -c "SELECT obfuscate_id(123456789)")
check "an ID obfuscated on the coordinator is revealed on w1 and w2" "123456789 123456789" \
    "$(q w1 -c "SELECT reveal_id($opaque)") $(q w2 -c "SELECT reveal_id($opaque)")"
q c -c "SELECT create_obfuscation_key('ids')" >/dev/null
check "create_obfuscation_key() on the coordinator reaches w1, identical" "$(ring c)" "$(ring w1)"
check "... and w2" "$(ring c)" "$(ring w2)"
q c -c "BEGIN" -c "SELECT create_obfuscation_key('rolled_back')" -c "ROLLBACK" >/dev/null
check "a key made in a transaction that rolls back reaches no worker" "0 0" \
    "$(q w1 -c "SELECT count(*) FROM shardid_key WHERE name = 'rolled_back'") $(q w2 -c "SELECT count(*) FROM shardid_key WHERE name = 'rolled_back'")"
q c -c "UPDATE shardid_key SET secret = shardid_random_key() WHERE name = 'ids'" >/dev/null
check "a superuser's UPDATE of a secret on the coordinator reaches w2" "$(ring c)" "$(ring w2)"
q c -c "SELECT drop_obfuscation_key('ids')" >/dev/null
check "drop_obfuscation_key() on the coordinator drops the key on w1" "0" \
    "$(q w1 -c "SELECT count(*) FROM shardid_key WHERE name = 'ids'")"
err=$(q_err w1 "SELECT create_obfuscation_key('on_worker')")
contains "create_obfuscation_key() on a worker is refused (55000)" "$err" "55000"
contains "... pointing to the coordinator" "$err" "the key ring of a Citus worker is written by the coordinator"
err=$(q_err w2 "DELETE FROM shardid_key")
contains "a superuser's DELETE of a worker's ring is refused too" "$err" "55000"
check "... and changes nothing" "$(ring c)" "$(ring w2)"
err=$(q_err w1 "SELECT shardid_sync_keys()")
contains "shardid_sync_keys() on a worker is refused (55000)" "$err" "shardid_sync_keys() runs on a Citus coordinator"
# No secret in statement text (issue 48: the ring travelled as a literal
# that pg_monitor roles read on the workers and a failed apply logged).
# A pg_monitor role looks at w1 and at citus_stat_activity while the
# coordinator's transaction that makes a key is still open.
q c -c "CREATE ROLE watcher LOGIN IN ROLE pg_monitor" >/dev/null
watch_q() { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[$1]}" -U watcher -d postgres -X -At -c "$2"; }
watched=0f1e2d3c4b5a69788796a5b4c3d2e1f0
q c -c "BEGIN" -c "SELECT create_obfuscation_key('watched', '\\x$watched')" -c "SELECT pg_sleep(4)" -c "COMMIT" >/dev/null &
keyer=$!
seen=""
for _ in $(seq 30); do
    seen=$(watch_q w1 "SELECT string_agg(query, ' | ') FROM pg_stat_activity WHERE query LIKE '%shardid_key_apply%' AND pid <> pg_backend_pid()")
    [ -n "$seen" ] && break
    sleep 0.1
done
seen_c=$(watch_q c "SELECT string_agg(query, ' | ') FROM citus_stat_activity WHERE query LIKE '%shardid_key_apply%' AND query NOT LIKE '%string_agg%'")
wait $keyer
contains "a pg_monitor role sees the key's apply statement on w1 while the coordinator's transaction is open" "$seen" "shardid_key_apply"
lacks "... but not the secret in it" "$seen" "$watched"
lacks "... nor in the coordinator's citus_stat_activity" "$seen_c" "$watched"
check "... and the key reached w1" "$watched" "$(q w1 -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'watched'")"
# An apply that fails on w2 (a key of that name w2 did not get from the
# coordinator, planted past the trigger): w2 logs the statement of the
# error (log_min_error_statement = error, the default), without the secret.
q w2 -c "SET session_replication_role = replica" \
    -c "INSERT INTO shardid_key (name, secret) VALUES ('clash', '\\x00000000000000000000000000000000')" >/dev/null
clash=a1b2c3d4e5f60718293a4b5c6d7e8f90
err=$(q_err c "SELECT create_obfuscation_key('clash', '\\x$clash')")
contains "a key that clashes with w2's own is refused on the coordinator too (23505)" "$err" "23505"
contains "w2's server log has the failed apply's statement" "$(cat "${cdir_of[w2]}/server.log")" "shardid_key_apply(\$1, \$2"
lacks "... but not the secret" "$(cat "${cdir_of[w2]}/server.log")" "$clash"
q w2 -c "SET session_replication_role = replica" -c "DELETE FROM shardid_key WHERE name = 'clash'" >/dev/null
q c -c "SELECT drop_obfuscation_key('watched')" >/dev/null
check "... and the rings agree again" "$(ring c)" "$(ring w2)"

# --- 2c: a worker that missed a change of the ring -------------------------------------
# Citus sends a change only to active workers with metadata (issue 48: keys
# changed while w2 was disabled, then w2 activated: w2 obfuscated and
# revealed with the old secret, no error, and shardid_sync_keys() failed
# with 23505; a worker without metadata obfuscated with its own key).
# A backend on w2 stays open throughout, having used the key before.
w2port=${cport_of[w2]}
q c -c "SELECT create_obfuscation_key('rotating')" >/dev/null
coproc W2 { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$w2port" -U postgres -X -At -v VERBOSITY=terse 2>&1; }
ask_w2() { echo "$1" >&"${W2[1]}"; read -r -t 30 answer <&"${W2[0]}" || answer=none; echo "$answer"; }
check "w2 obfuscates with the coordinator's key 'rotating'" "$(q c -c "SELECT obfuscate_id(42, 'rotating')")" \
    "$(ask_w2 "SELECT obfuscate_id(42, 'rotating');")"
q c -c "SELECT citus_disable_node('127.0.0.1', $w2port, synchronous := true)" >/dev/null 2>&1 ||
    fail "citus_disable_node(w2) failed"
q c -c "SELECT drop_obfuscation_key('rotating')" -c "SELECT create_obfuscation_key('rotating')" >/dev/null
check "while w2 is disabled, a key changed on the coordinator does not reach it" "f" \
    "$(q c -At -c "SELECT secret = '\\x$(q w2 -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'rotating'")' FROM shardid_key WHERE name = 'rotating'")"
contains "... and w2, still running while disabled, refuses its stale copy from its next statement (before: used it until its metadata changed)" \
    "$(ask_w2 "SELECT obfuscate_id(42, 'rotating');")" "differs from the coordinator's"
q c -c "SELECT citus_activate_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "citus_activate_node(w2) failed"
opaque_r=$(q c -c "SELECT obfuscate_id(42, 'rotating')")
err=$(q_err w2 "SELECT obfuscate_id(42, 'rotating')")
contains "activated again, w2 refuses to obfuscate with its stale copy (55000)" "$err" "55000"
contains "... saying it differs from the coordinator's" "$err" "differs from the coordinator's"
contains "... with the hint to run shardid_sync_keys()" "$err" "shardid_sync_keys()"
err=$(q_err w2 "SELECT reveal_id($opaque_r, 'rotating')")
contains "... and to reveal with it (before: a wrong number, no error)" "$err" "55000"
contains "the backend open on w2 since before refuses too" "$(ask_w2 "SELECT obfuscate_id(42, 'rotating');")" \
    "differs from the coordinator's"
check "shardid_sync_keys() repairs w2 (before: 23505) and counts the workers it reached" "2" \
    "$(q c -c "SELECT shardid_sync_keys()" 2>&1)"
check "... w2's ring is the coordinator's" "$(ring c)" "$(ring w2)"
check "... and w2 reveals what the coordinator obfuscated" "42" "$(q w2 -c "SELECT reveal_id($opaque_r, 'rotating')" 2>&1)"
check "... in the open backend too" "$opaque_r" "$(ask_w2 "SELECT obfuscate_id(42, 'rotating');")"
echo '\q' >&"${W2[1]}" 2>/dev/null
# A worker without metadata: a distributed SELECT evaluates obfuscate_id()
# on it (before: 1,000 of 1,000 values differed from the coordinator's).
q c -c "CREATE TABLE ring_rows (k int, v bigint)" -c "SELECT create_distributed_table('ring_rows', 'k', shard_count := 4)" \
    -c "INSERT INTO ring_rows SELECT g, g FROM generate_series(1, 1000) g" >/dev/null
q c -c "SELECT stop_metadata_sync_to_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "stop_metadata_sync_to_node(w2) failed"
err=$(q_err c "SELECT count(*) FROM ring_rows WHERE obfuscate_id(v, 'rotating') IS NOT NULL")
contains "a distributed SELECT that obfuscates on w2, without metadata, is refused (55000)" "$err" "55000"
contains "... saying w2 has no metadata" "$err" "without metadata"
# An application connected to w2 directly, as an ordinary role, after a
# change of the key on the coordinator that w2 could not get (issue 58:
# 100 of 100 obfuscations differed from the coordinator's, reveals wrong,
# no error; only Citus' own connections were refused).
q c -c "SELECT drop_obfuscation_key('rotating')" -c "SELECT create_obfuscation_key('rotating')" >/dev/null
opaque_r=$(q c -c "SELECT obfuscate_id(42, 'rotating')")
watch_err() { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[$1]}" -U watcher -d postgres -X -At \
    -c "\\set VERBOSITY verbose" -c "$2" 2>&1 >/dev/null | head -3 | tr '\n' ' '; }
err=$(watch_err w2 "SELECT obfuscate_id(42, 'rotating')")
contains "an ordinary role connected to w2 (no metadata) is refused its stale key (55000)" "$err" "55000"
contains "... saying w2 has no metadata" "$err" "without metadata"
err=$(watch_err w2 "SELECT reveal_id($opaque_r, 'rotating')")
contains "... and a reveal of the coordinator's new value is refused too (before: a wrong number)" "$err" "55000"
out=$(q c -c "SELECT shardid_sync_keys()" 2>&1)
contains "shardid_sync_keys() names w2, which Citus does not reach" "$out" "Citus worker 127.0.0.1:$w2port (group 2) does not get the key ring"
check "... and counts only w1 as reached (before: '2 keys sent', none arrived)" "1" "$(echo "$out" | tail -1)"
q c -c "SELECT start_metadata_sync_to_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "start_metadata_sync_to_node(w2) failed"
# The workers obfuscate in the materialized CTE; the coordinator, outside it.
same_as_c="WITH d AS MATERIALIZED (SELECT v, obfuscate_id(v, 'rotating') AS o FROM ring_rows)
    SELECT count(*) FROM d WHERE d.o = obfuscate_id(d.v, 'rotating')"
q c -c "SELECT shardid_sync_keys()" >/dev/null
check "with metadata again and synced, every row obfuscates on its worker as on the coordinator" "1000" \
    "$(q c -c "$same_as_c" 2>&1)"
q c -c "DROP TABLE ring_rows" -c "SELECT drop_obfuscation_key('rotating')" >/dev/null

# --- 2d: a change of the ring prepared on a worker, its COMMIT PREPARED lost -------
# Citus prepares the change on both workers, commits on the coordinator,
# then sends COMMIT PREPARED; the connection to w1 breaks in between (here:
# the coordinator's commit waits for a synchronous standby that does not
# exist while w1's Citus connections are cut, then the wait is cancelled).
# Issue 58: a backend of w1 that had used the key went on with the old
# secret for 59 s, until Citus' recovery committed the change, and revealed
# the coordinator's new values as wrong numbers.
q c -c "SELECT create_obfuscation_key('twophase')" >/dev/null
coproc W1K { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[w1]}" -U postgres -X -At -v VERBOSITY=terse 2>&1; }
ask_w1k() { echo "$1" >&"${W1K[1]}"; read -r -t 30 answer <&"${W1K[0]}" || answer=none; echo "$answer"; }
check "w1 obfuscates with the coordinator's key 'twophase'" "$(q c -c "SELECT obfuscate_id(42, 'twophase')")" \
    "$(ask_w1k "SELECT obfuscate_id(42, 'twophase');")"
q c -c "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" -c "ALTER SYSTEM SET citus.recover_2pc_interval = -1" \
    -c "SELECT pg_reload_conf()" >/dev/null
q c -c "SET application_name = 'twophase_keyer'" -c "BEGIN" -c "SELECT drop_obfuscation_key('twophase')" \
    -c "SELECT create_obfuscation_key('twophase')" -c "COMMIT" >"$cwork/twophase.out" 2>&1 &
keyer=$!
for _ in $(seq 150); do
    [ "$(q c -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'twophase_keyer' AND wait_event = 'SyncRep'")" = 1 ] && break
    sleep 0.1
done
q w1 -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE 'citus_internal%'" >/dev/null
q c -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'twophase_keyer'" >/dev/null
wait $keyer
q c -c "ALTER SYSTEM RESET synchronous_standby_names" -c "SELECT pg_reload_conf()" >/dev/null
contains "the coordinator committed, warning that w1 did not" "$(cat "$cwork/twophase.out")" "failed to commit transaction on"
check "... the change is prepared on w1, not committed" "1" "$(q w1 -c "SELECT count(*) FROM pg_prepared_xacts")"
secret_of() { q "$1" -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'twophase'"; }
check "... and committed on w2" "$(secret_of c)" "$(secret_of w2)"
opaque_2p=$(q c -c "SELECT obfuscate_id(42, 'twophase')")
contains "w1's backend that used the key before refuses it while the change is prepared (before: the old secret, 59 s)" \
    "$(ask_w1k "SELECT obfuscate_id(42, 'twophase');")" "is being changed on this Citus worker"
err=$(q_err w1 "SELECT reveal_id($opaque_2p, 'twophase')")
contains "... a new backend of w1 refuses to reveal the coordinator's new value (55000)" "$err" "55000"
q c -c "SELECT recover_prepared_transactions()" >/dev/null
check "once Citus recovered the change, w1's open backend obfuscates with the new secret" "$opaque_2p" \
    "$(ask_w1k "SELECT obfuscate_id(42, 'twophase');")"
check "... and w1 reveals the coordinator's new value" "42" "$(q w1 -c "SELECT reveal_id($opaque_2p, 'twophase')" 2>&1)"
echo '\q' >&"${W1K[1]}" 2>/dev/null
q c -c "ALTER SYSTEM RESET citus.recover_2pc_interval" -c "SELECT pg_reload_conf()" \
    -c "SELECT drop_obfuscation_key('twophase')" >/dev/null

else
    ring_pulled
fi

# --- 2e: a key changed while one message of a worker's runs --------------------------
# The unit of a key's confirmation is the statement, on every node: the
# statements of one protocol message, and a DO block's transactions, each
# use the key the coordinator has when they start. Issue 65: a worker (18,
# keys read from the coordinator) used the old secret 2.5 s after the change
# committed in both cases, its cache keyed on statement_timestamp(), which
# PostgreSQL moves once per message and keeps through a COMMIT inside a
# procedure or DO block.
q c -c "SELECT create_obfuscation_key('turn')" >/dev/null
turn_before=$(q c -c "SELECT obfuscate_id(42, 'turn')")
# The change begins once both workers' first statements are done (they
# sleep), and waits out the workers' leases of the ring (at most the
# coordinator's fence, 3 s here) before it changes a row; the workers'
# last statements begin 9 s after their first, after it committed (CI of
# stop 68: with 6 s, and the change begun 1.2 s after the workers' clients
# were started, a loaded machine's connections made it commit after).
PGAPPNAME=turn q w1 -c "SELECT obfuscate_id(42, 'turn'); SELECT pg_sleep(9); SELECT obfuscate_id(42, 'turn')" \
    >"$cwork/turn.message" 2>&1 &
turner=$!
PGAPPNAME=turn q w2 -c "DO \$\$ DECLARE a bigint; b bigint; BEGIN a := obfuscate_id(42, 'turn'); PERFORM pg_sleep(9); COMMIT;
         b := obfuscate_id(42, 'turn'); RAISE NOTICE 'turn % %', a, b; END \$\$" >"$cwork/turn.do" 2>&1 &
turner2=$!
for _ in $(seq 100); do
    [ "$(q w1 -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'turn' AND wait_event = 'PgSleep'")" = 1 ] &&
        [ "$(q w2 -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'turn' AND wait_event = 'PgSleep'")" = 1 ] && break
    sleep 0.1
done
# Timed in the server, from the statement's start to its commit (a client's
# connection takes over a second in a loaded CI).
turn_took=$(q c -c "SELECT set_config('shardid_test.turn_began', clock_timestamp()::text, false) IS NULL" \
    -c "UPDATE shardid_key SET secret = shardid_random_key() WHERE name = 'turn'" \
    -c "SELECT round(extract(epoch FROM clock_timestamp() - current_setting('shardid_test.turn_began')::timestamptz) * 1000)" | tail -1)
turn_after=$(q c -c "SELECT obfuscate_id(42, 'turn')")
wait $turner $turner2
echo "# the change of key 'turn' took ${turn_took:-?} ms in the server"
promise "the change waited out the workers' leases, at most the coordinator's fence (3 s) and a second" \
    "$([ "${turn_took:-99999}" -le 4000 ] && echo t || echo f)" "${turn_took:-?} ms"
check "w1, one message of three statements across a key change: its first uses the old secret, its last the new one" \
    "$turn_before  $turn_after" "$(tr '\n' ' ' <"$cwork/turn.message" | sed 's/ *$//')"
check "w2, a DO block that COMMITs across a key change: the new secret after its COMMIT" \
    "turn $turn_before $turn_after" "$(sed -n 's/.*NOTICE: *//p' "$cwork/turn.do")"
q c -c "SELECT drop_obfuscation_key('turn')" >/dev/null
err=$(q_err c "BEGIN; SELECT create_obfuscation_key('prepared'); PREPARE TRANSACTION 'shardid_ring'")
contains "a change of the key ring cannot be PREPAREd on the coordinator (0A000): it would commit after new leases" \
    "$err" "0A000"
check "... and nothing of it is left" "0 0" \
    "$(q c -c "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'shardid_ring'") $(q c -c "SELECT count(*) FROM shardid_key WHERE name = 'prepared'")"

# --- 3: the load -----------------------------------------------------------------
q c >/dev/null <<'SQL'
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
seconds=${CITUS_SECONDS:-60}
nodes=(--node "c=$base:0" --node "w1=$((base + 1)):1" --node "w2=$((base + 2)):2")
/usr/bin/python3 test/citus/load.py --seconds "$seconds" "${nodes[@]}" >"$cwork/load.out" 2>&1 &
load=$!
# Meanwhile: a shard of events from w1 to w2, a tenant schema to another
# node, and a rebalance.
sleep $((seconds / 4))
shard=$(q c -c "SELECT shardid FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid)
                WHERE s.logicalrelid = 'events'::regclass AND p.nodeport = $((base + 1)) ORDER BY shardid LIMIT 1")
moved=$(q c -c "SELECT citus_move_shard_placement($shard, '127.0.0.1', $((base + 1)), '127.0.0.1', $((base + 2)),
                shard_transfer_mode := 'block_writes')" 2>&1 && echo ok)
contains "a shard of events moved from w1 to w2 under load" "$moved" "ok"
sleep $((seconds / 4))
from=$(q c -c "SELECT nodeport FROM citus_schemas s JOIN citus_shards h ON h.colocation_id = s.colocation_id
               WHERE s.schema_name = 'tenant_1'::regnamespace LIMIT 1")
to=$([ "$from" = "$((base + 1))" ] && echo $((base + 2)) || echo $((base + 1)))
moved=$(q c -c "SELECT citus_schema_move('tenant_1', '127.0.0.1', $to, shard_transfer_mode := 'block_writes')" 2>&1 &&
    echo ok)
contains "the tenant schema tenant_1 moved to another node under load" "$moved" "ok"
sleep $((seconds / 4))
moved=$(q c -c "SELECT rebalance_table_shards('events', shard_transfer_mode := 'block_writes')" 2>&1 && echo ok)
contains "a rebalance of events under load" "$moved" "ok"
wait "$load"
rc=$?
cat "$cwork/load.out"
[ "$rc" -eq 0 ] || grep -q '^FAIL' "$cwork/load.out" || fail "the load driver exited with status $rc"

# --- 4: a worker added later, pg_dump, DROP EXTENSION ------------------------------
cnode_add w3 || fail "citus_add_node(w3) failed"
check "w3, added after the layout was made, has it and issues under group 3" "3" \
    "$(q w3 -c "SELECT (id_decode('per_minute', next_id('per_minute'))).shard" 2>&1)"
if [ "$PG_MAJOR" -lt 16 ]; then
    err=$(q_err w3 "SELECT obfuscate_id(1)")
    contains "w3's own default key (made when Citus added it) is refused until it has the coordinator's (55000)" "$err" "55000"
    contains "... with the hint to run shardid_sync_keys()" "$err" "shardid_sync_keys()"
    check "shardid_sync_keys() on the coordinator sends its ring to the three workers" "3" \
        "$(q c -c "SELECT shardid_sync_keys()")"
    check "... and w3's ring is the coordinator's" "$(ring c)" "$(ring w3)"
    check "... so w3 reveals the coordinator's obfuscated ID" "123456789" "$(q w3 -c "SELECT reveal_id($opaque)" 2>&1)"
else
    check "PG $PG_MAJOR: w3, added later, obfuscates with the coordinator's key at once" \
        "$(q c -c "SELECT obfuscate_id(99)")" "$(q w3 -c "SELECT obfuscate_id(99)" 2>&1)"
fi
dump=$(as_pg "$PG_BIN/pg_dump" -h 127.0.0.1 -p "$base" -U postgres postgres 2>&1)
contains "pg_dump of the coordinator carries the layout's carrier" "$dump" 'shardid_carrier."shardid_layout$per_minute"()'
contains "... and its catalog row" "$dump" "per_minute"$'\t'
contains "... and the key ring" "$dump" "$(q c -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'default'")"
printf 'restored\t\\\\x000102030405060708090a0b0c0d0e0f\t2024-01-01 00:00:00+00\tf\n' |
    q c -c "COPY shardid_key (name, secret, created_at, made_by_install) FROM STDIN" >/dev/null
if [ "$PG_MAJOR" -lt 16 ]; then
    check "a key restored into the coordinator (COPY, as pg_restore writes it) reaches w3" "000102030405060708090a0b0c0d0e0f" \
        "$(q w3 -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'restored'")"
else
    check "a key restored into the coordinator (COPY, as pg_restore writes it) is w3's" \
        "$(q c -c "SELECT obfuscate_id(5, 'restored')")" "$(q w3 -c "SELECT obfuscate_id(5, 'restored')" 2>&1)"
fi
# --- 4b: a worker fails over while the old primary still runs ----------------------
# Its standby promoted (its clock 5 s behind) and the coordinator's metadata
# moved to it with citus_update_node(), while w1 keeps running and issuing
# (issue 48: w1 went on under group 1, 20,000 of 20,000 IDs shared). w1 must
# stop within shardid.citus_fence (10 s) of the change, the standby issue
# only after w1's last confirmation ran out, above every ID w1 issued.
sb=$cwork/s1
mkdir -p "$sb" && chown postgres: "$sb"
as_pg "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p $((base + 1)) -U postgres -D "$sb/data" -R -X stream -c fast >/dev/null 2>&1 ||
    fail "pg_basebackup of w1 failed"
cdir_of[s1]=$sb; cport_of[s1]=$((base + 4))
cnode_conf s1 "unix_socket_directories = '$sb'" "shardid.clock_offset_ms = -5000"
cnode_start s1 || stop_suite "the standby of w1 did not start: $(cnode_why s1)"
q w1 -c "SELECT max(next_trace_id()) FROM generate_series(1, 2000)" >/dev/null
lsn=$(q w1 -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 100); do
    [ "$(q s1 -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
    sleep 0.1
done
err=$(q_err s1 "SELECT next_trace_id()")
contains "a standby of w1 refuses to generate (25006)" "$err" "cannot generate shardid IDs on a standby server"
# w1 issues one ID per statement meanwhile, each line "<unix ms> <id>" or
# "<unix ms> ERROR ...", until 16 s after the change.
w1_loop() {
    local until_s=$1 out
    while [ "$(date +%s)" -lt "$until_s" ]; do
        out=$(q w1 -c "SELECT next_trace_id()" 2>&1 | head -1)
        echo "$(date +%s%3N) $out"
    done
}
change_s=$(($(date +%s) + 3))
w1_loop $((change_s + 16)) >"$cwork/w1_loop" &
loop_pid=$!
sleep 2
as_pg "$PG_BIN/pg_ctl" -D "$sb/data" promote -w >/dev/null || stop_suite "the standby did not promote"
w1_node=$(q c -c "SELECT nodeid FROM pg_dist_node WHERE nodeport = $((base + 1))")
changed_ms=$(date +%s%3N)
q c -c "SELECT citus_update_node($w1_node, '127.0.0.1', $((base + 4)))" >/dev/null || fail "citus_update_node failed"
q s1 -c "COPY (SELECT next_trace_id() FROM generate_series(1, 2000)) TO STDOUT" >"$cwork/s1_ids" 2>&1
s1_done_ms=$(date +%s%3N)
wait "$loop_pid"
w1_last_ok=$(awk '$2 ~ /^[0-9]+$/ { t = $1 } END { print (t == "" ? 0 : t) }' "$cwork/w1_loop")
w1_ok_after=$(awk -v c="$changed_ms" '$2 ~ /^[0-9]+$/ && $1 > c { n++ } END { print n + 0 }' "$cwork/w1_loop")
echo "# failover: w1 issued $w1_ok_after IDs after the change, its last $((w1_last_ok - changed_ms)) ms after it; the standby's 2,000 took $((s1_done_ms - changed_ms)) ms from the change"
check "the old primary w1 issued under its confirmation, then stopped" "t" "$([ "$w1_last_ok" -gt 0 ] && echo t || echo f)"
promise "... within shardid.citus_fence (10 s) of citus_update_node()" \
    "$([ "$w1_last_ok" -gt 0 ] && [ $((w1_last_ok - changed_ms)) -lt 10000 ] && echo t || echo f)" \
    "its last ID $((w1_last_ok - changed_ms)) ms after the change"
contains "... and then refuses (55000), naming its group" "$(grep ERROR "$cwork/w1_loop" | tail -1)" \
    "has not confirmed this server as the primary of group 1"
check "... and its shardid_coordination() says unconfirmed" "unconfirmed" \
    "$(q w1 -c "SELECT state FROM shardid_coordination()")"
check "the promoted standby issues under w1's group id" "1 2000" \
    "$(q s1 -c "SELECT (trace_id_decode($(head -1 "$cwork/s1_ids"))).node_no") $(grep -c '^[0-9]*$' "$cwork/s1_ids")"
awk '$2 ~ /^[0-9]+$/ { print $2 }' "$cwork/w1_loop" | sort >"$cwork/w1_ids"
check "... none of its IDs equal to one w1 issued" "0" "$(sort "$cwork/s1_ids" | comm -12 - "$cwork/w1_ids" | wc -l)"
w1_max=$(sort -n "$cwork/w1_ids" | tail -1)
s1_min=$(sort -n "$cwork/s1_ids" | head -1)
check "... above every ID w1 issued, its clock 5 s behind" "t" \
    "$([ -n "$s1_min" ] && [ -n "$w1_max" ] && [ "$s1_min" -gt "$w1_max" ] && echo t || echo "f ($s1_min <= $w1_max)")"
# Back to w1: the standby stopped, the metadata names w1 again; w1 waits
# out the standby's confirmation, then issues above its IDs.
as_pg "$PG_BIN/pg_ctl" -D "$sb/data" stop -m fast >/dev/null
q c -c "SELECT citus_update_node($w1_node, '127.0.0.1', $((base + 1)))" >/dev/null || fail "citus_update_node back failed"
back=$(q w1 -c "SELECT min(next_trace_id()) FROM generate_series(1, 100)" 2>&1)
check "w1, named again, issues above the standby's IDs" "t" \
    "$([ "$back" -gt "$(sort -n "$cwork/s1_ids" | tail -1)" ] 2>/dev/null && echo t || echo "f ($back)")"

# --- 4c: a coordinator pause shorter than the fence costs nothing --------------------
# w2 issues one ID per statement in one session for 8 s; the coordinator
# (every process of it) is stopped for 3 s meanwhile, three renewals of the
# fence missed. No statement may fail, and none wait longer than 1 s.
coord_pids() { local pm; pm=$(head -1 "${cdir_of[c]}/data/postmaster.pid"); echo "$pm $(pgrep -P "$pm" | tr '\n' ' ')"; }
{
    for _ in $(seq 4000); do
        echo "SELECT next_trace_id(), (extract(epoch FROM clock_timestamp()) * 1000)::bigint; SELECT pg_sleep(0.002);"
    done
} >"$cwork/pause.sql"
q w2 -c "SELECT next_trace_id()" >/dev/null
as_pg timeout 60 "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[w2]}" -U postgres -X -At -F ' ' -f "$cwork/pause.sql" \
    >"$cwork/pause.out" 2>"$cwork/pause.err" &
pause_pid=$!
sleep 2
paused=$(coord_pids)
# shellcheck disable=SC2086
kill -STOP $paused
sleep 0.5
c_paused=$(as_pg timeout 1 "$PG_BIN/psql" -h 127.0.0.1 -p "$base" -U postgres -X -At -c "SELECT 1" >/dev/null 2>&1 &&
    echo answered || echo "timed out")
sleep 1.5
# shellcheck disable=SC2086
kill -CONT $paused
wait "$pause_pid"
read -r n gap <<<"$(awk 'NF == 2 { if (p) { g = $2 - p; if (g > m) m = g } p = $2; n++ } END { print n + 0, m + 0 }' "$cwork/pause.out")"
echo "# coordinator paused 3 s: w2 issued $n IDs in one session, longest gap ${gap} ms, $(grep -c ERROR "$cwork/pause.err") errors"
check "a coordinator paused 3 s (fence 10 s): no failed statement on w2" "0" "$(grep -c ERROR "$cwork/pause.err")"
promise "... and no statement stalled: the longest gap between IDs under 1 s" \
    "$([ "$n" -gt 1000 ] && [ "$gap" -lt 1000 ] && echo t || echo f)" "$n IDs, longest gap $gap ms"
check "... while the coordinator did not answer (a query to it timed out during the pause)" "timed out" "$c_paused"

# --- 4d: keys and call numbers through a coordinator pause --------------------------
# Issue 65, part 5: workers hold the coordinator's key ring under a lease
# and keep spare call-number runs (key_lease.cpp, spare_runs.cpp). Before,
# a worker asked the coordinator for a key in every statement (16 and
# later) or every new backend (15), and for every new run: a coordinator
# stopped for 10 s stalled every such statement for 10 s. With a fence of
# 20 s, the coordinator is stopped for 12 s under two sessions that
# obfuscate and take a call number in every statement and a client that
# opens a new connection for each; then, with a fence of 4 s, for 15 s: past
# the lease statements fail with 55000 after a bounded wait (5 s and a
# renewal interval), not a stall for the whole pause, and heal by themselves.
fence_all() {
    local n
    for n in c w1 w2; do q "$n" -c "ALTER SYSTEM SET shardid.citus_fence = '$1'" -c "SELECT pg_reload_conf()" >/dev/null; done
}
pause_round() {  # SECONDS-OF-LOAD PAUSE-AT PAUSE-FOR: the loads' lines in $cwork/pl.*, each statement's in raw.*
    local load=$1 at=$2 for=$3 p
    rm -f "$cwork"/pl.* "$cwork"/raw.*
    for n in w1 w2; do q "$n" -c "SELECT obfuscate_id(1), next_call_number()" >/dev/null; done
    sleep 2
    /usr/bin/python3 test/citus/pause_load.py --port "${cport_of[w1]}" --seconds "$load" --label "w1-session" \
        --raw "$cwork/raw.1" >"$cwork/pl.1" 2>&1 &
    /usr/bin/python3 test/citus/pause_load.py --port "${cport_of[w2]}" --seconds "$load" --label "w2-session" \
        --raw "$cwork/raw.2" >"$cwork/pl.2" 2>&1 &
    /usr/bin/python3 test/citus/pause_load.py --port "${cport_of[w1]}" --seconds "$load" --fresh --label "w1-new-connections" \
        --raw "$cwork/raw.3" >"$cwork/pl.3" 2>&1 &
    sleep "$at"
    p=$(coord_pids)
    pause_from=$(date +%s%3N)
    # shellcheck disable=SC2086
    kill -STOP $p
    sleep "$for"
    # shellcheck disable=SC2086
    kill -CONT $p
    pause_to=$(date +%s%3N)
    wait
    sed 's/^/# /' "$cwork"/pl.*
}
field() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$1"; }
# during_outside N: "DURING OUTSIDE COUNT", load N's longest statement (ms)
# of the COUNT that overlapped the pause or began within 2 s after it, and
# its longest of the others: what this machine costs anyway. In CI the
# Citus suite runs niced beside four other lanes on two cores, and fixed
# bounds of 1.5 s (a new connection) and 6.5 s (past the lease) failed
# there by 0.2 to 0.8 s.
during_outside() {
    awk -v a="$pause_from" -v b="$((pause_to + 2000))" 'NF == 2 {
            if ($1 + $2 >= a && $1 <= b) { n++; if ($2 > d) d = $2 } else if ($2 > o) o = $2
        } END { printf "%d %d %d\n", d + 0, o + 0, n + 0 }' "$cwork/raw.$1"
}
# pause_cost N LABEL: sets during, outside and count for load N, and says them.
pause_cost() {
    read -r during outside count <<<"$(during_outside "$1")"
    echo "# $2: longest $during ms of $count statements during the pause, $outside ms outside it"
}
fence_all 20s
sleep 1
pause_round 25 8 12  # the load 8 s before: its rate measured, its spares taken
for f in 1 2 3; do
    label=$(awk '{ print $1; exit }' "$cwork/pl.$f")
    bound=1000
    [ "$f" = 3 ] && bound=1500  # a new connection's own setup
    pause_cost "$f" "$label"
    # The pause may cost nothing beyond the machine's own noise: under the
    # bound, or twice the longest statement outside the pause; never half
    # the pause (6 s: a statement that waited for the coordinator).
    limit=$((2 * outside > bound ? 2 * outside : bound))
    limit=$((limit > 6000 ? 6000 : limit))
    check "coordinator stopped 12 s, fence 20 s: $label, no failed statement" "0" "$(field "$cwork/pl.$f" failed)"
    promise "... and none stalled: $label's longest during the pause under $bound ms or twice its longest outside it (at most 6 s)" \
        "$([ "$count" -gt 0 ] && [ "$during" -lt "$limit" ] && echo t || echo f)" \
        "during the pause: $during ms, $count statements; outside it: $outside ms"
done
fence_all 4s
sleep 5  # leases of 20 s granted before end by now (the lease is renewed every 400 ms)
pause_round 28 4 15  # 9 s after it answers again: a loaded machine refills spares in seconds
for f in 1 2; do
    label=$(awk '{ print $1; exit }' "$cwork/pl.$f")
    states=$(field "$cwork/pl.$f" sqlstates)
    check "coordinator stopped 15 s, fence 4 s: $label's statements past the lease fail with 55000 only" "t" \
        "$([[ $states =~ ^55000:[0-9]+$ ]] && echo t || echo "f ($states)")"
    # The bound (5.4 s) and this machine's own noise (the longest statement
    # outside the pause, at least 1.1 s); never two thirds of the pause.
    pause_cost "$f" "$label"
    limit=$((5400 + (outside > 1100 ? outside : 1100)))
    limit=$((limit > 10000 ? 10000 : limit))
    promise "... after a bounded wait, not the whole pause: $label's longest under 6.5 s, or 5.4 s and its longest outside the pause" \
        "$([ "$count" -gt 0 ] && [ "$during" -lt "$limit" ] && echo t || echo f)" \
        "during the pause: $during ms, $count statements; outside it: $outside ms"
    check "... and heal by themselves once it answers: $label succeeds again after its last failure" "t" \
        "$(a=$(field "$cwork/pl.$f" after); [ "${a:-0}" -ge 1 ] && echo t || echo "f (${a:-0} after the last failure)")"
    promise "... at least 10 statements after the last failure" \
        "$(a=$(field "$cwork/pl.$f" after); [ "${a:-0}" -ge 10 ] && echo t || echo f)" "$(field "$cwork/pl.$f" after)"
done
contains "... the error says why" "$(cat "$cwork/pl.1" "$cwork/pl.2")" "could not be confirmed with the Citus coordinator"
for n in c w1 w2; do q "$n" -c "ALTER SYSTEM RESET shardid.citus_fence" -c "SELECT pg_reload_conf()" >/dev/null; done

# --- 4e: a statement's waits share one bound ----------------------------------------
# A statement that waited for the key lease and then for a spare run waited
# the bound twice: 10.7 s with a bound of 5.4 s (4d, PostgreSQL 17, in CI).
# Here the coordinator answers the fence worker at once but cannot serve
# it: its role's lock_timeout is 100 ms, one session holds the key ring
# and another the run sequence. w1's spare runs are used up, its lease
# runs out; a new connection's statement needs a key and a run; the ring
# is let go 3 s into its wait, the lease renewed, and the run never comes.
# It fails with 55000 within the bound (5.4 s) in all, not 3 s plus a
# bound.
fence_all 4s
q c -c "SET citus.enable_alter_role_set_propagation = off" -c "ALTER ROLE postgres SET lock_timeout = '100ms'" >/dev/null
sleep 1
rm -f "$cwork/release"
{
    echo "SET citus.enable_ddl_propagation = off; BEGIN; ALTER SEQUENCE shardid_run_seq CACHE 1;"
    while [ ! -e "$cwork/release" ]; do sleep 0.1; done
    echo "ROLLBACK;"
} | q c >/dev/null 2>&1 &
seq_pid=$!
sleep 1
drained=no
for _ in $(seq 200); do
    out=$(q w1 -c "SET statement_timeout = 300" -c "SELECT next_call_number()" 2>&1) || {
        grep -q "statement timeout" <<<"$out" && drained=yes
        break
    }
done
check "a statement's waits share one bound: w1's spare runs used up while the coordinator cannot hand out runs" "yes" "$drained"
{ echo "BEGIN; LOCK TABLE shardid_key IN ACCESS EXCLUSIVE MODE;"; sleep 7.5; echo "ROLLBACK;"; } | q c >/dev/null 2>&1 &
ring_pid=$!
sleep 4.5  # the lease (4 s) runs out; the ring is let go 3 s from now
# Timed by the server (a new connection's own setup took 1.4 s in CI, with
# three Citus clusters on the machine).
out=$(timed_in_server w1 "obfuscate_id(1), next_call_number()")
took=$(took_of "$out")
wait "$ring_pid"
echo "# a key, then a run: $out"
contains "... a new connection's statement that waited for the key, then for a run, fails naming the run (55000)" "$out" \
    "55000 no call-number run id could be taken from the Citus coordinator"
# 7 s: the bound and a loaded machine's late wake-up (CI runs this niced
# beside four other lanes), short of 3 s and a bound (8.4 s; 8.6 s measured).
promise "... within one bound in all (5.4 s), not 3 s and a bound" "$([ "${took:-99999}" -lt 7000 ] && echo t || echo f)" \
    "${took:-no} ms"
touch "$cwork/release"
wait "$seq_pid"
q c -c "SET citus.enable_alter_role_set_propagation = off" -c "ALTER ROLE postgres RESET lock_timeout" >/dev/null
for n in c w1 w2; do q "$n" -c "ALTER SYSTEM RESET shardid.citus_fence" -c "SELECT pg_reload_conf()" >/dev/null; done
out=$(q w1 -c "SELECT count(*) FROM (SELECT obfuscate_id(1), next_call_number()) s" 2>&1)
check "... and w1 serves keys and runs again once the coordinator can" "1" "$out"

# The shards a move left behind are dropped by Citus' deferred cleanup;
# until then they use next_trace_id() too (docs/citus.md).
q c -c "DROP TABLE events, events_copy, events_by_k, ref_events" -c "DROP SCHEMA tenant_1, tenant_2, tenant_3, tenant_4 CASCADE" \
    -c "CALL citus_cleanup_orphaned_resources()" >/dev/null 2>&1
out=$(q c -c "DROP EXTENSION shardid" 2>&1)
check "DROP EXTENSION shardid on the coordinator with a layout succeeds" "DROP EXTENSION" "$out"
for n in c w1 w2 w3; do
    check "... and leaves no carrier on $n" "0" \
        "$(q "$n" -c "SELECT count(*) FROM pg_proc WHERE proname LIKE 'shardid_layout%'")"
done

# --- 5: negative control -------------------------------------------------------------
q c -c "CREATE EXTENSION shardid" >/dev/null
q c >/dev/null <<'SQL'
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
cnode_up w4 $((base + 5)) "$src" || stop_suite "w4 did not start: $(cnode_why w4)"
q w4 -c "SELECT citus_set_coordinator_host('127.0.0.1', $((base + 5)))" -c "CREATE EXTENSION shardid" >/dev/null
coproc W4 { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p $((base + 5)) -U postgres -X -At 2>&1; }
ask_w4() { echo "SELECT (trace_id_decode(next_trace_id())).node_no;" >&"${W4[1]}"; read -r -t 30 answer <&"${W4[0]}" || answer=none; echo "$answer"; }
check "a single-node Citus server issues under group 0" "0" "$(ask_w4)"
cnode_add w4 || fail "citus_add_node(w4) failed"
w4_group=$(q w4 -c "SELECT groupid FROM pg_dist_local_group")
check "... added to the cluster, its group is a worker's" "t" "$([ "${w4_group:-0}" -gt 0 ] 2>/dev/null && echo t || echo "f (${w4_group:-none})")"
check "... and a backend open since before the join issues its next ID under that group" "$w4_group" "$(ask_w4)"
echo '\q' >&"${W4[1]}" 2>/dev/null
# A removed worker that keeps running while another server is added under
# its group id (issue 48: 100,000 of 100,000 IDs shared). w4 has no shard
# placements, so citus_remove_node() takes it out of the metadata while it
# runs; w5 is then added with groupid => w4's group.
w4_max=$(q w4 -c "SELECT max(next_trace_id()) FROM generate_series(1, 1000)")
q c -c "SELECT citus_remove_node('127.0.0.1', $((base + 5)))" >/dev/null || fail "citus_remove_node(w4) failed"
sleep 1.5
err=$(q_err w4 "SELECT next_trace_id()")
contains "a worker removed from the metadata while it runs refuses to issue (55000)" "$err" \
    "has not confirmed this server as the primary of group $w4_group"
cnode_up w5 $((base + 6)) "$src" || stop_suite "w5 did not start: $(cnode_why w5)"
q c -c "SELECT citus_add_node('127.0.0.1', $((base + 6)), groupid => $w4_group)" >/dev/null ||
    fail "citus_add_node(w5, groupid => $w4_group) failed"
w5_min=$(q w5 -c "SELECT min(next_trace_id()) FROM generate_series(1, 1000)" 2>&1)
check "a server added under the removed worker's group issues under it, above the removed worker's IDs" "$w4_group t" \
    "$(q w5 -c "SELECT (trace_id_decode(next_trace_id())).node_no" 2>&1) $([ "$w5_min" -gt "$w4_max" ] 2>/dev/null && echo t || echo "f ($w5_min)")"
err=$(q_err w4 "SELECT next_trace_id()")
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
    q "$by" -c "ALTER SYSTEM SET shardid.shards = '$v'" -c "ALTER SYSTEM SET shardid.clock_offset_ms = 3000" \
        -c "SELECT pg_reload_conf()" >/dev/null
    sleep 0.5
    by_max=$(q "$by" -c "SELECT max(next_instagram_id($v)) FROM generate_series(1, 20000)" 2>&1)
    check "$by (group $by_group) declares shard $v and issues 20,000 IDs with it" "t" \
        "$([ "$by_max" -gt 0 ] 2>/dev/null && echo t || echo "f ($by_max)")"
    cnode_up "$new" "$port" "$src" || stop_suite "$new did not start: $(cnode_why "$new")"
    q c -c "SELECT citus_add_node('127.0.0.1', $port, groupid => $v)" >/dev/null ||
        fail "citus_add_node($new, groupid => $v) failed"
    err=$(q_err "$new" "SELECT next_instagram_id()")
    contains "a server added under group $v, which $by declares, refuses to issue (55000)" "$err" "55000"
    contains "... naming the declaring node's group" "$err" "group $v is an explicit shard that Citus group $by_group declares"
    err=$(q_err "$by" "SELECT next_instagram_id($v)")
    contains "... and $by's declaration is refused now that $v is a node's group" "$err" \
        "shard $v is the Citus group id of another node"
    q "$by" -c "ALTER SYSTEM RESET shardid.shards" -c "SELECT pg_reload_conf()" >/dev/null
    for ((i = 0; i < 40; i++)); do
        new_min=$(q "$new" -c "SELECT min(next_instagram_id()) FROM generate_series(1, 20000)" 2>/dev/null) && break
        sleep 1
    done
    check "$v undeclared: $new issues under its group, above every ID $by issued with shard $v" "$v t" \
        "$(q "$new" -c "SELECT (instagram_decode(next_instagram_id())).shard" 2>&1) $([ "${new_min:-0}" -gt "$by_max" ] 2>/dev/null && echo t || echo "f (${new_min:-none} after $i s, not above $by_max)")"
    q "$by" -c "ALTER SYSTEM RESET shardid.clock_offset_ms" -c "SELECT pg_reload_conf()" >/dev/null
}
# c and w1 take their node ids from Citus again (section 5 set them by hand).
for n in c w1; do
    cnode_conf "$n" "$src" "shardid.node_id = -1"
    cnode_stop "$n" && cnode_start "$n" || fail "$n did not restart: $(cnode_why "$n")"
done
declared_then_added c 0 w6 $((base + 7)) 40
declared_then_added w1 1 w7 $((base + 8)) 41

# --- 6c: servers that made their own key ring join as workers ----------------------
# Issue 65: v1 had its own CREATE EXTENSION shardid (its own `default`)
# before citus_add_node(); once its metadata was taken away, an application
# connected to it obfuscated with that old key, 2 of 2 wrong, no error. v2
# was added with metadata sync off (Citus sends it neither the role nor the
# extension) and the operator made the extension by hand: 2 of 2 wrong,
# silently. Neither can tell it is a worker: a node with Citus but no Citus
# metadata uses no key.
cnode_up v1 $((base + 15)) "$src" && cnode_up v2 $((base + 16)) "$src" ||
    stop_suite "v1 or v2 did not start: $(cnode_why v1) $(cnode_why v2)"
# An application's role (Citus gives it to workers with metadata; v2, by hand).
q c -c "CREATE ROLE app2f LOGIN" >/dev/null
app_err() { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[$1]}" -U app2f -d postgres -X -At \
    -c "\\set VERBOSITY verbose" -c "$2" 2>&1 >/dev/null | head -3 | tr '\n' ' '; }
q v1 -c "CREATE EXTENSION shardid" >/dev/null
contains "v1 alone, Citus without metadata (not yet a coordinator nor a worker), uses no key of its own" \
    "$(q_err v1 "SELECT obfuscate_id(42)")" "citus_set_coordinator_host"
cnode_add v1 || fail "citus_add_node(v1) failed"
q c -c "SELECT shardid_sync_keys()" >/dev/null
check "v1, which made its own key ring, with metadata: obfuscates as the coordinator" "$(q c -c "SELECT obfuscate_id(42)")" \
    "$(q v1 -c "SELECT obfuscate_id(42)" 2>&1)"
q c -c "SELECT stop_metadata_sync_to_node('127.0.0.1', ${cport_of[v1]})" >/dev/null 2>&1 || fail "stop_metadata_sync_to_node(v1) failed"
out=$(app_err v1 "SELECT obfuscate_id(42)")
contains "v1 without metadata: an application's obfuscate_id(42) is refused (55000; before: v1's own old key)" "$out" "55000"
contains "... saying v1 has no Citus metadata" "$out" "without metadata"
out=$(app_err v1 "SELECT reveal_id($(q c -c "SELECT obfuscate_id(42)"))")
contains "... and so is a reveal" "$out" "55000"
contains "... and a call number, for the same reason" "$(app_err v1 "SELECT next_call_number()")" "without metadata"
q c -c "SELECT citus_remove_node('127.0.0.1', ${cport_of[v1]})" >/dev/null 2>&1 || fail "citus_remove_node(v1) failed"
q c -c "SET citus.enable_metadata_sync = off" -c "SELECT citus_add_node('127.0.0.1', ${cport_of[v2]})" >/dev/null 2>&1 ||
    fail "citus_add_node(v2) with metadata sync off failed"
q v2 -c "CREATE ROLE app2f LOGIN" -c "CREATE EXTENSION shardid" >/dev/null 2>&1
out=$(app_err v2 "SELECT obfuscate_id(42)")
contains "v2, added without metadata sync, shardid made by hand: obfuscate_id(42) is refused (55000; before: its own key)" "$out" "55000"
contains "... and the hint says how to give it metadata and the coordinator's keys" "$(q_err v2 "SELECT obfuscate_id(42)")" "start_metadata_sync_to_node"
q c -c "SELECT start_metadata_sync_to_node('127.0.0.1', ${cport_of[v2]})" -c "SELECT shardid_sync_keys()" >/dev/null 2>&1 ||
    fail "start_metadata_sync_to_node(v2) failed"
check "... given metadata and the coordinator's keys, v2 obfuscates as the coordinator" "$(q c -c "SELECT obfuscate_id(42)")" \
    "$(q v2 -c "SELECT obfuscate_id(42)" 2>&1)"
q c -c "SELECT citus_remove_node('127.0.0.1', ${cport_of[v2]})" >/dev/null 2>&1 || fail "citus_remove_node(v2) failed"
cnode_stop v1; cnode_stop v2

# --- 7: docs/citus.md's trial, as written -------------------------------------------
# su postgres -c 'sh -s' < docs/setup/citus-trial.sh, with its own directory
# and ports; then the page's first statements on it, and its stop.
trial=$cwork/trial
tport=$((base + 10))
out=$(as_pg env DIR="$trial" PG_PORT=$tport PG_BIN="$PG_BIN" sh -s <docs/setup/citus-trial.sh 2>&1)
check "citus-trial.sh: a coordinator and two workers, each node's id its group" "c (port $tport): citus, configured, node id 0
w1 (port $((tport + 1))): citus, configured, node id 1
w2 (port $((tport + 2))): citus, configured, node id 2
psql -h 127.0.0.1 -p $tport -d postgres   # the coordinator; the workers are on $((tport + 1)) and $((tport + 2))" "$out"
# When it did not come up, what it said and what the servers logged, on
# one line each (a run's log keeps only its PASS/FAIL lines).
if ! grep -q "^w2 (port" <<<"$out"; then
    echo "FAIL citus-trial.sh said: $(tr '\n' '|' <<<"$out" | cut -c1-800)"
    for n in c w1 w2; do
        [ -f "$trial/$n.log" ] && echo "FAIL citus-trial.sh's $n.log: $(grep -E 'ERROR|FATAL|PANIC' "$trial/$n.log" | tail -5 | tr '\n' '|' | cut -c1-800)"
    done
fi
got=$(as_pg "$PG_BIN/psql" -X -q -At -h 127.0.0.1 -p $tport -d postgres \
    -c "CREATE TABLE events (id bigint DEFAULT next_trace_id(), tenant int NOT NULL, payload jsonb)" \
    -c "SELECT create_distributed_table('events', 'tenant')" \
    -c "INSERT INTO events (tenant, payload) VALUES (42, '{}') RETURNING (trace_id_decode(id)).node_no" 2>&1 | tail -1)
check "... the page's distributed table takes an ID from the coordinator, group 0" "0" "$got"
check "... and a worker's DecimalId carries a generator id the coordinator handed out" "t" \
    "$(as_pg "$PG_BIN/psql" -X -At -h 127.0.0.1 -p $((tport + 1)) -d postgres -c "SELECT (decimal_id_decode(next_decimal_id())).generator_id > 0" 2>&1)"
as_pg env DIR="$trial" PG_PORT=$tport sh -s stop <docs/setup/citus-trial.sh
check "citus-trial.sh stop: the servers stop, the directory goes" "gone" \
    "$([ ! -e "$trial" ] && ! pgrep -f "$trial/" >/dev/null && echo gone)"

for n in c w1 w2 w3 w4 w6 w7; do
    grep -q "was terminated by signal\|server process .* terminated" "${cdir_of[$n]}/server.log" &&
        fail "a process of $n crashed: $(grep -m1 'terminated' "${cdir_of[$n]}/server.log")"
done
true
