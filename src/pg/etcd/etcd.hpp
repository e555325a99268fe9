// The etcd room: this node's id, its shard values and its counter values
// claimed in etcd (docs/coordination.md). The coordinator worker
// (worker.cpp, holder.hpp) is the only process that talks to etcd; it
// publishes what it holds in the room's part of the node's shared memory
// (shared.hpp, shard_claims.hpp), which generators read through the etcd
// node-id source (id_source.cpp). What the rooms above ask of it is here;
// `shardid_coordination()` and the shard claims' SQL functions read its
// shared memory too.
#pragma once

#include "pg/base/pg.hpp"

namespace shardid::pg {

// Called from _PG_init: the room's parts of the node's shared memory (the
// claim; the shard values' table when preloading with
// shardid.node_id_source = 'etcd'), its node-id source, and the
// coordinator worker (when preloading with etcd; not in pg_upgrade's
// servers: the worker starts with the upgraded server instead).
void etcd_init();

// The fingerprint of the cluster's call-number key as etcd holds it now (0:
// none recorded), after recording `set` first when it is not 0 (-1 clears
// it); through the worker, waiting at most shardid.etcd_wait (then 55000).
int64 cluster_call_key(int64 set);

}  // namespace shardid::pg
