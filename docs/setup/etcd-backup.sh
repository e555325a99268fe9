#!/bin/sh
# etcd's backup and its restore, for shardid (docs/coordination.md, "Backing
# etcd up, and restoring it"). Every value comes from a variable, as in
# etcd-member.sh (the same NAME, HOST, PEER_PORT, CLUSTER, DATA_DIR and
# TLS_DIR for a member):
#
#   sh etcd-backup.sh save FILE       a snapshot of etcd's data into FILE
#                                     (ENDPOINTS: any member's client URL)
#   sh etcd-backup.sh restore FILE    FILE restored into this member's
#                                     DATA_DIR (its etcd stopped; the data
#                                     directory it had is kept beside it,
#                                     as DATA_DIR.before-restore-<time>)
#   sh etcd-backup.sh new-history     after the members are up again: the
#                                     history shardid keeps under PREFIX
#                                     deleted, so that every node takes the
#                                     restored data for a new history
#                                     (ENDPOINTS, PREFIX)
#
#   ENDPOINTS    client URLs, comma-separated        http://127.0.0.1:2379
#   PREFIX       shardid.etcd_prefix                 /shardid
#   TLS_DIR      as for etcd-member.sh: etcdctl uses its ca.crt, and the
#                client certificate shardid.crt/shardid.key (etcd-tls.sh)
#
# etcdctl snapshot restore makes a new cluster from the file: restore the
# same file on every member, with the CLUSTER every member starts with.
set -eu
cmd=${1:-}
NAME=${NAME:-etcd1}
HOST=${HOST:-127.0.0.1}
PEER_PORT=${PEER_PORT:-2380}
DATA_DIR=${DATA_DIR:-/var/lib/etcd/shardid}
TLS_DIR=${TLS_DIR:-}
ENDPOINTS=${ENDPOINTS:-http://127.0.0.1:2379}
PREFIX=${PREFIX:-/shardid}
export ETCDCTL_API=3

scheme=http
if [ -n "$TLS_DIR" ]; then
    scheme=https
    export ETCDCTL_CACERT="$TLS_DIR/ca.crt" ETCDCTL_CERT="$TLS_DIR/shardid.crt" ETCDCTL_KEY="$TLS_DIR/shardid.key"
fi
CLUSTER=${CLUSTER:-$NAME=$scheme://$HOST:$PEER_PORT}

case $cmd in
save)
    file=${2:?"a file to write the snapshot to"}
    # etcdctl writes FILE.part and renames it once the snapshot is whole.
    etcdctl --endpoints="$ENDPOINTS" snapshot save "$file"
    ;;
restore)
    file=${2:?"the snapshot file to restore"}
    if [ -e "$DATA_DIR" ]; then
        mv "$DATA_DIR" "$DATA_DIR.before-restore-$(date +%Y%m%d%H%M%S)"
    fi
    etcdctl snapshot restore "$file" --name "$NAME" --data-dir "$DATA_DIR" --initial-cluster "$CLUSTER" \
        --initial-advertise-peer-urls "$scheme://$HOST:$PEER_PORT"
    ;;
new-history)
    etcdctl --endpoints="$ENDPOINTS" del "$PREFIX/history"
    ;;
*)
    echo "usage: sh etcd-backup.sh save FILE | restore FILE | new-history" >&2
    exit 2
    ;;
esac
