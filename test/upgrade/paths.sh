#!/usr/bin/env bash
# A node's state across every way its data directory is made anew (issue
# 71; docs/install.md, "Upgrading PostgreSQL"): pg_upgrade --copy and
# --link, and pg_dumpall restored into a new cluster. The old server
# (node id 7, two databases) issues IDs of an hourly and a daily layout,
# DecimalIds in both databases, call numbers, UUIDv7 and TraceIds; then, for
# each path:
#   - the new server issues nothing until the old server's node state is
#     adopted (55000 from every scheme, in both databases), and
#     shardid_node_history() says why;
#   - after shardid_adopt_state() with the old data directory's
#     shardid.hwm, no scheme issues an ID the old server issued (in either
#     database: DecimalIds of one database against the other's), and the
#     time-ordered ones sort above the old ones, in the same hour and day;
#   - a standby of the upgraded server, promoted, issues nothing that
#     either server issued: made with pg_basebackup after the adoption
#     (--link), or copied before the upgraded server started, as rsync
#     after pg_upgrade makes it, which replays the adoption (--copy).
# OLD_BIN and NEW_BIN (default: this machine's PostgreSQL) name the two
# servers' binaries: test/versions/in_root.sh runs it from 15 to 17.
# Prints PASS/FAIL lines. Run from the repository root.
set -u
. scripts/lib.sh

OLD_BIN=${OLD_BIN:-$PG_BIN}
NEW_BIN=${NEW_BIN:-$PG_BIN}
old_port=$(test_port 15700)
new_port=$(test_port 15701)
standby_port=$(test_port 15702)
work=$(pg_tmpdir)
trap 'for d in "$work"/*/; do [ -f "$d/data/postmaster.pid" ] && as_pg "$NEW_BIN/pg_ctl" -D "$d/data" -m immediate -w stop >/dev/null 2>&1; [ -f "$d/data/postmaster.pid" ] && as_pg "$OLD_BIN/pg_ctl" -D "$d/data" -m immediate -w stop >/dev/null 2>&1; done; rm -rf "$work"' EXIT
N=2000
# Every server's clock five minutes into the next UTC day (and hour), the
# same offset for all: the old server's IDs and the new one's fall in the
# same hourly and daily tick, however long the run takes (under 55 minutes).
now_ms=$(date +%s%3N)
offset=$(((now_ms / 86400000 + 1) * 86400000 + 300000 - now_ms))
conf=("shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "shardid.launch_id = 65"
    "shardid.clock_offset_ms = $offset" "jit = off")

# make BIN DIR: a new cluster of BIN's PostgreSQL in DIR/data.
make_cluster() {
    PG_BIN=$1 cluster_init "$2" "${conf[@]}"
}
start() { PG_BIN=$1 cluster_start "$2" "$3"; }
stop() { PG_BIN=$1 cluster_stop "$2" fast; }
# q DIR PORT DB ARGS...: psql on that server and database.
q() {
    local d=$1 p=$2 db=$3
    shift 3
    psql -X -q -v ON_ERROR_STOP=1 -h "$d" -p "$p" -U postgres -d "$db" -At "$@"
}
# sqlstate DIR PORT DB SQL: the SQLSTATE it fails with, or "ok".
sqlstate() {
    local out
    out=$(q "$1" "$2" "$3" -v VERBOSITY=verbose -c "$4" 2>&1) && { echo ok; return; }
    grep -oE 'ERROR:  [0-9A-Z]{5}' <<<"$out" | head -1 | cut -c9-
}

# The old server's life: every scheme, both databases. db2's DecimalIds
# take the generator id after db1's, so that a node that lost its record of
# them gives db1 the one db2 used.
old_life() {
    local d=$1 p=$2
    q "$d" "$p" postgres -c "CREATE DATABASE db1" -c "CREATE DATABASE db2" >/dev/null
    q "$d" "$p" db1 >/dev/null <<SQL
CREATE EXTENSION shardid;
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
SQL
    q "$d" "$p" db2 >/dev/null <<SQL
CREATE EXTENSION shardid;
CREATE TABLE decimal_ids (id bigint PRIMARY KEY DEFAULT next_decimal_id());
INSERT INTO decimal_ids SELECT FROM generate_series(1, $N);
SQL
}

# refused NAME DIR PORT: every scheme refuses with 55000 in both databases.
refused() {
    local name=$1 d=$2 p=$3 got=""
    for sql in "SELECT next_id('hourly', 3)" "SELECT next_id('daily', 3)" "SELECT next_decimal_id()" \
        "SELECT next_call_number()" "SELECT next_uuidv7()" "SELECT next_trace_id()" "SELECT next_snowflake_id()"; do
        got+="$(sqlstate "$d" "$p" db1 "$sql") "
    done
    got+="$(sqlstate "$d" "$p" db2 "SELECT next_decimal_id()")"
    check "$name: every scheme refuses (55000) until the old state is adopted" \
        "55000 55000 55000 55000 55000 55000 55000 55000" "$got"
}

