// The generators' side of the etcd claim (src/pg/source/coord_claim.cpp): the
// etcd implementation of the node-id source (src/pg/source/node_source.hpp), which
// reads what the coordinator worker publishes in shared memory and never
// talks to etcd itself. The rules: src/core/coord/coord.hpp.
#pragma once

#include "pg/state/shmem.hpp"

#include "pg/state/coord_shared.hpp"  // after the core headers shmem.hpp brings (pg.hpp)

namespace shardid::pg {

// The fingerprint of the cluster's call-number key as etcd holds it now (0:
// none recorded), after recording `set` first when it is not 0 (-1 clears
// it); through the worker, waiting at most shardid.etcd_wait (then 55000).
int64 cluster_call_key(int64 set);

}  // namespace shardid::pg
