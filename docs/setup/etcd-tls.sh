#!/bin/sh
# Makes the certificates of etcd-member.sh's TLS_DIR with openssl: a CA of
# its own (ca.crt, ca.key), one server certificate for every member's
# address (server.crt, server.key), and a client certificate for shardid
# (shardid.crt, shardid.key). The client certificate has no CommonName:
# etcd's JSON gateway, which shardid talks to, refuses a request whose
# certificate has one while authentication is on; shardid logs in with its
# user and password (etcd-shardid-user.sh). Use your own CA where you have one.
#   sh etcd-tls.sh DIR ADDRESS...        e.g. sh etcd-tls.sh /etc/etcd/tls 10.0.0.1 10.0.0.2 10.0.0.3
# Copy DIR to every member; give each PostgreSQL node ca.crt and the shardid
# pair, readable by the postgres OS user only.
set -eu
dir=$1; shift
mkdir -p "$dir"
cd "$dir"
san=$(for a in "$@"; do case $a in *[!0-9.]*) printf 'DNS:%s,' "$a" ;; *) printf 'IP:%s,' "$a" ;; esac; done)
san=${san%,}
openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=shardid-etcd-ca -keyout ca.key -out ca.crt 2>/dev/null
sign() {  # NAME SUBJECT EXTENSIONS
    openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
    printf '%s\n' "$3" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
}
sign server /CN=etcd "subjectAltName=$san
extendedKeyUsage=serverAuth,clientAuth"
sign shardid /O=shardid "extendedKeyUsage=clientAuth"
chmod 600 ./*.key
