#!/usr/bin/env bash
# From a fresh machine: install what is missing, build and install shardid,
# start a throwaway PostgreSQL with it, and walk through a table whose key
# defaults to next_trace_id(). The server is removed at the end, unless
# --keep is given (it then prints how to connect and how to stop it).
set -eu
cd "$(dirname "$0")/.."
. scripts/lib.sh

keep=no
[ "${1:-}" = "--keep" ] && keep=yes

ensure_deps
log "building and installing shardid"
build_install

dir=$(pg_tmpdir)
port=15499
log "starting a throwaway PostgreSQL in $dir (port $port, socket in $dir)"
cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7"
cluster_start "$dir" "$port"
if [ "$keep" = no ]; then
    trap 'cluster_stop "$dir"; rm -rf "$dir"' EXIT
fi

cluster_psql "$dir" "$port" -e <<'SQL'
CREATE EXTENSION shardid;
SHOW shardid.node_id;
CREATE TABLE orders (
    id    bigint PRIMARY KEY DEFAULT next_trace_id(),
    item  text NOT NULL
);
INSERT INTO orders (item) VALUES ('coffee'), ('tea'), ('cake');
SELECT id, item, d.created_at, d.node_no, d.counter
FROM orders, trace_id_decode(id) AS d
ORDER BY id;
SELECT trace_id_timestamp(id) AS created_at FROM orders ORDER BY id LIMIT 1;
SQL

if [ "$keep" = yes ]; then
    echo
    echo "The server keeps running. Connect:  psql -h $dir -p $port -U postgres"
    echo "Stop and remove it:                $( [ "$(id -u)" = 0 ] && echo 'runuser -u postgres -- ')$PG_BIN/pg_ctl -D $dir/data stop && rm -rf $dir"
fi
