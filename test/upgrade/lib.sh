# Helpers of the upgrade suites (test/upgrade/*.sh; docs/install.md,
# "Upgrading PostgreSQL"): an old server's life with every scheme in two
# databases, the refusal before its state is adopted, and the checks of what
# a new server issues after. Source it after scripts/lib.sh.
#   OLD_BIN, NEW_BIN   the two servers' binaries (default: this machine's)
#   UPGRADE_SOURCE     where node ids come from: settings (shardid.node_id 7,
#                      the default) or etcd (upgrade_etcd starts one; node
#                      ids, generator ids and run ids from it)
# Call upgrade_setup first: $work is the suite's directory, removed (with
# every server in it stopped) at exit.

OLD_BIN=${OLD_BIN:-$PG_BIN}
NEW_BIN=${NEW_BIN:-$PG_BIN}
UPGRADE_SOURCE=${UPGRADE_SOURCE:-settings}
N=${UPGRADE_N:-2000}

upgrade_setup() {
    work=$(pg_tmpdir)
    trap upgrade_cleanup EXIT
    # Every server's clock five minutes into the next UTC day (and hour),
    # the same offset for all: the old server's IDs and the new one's fall
    # in the same hourly and daily tick, however long the run takes (under
    # 55 minutes).
    local now_ms
    now_ms=$(date +%s%3N)
    offset=$(((now_ms / 86400000 + 1) * 86400000 + 300000 - now_ms))
    # Under etcd, a server starts ten minutes before that day and moves its
    # clock there once it holds its id (settle_clock): a layout of long
    # ticks issues nothing in the tick in which etcd's history under the
    # prefix began (others may have issued in it under a history etcd
    # forgot), so that history begins the day and hour before.
    start_offset=$offset
    [ "$UPGRADE_SOURCE" = etcd ] && start_offset=$((offset - 900000))
    conf=("shared_preload_libraries = 'shardid'" "shardid.launch_id = 65" "shardid.clock_offset_ms = $start_offset"
        "jit = off")
    if [ "$UPGRADE_SOURCE" = etcd ]; then
        conf+=("shardid.node_id_source = etcd" "shardid.node_id = -1" "shardid.etcd_lease_ttl = 3s"
            "shardid.etcd_wait = 5s")
    else
        conf+=("shardid.node_id = 7")
    fi
}

