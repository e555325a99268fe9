#!/bin/sh
# Starts one etcd member for shardid (and Patroni) in the foreground; run it
# under systemd or your supervisor. Every value comes from a variable; the
# defaults make a one-member trial on this host:
#
#   NAME         this member's name                         etcd1
#   HOST         the address clients and peers reach it at  127.0.0.1
#   CLIENT_PORT  clients (shardid, Patroni, etcdctl)        2379
#   PEER_PORT    the other members                          2380
#   CLUSTER      every member as NAME=URL, comma-separated  this member alone
#   DATA_DIR     etcd's data (keep it on a disk that stays) /var/lib/etcd/shardid
#   TLS_DIR      ca.crt, server.crt, server.key (etcd-tls.sh makes them):
#                https for clients and peers, client certificates required;
#                unset: plain http (a trial on one host only)
#
# Three members (production), on hosts 10.0.0.1 to 10.0.0.3, with TLS:
#   CLUSTER=etcd1=https://10.0.0.1:2380,etcd2=https://10.0.0.2:2380,etcd3=https://10.0.0.3:2380
#   NAME=etcd1 HOST=10.0.0.1 TLS_DIR=/etc/etcd/tls CLUSTER=$CLUSTER sh etcd-member.sh   # on 10.0.0.1
#   NAME=etcd2 HOST=10.0.0.2 TLS_DIR=/etc/etcd/tls CLUSTER=$CLUSTER sh etcd-member.sh   # on 10.0.0.2, and so on
set -eu
NAME=${NAME:-etcd1}
HOST=${HOST:-127.0.0.1}
CLIENT_PORT=${CLIENT_PORT:-2379}
PEER_PORT=${PEER_PORT:-2380}
DATA_DIR=${DATA_DIR:-/var/lib/etcd/shardid}
TLS_DIR=${TLS_DIR:-}

scheme=http
set --
if [ -n "$TLS_DIR" ]; then
    scheme=https
    set -- --client-cert-auth --trusted-ca-file "$TLS_DIR/ca.crt" \
        --cert-file "$TLS_DIR/server.crt" --key-file "$TLS_DIR/server.key" \
        --peer-client-cert-auth --peer-trusted-ca-file "$TLS_DIR/ca.crt" \
        --peer-cert-file "$TLS_DIR/server.crt" --peer-key-file "$TLS_DIR/server.key"
fi
CLUSTER=${CLUSTER:-$NAME=$scheme://$HOST:$PEER_PORT}

exec etcd --name "$NAME" --data-dir "$DATA_DIR" \
    --listen-client-urls "$scheme://$HOST:$CLIENT_PORT" --advertise-client-urls "$scheme://$HOST:$CLIENT_PORT" \
    --listen-peer-urls "$scheme://$HOST:$PEER_PORT" --initial-advertise-peer-urls "$scheme://$HOST:$PEER_PORT" \
    --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token shardid \
    "$@"
