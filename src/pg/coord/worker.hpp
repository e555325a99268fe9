// The coordinator worker (src/pg/coord/worker.cpp): registered at server
// start when shardid.node_id_source is etcd.
#pragma once

namespace shardid::pg {

// Called from _PG_init: registers the worker when preloading with
// shardid.node_id_source = 'etcd'.
void coord_register_worker();

}  // namespace shardid::pg
