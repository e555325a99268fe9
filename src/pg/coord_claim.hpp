// The generators' side of the etcd claim (src/pg/coord_claim.cpp): the
// etcd implementation of the node-id source (src/pg/node_source.hpp), which
// reads what the coordinator worker publishes in shared memory and never
// talks to etcd itself. The rules: src/core/coord.hpp.
#pragma once

#include "pg/shmem.hpp"

#include "pg/coord_shared.hpp"  // after the core headers shmem.hpp brings (pg.hpp)

namespace shardid::pg {

// The claim's part of the attached shared struct.
CoordShared& coord_shared();

}  // namespace shardid::pg
