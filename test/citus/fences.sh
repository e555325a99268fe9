#!/usr/bin/env bash
# shardid's fences on Citus (docs/citus.md): what a node holds from the
# coordinator (its group's primary, the key ring's lease, spare call-number
# runs) it re-confirms, and stops using once the fence passes; a pause
# shorter than the fence costs nothing. A coordinator and two workers with
# metadata (MX), as test/citus/ids.sh starts them (the sections keep the
# numbers docs/citus.md gives them). Prints PASS/FAIL lines, or one SKIP
# line where there is no Citus.
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
set -u
. scripts/lib.sh
. scripts/roots.sh
. scripts/citus.sh

citus_suite

citus_cluster_up "$(test_port 18740)"

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
cq w1 -c "SELECT max(next_trace_id()) FROM generate_series(1, 2000)" >/dev/null
lsn=$(cq w1 -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 100); do
    [ "$(cq s1 -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
    sleep 0.1
done
err=$(cq_err s1 "SELECT next_trace_id()")
contains "a standby of w1 refuses to generate (25006)" "$err" "cannot generate shardid IDs on a standby server"
# w1 issues one ID per statement meanwhile, each line "<unix ms> <id>" or
# "<unix ms> ERROR ...", until 16 s after the change.
w1_loop() {
    local until_s=$1 out
    while [ "$(date +%s)" -lt "$until_s" ]; do
        out=$(cq w1 -c "SELECT next_trace_id()" 2>&1 | head -1)
        echo "$(date +%s%3N) $out"
    done
}
change_s=$(($(date +%s) + 3))
w1_loop $((change_s + 16)) >"$cwork/w1_loop" &
loop_pid=$!
wait_until "w1 issues before the change" 30 grep -q ' [0-9][0-9]*$' "$cwork/w1_loop"
as_pg "$PG_BIN/pg_ctl" -D "$sb/data" promote -w >/dev/null || stop_suite "the standby did not promote"
w1_node=$(cq c -c "SELECT nodeid FROM pg_dist_node WHERE nodeport = $((base + 1))")
changed_ms=$(date +%s%3N)
cq c -c "SELECT citus_update_node($w1_node, '127.0.0.1', $((base + 4)))" >/dev/null || fail "citus_update_node failed"
cq s1 -c "COPY (SELECT next_trace_id() FROM generate_series(1, 2000)) TO STDOUT" >"$cwork/s1_ids" 2>&1
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
    "$(cq w1 -c "SELECT state FROM shardid_coordination()")"
check "the promoted standby issues under w1's group id" "1 2000" \
    "$(cq s1 -c "SELECT (trace_id_decode($(head -1 "$cwork/s1_ids"))).node_no") $(grep -c '^[0-9]*$' "$cwork/s1_ids")"
awk '$2 ~ /^[0-9]+$/ { print $2 }' "$cwork/w1_loop" | sort >"$cwork/w1_ids"
check "... none of its IDs equal to one w1 issued" "0" "$(sort "$cwork/s1_ids" | comm -12 - "$cwork/w1_ids" | wc -l)"
w1_max=$(sort -n "$cwork/w1_ids" | tail -1)
s1_min=$(sort -n "$cwork/s1_ids" | head -1)
check "... above every ID w1 issued, its clock 5 s behind" "t" \
    "$([ -n "$s1_min" ] && [ -n "$w1_max" ] && [ "$s1_min" -gt "$w1_max" ] && echo t || echo "f ($s1_min <= $w1_max)")"
# Back to w1: the standby stopped, the metadata names w1 again; w1 waits
# out the standby's confirmation, then issues above its IDs.
as_pg "$PG_BIN/pg_ctl" -D "$sb/data" stop -m fast >/dev/null
cq c -c "SELECT citus_update_node($w1_node, '127.0.0.1', $((base + 1)))" >/dev/null || fail "citus_update_node back failed"
back=$(cq w1 -c "SELECT min(next_trace_id()) FROM generate_series(1, 100)" 2>&1)
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
cq w2 -c "SELECT next_trace_id()" >/dev/null
as_pg timeout 60 "$PG_BIN/psql" -h 127.0.0.1 -p "${cport_of[w2]}" -U postgres -X -At -F ' ' -f "$cwork/pause.sql" \
    >"$cwork/pause.out" 2>"$cwork/pause.err" &
pause_pid=$!
wait_until "w2's session issues before the pause" 30 eval '[ "$(wc -l <"$cwork/pause.out")" -ge 100 ]'
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
    for n in c w1 w2; do cq "$n" -c "ALTER SYSTEM SET shardid.citus_fence = '$1'" -c "SELECT pg_reload_conf()" >/dev/null; done
    for n in c w1 w2; do wait_until "$n reloaded shardid.citus_fence" 30 shows "$1" cq "$n" -c "SHOW shardid.citus_fence"; done
}
pause_round() {  # SECONDS-OF-LOAD PAUSE-AT PAUSE-FOR: the loads' lines in $cwork/pl.*, each statement's in raw.*
    local load=$1 at=$2 for=$3 p
    rm -f "$cwork"/pl.* "$cwork"/raw.*
    for n in w1 w2; do cq "$n" -c "SELECT obfuscate_id(1), next_call_number()" >/dev/null; done
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
pl_field() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$1"; }
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
    check "coordinator stopped 12 s, fence 20 s: $label, no failed statement" "0" "$(pl_field "$cwork/pl.$f" failed)"
    promise "... and none stalled: $label's longest during the pause under $bound ms or twice its longest outside it (at most 6 s)" \
        "$([ "$count" -gt 0 ] && [ "$during" -lt "$limit" ] && echo t || echo f)" \
        "during the pause: $during ms, $count statements; outside it: $outside ms"
done
fence_all 4s
sleep 5  # leases of 20 s granted before end by now (the lease is renewed every 400 ms)
pause_round 28 4 15  # 9 s after it answers again: a loaded machine refills spares in seconds
for f in 1 2; do
    label=$(awk '{ print $1; exit }' "$cwork/pl.$f")
    states=$(pl_field "$cwork/pl.$f" sqlstates)
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
        "$(a=$(pl_field "$cwork/pl.$f" after); [ "${a:-0}" -ge 1 ] && echo t || echo "f (${a:-0} after the last failure)")"
    promise "... at least 10 statements after the last failure" \
        "$(a=$(pl_field "$cwork/pl.$f" after); [ "${a:-0}" -ge 10 ] && echo t || echo f)" "$(pl_field "$cwork/pl.$f" after)"
done
contains "... the error says why" "$(cat "$cwork/pl.1" "$cwork/pl.2")" "could not be confirmed with the Citus coordinator"
for n in c w1 w2; do cq "$n" -c "ALTER SYSTEM RESET shardid.citus_fence" -c "SELECT pg_reload_conf()" >/dev/null; done

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
cq c -c "SET citus.enable_alter_role_set_propagation = off" -c "ALTER ROLE postgres SET lock_timeout = '100ms'" >/dev/null
wait_until "the coordinator's new sessions have lock_timeout 100ms" 30 shows 100ms cq c -c "SHOW lock_timeout"
rm -f "$cwork/release"
{
    echo "SET citus.enable_ddl_propagation = off; BEGIN; ALTER SEQUENCE shardid_run_seq CACHE 1;"
    while [ ! -e "$cwork/release" ]; do sleep 0.1; done
    echo "ROLLBACK;"
} | cq c >/dev/null 2>&1 &
seq_pid=$!
wait_until "a session holds the run sequence" 30 shows t cq c -c "SELECT count(*) > 0 FROM pg_locks l JOIN pg_class r ON r.oid = l.relation
    WHERE r.relname = 'shardid_run_seq' AND l.granted AND l.mode = 'AccessExclusiveLock'"
drained=no
for _ in $(seq 200); do
    out=$(cq w1 -c "SET statement_timeout = 300" -c "SELECT next_call_number()" 2>&1) || {
        grep -q "statement timeout" <<<"$out" && drained=yes
        break
    }
done
check "a statement's waits share one bound: w1's spare runs used up while the coordinator cannot hand out runs" "yes" "$drained"
{ echo "BEGIN; LOCK TABLE shardid_key IN ACCESS EXCLUSIVE MODE;"; sleep 7.5; echo "ROLLBACK;"; } | cq c >/dev/null 2>&1 &
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
cq c -c "SET citus.enable_alter_role_set_propagation = off" -c "ALTER ROLE postgres RESET lock_timeout" >/dev/null
for n in c w1 w2; do cq "$n" -c "ALTER SYSTEM RESET shardid.citus_fence" -c "SELECT pg_reload_conf()" >/dev/null; done
out=$(cq w1 -c "SELECT count(*) FROM (SELECT obfuscate_id(1), next_call_number()) s" 2>&1)
check "... and w1 serves keys and runs again once the coordinator can" "1" "$out"

citus_no_crash c w1 w2
