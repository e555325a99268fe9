#!/usr/bin/env bash
# Instagram's model on PL/Proxy with node ids from etcd: test/cluster/
# instagram.sh with SHARDID_CLUSTER_ETCD=1 (each logical shard claimed by
# the node that writes it; the move is a release and a claim).
SHARDID_CLUSTER_ETCD=1 exec bash "$(dirname "$0")/instagram.sh" "$@"
