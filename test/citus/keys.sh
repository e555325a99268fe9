#!/usr/bin/env bash
# shardid's key ring on Citus (docs/citus.md, "Keys and call numbers"): the
# coordinator's ring is every worker's, whatever happens to a worker or to
# the messages between them, and a worker that cannot have it refuses. A
# coordinator and two workers with metadata (MX), as test/citus/ids.sh
# starts them (the sections keep the numbers docs/citus.md gives them).
# Prints PASS/FAIL lines, or one SKIP line where there is no Citus.
#   2 key eras: the coordinator keeps the cluster's, a worker tells it its
#     key; each key's call-number run ids in an era of its own.
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
#   4 a worker added later: its own key is refused until shardid_sync_keys()
#     gives it the coordinator's; pg_dump of the coordinator carries the
#     key ring, and a key restored into the coordinator reaches the workers.
#   6c a server that made its own key ring and then joined as a worker, its
#     metadata taken away, and a worker added with metadata sync off whose
#     extension was made by hand: neither uses a key (no Citus metadata).
set -u
. scripts/lib.sh
. scripts/roots.sh
. scripts/citus.sh

citus_suite

citus_cluster_up "$(test_port 18720)"

# The key ring travels through a Citus function that builds for PostgreSQL
# 16 and later hide (src/pg/citus/key_ring.cpp): there each worker
# reads every key from the coordinator when a statement first uses it, and
# sections 2b and 2c give way to ring_pulled.
ring() { cq "$1" -c "SELECT string_agg(name || '=' || encode(secret, 'hex'), ',' ORDER BY name) FROM shardid_key"; }
ring_pulled() {  # on PostgreSQL 16 and later
    local err opaque_p
    opaque_p=$(cq c -c "SELECT obfuscate_id(123456789)")
    check "PG $PG_MAJOR: an ID obfuscated on the coordinator is revealed on w1 and w2 (each reads the coordinator's key)" \
        "123456789 123456789" "$(cq w1 -c "SELECT reveal_id($opaque_p)" 2>&1) $(cq w2 -c "SELECT reveal_id($opaque_p)" 2>&1)"
    cq c -c "SELECT create_obfuscation_key('ids')" >/dev/null
    check "... a key made on the coordinator is used on w1 at once" "$(cq c -c "SELECT obfuscate_id(7, 'ids')")" \
        "$(cq w1 -c "SELECT obfuscate_id(7, 'ids')" 2>&1)"
    coproc W1P { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p $((base + 1)) -U postgres -X -At 2>&1; }
    ask_w1p() { echo "$1" >&"${W1P[1]}"; read -r -t 30 answer <&"${W1P[0]}" || answer=none; echo "$answer"; }
    local before
    before=$(ask_w1p "SELECT obfuscate_id(7, 'ids');")
    cq c -c "SELECT drop_obfuscation_key('ids')" -c "SELECT create_obfuscation_key('ids')" >/dev/null
    check "... made again under the same name, a backend of w1 open since before uses the new one in its next statement" \
        "$(cq c -c "SELECT obfuscate_id(7, 'ids')") t" "$(ask_w1p "SELECT obfuscate_id(7, 'ids');") $([ "$before" != "$(cq c -c "SELECT obfuscate_id(7, 'ids')")" ] && echo t || echo f)"
    echo '\q' >&"${W1P[1]}" 2>/dev/null
    cq c -c "BEGIN" -c "SELECT create_obfuscation_key('rolled_back')" -c "ROLLBACK" >/dev/null
    err=$(cq_err w1 "SELECT obfuscate_id(1, 'rolled_back')")
    contains "... a key made in a transaction that rolled back does not exist for w1 (42704)" "$err" "42704"
    cq c -c "SELECT drop_obfuscation_key('ids')" >/dev/null
    err=$(cq_err w1 "SELECT create_obfuscation_key('on_worker')")
    contains "... create_obfuscation_key() on a worker is refused (55000)" "$err" "the key ring of a Citus worker is written by the coordinator"
    local number
    number=$(cq c -c "SELECT next_call_number()")
    check "... call numbers use the coordinator's key on w1: it decodes one c issued as c does" \
        "$(cq c -c "SELECT call_number_decode('$number')")" "$(cq w1 -c "SELECT call_number_decode('$number')" 2>&1)"
    err=$(cq c -c "SELECT shardid_sync_keys()" 2>&1)
    contains "... shardid_sync_keys() says nothing needs sending" "$err" "Citus workers read the coordinator's key ring themselves on PostgreSQL $PG_MAJOR"
    # A worker whose metadata was taken away holds only the default key its
    # own CREATE EXTENSION made, which the coordinator sent (before: it
    # obfuscated with that key, otherwise than the coordinator, no error).
    local w2port=$((base + 2))
    cq c -c "SELECT stop_metadata_sync_to_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "stop_metadata_sync_to_node(w2) failed"
    err=$(cq_err w2 "SELECT obfuscate_id(42)")
    contains "... w2 without metadata refuses the default key its CREATE EXTENSION made (55000)" "$err" "55000"
    contains "... saying w2 has no metadata" "$err" "without metadata"
    cq c -c "SELECT start_metadata_sync_to_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "start_metadata_sync_to_node(w2) failed"
    check "... with metadata again, w2 obfuscates as the coordinator does" "$(cq c -c "SELECT obfuscate_id(42)")" \
        "$(cq w2 -c "SELECT obfuscate_id(42)" 2>&1)"
}
# Key eras (issue 65, part 4), on every version: the coordinator keeps the
# cluster's, a worker tells it its key; each key's run ids in its own era.
call_eras_cluster() {
    local era_a era_b
    cq c -c "SELECT create_obfuscation_key('era_a')" -c "SELECT create_obfuscation_key('era_b')" >/dev/null
    cq w1 -c "SET shardid.call_number_key = 'era_a'" -c "COPY (SELECT next_call_number(), 'a' FROM generate_series(1, 20000)) TO STDOUT" >"$cwork/era.txt" 2>&1
    cq c -c "SET shardid.call_number_key = 'era_b'" -c "COPY (SELECT next_call_number(), 'b' FROM generate_series(1, 20000)) TO STDOUT" >>"$cwork/era.txt" 2>&1
    cq w2 -c "SET shardid.call_number_key = 'era_b'" -c "COPY (SELECT next_call_number(), 'b' FROM generate_series(1, 20000)) TO STDOUT" >>"$cwork/era.txt" 2>&1
    cq w1 -c "SET shardid.call_number_key = 'era_a'" -c "COPY (SELECT next_call_number(), 'a' FROM generate_series(1, 20000)) TO STDOUT" >>"$cwork/era.txt" 2>&1
    check "key eras: two keys in turn, from the coordinator and two workers, a again: 80,000 call numbers, none twice" "80000 0" \
        "$(grep -c $'\t' "$cwork/era.txt") $(grep $'\t' "$cwork/era.txt" | cut -f1 | sort | uniq -d | wc -l)"
    grep $'\t' "$cwork/era.txt" >"$cwork/era.tsv"  # (psql's SET lines out)
    era_a=$(cq c -c "SET shardid.call_number_key = 'era_a'" -c "SELECT string_agg(DISTINCT ((call_number_decode(c)).run_id >> 22)::text, ',') FROM (VALUES ('$(head -1 "$cwork/era.tsv" | cut -f1)'), ('$(tail -1 "$cwork/era.tsv" | cut -f1)')) v(c)" | tail -1)
    era_b=$(cq c -c "SET shardid.call_number_key = 'era_b'" -c "SELECT (call_number_decode('$(sed -n 30000p "$cwork/era.tsv" | cut -f1)')).run_id >> 22" | tail -1)
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
opaque=$(cq c -c "SELECT obfuscate_id(123456789)")
check "an ID obfuscated on the coordinator is revealed on w1 and w2" "123456789 123456789" \
    "$(cq w1 -c "SELECT reveal_id($opaque)") $(cq w2 -c "SELECT reveal_id($opaque)")"
cq c -c "SELECT create_obfuscation_key('ids')" >/dev/null
check "create_obfuscation_key() on the coordinator reaches w1, identical" "$(ring c)" "$(ring w1)"
check "... and w2" "$(ring c)" "$(ring w2)"
cq c -c "BEGIN" -c "SELECT create_obfuscation_key('rolled_back')" -c "ROLLBACK" >/dev/null
check "a key made in a transaction that rolls back reaches no worker" "0 0" \
    "$(cq w1 -c "SELECT count(*) FROM shardid_key WHERE name = 'rolled_back'") $(cq w2 -c "SELECT count(*) FROM shardid_key WHERE name = 'rolled_back'")"
cq c -c "UPDATE shardid_key SET secret = shardid_random_key() WHERE name = 'ids'" >/dev/null
check "a superuser's UPDATE of a secret on the coordinator reaches w2" "$(ring c)" "$(ring w2)"
cq c -c "SELECT drop_obfuscation_key('ids')" >/dev/null
check "drop_obfuscation_key() on the coordinator drops the key on w1" "0" \
    "$(cq w1 -c "SELECT count(*) FROM shardid_key WHERE name = 'ids'")"
err=$(cq_err w1 "SELECT create_obfuscation_key('on_worker')")
contains "create_obfuscation_key() on a worker is refused (55000)" "$err" "55000"
contains "... pointing to the coordinator" "$err" "the key ring of a Citus worker is written by the coordinator"
err=$(cq_err w2 "DELETE FROM shardid_key")
contains "a superuser's DELETE of a worker's ring is refused too" "$err" "55000"
check "... and changes nothing" "$(ring c)" "$(ring w2)"
err=$(cq_err w1 "SELECT shardid_sync_keys()")
contains "shardid_sync_keys() on a worker is refused (55000)" "$err" "shardid_sync_keys() runs on a Citus coordinator"
# No secret in statement text (issue 48: the ring travelled as a literal
# that pg_monitor roles read on the workers and a failed apply logged).
# A pg_monitor role looks at w1 and at citus_stat_activity while the
# coordinator's transaction that makes a key is still open.
cq c -c "CREATE ROLE watcher LOGIN IN ROLE pg_monitor" >/dev/null
watch_q() { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[$1]}" -U watcher -d postgres -X -At -c "$2"; }
watched=0f1e2d3c4b5a69788796a5b4c3d2e1f0
cq c -c "BEGIN" -c "SELECT create_obfuscation_key('watched', '\\x$watched')" -c "SELECT pg_sleep(4)" -c "COMMIT" >/dev/null &
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
check "... and the key reached w1" "$watched" "$(cq w1 -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'watched'")"
# An apply that fails on w2 (a key of that name w2 did not get from the
# coordinator, planted past the trigger): w2 logs the statement of the
# error (log_min_error_statement = error, the default), without the secret.
cq w2 -c "SET session_replication_role = replica" \
    -c "INSERT INTO shardid_key (name, secret) VALUES ('clash', '\\x00000000000000000000000000000000')" >/dev/null
