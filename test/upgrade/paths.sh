#!/usr/bin/env bash
# A node's state across every way its data directory is made anew (issue
# 71; docs/install.md, "Upgrading PostgreSQL"): pg_upgrade --copy, --link
# and --clone, pg_dumpall restored into a new cluster, and a migration by
# logical replication. The old server (two databases) issues IDs of an
# hourly and a daily layout, DecimalIds in both databases, call numbers,
# UUIDv7 and TraceIds (test/upgrade/lib.sh); then, for each path:
#   - the new server issues nothing until the old server's node state is
#     adopted (55000 from every scheme, in both databases), and
#     shardid_node_history() says why;
#   - after shardid_adopt_state() with the old data directory's
#     shardid.hwm (or, from a running old server, its
#     shardid_export_state()), no scheme issues an ID the old server issued
#     (in either database: DecimalIds of one database against the other's),
#     and the time-ordered ones sort above the old ones, in the same hour
#     and day;
#   - a standby of the upgraded server, promoted, issues nothing that
#     either server issued: made with pg_basebackup after the adoption
#     (--link), or copied before the upgraded server started, as rsync
#     after pg_upgrade makes it, which replays the adoption (--copy).
# --clone needs a file system with reflinks: the suite makes one (XFS on a
# loop device, as root); where it cannot, it says so on a SKIP line and
# runs the other paths.
# OLD_BIN and NEW_BIN (default: this machine's PostgreSQL) name the two
# servers' binaries: test/versions/in_root.sh runs it from 15 to 17.
# UPGRADE_SOURCE=etcd: node ids from etcd (test/upgrade/etcd.sh).
# UPGRADE_PATHS: the paths to take (default: all of them).
# Prints PASS/FAIL lines. Run from the repository root.
set -u
. scripts/lib.sh
. test/upgrade/lib.sh

# Its servers' ports (and etcd's): from UPGRADE_PORT, 15700 (etcd.sh, in
# another lane, takes its own).
port0=$(test_port "${UPGRADE_PORT:-15700}")
old_port=$port0
new_port=$((port0 + 1))
standby_port=$((port0 + 2))
upgrade_setup
[ "$UPGRADE_SOURCE" = etcd ] && upgrade_etcd $((port0 + 3)) $((port0 + 4))

# promoted NAME STANDBY_DIR PRIMARY_DIR: the standby (running on
# $standby_port) has replayed everything the primary wrote, the primary
# stops, the standby is promoted: it issues no ID the old server or the
# primary issued (the primary's new IDs are in tables new_*_$path).
promoted() {
    local name=$1 sb=$2 primary=$3 lsn
    lsn=$(q_at "$primary" "$new_port" postgres -c "SELECT pg_current_wal_lsn()")
    wait_until "the standby replays $lsn" 60 \
        eval "[ \"\$(q_at '$sb' '$standby_port' postgres -c \"SELECT pg_last_wal_replay_lsn() >= '$lsn'\")\" = t ]"
    check "$name: the standby replayed the upgraded server's WAL" t \
        "$(q_at "$sb" "$standby_port" postgres -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")"
    stop "$NEW_BIN" "$primary"
    as_pg "$NEW_BIN/pg_ctl" -D "$sb/data" -w promote >/dev/null 2>&1 || stop_suite "$name: promotion failed"
    fresh "$name" "$sb" "$standby_port" "standby_$path"
    check "$name: above the upgraded server's IDs" "0 true" \
        "$(q_at "$sb" "$standby_port" db1 -c "SELECT (SELECT count(*) FROM new_hourly_standby_$path WHERE id IN (SELECT id FROM new_hourly_$path))
                  || ' ' || ((SELECT min(id) FROM new_hourly_standby_$path) > (SELECT max(id) FROM new_hourly_$path))")"
    stop "$NEW_BIN" "$sb"
}

# reflink_dir: a directory on a file system with reflinks (XFS on a loop
# device, under $work), for pg_upgrade --clone; prints why not, and fails,
# where it cannot be made.
reflink_dir() {
    local img=$work/xfs.img mnt=$work/xfs
    [ "$(id -u)" = 0 ] || { echo "mounting a file system needs root"; return 1; }
    command -v mkfs.xfs >/dev/null || { echo "no mkfs.xfs (xfsprogs)"; return 1; }
    truncate -s 600M "$img" && mkfs.xfs -q -m reflink=1 "$img" >/dev/null 2>&1 ||
        { echo "mkfs.xfs failed"; return 1; }
    mkdir -p "$mnt" && mount -o loop "$img" "$mnt" 2>/dev/null || { echo "a loop device could not be mounted here"; return 1; }
    chown postgres: "$mnt" && chmod 755 "$mnt"
}

