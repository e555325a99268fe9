#!/usr/bin/env bash
# Debian's pg_upgradecluster, both methods (-m upgrade and -m dump), with
# shardid's hook (debian/pg_upgradecluster-hook; docs/install.md,
# "Upgrading PostgreSQL"): a cluster made with pg_createcluster issues IDs
# of every scheme in two databases (test/upgrade/lib.sh), then one command
# upgrades it, and the upgraded cluster has adopted the old one's node
# state: it continues the old history, awaits nothing, and issues none of
# the old IDs (the time-ordered ones above them, in the same hour).
# In a Debian root with the package installed (test/versions/in_root.sh:
# 15 to 17) the package's own hook in /etc/postgresql-common runs; on this
# machine (15 to 15, into a cluster of another name) the tree's hook, in a
# postgresql-common configuration of the suite's own (PGSYSCONFDIR). The
# clusters' configuration is the suite's too (PG_CLUSTER_CONF_ROOT).
# OLD_VERSION, NEW_VERSION: the two versions (default: this machine's).
# Prints PASS/FAIL lines. Run from the repository root, as root.
set -u
. scripts/lib.sh
. test/upgrade/lib.sh

OLD_VERSION=${OLD_VERSION:-$PG_MAJOR}
NEW_VERSION=${NEW_VERSION:-$PG_MAJOR}
OLD_BIN=/usr/lib/postgresql/$OLD_VERSION/bin
NEW_BIN=/usr/lib/postgresql/$NEW_VERSION/bin
if [ "$(id -u)" != 0 ] || ! command -v pg_upgradecluster >/dev/null; then
    echo "SKIP pg_upgradecluster: it needs root and postgresql-common"
    exit 0
fi
# postgresql-common finds the upgraded cluster's port free by trying from
# 5432 on: where the test command runs suites that do so at once, they take
# turns (SHARDID_PORT_LOCK; in a Debian root, the descriptor the test
# command opened on it, SHARDID_PORT_FD).
if [ -n "${SHARDID_PORT_FD:-}" ]; then
    flock "$SHARDID_PORT_FD"
elif [ -n "${SHARDID_PORT_LOCK:-}" ]; then
    exec 9>"$SHARDID_PORT_LOCK"
    flock 9
fi
upgrade_setup
old_port=$(test_port 15710)
export PG_CLUSTER_CONF_ROOT=$work/etc
mkdir -p "$PG_CLUSTER_CONF_ROOT"
hook=/etc/postgresql-common/pg_upgradecluster.d/shardid-$NEW_VERSION
if [ ! -x "$hook" ]; then
    # The tree's hook, as debian/rules installs it for NEW_VERSION.
    export PGSYSCONFDIR=$work/common
    hook=$PGSYSCONFDIR/pg_upgradecluster.d/shardid-$NEW_VERSION
    mkdir -p "$(dirname "$hook")"
    sed "s/@PGVERSION@/$NEW_VERSION/g" debian/pg_upgradecluster-hook >"$hook" && chmod 755 "$hook"
fi
# pg_upgradecluster from one version to the same one needs another name.
new_name=main
[ "$OLD_VERSION" = "$NEW_VERSION" ] && new_name=upgraded

for method in upgrade dump; do
    old=$work/old_$method new=$work/new_$method
    mkdir -p "$old" "$new" && chown postgres: "$old" "$new"
    pg_createcluster -u postgres -d "$old/data" -s "$old" -l "$old/server.log" -p "$old_port" \
        "$OLD_VERSION" main -- -A trust >"$work/create.log" 2>&1 &&
        printf '%s\n' "${conf[@]}" "fsync = off" >>"$PG_CLUSTER_CONF_ROOT/$OLD_VERSION/main/postgresql.conf" ||
        stop_suite "$method: pg_createcluster failed: $(tail -3 "$work/create.log" | tr '\n' ' ')"
    pg_ctlcluster "$OLD_VERSION" main start >"$work/start.log" 2>&1 ||
        stop_suite "$method: the old cluster did not start: $(server_why "$old/server.log")"
    old_life "$old" "$old_port" || stop_suite "$method: the old cluster's IDs could not be made"
    old_history=$(q_at "$old" "$old_port" db1 -c "SELECT history FROM shardid_node_history()")
    args=(-m "$method" -v "$NEW_VERSION" --logfile "$new/server.log")
    [ "$new_name" != main ] && args+=(--rename "$new_name")
    pg_upgradecluster "${args[@]}" "$OLD_VERSION" main "$new/data" >"$work/upgradecluster.log" 2>&1
    rc=$?
    check "$method: pg_upgradecluster -m $method succeeds" 0 "$rc"
    if [ "$rc" != 0 ]; then
        tail -20 "$work/upgradecluster.log"
        pg_dropcluster --stop "$NEW_VERSION" "$new_name" >/dev/null 2>&1
        pg_dropcluster --stop "$OLD_VERSION" main >/dev/null 2>&1
        continue
    fi
    contains "$method: its finish phase ran shardid's hook" "$(cat "$work/upgradecluster.log")" \
        "adopted the node state of $OLD_VERSION"
    # The upgraded cluster has the old one's port, and its socket directory.
    sock=$(sed -n "s/^unix_socket_directories *= *'\([^',]*\).*/\1/p" \
        "$PG_CLUSTER_CONF_ROOT/$NEW_VERSION/$new_name/postgresql.conf" | tail -1)
    check "$method: the upgraded cluster continues the old history and awaits nothing" \
        "f 0 $old_history" \
        "$(q_at "$sock" "$old_port" db1 -c "SELECT awaiting_adoption, cardinality(unknown_here), adopted[1] FROM shardid_node_history()" |
            tr '|' ' ')"
    fresh "$method" "$sock" "$old_port" "$method"
    pg_dropcluster --stop "$NEW_VERSION" "$new_name" >/dev/null 2>&1
    pg_dropcluster --stop "$OLD_VERSION" main >/dev/null 2>&1
done