upgrade_cleanup() {
    local d bin
    for d in "$work"/*/; do
        [ -f "$d/data/postmaster.pid" ] || continue
        for bin in "$NEW_BIN" "$OLD_BIN"; do
            as_pg "$bin/pg_ctl" -D "$d/data" -m immediate -w stop >/dev/null 2>&1 && break
        done
    done
    [ -n "${etcd_pid_of[up]:-}" ] && kill -9 "${etcd_pid_of[up]}" 2>/dev/null && wait "${etcd_pid_of[up]}" 2>/dev/null
    mountpoint -q "$work/xfs" 2>/dev/null && umount "$work/xfs"
    rm -rf "$work"
}

# upgrade_etcd CLIENT_PORT PEER_PORT: the suite's etcd (one member,
# scripts/lib.sh's etcd_start), in $etcd_url.
upgrade_etcd() {
    etcd_start up "$1" "$2" && etcd_wait_up "$1" || stop_suite "etcd did not start"
    etcd_url=http://127.0.0.1:$1
}

# make_cluster BIN DIR [CONF LINE...]: a new cluster of BIN's PostgreSQL in
# DIR/data, with the suite's settings (and under etcd, the prefix PREFIX).
make_cluster() {
    local bin=$1 dir=$2
    shift 2
    local extra=()
    [ "$UPGRADE_SOURCE" = etcd ] &&
        extra=("shardid.etcd_endpoints = '$etcd_url'" "shardid.etcd_prefix = '${PREFIX:-/up}'")
    PG_BIN=$bin cluster_init "$dir" "${conf[@]}" "${extra[@]}" "$@"
}
start() { PG_BIN=$1 cluster_start "$2" "$3"; }
stop() { PG_BIN=$1 cluster_stop "$2" fast; }
# q_at DIR PORT DB ARGS...: q on the server in DIR and PORT, in database DB
# (the old and the new server of an upgrade, whose data directories move).
q_at() {
    local d=$1 p=$2 db=$3
    shift 3
    cluster_psql "$d" "$p" -At -d "$db" "$@"
}
# held DIR PORT: under etcd, until the node holds its id (read in db1) (a hang otherwise);
# true at once with node ids from settings.
held() {
    [ "$UPGRADE_SOURCE" = etcd ] || return 0
    wait_until "the node at $1 holds its id" 60 \
        eval "[ \"\$(q_at '$1' '$2' db1 -c 'SELECT state FROM shardid_coordination()')\" = held ]"
}

# settle_clock DIR PORT: the node holds its id (under etcd), and its clock
# is five minutes into the day of the suite's IDs.
settle_clock() {
    held "$1" "$2" || return 1
    [ "$start_offset" = "$offset" ] || node_setting "$1" "$2" shardid.clock_offset_ms "$offset"
}

# old_life DIR PORT: the old server's life, every scheme, both databases.
# db2's DecimalIds take the generator id after db1's, so that a node that
# lost its record of them gives db1 the one db2 used.
old_life() {
    local d=$1 p=$2
    q_at "$d" "$p" postgres -c "CREATE DATABASE db1" -c "CREATE DATABASE db2" >/dev/null
    q_at "$d" "$p" db1 -c "CREATE EXTENSION shardid" && settle_clock "$d" "$p" || return 1
    q_at "$d" "$p" db1 >/dev/null <<SQL
SELECT create_layout('hourly', '2024-01-01', '1 hour', 20, 8, 20);
SELECT create_layout('daily', '2024-01-01', '1 day', 16, 8, 24);
CREATE TABLE hourly_ids (id bigint PRIMARY KEY DEFAULT next_id('hourly', 3));
CREATE TABLE daily_ids (id bigint PRIMARY KEY DEFAULT next_id('daily', 3));
CREATE TABLE decimal_ids (id bigint PRIMARY KEY DEFAULT next_decimal_id());
CREATE TABLE call_numbers (id text PRIMARY KEY DEFAULT next_call_number());
CREATE TABLE uuids (id uuid PRIMARY KEY DEFAULT next_uuidv7());
CREATE TABLE trace_ids (id bigint PRIMARY KEY DEFAULT next_trace_id());
INSERT INTO hourly_ids SELECT FROM generate_series(1, $N);
INSERT INTO daily_ids SELECT FROM generate_series(1, $N);
INSERT INTO decimal_ids SELECT FROM generate_series(1, $N);
INSERT INTO call_numbers SELECT FROM generate_series(1, $N);
INSERT INTO uuids SELECT FROM generate_series(1, $N);
INSERT INTO trace_ids SELECT FROM generate_series(1, $N);
CREATE TABLE obfuscated AS SELECT obfuscate_id(123456789) AS v;
SQL
    q_at "$d" "$p" db2 >/dev/null <<SQL
CREATE EXTENSION shardid;
CREATE TABLE decimal_ids (id bigint PRIMARY KEY DEFAULT next_decimal_id());
INSERT INTO decimal_ids SELECT FROM generate_series(1, $N);
CREATE TABLE obfuscated AS SELECT obfuscate_id(123456789) AS v;
SQL
}

# refused NAME DIR PORT: every scheme refuses with 55000 in both databases.
refused() {
    local name=$1 d=$2 p=$3 got="" sql
    for sql in "SELECT next_id('hourly', 3)" "SELECT next_id('daily', 3)" "SELECT next_decimal_id()" \
        "SELECT next_call_number()" "SELECT next_uuidv7()" "SELECT next_trace_id()" "SELECT next_snowflake_id()"; do
        got+="$(sqlstate_of q_at "$d" "$p" db1 -c "$sql") "
    done
    got+="$(sqlstate_of q_at "$d" "$p" db2 -c "SELECT next_decimal_id()")"
    check "$name: every scheme refuses (55000) until the old state is adopted" \
        "55000 55000 55000 55000 55000 55000 55000 55000" "$got"
}

# fresh NAME DIR PORT TAG: N new IDs of every scheme on that server (tables
# new_*_TAG), none equal to any ID issued before it (old tables, every new_*
# table of the servers before), the time-ordered ones above the old ones.
fresh() {
    local name=$1 d=$2 p=$3 tag=$4 out
    held "$d" "$p" || fail "$name: the node holds no id from etcd"
    out=$(q_at "$d" "$p" db1 <<SQL
CREATE TABLE new_hourly_$tag AS SELECT next_id('hourly', 3) AS id FROM generate_series(1, $N);
CREATE TABLE new_daily_$tag AS SELECT next_id('daily', 3) AS id FROM generate_series(1, $N);
CREATE TABLE new_decimal_$tag AS SELECT next_decimal_id() AS id FROM generate_series(1, $N);
CREATE TABLE new_calls_$tag AS SELECT next_call_number() AS id FROM generate_series(1, $N);
CREATE TABLE new_uuids_$tag AS SELECT next_uuidv7() AS id FROM generate_series(1, $N);
CREATE TABLE new_trace_$tag AS SELECT next_trace_id() AS id FROM generate_series(1, $N);
SELECT concat_ws(' ',
    (SELECT count(*) FROM new_hourly_$tag WHERE id IN (SELECT id FROM hourly_ids)),
    (SELECT count(*) FROM new_daily_$tag WHERE id IN (SELECT id FROM daily_ids)),
    (SELECT count(*) FROM new_decimal_$tag WHERE id IN (SELECT id FROM decimal_ids)),
    (SELECT count(*) FROM new_calls_$tag WHERE id IN (SELECT id FROM call_numbers)),
    (SELECT count(*) FROM new_uuids_$tag WHERE id IN (SELECT id FROM uuids)),
    (SELECT count(*) FROM new_trace_$tag WHERE id IN (SELECT id FROM trace_ids)));
SELECT concat_ws(' ',
    (SELECT min(id) FROM new_hourly_$tag) > (SELECT max(id) FROM hourly_ids),
    (SELECT min(id) FROM new_daily_$tag) > (SELECT max(id) FROM daily_ids),
    (SELECT id FROM new_uuids_$tag ORDER BY id LIMIT 1) > (SELECT id FROM uuids ORDER BY id DESC LIMIT 1),
    (SELECT min(id) FROM new_trace_$tag) > (SELECT max(id) FROM trace_ids),
    (SELECT (id_decode('hourly', min(id))).created_at = (id_decode('hourly', (SELECT max(id) FROM hourly_ids))).created_at
       FROM new_hourly_$tag));
SQL
) || out="the new IDs could not be made"
    check "$name: no ID of db1 equals one issued before (hourly daily decimal call uuidv7 trace)" \
        "0 0 0 0 0 0" "$(sed -n 1p <<<"$out")"
    check "$name: the time-ordered IDs sort above the old ones, the hourly ones in the old IDs' hour" \
        "t t t t t" "$(sed -n 2p <<<"$out")"
    # DecimalIds across databases: db1's new ones against db2's old ones,
    # and db2's new ones against db1's.
    q_at "$d" "$p" db2 -c "CREATE TABLE new_decimal_$tag AS SELECT next_decimal_id() AS id FROM generate_series(1, $N)" \
        >/dev/null 2>&1
    local all_old all_new
    all_old=$( (q_at "$d" "$p" db1 -c "SELECT id FROM decimal_ids"; q_at "$d" "$p" db2 -c "SELECT id FROM decimal_ids") | sort)
    all_new=$( (q_at "$d" "$p" db1 -c "SELECT id FROM new_decimal_$tag"; q_at "$d" "$p" db2 -c "SELECT id FROM new_decimal_$tag") |
        sort)
    check "$name: each database's key ring came along (obfuscate_id() as on the old server)" "t t" \
        "$(q_at "$d" "$p" db1 -c "SELECT v = obfuscate_id(123456789) FROM obfuscated") $(q_at "$d" "$p" db2 -c "SELECT v = obfuscate_id(123456789) FROM obfuscated")"
    check "$name: DecimalIds: none of either database's new ones was issued before in either" \
        "$((2 * N)) 0" "$(wc -l <<<"$all_new" | tr -d ' ') $(comm -12 <(echo "$all_old") <(echo "$all_new") | wc -l)"
}

# adopt NAME DIR PORT OLD_DIR: adopts the old data directory's state (the
# checks after a failure still run: they show what the server issues then).
adopt() {
    local out
    out=$(q_at "$2" "$3" db1 -c "SELECT shardid_adopt_state(pg_read_file('$4/data/shardid.hwm'))" 2>&1) ||
        fail "$1: shardid_adopt_state() failed: $out"
}

# history_of DIR PORT: "history|awaiting|how many unknown histories db1 names".
history_of() { q_at "$1" "$2" db1 -c "SELECT history, awaiting_adoption, cardinality(unknown_here) FROM shardid_node_history()"; }

# run_pg_upgrade MODE OLD NEW OLD_PORT NEW_PORT: NEW_BIN's pg_upgrade from
# OLD/data to NEW/data (both stopped), --MODE (copy, link, clone).
run_pg_upgrade() {
    local mode=(--$1)
    # --copy is the default; PostgreSQL 15's pg_upgrade has no option for it.
    [ "$1" = copy ] && ! "$NEW_BIN/pg_upgrade" --help | grep -q -- --copy && mode=()
    (cd "$work" && as_pg "$NEW_BIN/pg_upgrade" -b "$OLD_BIN" -B "$NEW_BIN" -d "$2/data" -D "$3/data" \
        -p "$4" -P "$5" -s "$work" "${mode[@]}" >"$work/upgrade.log" 2>&1) || {
        tail -5 "$work/upgrade.log" | tr '\n' ' '
        return 1
    }
}
