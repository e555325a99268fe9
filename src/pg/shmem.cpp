#include <atomic>
#include <cstring>

#include "pg/shmem.hpp"

#include "core/clock.hpp"
#include "pg/hwm.hpp"
#include "pg/pg.hpp"
#include "pg/settings.hpp"
#include "pg/timeconv.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(shardid_status);
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
    char name[64];    // the layout that first claimed the slot, for shardid_status()
};

// How far ahead of the IDs in use the high-water mark is written.
constexpr int64 lease_ms = 1000;

struct Shared {
    uint32_t magic;
    int n_used;
    int lease_tranche;
    bool hwm_corrupt;              // the mark could not be read: generation refuses
    int64 restart_floor_ms;        // the mark found at start-up
    std::atomic<int64_t> lease_until_ms;  // the persisted mark: every issued tick starts before it
    LWLock lease_lock;             // serializes writers of the mark
    Slot slots[max_slots];
    LWLock decimal_lock;           // serializes taking DecimalId generator ids
    struct {
        Oid database;
        DecimalState state;
    } decimal[max_decimal_databases];
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
        int64 mark = 0;
        const HwmRead got = hwm_read(&mark);
        if (got == HwmRead::corrupt)
            ereport(WARNING, (errmsg("shardid high-water mark file \"%s\" is unreadable", hwm_path),
                              errdetail("ID generation is refused until it is fixed, since IDs issued before the "
                                        "restart could otherwise be issued again."),
                              errhint("If the server clock is known to be past every ID ever issued, remove the "
                                      "file and restart the server.")));
        aligned->hwm_corrupt = got == HwmRead::corrupt;
        aligned->restart_floor_ms = mark;
        aligned->lease_until_ms.store(got == HwmRead::corrupt ? 0 : mark);
        aligned->lease_tranche = LWLockNewTrancheId();
        LWLockInitialize(&aligned->lease_lock, aligned->lease_tranche);
        LWLockInitialize(&aligned->decimal_lock, aligned->lease_tranche);
    }
    LWLockRegisterTranche(aligned->lease_tranche, "shardid");
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
        strlcpy(slot->name, layout.name, sizeof slot->name);
        resume_above(layout, slot->state, shared->restart_floor_ms);
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

DecimalState* decimal_state(Oid database)
{
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    if (shared == nullptr)
        attach_locked();
    DecimalState* found = nullptr;
    for (auto& d : shared->decimal)
        if (d.database == database || d.database == InvalidOid) {
            d.database = database;
            found = &d.state;
            break;
        }
    LWLockRelease(AddinShmemInitLock);
    if (found == nullptr)
        ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                        errmsg("too many databases on this node generate decimal ids"),
                        errdetail("Decimal id state is kept for at most %d databases per node.",
                                  max_decimal_databases)));
    return found;
}

LWLock* decimal_lock() { return &shared->decimal_lock; }

void cover_tick(int64 tick_ms)
{
    const int64 until = shared->lease_until_ms.load(std::memory_order_acquire);
    if (tick_ms + lease_ms / 2 < until)
        return;
    if (shared->hwm_corrupt)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("shardid high-water mark file \"%s\" is unreadable", hwm_path),
                        errdetail("IDs issued before the last restart could be issued again."),
                        errhint("If the server clock is known to be past every ID ever issued, remove the file and "
                                "restart the server.")));
    // Renew half way through the lease, by whoever gets the lock first, so
    // generators do not wait for the write; wait only when not covered.
    if (tick_ms < until) {
        if (!LWLockConditionalAcquire(&shared->lease_lock, LW_EXCLUSIVE))
            return;
    } else {
        LWLockAcquire(&shared->lease_lock, LW_EXCLUSIVE);
    }
    if (tick_ms + lease_ms / 2 >= shared->lease_until_ms.load(std::memory_order_acquire)) {
        const int64 new_until = tick_ms + lease_ms;
        hwm_write(new_until);
        shared->lease_until_ms.store(new_until, std::memory_order_release);
    }
    LWLockRelease(&shared->lease_lock);
}

}  // namespace shardid::pg

// One row per layout slot in use on this node.
extern "C" Datum shardid_status(PG_FUNCTION_ARGS)
{
    using namespace shardid;
    using namespace shardid::pg;
    InitMaterializedSRF(fcinfo, 0);
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    if (shared == nullptr)
        attach_locked();
    const int n = shared->n_used;
    LWLockRelease(AddinShmemInitLock);

    const int64 now_ms = wall_clock().now_ms();
    const int64 mark_ms = shared->lease_until_ms.load();
    const Datum mark = TimestampTzGetDatum(timestamptz_of_unix_ms(mark_ms));
    const Datum floor = TimestampTzGetDatum(timestamptz_of_unix_ms(shared->restart_floor_ms));
    for (int i = 0; i < n; i++) {
        const Slot& slot = shared->slots[i];
        const Shape& sh = slot.shape;
        const Layout layout{slot.name, sh.epoch_ms, sh.unit_ms, sh.time_bits, sh.shard_bits, sh.sequence_bits,
                            sh.wraps, sh.sequence_first};
        const uint64_t last = slot.state.last.load(std::memory_order_acquire);
        const int64 last_tick_ms = layout.ms_of_tick(int64(layout.packed_tick(last)));
        const bool issued = last != 0;
        Datum values[10] = {CStringGetTextDatum(slot.name),
                            issued ? TimestampTzGetDatum(timestamptz_of_unix_ms(last_tick_ms)) : (Datum)0,
                            Int64GetDatum(int64(layout.packed_sequence(last))),
                            Int64GetDatum(issued && last_tick_ms > now_ms ? last_tick_ms - now_ms : 0),
                            Int64GetDatum(int64(slot.state.waits.load())),
                            Int64GetDatum(int64(slot.state.ahead.load())),
                            Int64GetDatum(int64(slot.state.behind.load())),
                            mark,
                            floor,
                            BoolGetDatum(shared->hwm_corrupt)};
        bool nulls[10] = {false, !issued, !issued, false, false, false, false,
                          mark_ms == 0, shared->restart_floor_ms == 0, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum)0;
}