clash=a1b2c3d4e5f60718293a4b5c6d7e8f90
err=$(cq_err c "SELECT create_obfuscation_key('clash', '\\x$clash')")
contains "a key that clashes with w2's own is refused on the coordinator too (23505)" "$err" "23505"
contains "w2's server log has the failed apply's statement" "$(cat "${cdir_of[w2]}/server.log")" "shardid_key_apply(\$1, \$2"
lacks "... but not the secret" "$(cat "${cdir_of[w2]}/server.log")" "$clash"
cq w2 -c "SET session_replication_role = replica" -c "DELETE FROM shardid_key WHERE name = 'clash'" >/dev/null
cq c -c "SELECT drop_obfuscation_key('watched')" >/dev/null
check "... and the rings agree again" "$(ring c)" "$(ring w2)"

# --- 2c: a worker that missed a change of the ring -------------------------------------
# Citus sends a change only to active workers with metadata (issue 48: keys
# changed while w2 was disabled, then w2 activated: w2 obfuscated and
# revealed with the old secret, no error, and shardid_sync_keys() failed
# with 23505; a worker without metadata obfuscated with its own key).
# A backend on w2 stays open throughout, having used the key before.
w2port=${cport_of[w2]}
cq c -c "SELECT create_obfuscation_key('rotating')" >/dev/null
coproc W2 { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$w2port" -U postgres -X -At -v VERBOSITY=terse 2>&1; }
ask_w2() { echo "$1" >&"${W2[1]}"; read -r -t 30 answer <&"${W2[0]}" || answer=none; echo "$answer"; }
check "w2 obfuscates with the coordinator's key 'rotating'" "$(cq c -c "SELECT obfuscate_id(42, 'rotating')")" \
    "$(ask_w2 "SELECT obfuscate_id(42, 'rotating');")"
cq c -c "SELECT citus_disable_node('127.0.0.1', $w2port, synchronous := true)" >/dev/null 2>&1 ||
    fail "citus_disable_node(w2) failed"
cq c -c "SELECT drop_obfuscation_key('rotating')" -c "SELECT create_obfuscation_key('rotating')" >/dev/null
check "while w2 is disabled, a key changed on the coordinator does not reach it" "f" \
    "$(cq c -At -c "SELECT secret = '\\x$(cq w2 -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'rotating'")' FROM shardid_key WHERE name = 'rotating'")"
contains "... and w2, still running while disabled, refuses its stale copy from its next statement (before: used it until its metadata changed)" \
    "$(ask_w2 "SELECT obfuscate_id(42, 'rotating');")" "differs from the coordinator's"
cq c -c "SELECT citus_activate_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "citus_activate_node(w2) failed"
opaque_r=$(cq c -c "SELECT obfuscate_id(42, 'rotating')")
err=$(cq_err w2 "SELECT obfuscate_id(42, 'rotating')")
contains "activated again, w2 refuses to obfuscate with its stale copy (55000)" "$err" "55000"
contains "... saying it differs from the coordinator's" "$err" "differs from the coordinator's"
contains "... with the hint to run shardid_sync_keys()" "$err" "shardid_sync_keys()"
err=$(cq_err w2 "SELECT reveal_id($opaque_r, 'rotating')")
contains "... and to reveal with it (before: a wrong number, no error)" "$err" "55000"
contains "the backend open on w2 since before refuses too" "$(ask_w2 "SELECT obfuscate_id(42, 'rotating');")" \
    "differs from the coordinator's"
check "shardid_sync_keys() repairs w2 (before: 23505) and counts the workers it reached" "2" \
    "$(cq c -c "SELECT shardid_sync_keys()" 2>&1)"
check "... w2's ring is the coordinator's" "$(ring c)" "$(ring w2)"
check "... and w2 reveals what the coordinator obfuscated" "42" "$(cq w2 -c "SELECT reveal_id($opaque_r, 'rotating')" 2>&1)"
check "... in the open backend too" "$opaque_r" "$(ask_w2 "SELECT obfuscate_id(42, 'rotating');")"
echo '\q' >&"${W2[1]}" 2>/dev/null
# A worker without metadata: a distributed SELECT evaluates obfuscate_id()
# on it (before: 1,000 of 1,000 values differed from the coordinator's).
cq c -c "CREATE TABLE ring_rows (k int, v bigint)" -c "SELECT create_distributed_table('ring_rows', 'k', shard_count := 4)" \
    -c "INSERT INTO ring_rows SELECT g, g FROM generate_series(1, 1000) g" >/dev/null
cq c -c "SELECT stop_metadata_sync_to_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "stop_metadata_sync_to_node(w2) failed"
err=$(cq_err c "SELECT count(*) FROM ring_rows WHERE obfuscate_id(v, 'rotating') IS NOT NULL")
contains "a distributed SELECT that obfuscates on w2, without metadata, is refused (55000)" "$err" "55000"
contains "... saying w2 has no metadata" "$err" "without metadata"
# An application connected to w2 directly, as an ordinary role, after a
# change of the key on the coordinator that w2 could not get (issue 58:
# 100 of 100 obfuscations differed from the coordinator's, reveals wrong,
# no error; only Citus' own connections were refused).
cq c -c "SELECT drop_obfuscation_key('rotating')" -c "SELECT create_obfuscation_key('rotating')" >/dev/null
opaque_r=$(cq c -c "SELECT obfuscate_id(42, 'rotating')")
watch_err() { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[$1]}" -U watcher -d postgres -X -At \
    -c "\\set VERBOSITY verbose" -c "$2" 2>&1 >/dev/null | head -3 | tr '\n' ' '; }
err=$(watch_err w2 "SELECT obfuscate_id(42, 'rotating')")
contains "an ordinary role connected to w2 (no metadata) is refused its stale key (55000)" "$err" "55000"
contains "... saying w2 has no metadata" "$err" "without metadata"
err=$(watch_err w2 "SELECT reveal_id($opaque_r, 'rotating')")
contains "... and a reveal of the coordinator's new value is refused too (before: a wrong number)" "$err" "55000"
out=$(cq c -c "SELECT shardid_sync_keys()" 2>&1)
contains "shardid_sync_keys() names w2, which Citus does not reach" "$out" "Citus worker 127.0.0.1:$w2port (group 2) does not get the key ring"
check "... and counts only w1 as reached (before: '2 keys sent', none arrived)" "1" "$(echo "$out" | tail -1)"
cq c -c "SELECT start_metadata_sync_to_node('127.0.0.1', $w2port)" >/dev/null 2>&1 || fail "start_metadata_sync_to_node(w2) failed"
# The workers obfuscate in the materialized CTE; the coordinator, outside it.
same_as_c="WITH d AS MATERIALIZED (SELECT v, obfuscate_id(v, 'rotating') AS o FROM ring_rows)
    SELECT count(*) FROM d WHERE d.o = obfuscate_id(d.v, 'rotating')"
cq c -c "SELECT shardid_sync_keys()" >/dev/null
check "with metadata again and synced, every row obfuscates on its worker as on the coordinator" "1000" \
    "$(cq c -c "$same_as_c" 2>&1)"
cq c -c "DROP TABLE ring_rows" -c "SELECT drop_obfuscation_key('rotating')" >/dev/null

# --- 2d: a change of the ring prepared on a worker, its COMMIT PREPARED lost -------
# Citus prepares the change on both workers, commits on the coordinator,
# then sends COMMIT PREPARED; the connection to w1 breaks in between (here:
# the coordinator's commit waits for a synchronous standby that does not
# exist while w1's Citus connections are cut, then the wait is cancelled).
# Issue 58: a backend of w1 that had used the key went on with the old
# secret for 59 s, until Citus' recovery committed the change, and revealed
# the coordinator's new values as wrong numbers.
cq c -c "SELECT create_obfuscation_key('twophase')" >/dev/null
coproc W1K { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[w1]}" -U postgres -X -At -v VERBOSITY=terse 2>&1; }
ask_w1k() { echo "$1" >&"${W1K[1]}"; read -r -t 30 answer <&"${W1K[0]}" || answer=none; echo "$answer"; }
check "w1 obfuscates with the coordinator's key 'twophase'" "$(cq c -c "SELECT obfuscate_id(42, 'twophase')")" \
    "$(ask_w1k "SELECT obfuscate_id(42, 'twophase');")"
cq c -c "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" -c "ALTER SYSTEM SET citus.recover_2pc_interval = -1" \
    -c "SELECT pg_reload_conf()" >/dev/null
cq c -c "SET application_name = 'twophase_keyer'" -c "BEGIN" -c "SELECT drop_obfuscation_key('twophase')" \
    -c "SELECT create_obfuscation_key('twophase')" -c "COMMIT" >"$cwork/twophase.out" 2>&1 &
keyer=$!
for _ in $(seq 150); do
    [ "$(cq c -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'twophase_keyer' AND wait_event = 'SyncRep'")" = 1 ] && break
    sleep 0.1
done
cq w1 -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE 'citus_internal%'" >/dev/null
cq c -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'twophase_keyer'" >/dev/null
wait $keyer
cq c -c "ALTER SYSTEM RESET synchronous_standby_names" -c "SELECT pg_reload_conf()" >/dev/null
contains "the coordinator committed, warning that w1 did not" "$(cat "$cwork/twophase.out")" "failed to commit transaction on"
check "... the change is prepared on w1, not committed" "1" "$(cq w1 -c "SELECT count(*) FROM pg_prepared_xacts")"
secret_of() { cq "$1" -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'twophase'"; }
check "... and committed on w2" "$(secret_of c)" "$(secret_of w2)"
opaque_2p=$(cq c -c "SELECT obfuscate_id(42, 'twophase')")
contains "w1's backend that used the key before refuses it while the change is prepared (before: the old secret, 59 s)" \
    "$(ask_w1k "SELECT obfuscate_id(42, 'twophase');")" "is being changed on this Citus worker"
err=$(cq_err w1 "SELECT reveal_id($opaque_2p, 'twophase')")
contains "... a new backend of w1 refuses to reveal the coordinator's new value (55000)" "$err" "55000"
cq c -c "SELECT recover_prepared_transactions()" >/dev/null
check "once Citus recovered the change, w1's open backend obfuscates with the new secret" "$opaque_2p" \
    "$(ask_w1k "SELECT obfuscate_id(42, 'twophase');")"
check "... and w1 reveals the coordinator's new value" "42" "$(cq w1 -c "SELECT reveal_id($opaque_2p, 'twophase')" 2>&1)"
echo '\q' >&"${W1K[1]}" 2>/dev/null
cq c -c "ALTER SYSTEM RESET citus.recover_2pc_interval" -c "SELECT pg_reload_conf()" \
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
cq c -c "SELECT create_obfuscation_key('turn')" >/dev/null
turn_before=$(cq c -c "SELECT obfuscate_id(42, 'turn')")
# The change begins once both workers' first statements are done (they
# sleep), and waits out the workers' leases of the ring (at most the
# coordinator's fence, 3 s here) before it changes a row; the workers'
# last statements begin 9 s after their first, after it committed (CI of
# stop 68: with 6 s, and the change begun 1.2 s after the workers' clients
# were started, a loaded machine's connections made it commit after).
PGAPPNAME=turn cq w1 -c "SELECT obfuscate_id(42, 'turn'); SELECT pg_sleep(9); SELECT obfuscate_id(42, 'turn')" \
    >"$cwork/turn.message" 2>&1 &
turner=$!
PGAPPNAME=turn cq w2 -c "DO \$\$ DECLARE a bigint; b bigint; BEGIN a := obfuscate_id(42, 'turn'); PERFORM pg_sleep(9); COMMIT;
         b := obfuscate_id(42, 'turn'); RAISE NOTICE 'turn % %', a, b; END \$\$" >"$cwork/turn.do" 2>&1 &
turner2=$!
for _ in $(seq 100); do
    [ "$(cq w1 -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'turn' AND wait_event = 'PgSleep'")" = 1 ] &&
        [ "$(cq w2 -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'turn' AND wait_event = 'PgSleep'")" = 1 ] && break
    sleep 0.1
done
# Timed in the server, from the statement's start to its commit (a client's
# connection takes over a second in a loaded CI).
turn_took=$(cq c -c "SELECT set_config('shardid_test.turn_began', clock_timestamp()::text, false) IS NULL" \
    -c "UPDATE shardid_key SET secret = shardid_random_key() WHERE name = 'turn'" \
    -c "SELECT round(extract(epoch FROM clock_timestamp() - current_setting('shardid_test.turn_began')::timestamptz) * 1000)" | tail -1)
turn_after=$(cq c -c "SELECT obfuscate_id(42, 'turn')")
wait $turner $turner2
echo "# the change of key 'turn' took ${turn_took:-?} ms in the server"
promise "the change waited out the workers' leases, at most the coordinator's fence (3 s) and a second" \
    "$([ "${turn_took:-99999}" -le 4000 ] && echo t || echo f)" "${turn_took:-?} ms"
check "w1, one message of three statements across a key change: its first uses the old secret, its last the new one" \
    "$turn_before  $turn_after" "$(tr '\n' ' ' <"$cwork/turn.message" | sed 's/ *$//')"
check "w2, a DO block that COMMITs across a key change: the new secret after its COMMIT" \
    "turn $turn_before $turn_after" "$(sed -n 's/.*NOTICE: *//p' "$cwork/turn.do")"
cq c -c "SELECT drop_obfuscation_key('turn')" >/dev/null
err=$(cq_err c "BEGIN; SELECT create_obfuscation_key('prepared'); PREPARE TRANSACTION 'shardid_ring'")
contains "a change of the key ring cannot be PREPAREd on the coordinator (0A000): it would commit after new leases" \
    "$err" "0A000"
check "... and nothing of it is left" "0 0" \
    "$(cq c -c "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'shardid_ring'") $(cq c -c "SELECT count(*) FROM shardid_key WHERE name = 'prepared'")"

# --- 4: a worker added later, pg_dump ------------------------------------------------
cnode_up w3 $((base + 3)) "$citus_src" || stop_suite "w3 did not start: $(cnode_why w3)"
cnode_add w3 || fail "citus_add_node(w3) failed"
if [ "$PG_MAJOR" -lt 16 ]; then
    err=$(cq_err w3 "SELECT obfuscate_id(1)")
    contains "w3's own default key (made when Citus added it) is refused until it has the coordinator's (55000)" "$err" "55000"
    contains "... with the hint to run shardid_sync_keys()" "$err" "shardid_sync_keys()"
    check "shardid_sync_keys() on the coordinator sends its ring to the three workers" "3" \
        "$(cq c -c "SELECT shardid_sync_keys()")"
    check "... and w3's ring is the coordinator's" "$(ring c)" "$(ring w3)"
    check "... so w3 reveals the coordinator's obfuscated ID" "123456789" "$(cq w3 -c "SELECT reveal_id($opaque)" 2>&1)"
else
    check "PG $PG_MAJOR: w3, added later, obfuscates with the coordinator's key at once" \
        "$(cq c -c "SELECT obfuscate_id(99)")" "$(cq w3 -c "SELECT obfuscate_id(99)" 2>&1)"
fi
dump=$(as_pg "$PG_BIN/pg_dump" -h 127.0.0.1 -p "$base" -U postgres postgres 2>&1)
contains "pg_dump of the coordinator carries the key ring" "$dump" "$(cq c -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'default'")"
printf 'restored\t\\\\x000102030405060708090a0b0c0d0e0f\t2024-01-01 00:00:00+00\tf\n' |
    cq c -c "COPY shardid_key (name, secret, created_at, made_by_install) FROM STDIN" >/dev/null
if [ "$PG_MAJOR" -lt 16 ]; then
    check "a key restored into the coordinator (COPY, as pg_restore writes it) reaches w3" "000102030405060708090a0b0c0d0e0f" \
        "$(cq w3 -c "SELECT encode(secret, 'hex') FROM shardid_key WHERE name = 'restored'")"
else
    check "a key restored into the coordinator (COPY, as pg_restore writes it) is w3's" \
        "$(cq c -c "SELECT obfuscate_id(5, 'restored')")" "$(cq w3 -c "SELECT obfuscate_id(5, 'restored')" 2>&1)"
fi

# --- 6c: servers that made their own key ring join as workers ----------------------
# Issue 65: v1 had its own CREATE EXTENSION shardid (its own `default`)
# before citus_add_node(); once its metadata was taken away, an application
# connected to it obfuscated with that old key, 2 of 2 wrong, no error. v2
# was added with metadata sync off (Citus sends it neither the role nor the
# extension) and the operator made the extension by hand: 2 of 2 wrong,
# silently. Neither can tell it is a worker: a node with Citus but no Citus
# metadata uses no key.
cnode_up v1 $((base + 4)) "$citus_src" && cnode_up v2 $((base + 5)) "$citus_src" ||
    stop_suite "v1 or v2 did not start: $(cnode_why v1) $(cnode_why v2)"
# An application's role (Citus gives it to workers with metadata; v2, by hand).
cq c -c "CREATE ROLE app2f LOGIN" >/dev/null
app_err() { as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[$1]}" -U app2f -d postgres -X -At \
    -c "\\set VERBOSITY verbose" -c "$2" 2>&1 >/dev/null | head -3 | tr '\n' ' '; }
cq v1 -c "CREATE EXTENSION shardid" >/dev/null
contains "v1 alone, Citus without metadata (not yet a coordinator nor a worker), uses no key of its own" \
    "$(cq_err v1 "SELECT obfuscate_id(42)")" "citus_set_coordinator_host"
cnode_add v1 || fail "citus_add_node(v1) failed"
cq c -c "SELECT shardid_sync_keys()" >/dev/null
check "v1, which made its own key ring, with metadata: obfuscates as the coordinator" "$(cq c -c "SELECT obfuscate_id(42)")" \
    "$(cq v1 -c "SELECT obfuscate_id(42)" 2>&1)"
cq c -c "SELECT stop_metadata_sync_to_node('127.0.0.1', ${cport_of[v1]})" >/dev/null 2>&1 || fail "stop_metadata_sync_to_node(v1) failed"
out=$(app_err v1 "SELECT obfuscate_id(42)")
contains "v1 without metadata: an application's obfuscate_id(42) is refused (55000; before: v1's own old key)" "$out" "55000"
contains "... saying v1 has no Citus metadata" "$out" "without metadata"
out=$(app_err v1 "SELECT reveal_id($(cq c -c "SELECT obfuscate_id(42)"))")
contains "... and so is a reveal" "$out" "55000"
contains "... and a call number, for the same reason" "$(app_err v1 "SELECT next_call_number()")" "without metadata"
cq c -c "SELECT citus_remove_node('127.0.0.1', ${cport_of[v1]})" >/dev/null 2>&1 || fail "citus_remove_node(v1) failed"
cq c -c "SET citus.enable_metadata_sync = off" -c "SELECT citus_add_node('127.0.0.1', ${cport_of[v2]})" >/dev/null 2>&1 ||
    fail "citus_add_node(v2) with metadata sync off failed"
cq v2 -c "CREATE ROLE app2f LOGIN" -c "CREATE EXTENSION shardid" >/dev/null 2>&1
out=$(app_err v2 "SELECT obfuscate_id(42)")
contains "v2, added without metadata sync, shardid made by hand: obfuscate_id(42) is refused (55000; before: its own key)" "$out" "55000"
contains "... and the hint says how to give it metadata and the coordinator's keys" "$(cq_err v2 "SELECT obfuscate_id(42)")" "start_metadata_sync_to_node"
cq c -c "SELECT start_metadata_sync_to_node('127.0.0.1', ${cport_of[v2]})" -c "SELECT shardid_sync_keys()" >/dev/null 2>&1 ||
    fail "start_metadata_sync_to_node(v2) failed"
check "... given metadata and the coordinator's keys, v2 obfuscates as the coordinator" "$(cq c -c "SELECT obfuscate_id(42)")" \
    "$(cq v2 -c "SELECT obfuscate_id(42)" 2>&1)"
cq c -c "SELECT citus_remove_node('127.0.0.1', ${cport_of[v2]})" >/dev/null 2>&1 || fail "citus_remove_node(v2) failed"
cnode_stop v1; cnode_stop v2

citus_no_crash c w1 w2 w3
