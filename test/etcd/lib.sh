# Helpers of the coordination scenarios: a real etcd on private ports with a
# temporary data directory, and nodes whose id comes from it. Source it after
# scripts/lib.sh; call coord_setup first.

FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
coord_dirs=()
coord_pids=()

coord_setup() {  # BASE_PORT: nodes on BASE_PORT+1.. (below 32768: private_port)
    base=$1
    work=$(pg_tmpdir)
    trap coord_cleanup EXIT
}

coord_cleanup() {
    local d p
    for d in "${coord_dirs[@]}"; do cluster_stop "$d" immediate; done
    for p in "${coord_pids[@]}" "${etcd_pid_of[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work" "${coord_dirs[@]}"
}

ectl() { etcdctl --endpoints="http://127.0.0.1:$ETCD_PORT" "$@"; }

# etcd_main CLIENT_PORT PEER_PORT: the suite's one-member etcd, "main", in
# ETCD_PORT and ETCD_URLS; the suite exits when it does not start.
etcd_main() {
    ETCD_PORT=$1
    etcd_start main "$1" "$2"
    etcd_wait_up "$1" || { fail "etcd did not start"; cat "$work/etcd-main.log"; exit 1; }
    ETCD_URLS="http://127.0.0.1:$1"
}

# node_up NAME PORT [FAKETIME] [CONFIG LINE...]: a started node with its id
# from the etcd at $ETCD_URLS under $PREFIX (FAKETIME "" for the real clock).
node_up() {
    local name=$1 port=$2 fake=$3 d; shift 3
    d=$(pg_tmpdir); coord_dirs+=("$d"); dir_of[$name]=$d; port_of[$name]=$port
    cluster_init "$d" "shared_preload_libraries = 'shardid'" "shardid.node_id_source = etcd" \
        "shardid.etcd_endpoints = '$ETCD_URLS'" "shardid.etcd_prefix = '$PREFIX'" "shardid.etcd_lease_ttl = 3s" \
        "shardid.etcd_wait = 2s" "shardid.launch_id = 1" "shardid.node_id = -1" "$@" || return 1
    node_start "$name" "$fake" && q "$name" -c "CREATE EXTENSION shardid"
}
node_start() {  # NAME [FAKETIME]
    local d=${dir_of[$1]}
    private_port "${port_of[$1]}" || return 1
    if [ -n "${2:-}" ]; then
        as_pg env LD_PRELOAD="$FAKETIME_LIB" FAKETIME="$2" FAKETIME_DISABLE_SHM=1 FAKETIME_DONT_RESET=1 FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 "$PG_BIN/pg_ctl" -D "$d/data" -l "$d/server.log" \
            -o "-p ${port_of[$1]}" -w -t 60 start >/dev/null 2>&1
    else
        as_pg "$PG_BIN/pg_ctl" -D "$d/data" -l "$d/server.log" -o "-p ${port_of[$1]}" -w -t 60 start >/dev/null 2>&1
    fi || { tail -5 "$d/server.log" >&2; return 1; }
}
export PGOPTIONS="-c client_min_messages=warning"
# q_err NODE SQL: the SQLSTATE and message of a failing statement ("ok" if it works).
q_err() {
    local out
    out=$(psql -X -q -h "${dir_of[$1]}" -p "${port_of[$1]}" -U postgres -d postgres -At -v VERBOSITY=verbose \
        -c "$2" 2>&1 >/dev/null) && { echo ok; return; }
    grep -m1 -o 'ERROR:  [0-9A-Z]\{5\}: .*' <<<"$out" | sed 's/^ERROR:  //'
}
# copy_to FROM TO TABLE NEWTABLE: FROM's TABLE into NEWTABLE on TO.
copy_to() {
    q "$2" -c "DROP TABLE IF EXISTS $4; CREATE TABLE $4 (id bigint)" >/dev/null
    q "$1" -c "COPY $3 TO STDOUT" | q "$2" -c "COPY $4 FROM STDIN"
}
# issue_for NODE SECONDS SQL TABLE [STOP]: batches of ISSUE_BATCH (500) of
# SQL's IDs into TABLE for SECONDS, or until the file $work/stop-STOP (NODE)
# exists, with ISSUE_PAUSE seconds (none) after each; a failed batch (55000
# while the node waits) is retried after 50 ms.
issue_for() {
    local end=$((SECONDS + $2))
    while [ $SECONDS -lt "$end" ] && [ ! -e "$work/stop-${5:-$1}" ]; do
        q "$1" -c "INSERT INTO $4 SELECT $3 FROM generate_series(1, ${ISSUE_BATCH:-500})" >/dev/null 2>&1 || sleep 0.05
        [ -n "${ISSUE_PAUSE:-}" ] && sleep "$ISSUE_PAUSE"
    done
    return 0
}
# coordinator_of NODE: the pid of NODE's coordinator (its background worker).
coordinator_of() { pgrep -P "$(head -1 "${dir_of[$1]}/data/postmaster.pid")" -f "shardid coordinator"; }
# take_by_hand HOLDER KEY: KEY, held by HOLDER's lease, deleted by hand while
# HOLDER's coordinator is frozen, thawed once another lease holds KEY (at
# most 10 s; 1 when it did not). A holder re-claims a deleted value at once
# when nobody else has (a renewal after the deletion, sometimes milliseconds):
# the freeze makes the other node's claim, which the test is about, come
# first; HOLDER's generators go on under its fence meanwhile.
take_by_hand() {
    local worker old now
    worker=$(coordinator_of "$1") && [ -n "$worker" ] || return 1
    old=$(ectl get "$2" -w json | grep -o '"lease":[0-9]*')
    kill -STOP "$worker"
    ectl del "$2" >/dev/null
    for _ in $(seq 100); do
        now=$(ectl get "$2" -w json | grep -o '"lease":[0-9]*')
        [ -n "$now" ] && [ "$now" != "$old" ] && break
        sleep 0.1
    done
    kill -CONT "$worker"
    [ -n "$now" ] && [ "$now" != "$old" ]
}
# wait_state NODE STATE SECONDS: until shardid_coordination().state is STATE
# (SECONDS is a hang guard: SHARDID_HANG_SCALE multiplies it).
wait_state() {
    for _ in $(seq 1 $(($3 * 10 * ${SHARDID_HANG_SCALE:-1}))); do
        [ "$(q "$1" -c "SELECT state FROM shardid_coordination()" 2>/dev/null)" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
held_id() { q "$1" -c "SELECT node_id FROM shardid_coordination()"; }
# wait_port PORT: until something listens on 127.0.0.1:PORT (at most 10 s).
wait_port() {
    for _ in $(seq $((100 * ${SHARDID_HANG_SCALE:-1}))); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# wait_rows NODE TABLE N SECONDS: until TABLE on NODE has at least N rows.
wait_rows() {
    for _ in $(seq 1 $(($4 * 10 * ${SHARDID_HANG_SCALE:-1}))); do
        [ "$(q "$1" -c "SELECT count(*) >= $3 FROM $2" 2>/dev/null)" = t ] && return 0
        sleep 0.1
    done
    return 1
}
# kill9 NODE: the postmaster and every process of it, at once.
kill9() {
    local pid
    pid=$(head -1 "${dir_of[$1]}/data/postmaster.pid")
    kill -9 "$pid" $(pgrep -P "$pid") 2>/dev/null
    sleep 0.2
}

# no_crashes [NODE...]: a FAIL line for each node (all of them when none
# is named) whose server log records a crashed process; true otherwise.
no_crashes() {
    local n nodes=("$@")
    [ ${#nodes[@]} -eq 0 ] && nodes=("${!dir_of[@]}")
    for n in "${nodes[@]}"; do
        [ -f "${dir_of[$n]:-/none}/server.log" ] || continue
        grep -q "was terminated by signal\|server process .* terminated" "${dir_of[$n]}/server.log" &&
            fail "a process of $n crashed: $(grep -m1 'terminated' "${dir_of[$n]}/server.log")"
    done
    true
}