# fresh NAME DIR PORT TAG: N new IDs of every scheme on that server (tables
# new_*_TAG), none equal to any ID issued before it (old tables, every new_*
# table of the servers before), the time-ordered ones above the old ones.
fresh() {
    local name=$1 d=$2 p=$3 tag=$4 out
    out=$(q "$d" "$p" db1 <<SQL
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
    q "$d" "$p" db2 -c "CREATE TABLE new_decimal_$tag AS SELECT next_decimal_id() AS id FROM generate_series(1, $N)" \
        >/dev/null 2>&1
    local all_old all_new
    all_old=$( (q "$d" "$p" db1 -c "SELECT id FROM decimal_ids"; q "$d" "$p" db2 -c "SELECT id FROM decimal_ids") | sort)
    all_new=$( (q "$d" "$p" db1 -c "SELECT id FROM new_decimal_$tag"; q "$d" "$p" db2 -c "SELECT id FROM new_decimal_$tag") |
        sort)
    check "$name: DecimalIds: none of either database's new ones was issued before in either" \
        "$((2 * N)) 0" "$(wc -l <<<"$all_new" | tr -d ' ') $(comm -12 <(echo "$all_old") <(echo "$all_new") | wc -l)"
}

# adopt NAME DIR PORT OLD_DIR: adopts the old data directory's state (the
# checks after a failure still run: they show what the server issues then).
adopt() {
    local out
    out=$(q "$2" "$3" db1 -c "SELECT shardid_adopt_state(pg_read_file('$4/data/shardid.hwm'))" 2>&1) ||
        fail "$1: shardid_adopt_state() failed: $out"
}

history_of() { q "$1" "$2" db1 -c "SELECT history, awaiting_adoption, cardinality(unknown_here) FROM shardid_node_history()"; }

# promoted NAME STANDBY_DIR PRIMARY_DIR: the standby (running on
# $standby_port) has replayed everything the primary wrote, the primary
# stops, the standby is promoted: it issues no ID the old server or the
# primary issued (the primary's new IDs are in tables new_*_$path).
promoted() {
    local name=$1 sb=$2 primary=$3 lsn i
    lsn=$(q "$primary" "$new_port" postgres -c "SELECT pg_current_wal_lsn()")
    for ((i = 0; i < 600; i++)); do
        [ "$(q "$sb" "$standby_port" postgres -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'" 2>/dev/null)" = t ] && break
        sleep 0.1
    done
    check "$name: the standby replayed the upgraded server's WAL" t \
        "$(q "$sb" "$standby_port" postgres -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")"
    stop "$NEW_BIN" "$primary"
    as_pg "$NEW_BIN/pg_ctl" -D "$sb/data" -w promote >/dev/null 2>&1 || stop_suite "$name: promotion failed"
    fresh "$name" "$sb" "$standby_port" "standby_$path"
    check "$name: above the upgraded server's IDs" "0 true" \
        "$(q "$sb" "$standby_port" db1 -c "SELECT (SELECT count(*) FROM new_hourly_standby_$path WHERE id IN (SELECT id FROM new_hourly_$path))
                  || ' ' || ((SELECT min(id) FROM new_hourly_standby_$path) > (SELECT max(id) FROM new_hourly_$path))")"
    stop "$NEW_BIN" "$sb"
}

