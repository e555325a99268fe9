#include "pg/shmem.hpp"

#include <cstring>

#include "pg/pg.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace shardid::pg {

namespace {

// What makes two layouts share state: everything but the name.
struct Shape {
    int64_t epoch_ms;
    int64_t unit_ms;
    uint8_t time_bits, shard_bits, sequence_bits, sequence_first;
    bool wraps;

    static Shape of(const Layout& l)
    {
        return Shape{l.epoch_ms, l.unit_ms, l.time_bits, l.shard_bits, l.sequence_bits, l.sequence_first, l.wraps};
    }
    bool operator==(const Shape& o) const
    {
        return epoch_ms == o.epoch_ms && unit_ms == o.unit_ms && time_bits == o.time_bits &&
               shard_bits == o.shard_bits && sequence_bits == o.sequence_bits &&
               sequence_first == o.sequence_first && wraps == o.wraps;
    }
};

struct Slot {
    SlotState state;  // first, so it keeps the slot's 64-byte alignment
    Shape shape;
};

struct Shared {
    uint32_t magic;
    int n_used;
    Slot slots[max_slots];
};

constexpr uint32_t shared_magic = 0x53484944;  // "SHID"
constexpr const char* shared_name = "shardid";
// ShmemInitStruct aligns to MAXALIGN only; ask for room to align to 64.
constexpr Size shared_size = sizeof(Shared) + alignof(Shared);

Shared* shared = nullptr;

shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

// Attaches to (or creates) the shared struct. Caller holds AddinShmemInitLock.
void attach_locked()
{
    bool found;
    void* raw = ShmemInitStruct(shared_name, shared_size, &found);
    auto* aligned = reinterpret_cast<Shared*>(TYPEALIGN(alignof(Shared), raw));
    if (!found) {
        memset(raw, 0, shared_size);
        aligned->magic = shared_magic;
    }
    shared = aligned;
}

void attach()
{
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    attach_locked();
    LWLockRelease(AddinShmemInitLock);
}

void request_hook()
{
    if (prev_shmem_request_hook)
        prev_shmem_request_hook();
    RequestAddinShmemSpace(shared_size);
}

void startup_hook()
{
    if (prev_shmem_startup_hook)
        prev_shmem_startup_hook();
    attach();
}

// Per-backend cache of shapes already looked up.
struct CachedSlot {
    Shape shape;
    SlotState* state;
};
CachedSlot cache[max_slots];
int n_cached = 0;

}  // namespace

void shmem_init()
{
    if (!process_shared_preload_libraries_in_progress)
        return;
    prev_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = request_hook;
    prev_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_hook;
}

SlotState* slot_for(const Layout& layout)
{
    const Shape shape = Shape::of(layout);
    for (int i = 0; i < n_cached; i++)
        if (cache[i].shape == shape)
            return cache[i].state;

    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    if (shared == nullptr)
        attach_locked();
    Slot* slot = nullptr;
    for (int i = 0; i < shared->n_used; i++)
        if (shared->slots[i].shape == shape)
            slot = &shared->slots[i];
    if (slot == nullptr && shared->n_used < max_slots) {
        slot = &shared->slots[shared->n_used];
        slot->shape = shape;
        shared->n_used++;
    }
    LWLockRelease(AddinShmemInitLock);

    if (slot == nullptr)
        ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                        errmsg("too many distinct shardid layouts in use on this node"),
                        errdetail("Each distinct layout shape takes one of %d shared state slots.", max_slots),
                        errhint("Reuse an existing layout shape, or restart the server to free unused slots.")));
    cache[n_cached++] = CachedSlot{shape, &slot->state};
    return &slot->state;
}

}  // namespace shardid::pg
