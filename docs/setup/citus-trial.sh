#!/bin/sh
# A trial of shardid on Citus on one host (docs/citus.md, "A trial on one
# machine"): a coordinator and two workers, all in the background, in one
# directory, each node's id its Citus group id. Run it as the user
# PostgreSQL runs as, with Citus and shardid installed; from the source
# tree, as root:
#   su postgres -c 'sh -s' < docs/setup/citus-trial.sh
# Every value comes from a variable:
#
#   DIR        where the trial keeps everything                /tmp/shardid-citus-trial
#   PG_PORT    the coordinator's port (the workers: +1, +2)    5440
#   PG_BIN     PostgreSQL's programs                           pg_config --bindir
#
# The nodes listen on 127.0.0.1 only and trust every local connection
# (initdb -A trust): Citus' nodes connect to each other over TCP as the
# same user. `su postgres -c 'sh -s stop' < docs/setup/citus-trial.sh`
# stops the three and removes DIR.
set -eu
DIR=${DIR:-/tmp/shardid-citus-trial}
PG_PORT=${PG_PORT:-5440}
PG_BIN=${PG_BIN:-$(pg_config --bindir)}

if [ "${1:-}" = stop ]; then
    for n in c w1 w2; do "$PG_BIN/pg_ctl" -D "$DIR/$n" -m fast stop >/dev/null 2>&1 || true; done
    rm -rf "$DIR"
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    echo "PostgreSQL does not run as root: run this as the postgres user (su postgres -c 'sh -s' < citus-trial.sh)" >&2
    exit 1
fi
if [ ! -f "$("$PG_BIN/pg_config" --sharedir)/extension/citus.control" ]; then
    echo "Citus is not installed for $("$PG_BIN/pg_config" --version): see docs/citus.md, \"Getting Citus\"" >&2
    exit 1
fi
mkdir -p "$DIR"

# Three servers: Citus first in shared_preload_libraries, as Citus asks;
# the same shardid lines on every node.
port=$PG_PORT
for n in c w1 w2; do
    "$PG_BIN/initdb" -D "$DIR/$n" -A trust >/dev/null
    cat >>"$DIR/$n/postgresql.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
shared_preload_libraries = 'citus,shardid'
max_prepared_transactions = 100
wal_level = logical
shardid.node_id_source = citus
shardid.launch_id = 1
EOF
    "$PG_BIN/pg_ctl" -D "$DIR/$n" -l "$DIR/$n.log" -w start >/dev/null
    "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$port" -d postgres -c "CREATE EXTENSION citus"
    port=$((port + 1))
done

# The coordinator knows itself and its workers; CREATE EXTENSION shardid
# there reaches both workers.
"$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -d postgres \
    -c "SELECT citus_set_coordinator_host('127.0.0.1', $PG_PORT)" \
    -c "SELECT citus_add_node('127.0.0.1', $((PG_PORT + 1)))" \
    -c "SELECT citus_add_node('127.0.0.1', $((PG_PORT + 2)))" \
    -c "CREATE EXTENSION shardid" >/dev/null

# Each node's id is its group: 0 for the coordinator, 1 and 2 for the workers.
port=$PG_PORT
for n in c w1 w2; do
    "$PG_BIN/psql" -X -At -h 127.0.0.1 -p "$port" -d postgres \
        -c "SELECT '$n (port $port): ' || source || ', ' || state || ', node id ' || node_id FROM shardid_coordination()"
    port=$((port + 1))
done
echo "psql -h 127.0.0.1 -p $PG_PORT -d postgres   # the coordinator; the workers are on $((PG_PORT + 1)) and $((PG_PORT + 2))"
