#!/bin/sh
# Gives shardid an etcd user whose role may read and write its prefix and
# nothing else, then turns authentication on. Run once, against any member,
# before authentication is on (it makes the root user that etcd requires).
#   ENDPOINTS          a client URL                         http://127.0.0.1:2379
#   PREFIX             shardid.etcd_prefix                  /shardid
#   ROOT_PASSWORD      the password of etcd's root user     (required)
#   SHARDID_PASSWORD   the password of the user shardid     (required)
# etcdctl's own variables (ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY) give
# it TLS. Then, on every PostgreSQL node:
#   shardid.etcd_user = 'shardid'
#   shardid.etcd_password_file = '/etc/postgresql/shardid-etcd.password'
set -eu
ENDPOINTS=${ENDPOINTS:-http://127.0.0.1:2379}
PREFIX=${PREFIX:-/shardid}
: "${ROOT_PASSWORD:?set ROOT_PASSWORD}" "${SHARDID_PASSWORD:?set SHARDID_PASSWORD}"
e() { etcdctl --endpoints="$ENDPOINTS" "$@"; }

e user add root --new-user-password="$ROOT_PASSWORD" >/dev/null
e role add shardid >/dev/null
# The prefix with its trailing slash: /shardid/ and nothing like /shardid2.
e role grant-permission shardid readwrite --prefix=true "${PREFIX%/}/" >/dev/null
e user add shardid --new-user-password="$SHARDID_PASSWORD" >/dev/null
e user grant-role shardid shardid >/dev/null
e auth enable
