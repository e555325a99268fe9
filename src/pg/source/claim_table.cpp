// The claim table in shared memory (src/pg/source/shard_claims.hpp): its size,
// its making in the postmaster's shared memory hooks, and the entries'
// notes beside them.
#include "pg/source/shard_claims.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
}

#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

namespace {

// Linear probing stays short below two thirds full.
int table_size(int capacity)
{
    int size = 16;
    while (size < 3 * (capacity + max_slots) / 2)
        size *= 2;
    return size;
}

}  // namespace

ShardClaims* claims_table = nullptr;

ShardClaims* shard_claims() { return claims_table; }

namespace {

shmem_request_hook_type prev_request_hook = nullptr;
shmem_startup_hook_type prev_startup_hook = nullptr;

Size claims_size()
{
    const int size = table_size(max_shard_claims);
    // The struct is aligned to a cache line for its entries.
    return add_size(add_size(sizeof(ShardClaims), mul_size(sizeof(ShardClaim), size)),
                    add_size(mul_size(claim_note_size, size), alignof(ShardClaims)));
}

void request_hook()
{
    if (prev_request_hook)
        prev_request_hook();
    RequestAddinShmemSpace(claims_size());
}

void startup_hook()
{
    if (prev_startup_hook)
        prev_startup_hook();
    const Size size = claims_size();
    bool found;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    void* raw = ShmemInitStruct("shardid shard claims", size, &found);
    auto* t = static_cast<ShardClaims*>(
        reinterpret_cast<void*>(TYPEALIGN(alignof(ShardClaims), reinterpret_cast<uintptr_t>(raw))));
    if (!found) {
        memset(raw, 0, size);
        SpinLockInit(&t->mutex);
        t->capacity = max_shard_claims;
        t->size = table_size(max_shard_claims);
        t->epoch.store(1);
        for (int i = 0; i < t->size; i++) {
            t->entries[i].generation.store(1);
            t->entries[i].database_share = t->entries[i].role_share = -1;
        }
    }
    LWLockRelease(AddinShmemInitLock);
    claims_table = t;
}

}  // namespace

void shard_claims_init()
{
    // Only a node whose ids come from etcd claims shard values (the
    // coordinator runs only when preloaded).
    if (!process_shared_preload_libraries_in_progress || !coord_enabled())
        return;
    prev_request_hook = shmem_request_hook;
    shmem_request_hook = request_hook;
    prev_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_hook;
}

char* claim_note(const ShardClaim& e)
{
    char* notes = reinterpret_cast<char*>(&claims_table->entries[claims_table->size]);
    return notes + claim_note_size * size_t(&e - claims_table->entries);
}

}  // namespace shardid::pg