# --- each path from the same old server's life --------------------------------
for path in copy link dump; do
    old=$work/old_$path new=$work/new_$path
    mkdir -p "$old" "$new" && chown postgres: "$old" "$new" 2>/dev/null
    make_cluster "$OLD_BIN" "$old" || stop_suite "$path: the old cluster could not be made"
    start "$OLD_BIN" "$old" "$old_port" || stop_suite "$path: the old server did not start"
    old_life "$old" "$old_port" || stop_suite "$path: the old server's IDs could not be made"
    old_history=$(q "$old" "$old_port" db1 -c "SELECT history FROM shardid_node_history()")
    [ "$path" = dump ] && { as_pg "$OLD_BIN/pg_dumpall" -h "$old" -p "$old_port" -U postgres -f "$work/dump.sql" ||
        stop_suite "$path: pg_dumpall failed"; }
    stop "$OLD_BIN" "$old"
    make_cluster "$NEW_BIN" "$new" || stop_suite "$path: the new cluster could not be made"
    if [ "$path" = dump ]; then
        start "$NEW_BIN" "$new" "$new_port" || stop_suite "$path: the new server did not start"
        psql -X -q -h "$new" -p "$new_port" -U postgres -d postgres -f "$work/dump.sql" >"$work/restore.log" 2>&1
        check "$path: the dump restores without an error" 0 \
            "$(grep 'ERROR' "$work/restore.log" | grep -vc 'role "postgres" already exists')"
        check "$path: shardid_node_history() names the old server's history as not continued here" \
            "f 1" "$(history_of "$new" "$new_port" | cut -d'|' -f2,3 | tr '|' ' ')"
    else
        # --copy is the default; PostgreSQL 15's pg_upgrade has no option for it.
        mode=(--$path)
        [ "$path" = copy ] && ! "$NEW_BIN/pg_upgrade" --help | grep -q -- --copy && mode=()
        (cd "$work" && as_pg "$NEW_BIN/pg_upgrade" -b "$OLD_BIN" -B "$NEW_BIN" -d "$old/data" -D "$new/data" \
            -p "$old_port" -P "$new_port" -s "$work" "${mode[@]}" >"$work/upgrade.log" 2>&1) ||
            stop_suite "pg_upgrade --$path failed: $(tail -5 "$work/upgrade.log" | tr '\n' ' ')"
        # The copy path's standby: the upgraded directory copied before the
        # server starts (what rsync after pg_upgrade makes), a standby of it.
        if [ "$path" = copy ]; then
            sb=$work/standby_copy
            mkdir -p "$sb" && chown postgres: "$sb"
            as_pg cp -a "$new/data" "$sb/data" && as_pg touch "$sb/data/standby.signal" &&
                printf '%s\n' "unix_socket_directories = '$sb'" "primary_conninfo = 'host=$new port=$new_port user=postgres'" |
                as_pg tee -a "$sb/data/postgresql.conf" >/dev/null || stop_suite "$path: the standby could not be copied"
        fi
        start "$NEW_BIN" "$new" "$new_port" || stop_suite "$path: the upgraded server did not start"
        [ "$path" = copy ] && { start "$NEW_BIN" "$work/standby_copy" "$standby_port" ||
            stop_suite "$path: the copied standby did not start"; }
        check "$path: shardid_node_history() says the upgraded server awaits the old one's state" \
            "t 1" "$(history_of "$new" "$new_port" | cut -d'|' -f2,3 | tr '|' ' ')"
        # A restart does not end the wait.
        stop "$NEW_BIN" "$new"
        start "$NEW_BIN" "$new" "$new_port" || stop_suite "$path: the upgraded server did not restart"
    fi
    refused "$path" "$new" "$new_port"
    [ "$path" != dump ] && check "$path: the upgraded server's own state, which awaits adoption, is refused (22023)" \
        22023 "$(sqlstate "$new" "$new_port" db1 "SELECT shardid_adopt_state(pg_read_file('$new/data/shardid.hwm'))")"
    # Adopting the new server's own state, or a malformed one, ends nothing.
    check "$path: a text that is not a node state is refused (22P02)" 22P02 \
        "$(sqlstate "$new" "$new_port" db1 "SELECT shardid_adopt_state(E'shardid node state v3\\nmark x\\n')")"
    check "$path: an ordinary role cannot adopt a state (42501)" 42501 \
        "$(q "$new" "$new_port" db1 -c "CREATE ROLE someone" >/dev/null
           q "$new" "$new_port" db1 -v VERBOSITY=verbose -c "SET ROLE someone" \
             -c "SELECT shardid_adopt_state(pg_read_file('$old/data/shardid.hwm'))" 2>&1 |
             grep -oE 'ERROR:  [0-9A-Z]{5}' | head -1 | cut -c9-)"
    if [ "$path" = dump ]; then
        # As the docs' shell line does: the file through a psql variable
        # (which loses its last newline).
        out=$(echo "SELECT shardid_adopt_state(:'state')" |
            q "$new" "$new_port" db1 -v state="$(as_pg cat "$old/data/shardid.hwm")" 2>&1) ||
            fail "$path: shardid_adopt_state() through a psql variable failed: $out"
    else
        adopt "$path" "$new" "$new_port" "$old"
    fi
    check "$path: after the adoption, the node continues the old history" \
        "f 0 $old_history" \
        "$(q "$new" "$new_port" db1 -c "SELECT awaiting_adoption, cardinality(unknown_here), adopted[1] FROM shardid_node_history()" |
            tr '|' ' ')"
    fresh "$path" "$new" "$new_port" "$path"
    if [ "$path" = link ]; then
        # A standby made after the upgrade with pg_basebackup, promoted.
        sb=$work/standby_$path
        mkdir -p "$sb" && chown postgres: "$sb"
        as_pg "$NEW_BIN/pg_basebackup" -h "$new" -p "$new_port" -U postgres -D "$sb/data" -R -X stream \
            >/dev/null 2>&1 || stop_suite "$path: pg_basebackup failed"
        echo "unix_socket_directories = '$sb'" | as_pg tee -a "$sb/data/postgresql.conf" >/dev/null
        start "$NEW_BIN" "$sb" "$standby_port" || stop_suite "$path: the standby did not start"
        promoted "$path, a standby made with pg_basebackup after the upgrade" "$sb" "$new"
    elif [ "$path" = copy ]; then
        promoted "$path, a standby copied before the upgraded server started" "$work/standby_copy" "$new"
    fi
    stop "$NEW_BIN" "$new"
done