# logical_copy OLD NEW: the new server takes the old one's databases as
# docs/install.md says for a migration by logical replication: each
# database's schema (pg_dump --schema-only) and shardid's own tables (its
# layouts, keys and shardid_lineage: pg_dump --data-only --table), then a
# subscription to the application's tables, until their rows are copied.
logical_copy() {
    local old=$1 new=$2 db tables
    for db in db1 db2; do
        q_at "$new" "$new_port" postgres -c "CREATE DATABASE $db" >/dev/null || return 1
        as_pg "$NEW_BIN/pg_dump" -h "$old" -p "$old_port" -U postgres --schema-only -d "$db" -f "$work/schema_$db.sql" &&
            q_at "$new" "$new_port" "$db" -f "$work/schema_$db.sql" >/dev/null 2>"$work/schema_$db.log" || return 1
        as_pg "$NEW_BIN/pg_dump" -h "$old" -p "$old_port" -U postgres --data-only --table='public.shardid_*' \
            -d "$db" -f "$work/shardid_$db.sql" &&
            q_at "$new" "$new_port" "$db" -f "$work/shardid_$db.sql" >/dev/null 2>"$work/shardid_$db.log" || return 1
        tables=$(q_at "$old" "$old_port" "$db" -c "SELECT string_agg(quote_ident(relname), ', ') FROM pg_class
            WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace AND relname NOT LIKE 'shardid%'")
        q_at "$old" "$old_port" "$db" -c "CREATE PUBLICATION move FOR TABLE $tables" >/dev/null || return 1
        q_at "$new" "$new_port" "$db" -c "CREATE SUBSCRIPTION move_$db CONNECTION 'host=$old port=$old_port user=postgres dbname=$db'
            PUBLICATION move" >/dev/null 2>"$work/sub_$db.log" || return 1
    done
    for db in db1 db2; do
        wait_until "the subscription of $db copied every table" 60 \
            eval "[ \"\$(q_at '$new' '$new_port' '$db' -c \"SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'\")\" = 0 ]" ||
            return 1
    done
}

# --- each path from the same old server's life --------------------------------
for path in ${UPGRADE_PATHS:-copy link clone dump logical}; do
    old=$work/old_$path new=$work/new_$path
    if [ "$path" = clone ]; then
        if ! why=$(reflink_dir); then
            echo "SKIP pg_upgrade --clone: $why"
            continue
        fi
        old=$work/xfs/old new=$work/xfs/new
    fi
    mkdir -p "$old" "$new" && chown postgres: "$old" "$new" 2>/dev/null
    # Under etcd, a dump or a logical copy goes to a new server whose etcd
    # forgot everything (another prefix): only the adopted state bounds what
    # the old server issued.
    PREFIX=/$path make_cluster "$OLD_BIN" "$old" "wal_level = logical" ||
        stop_suite "$path: the old cluster could not be made"
    start "$OLD_BIN" "$old" "$old_port" || stop_suite "$path: the old server did not start"
    old_life "$old" "$old_port" || stop_suite "$path: the old server's IDs could not be made"
    old_history=$(q_at "$old" "$old_port" db1 -c "SELECT history FROM shardid_node_history()")
    [ "$path" = dump ] && { as_pg "$OLD_BIN/pg_dumpall" -h "$old" -p "$old_port" -U postgres -f "$work/dump.sql" ||
        stop_suite "$path: pg_dumpall failed"; }
    [ "$path" != logical ] && stop "$OLD_BIN" "$old"
    new_prefix=/$path
    case $path in dump | logical) new_prefix=/${path}_new ;; esac
    # A new server under the old server's prefix (pg_upgrade) starts with
    # its clock where the old one's ended.
    clock=()
    [ "$new_prefix" = "/$path" ] && clock=("shardid.clock_offset_ms = $offset")
    PREFIX=$new_prefix make_cluster "$NEW_BIN" "$new" "${clock[@]}" ||
        stop_suite "$path: the new cluster could not be made"
    if [ "$path" = dump ] || [ "$path" = logical ]; then
        start "$NEW_BIN" "$new" "$new_port" || stop_suite "$path: the new server did not start"
        if [ "$path" = dump ]; then
            psql -X -q -h "$new" -p "$new_port" -U postgres -d postgres -f "$work/dump.sql" >"$work/restore.log" 2>&1
            check "$path: the dump restores without an error" 0 \
                "$(grep 'ERROR' "$work/restore.log" | grep -vc 'role "postgres" already exists')"
            settle_clock "$new" "$new_port" || stop_suite "$path: the new server's clock"
        else
            logical_copy "$old" "$new" || stop_suite "$path: the logical copy failed: $(cat "$work"/*_db*.log | head -5)"
            settle_clock "$new" "$new_port" || stop_suite "$path: the new server's clock"
            check "$path: the subscriber has every row of the application's tables" "$N $N $N" \
                "$(q_at "$new" "$new_port" db1 -c "SELECT concat_ws(' ', (SELECT count(*) FROM hourly_ids),
                    (SELECT count(*) FROM decimal_ids), (SELECT count(*) FROM call_numbers))")"
            # The cut-over: no more writes on the old server (it keeps
            # running: its state is taken from shardid_export_state()).
            for db in db1 db2; do
                q_at "$new" "$new_port" "$db" -c "SET client_min_messages = warning" -c "ALTER SUBSCRIPTION move_$db DISABLE" \
                    -c "DROP SUBSCRIPTION move_$db" >/dev/null
            done
        fi
        check "$path: shardid_node_history() names the old server's history as not continued here" \
            "f 1" "$(history_of "$new" "$new_port" | cut -d'|' -f2,3 | tr '|' ' ')"
    else
        run_pg_upgrade "$path" "$old" "$new" "$old_port" "$new_port" >"$work/upgrade.why" ||
            stop_suite "pg_upgrade --$path failed: $(cat "$work/upgrade.why")"
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
        settle_clock "$new" "$new_port" || stop_suite "$path: the upgraded server's clock"
        [ "$path" = copy ] && { start "$NEW_BIN" "$work/standby_copy" "$standby_port" ||
            stop_suite "$path: the copied standby did not start"; }
        check "$path: shardid_node_history() says the upgraded server awaits the old one's state" \
            "t 1" "$(history_of "$new" "$new_port" | cut -d'|' -f2,3 | tr '|' ' ')"
        # A restart does not end the wait.
        stop "$NEW_BIN" "$new"
        start "$NEW_BIN" "$new" "$new_port" || stop_suite "$path: the upgraded server did not restart"
    fi
    refused "$path" "$new" "$new_port"
    [ "$path" != dump ] && [ "$path" != logical ] &&
        check "$path: the upgraded server's own state, which awaits adoption, is refused (22023)" \
        22023 "$(sqlstate_of q_at "$new" "$new_port" db1 -c "SELECT shardid_adopt_state(pg_read_file('$new/data/shardid.hwm'))")"
    # Adopting the new server's own state, or a malformed one, ends nothing.
    check "$path: a text that is not a node state is refused (22P02)" 22P02 \
        "$(sqlstate_of q_at "$new" "$new_port" db1 -c "SELECT shardid_adopt_state(E'shardid node state v3\\nmark x\\n')")"
    check "$path: an ordinary role cannot adopt a state (42501)" 42501 \
        "$(q_at "$new" "$new_port" db1 -c "CREATE ROLE someone" >/dev/null
           q_at "$new" "$new_port" db1 -v VERBOSITY=verbose -c "SET ROLE someone" \
             -c "SELECT shardid_adopt_state(pg_read_file('$old/data/shardid.hwm'))" 2>&1 |
             grep -oE 'ERROR:  [0-9A-Z]{5}' | head -1 | cut -c9-)"
    case $path in
    dump)
        # As the docs' shell line does: the file through a psql variable
        # (which loses its last newline).
        out=$(echo "SELECT shardid_adopt_state(:'state')" |
            q_at "$new" "$new_port" db1 -v state="$(as_pg cat "$old/data/shardid.hwm")" 2>&1) ||
            fail "$path: shardid_adopt_state() through a psql variable failed: $out"
        ;;
    logical)
        # From the running old server, as the docs say: its export covers
        # every ID it issued so far; then it stops (its IDs are over).
        out=$(echo "SELECT shardid_adopt_state(:'state')" |
            q_at "$new" "$new_port" db1 -v state="$(q_at "$old" "$old_port" db1 -c "SELECT shardid_export_state()")" 2>&1) ||
            fail "$path: shardid_adopt_state() of the old server's export failed: $out"
        stop "$OLD_BIN" "$old"
        ;;
    *) adopt "$path" "$new" "$new_port" "$old" ;;
    esac
    check "$path: after the adoption, the node continues the old history" \
        "f 0 $old_history" \
        "$(q_at "$new" "$new_port" db1 -c "SELECT awaiting_adoption, cardinality(unknown_here), adopted[1] FROM shardid_node_history()" |
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
