// The Citus group fence's shared memory (src/pg/citus/shared.hpp), a part
// of the node's: attached by the processes that use Citus.
#include "pg/citus/shared.hpp"

#include "pg/citus/key_lease.hpp"
#include "pg/state/shmem.hpp"

namespace shardid::pg {

CitusShared* citus_shared = nullptr;

void citus_shmem_init()
{
    shmem_part({"shardid citus fence", sizeof(CitusShared),
                [](void* part) {
                    auto* c = static_cast<CitusShared*>(part);
                    SpinLockInit(&c->mutex);
                    for (CitusFence& f : c->fences) {
                        SpinLockInit(&f.mutex);
                        SpinLockInit(&f.keys_mutex);
                        f.group.store(-1);
                    }
                    key_leases_init(c->leases);
                },
                reinterpret_cast<void**>(&citus_shared), true});
}

CitusShared* citus_shared_attach()
{
    if (citus_shared == nullptr)
        shmem_part_attach(reinterpret_cast<void**>(&citus_shared));
    return citus_shared;
}

}  // namespace shardid::pg
