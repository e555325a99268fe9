// The claim table in shared memory (src/pg/etcd/shard_claims.hpp): its size,
// its making as a part of the node's shared memory (shmem_part()), and the
// entries' notes beside them.
#include "pg/etcd/shard_claims.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/shmem.h"
}

#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"
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

Size claims_size()
{
    // The entries, then as many notes (the part is aligned to a cache line
    // for the entries: shmem_part()).
    const int size = table_size(max_shard_claims);
    return add_size(add_size(sizeof(ShardClaims), mul_size(sizeof(ShardClaim), size)), mul_size(claim_note_size, size));
}

}  // namespace

void shard_claims_init()
{
    // Only a node whose ids come from etcd claims shard values (the
    // coordinator runs only when preloaded).
    if (!process_shared_preload_libraries_in_progress || !etcd_enabled())
        return;
    shmem_part({"shardid shard claims", claims_size(),
                [](void* part) {
                    auto* t = static_cast<ShardClaims*>(part);
                    SpinLockInit(&t->mutex);
                    t->capacity = max_shard_claims;
                    t->size = table_size(max_shard_claims);
                    t->epoch.store(1);
                    for (int i = 0; i < t->size; i++) {
                        t->entries[i].generation.store(1);
                        t->entries[i].database_share = t->entries[i].role_share = -1;
                    }
                },
                reinterpret_cast<void**>(&claims_table), false, alignof(ShardClaims)});
}

char* claim_note(const ShardClaim& e)
{
    char* notes = reinterpret_cast<char*>(&claims_table->entries[claims_table->size]);
    return notes + claim_note_size * size_t(&e - claims_table->entries);
}

}  // namespace shardid::pg
