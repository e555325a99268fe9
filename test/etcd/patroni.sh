#!/usr/bin/env bash
# Scenario 7 of the coordination suite: Patroni (Debian's `patroni`) runs
# three PostgreSQL members on a real etcd (started here, private ports,
# temporary data directory), each configured by docs/setup/patroni.yml (the
# file the docs give, with this suite's ports and directories merged in). Under load, the leader is killed with -9
# (its Patroni and its postmaster together: a crashed machine); after
# Patroni's failover, no ID of the new leader is at or below any ID the old
# leader handed out, and generation resumes within a bound measured here.
#
# The worst case on purpose: the standbys' clocks run 60 s behind
# (shardid.clock_offset_ms) and the mark is not WAL-logged
# (shardid.wal_log_mark = off), as if the standby had received none of the
# old leader's mark records (asynchronous replication). Only the mark in
# etcd keeps the order then.
# Control: the same cluster with node ids from settings issues IDs below the
# old leader's after the failover.
# Prints PASS/FAIL lines and the figures; run from the repository root.
set -u
. scripts/lib.sh
. test/etcd/lib.sh

coord_setup 16300
etcd_main 23871 23971
PATRONI=/usr/bin/patroni
declare -A rest_of

# member_yaml SCOPE NAME PG_PORT REST_PORT SOURCE BEHIND: Patroni's
# configuration of one member: docs/setup/patroni.yml itself, with this
# suite's ports, directories and timings merged in (test/etcd/yaml_overlay.py
# fails on a key the page no longer has). Test-only settings are marked "+":
# a fast loop, marks kept out of WAL (the worst case), a member's clock
# offset. The control takes node ids from settings instead.
member_yaml() {
    local scope=$1 name=$2 pgport=$3 rest=$4 source=$5 behind=$6 d=${dir_of[$2]}
    local offset='' src=etcd
    [ "$behind" = yes ] && offset=', "+shardid.clock_offset_ms": -60000'
    [ "$source" = etcd ] || src=setting
    /usr/bin/python3 test/etcd/yaml_overlay.py docs/setup/patroni.yml <<JSON
{"scope": "$scope", "namespace": "/patroni/", "name": "$name", "+log": {"level": "WARNING"},
 "restapi": {"listen": "127.0.0.1:$rest", "connect_address": "127.0.0.1:$rest"},
 "etcd3": {"hosts": "127.0.0.1:$ETCD_PORT"},
 "bootstrap": {"dcs": {"ttl": 10, "loop_wait": 1, "retry_timeout": 3, "maximum_lag_on_failover": 104857600,
     "postgresql": {"use_pg_rewind": false, "parameters": {
         "shardid.node_id_source": "$src", "shardid.etcd_endpoints": "$ETCD_URLS",
         "shardid.etcd_prefix": "/s7-$scope", "shardid.etcd_lease_ttl": "3s", "shardid.etcd_wait": "30s",
         "shardid.node_id": 20, "+shardid.launch_id": 1, "+shardid.wal_log_mark": "off",
         "+shardid.max_clock_lead": "120s", "+fsync": "off"}}},
   "pg_hba": ["local all all trust", "host all all 127.0.0.1/32 trust", "host replication all 127.0.0.1/32 trust"]},
 "postgresql": {"listen": "127.0.0.1:$pgport", "connect_address": "127.0.0.1:$pgport", "data_dir": "$d/data",
     "bin_dir": "$PG_BIN", "pgpass": "$d/pgpass", "+use_unix_socket": true,
     "+parameters": {"unix_socket_directories": "$d"$offset}}}
JSON
}

# member_start SCOPE NAME PG_PORT REST_PORT SOURCE BEHIND
member_start() {
    local d; d=$(pg_tmpdir); coord_dirs+=("$d"); dir_of[$2]=$d; port_of[$2]=$3; rest_of[$2]=$4
    member_yaml "$@" | as_pg tee "$d/patroni.yml" >/dev/null
    [ -s "$d/patroni.yml" ] || { fail "$1: docs/setup/patroni.yml could not be merged with the suite's settings"; return 1; }
    as_pg env PATH="$PATH" $PATRONI "$d/patroni.yml" >"$d/patroni.log" 2>&1 &
    coord_pids+=($!)
}
patroni_pids() { pgrep -f "$PATRONI ${dir_of[$1]}/patroni.yml"; }
# Patroni would start a stopped server again: at exit, Patroni goes first.
patroni_cleanup() {
    local n
    for n in "${!rest_of[@]}"; do kill -9 $(patroni_pids "$n") 2>/dev/null; done
    coord_cleanup
}
trap patroni_cleanup EXIT
leader_of() { ectl get --print-value-only "/patroni/$1/leader" 2>/dev/null; }
wait_leader() {  # SCOPE SECONDS [NOT]: until a leader other than NOT holds the key
    local l
    for _ in $(seq 1 $(($2 * 10))); do
        l=$(leader_of "$1")
        [ -n "$l" ] && [ "$l" != "${3:-}" ] && { echo "$l"; return 0; }
        sleep 0.1
    done
    return 1
}
wait_sql() {  # NODE SECONDS SQL EXPECTED
    for _ in $(seq 1 $(($2 * 10))); do
        [ "$(q "$1" -c "$3" 2>/dev/null)" = "$4" ] && return 0
        sleep 0.1
    done
    return 1
}
# kill_member NAME: Patroni and the postmaster with all its processes, at once.
kill_member() {
    local pp pm
    pp=$(patroni_pids "$1"); pm=$(head -1 "${dir_of[$1]}/data/postmaster.pid")
    kill -9 $pp "$pm" $(pgrep -P "$pm") 2>/dev/null
}

