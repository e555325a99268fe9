#!/bin/sh
# A trial of node ids from etcd on one host (docs/etcd.md, "A trial"): one
# etcd member and two PostgreSQL servers that claim their node ids from it,
# all in the background, in one directory. Run it as the user PostgreSQL
# runs as, with shardid installed; from the source tree, as root:
#   su postgres -c 'sh -s' < docs/setup/trial.sh
# Every value comes from a variable:
#
#   DIR        where the trial keeps everything      /tmp/shardid-trial
#   ETCD_PORT  etcd's client port (its peer port: +1)  2379
#   PG_PORT    the first server's port (the second: +1)  5433
#   PG_BIN     PostgreSQL's programs                 pg_config --bindir
#
# `su postgres -c 'sh -s stop' < docs/setup/trial.sh` stops the three and
# removes DIR.
set -eu
DIR=${DIR:-/tmp/shardid-trial}
ETCD_PORT=${ETCD_PORT:-2379}
PG_PORT=${PG_PORT:-5433}
PG_BIN=${PG_BIN:-$(pg_config --bindir)}

if [ "${1:-}" = stop ]; then
    for n in 1 2; do "$PG_BIN/pg_ctl" -D "$DIR/node$n" -m fast stop >/dev/null 2>&1 || true; done
    [ -f "$DIR/etcd.pid" ] && kill "$(cat "$DIR/etcd.pid")" 2>/dev/null || true
    rm -rf "$DIR"
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    echo "PostgreSQL does not run as root: run this as the postgres user (su postgres -c 'sh -s' < trial.sh)" >&2
    exit 1
fi
mkdir -p "$DIR"

# etcd, one member in the background on plain http (one host only: anyone
# who reaches the port can change the claims), until it answers.
peer=http://127.0.0.1:$((ETCD_PORT + 1))
nohup etcd --name trial --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "trial=$peer" \
    >"$DIR/etcd.log" 2>&1 &
echo $! >"$DIR/etcd.pid"
tries=0
until etcdctl --endpoints="http://127.0.0.1:$ETCD_PORT" endpoint health >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ $tries -lt 100 ] || { echo "etcd did not start: see $DIR/etcd.log" >&2; exit 1; }
    sleep 0.1
done

# Two servers, each claiming the lowest free node id.
for n in 1 2; do
    port=$((PG_PORT + n - 1))
    "$PG_BIN/initdb" -D "$DIR/node$n" -A trust >/dev/null
    cat >>"$DIR/node$n/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$DIR'
shared_preload_libraries = 'shardid'
shardid.node_id_source = etcd
shardid.etcd_endpoints = 'http://127.0.0.1:$ETCD_PORT'
shardid.node_id = -1
EOF
    "$PG_BIN/pg_ctl" -D "$DIR/node$n" -l "$DIR/node$n.log" -w start >/dev/null
    "$PG_BIN/psql" -X -q -h "$DIR" -p "$port" -d postgres -c "CREATE EXTENSION shardid"
done

# Each holds its id once it claimed it (a second or so).
for n in 1 2; do
    port=$((PG_PORT + n - 1))
    tries=0
    until [ "$("$PG_BIN/psql" -X -At -h "$DIR" -p "$port" -d postgres \
        -c "SELECT state FROM shardid_coordination()")" = held ]; do
        tries=$((tries + 1))
        [ $tries -lt 300 ] || { echo "node$n claimed no id: see $DIR/node$n.log" >&2; exit 1; }
        sleep 0.1
    done
    "$PG_BIN/psql" -X -At -F ' ' -h "$DIR" -p "$port" -d postgres \
        -c "SELECT 'node$n (port $port): state ' || state || ', node id ' || node_id FROM shardid_coordination()"
done
echo "psql -h $DIR -p $PG_PORT -d postgres   # node1; node2 is on port $((PG_PORT + 1))"