# failover_run SCOPE SOURCE BASE_PORT MEMBERS: a cluster, load, kill -9 of
# the leader, load on; sets old_max, new_min, pause_ms, dups, new_leader.
failover_run() {
    local scope=$1 source=$2 bp=$3 members=$4 i leader conn hosts="" ports="" ids=$work/ids-$1
    old_max=""; new_min=""; pause_ms=""; dups=""; new_leader=""
    member_start "$scope" "${scope}1" $((bp + 1)) $((bp + 11)) "$source" no
    leader=$(wait_leader "$scope" 60) || { fail "$scope: no leader after 60 s"; tail -5 "${dir_of[${scope}1]}/patroni.log"; return 1; }
    wait_sql "$leader" 30 "SELECT pg_is_in_recovery()" f || { fail "$scope: the leader does not accept writes"; return 1; }
    for i in $(seq 2 "$members"); do
        member_start "$scope" "$scope$i" $((bp + i)) $((bp + 10 + i)) "$source" yes
    done
    q "$leader" -c "CREATE EXTENSION shardid" -c "CREATE TABLE t (id bigint PRIMARY KEY, port int, at_ms bigint)" || return 1
    wait_sql "$leader" 90 "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" $((members - 1)) ||
        { fail "$scope: the standbys do not stream"; return 1; }
    for i in $(seq 1 "$members"); do hosts+="${dir_of[$scope$i]},"; ports+="${port_of[$scope$i]},"; done
    conn="host=${hosts%,} port=${ports%,} user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2"
    : >"$ids"; touch "$work/run-$scope"
    ( while [ -e "$work/run-$scope" ]; do
        psql -X -q -At -F ' ' "$conn" -c "INSERT INTO t SELECT next_snowflake_id(), current_setting('port')::int,
            (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM generate_series(1, 200) RETURNING id, port, at_ms" \
            >>"$ids" 2>/dev/null || sleep 0.05
      done ) &
    local load=$!
    sleep 3
    kill_member "$leader"
    new_leader=$(wait_leader "$scope" 120 "$leader") || { fail "$scope: no new leader after 120 s"; }
    # Load goes on until the new leader has issued for 3 s.
    for _ in $(seq 1 600); do
        [ -n "$new_leader" ] && [ "$(awk -v p="${port_of[$new_leader]}" '$2 == p' "$ids" | wc -l)" -ge 2000 ] && break
        sleep 0.1
    done
    sleep 3; rm -f "$work/run-$scope"; wait "$load"
    local oldp=${port_of[$leader]} newp=${port_of[$new_leader]:-0}
    old_max=$(awk -v p="$oldp" '$2 == p {print $1}' "$ids" | sort -n | tail -1)
    new_min=$(awk -v p="$newp" '$2 == p {print $1}' "$ids" | sort -n | head -1)
    local old_last new_first
    old_last=$(awk -v p="$oldp" '$2 == p {print $3}' "$ids" | sort -n | tail -1)
    new_first=$(awk -v p="$newp" '$2 == p {print $3}' "$ids" | sort -n | head -1)
    [ -n "$old_last" ] && [ -n "$new_first" ] && pause_ms=$((new_first - old_last))
    dups=$(awk '{print $1}' "$ids" | sort | uniq -d | wc -l)
    echo "# $scope ($source): leader $leader (port $oldp) killed; new leader $new_leader (port $newp);" \
        "$(awk -v p="$oldp" '$2 == p' "$ids" | wc -l) IDs before, $(awk -v p="$newp" '$2 == p' "$ids" | wc -l) after;" \
        "pause ${pause_ms:-?} ms"
}

# --- 7: Patroni, shardid's node id from etcd --------------------------------
PAUSE_BOUND_MS=40000
failover_run ha etcd 16300 3
[ -n "${new_min:-}" ] && [ -n "${old_max:-}" ] && [ "$new_min" -gt "$old_max" ] 2>/dev/null &&
    pass "Patroni failover (kill -9 of the leader under load): every ID of the new leader is above every ID of the old" ||
    fail "Patroni failover: old leader's max ${old_max:-?}, new leader's min ${new_min:-?}"
check "Patroni failover: no ID handed out twice" 0 "${dups:-?}"
[ -n "${pause_ms:-}" ] && pass "Patroni failover: generation resumed on the new leader" ||
    fail "Patroni failover: generation did not resume"
promise "... within ${PAUSE_BOUND_MS} ms of the old leader's last ID (Patroni's TTL 10 s plus its loop)" \
    "$([ -n "${pause_ms:-}" ] && [ "$pause_ms" -le $PAUSE_BOUND_MS ] && echo t || echo f)" "${pause_ms:-?} ms"
echo "# figure: Patroni failover pause ${pause_ms:-?} ms (ttl 10 s, loop_wait 1 s, shardid.etcd_lease_ttl 3 s)"
check "Patroni failover: the new leader holds node id 20 from etcd" "held 20" \
    "$(q "$new_leader" -c "SELECT state || ' ' || node_id FROM shardid_coordination()" 2>/dev/null)"

# Control: node ids from settings, the same cluster otherwise.
failover_run ctl setting 16330 2
[ -n "${new_min:-}" ] && [ -n "${old_max:-}" ] && [ "$new_min" -lt "$old_max" ] 2>/dev/null &&
    pass "control: with node ids from settings, the new leader issues IDs below the old leader's" ||
    fail "control with settings: old leader's max ${old_max:-?}, new leader's min ${new_min:-?} (expected below)"

